#pragma once
/// \file The symbolic CUDA execution: the events of cuda_context (device
/// buffers, pinned host staging, library work areas at their planned size),
/// no device touched and nothing computed. It needs no GPU and no CUDA
/// runtime, so plans for a GPU are made anywhere.

#include <cstdint>

#include "dwsr/exec/context_base.hpp"
#include "dwsr/memory/buffer.hpp"

namespace dwsr {

/// Plans a CUDA operator: emits exactly the events of cuda_context, computes nothing.
class cuda_meta_context : public context_base {
 public:
  static constexpr bool computes = false;                ///< operators skip their compute
  static constexpr device memory_device = device::cuda;  ///< events name the device cuda_context uses

  explicit cuda_meta_context(event_bus& bus, context_options options = {}) : context_base(bus, std::move(options)) {}

  /// Emits the alloc event of `count` elements of T on the device.
  template <class T>
  buffer<T, cuda_meta_context> allocate(std::uint64_t count, buffer_role role) {
    return {*this, nullptr, count, admit(count * sizeof(T), device::cuda, role)};
  }
  /// Emits the alloc event of `count` elements of T of pinned host staging (outside the budget).
  template <class T>
  buffer<T, cuda_meta_context> allocate_host(std::uint64_t count, buffer_role role) {
    return {*this, nullptr, count, admit_outside_budget(count * sizeof(T), device::host, role)};
  }

  /// No compute: launches, copies and library calls are skipped.
  template <class F>
  void parallel_for(std::uint64_t, F&&, std::uint64_t = 1) {}
  template <class F>
  void compute(F&&) {}
  void copy(void*, const void*, std::uint64_t) {}
  void synchronize() const {}

 private:
  template <class, class>
  friend class buffer;
  void release(void*, const event& allocated) noexcept {
    if (allocated.dev == device::cuda)
      retire(allocated);
    else
      retire_outside_budget(allocated);
  }
};

}  // namespace dwsr
