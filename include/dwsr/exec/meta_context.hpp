#pragma once
/// \file The symbolic execution: the same allocations and events as the host
/// context, no memory touched and nothing computed (like PyTorch's meta device).

#include <cstdint>

#include "dwsr/exec/context_base.hpp"
#include "dwsr/memory/buffer.hpp"

namespace dwsr {

/// Plans an operator: emits exactly the events of host_context, computes nothing.
class meta_context : public context_base {
 public:
  static constexpr bool computes = false;                ///< operators skip their compute
  static constexpr device memory_device = device::host;  ///< events name the device host_context uses

  explicit meta_context(event_bus& bus, context_options options = {}) : context_base(bus, std::move(options)) {}

  /// Emits the alloc event of `count` elements of T; the buffer has no storage.
  template <class T>
  buffer<T, meta_context> allocate(std::uint64_t count, buffer_role role) {
    return {*this, nullptr, count, admit(count * sizeof(T), memory_device, role)};
  }

  /// Emits the alloc event of at most `count` elements of T, flagged as a bound
  /// (event::bound): how operators whose output size depends on the data plan
  /// it. The budget is checked against the bound.
  template <class T>
  buffer<T, meta_context> allocate_bound(std::uint64_t count, buffer_role role) {
    return {*this, nullptr, count, admit(count * sizeof(T), memory_device, role, true)};
  }

  /// No compute: parallel loops are skipped.
  template <class F>
  void parallel_for(std::uint64_t, F&&, std::uint64_t = 1) {}
  template <class F>
  void compute(F&&) {}

 private:
  template <class, class>
  friend class buffer;
  void release(void*, const event& allocated) noexcept { retire(allocated); }
};

}  // namespace dwsr
