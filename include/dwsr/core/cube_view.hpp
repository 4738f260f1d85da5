#pragma once
/// \file Non-owning views of cubes in C order (time fastest).

#include <cassert>
#include <cstdint>
#include <span>
#include <type_traits>

#include "dwsr/core/dtype.hpp"
#include "dwsr/core/shape.hpp"

namespace dwsr {

/// A typed, non-owning view of a C-order cube. Under the meta context data()
/// is null and only the shape is meaningful.
template <class T>
class cube_view {
 public:
  cube_view() = default;
  cube_view(T* data, shape3 shape) noexcept : data_(data), shape_(shape) {}
  /// A view of const elements converts implicitly from a mutable one.
  template <class U>
  requires std::is_same_v<T, const U> cube_view(cube_view<U> other)
  noexcept : data_(other.data()), shape_(other.shape()) {}

  T* data() const noexcept { return data_; }
  const shape3& shape() const noexcept { return shape_; }
  std::uint64_t size() const noexcept { return shape_.voxels(); }
  std::uint64_t bytes() const noexcept { return size() * sizeof(T); }

  /// Trace at linear index (inline * crosslines + crossline).
  std::span<T> trace(std::uint64_t index) const noexcept {
    assert(index < shape_.traces());
    return {data_ + index * shape_.samples, shape_.samples};
  }
  /// Trace at (inline, crossline).
  std::span<T> trace(std::uint64_t il, std::uint64_t xl) const noexcept { return trace(il * shape_.crosslines + xl); }
  T& operator()(std::uint64_t il, std::uint64_t xl, std::uint64_t t) const noexcept {
    return data_[(il * shape_.crosslines + xl) * shape_.samples + t];
  }

 private:
  T* data_ = nullptr;
  shape3 shape_{};
};

/// A type-erased cube view: how operators receive outputs of several dtypes.
struct array_ref {
  dtype type = dtype::float32;
  void* data = nullptr;
  shape3 shape{};

  /// The typed view; the caller asserts the type (operators know their outputs).
  template <class T>
  cube_view<T> as() const noexcept {
    assert(dtype_of<std::remove_const_t<T>>() == type);
    return {static_cast<T*>(data), shape};
  }
  std::uint64_t bytes() const noexcept { return shape.voxels() * size_of(type); }
};

}  // namespace dwsr
