#pragma once
/// \file A list whose length is fixed when it is made, held inline up to N
/// values and on the heap beyond. A graph's run keeps its per-block scratch
/// (output slots, a node's inputs and outputs) in these: planners run a meta
/// execution of a block millions of times, and each heap allocation there
/// costs more than the block's bookkeeping itself.

#include <cstddef>
#include <memory>
#include <new>
#include <span>
#include <vector>

namespace dwsr {

/// `size` value-initialised Ts: inline when size <= N (only those `size` are
/// constructed), else one heap allocation.
template <class T, std::size_t N>
class fixed_list {
 public:
  explicit fixed_list(std::size_t size) : size_(size) {
    if (is_inline())
      std::uninitialized_value_construct_n(inline_data(), size);
    else
      heap_.resize(size);
  }
  ~fixed_list() {
    if (is_inline()) std::destroy_n(inline_data(), size_);
  }
  fixed_list(const fixed_list&) = delete;
  fixed_list& operator=(const fixed_list&) = delete;

  std::size_t size() const noexcept { return size_; }
  /// False when the values live on the heap (size > N).
  bool is_inline() const noexcept { return size_ <= N; }

  T* data() noexcept { return is_inline() ? inline_data() : heap_.data(); }
  const T* data() const noexcept { return const_cast<fixed_list*>(this)->data(); }
  T& operator[](std::size_t i) noexcept { return data()[i]; }
  const T& operator[](std::size_t i) const noexcept { return data()[i]; }
  /// The first n values (n <= size()).
  std::span<const T> first(std::size_t n) const noexcept { return {data(), n}; }

 private:
  T* inline_data() noexcept { return std::launder(reinterpret_cast<T*>(inline_)); }

  std::size_t size_;
  alignas(T) std::byte inline_[N * sizeof(T)];
  std::vector<T> heap_;
};

}  // namespace dwsr
