#pragma once
/// \file What every allocator model shares: its statistics, the accessors the
/// AllocatorModel concept reads, and on_event, which ignores everything after
/// an OOM (the program would have stopped there) and routes allocs and frees.

#include <cstdint>

#include "dwsr/memory/event.hpp"
#include "dwsr/sim/allocator_model.hpp"

namespace dwsr::sim::detail {

/// The base of model `Model` (CRTP): Model provides alloc, free and stats.
template <class Model>
class model_base {
 public:
  /// Feeds one event: alloc(buffer, bytes) or free(buffer, bytes).
  void on_event(const event& e) {
    if (s_.oom) return;
    auto& model = static_cast<Model&>(*this);
    if (e.act == action::alloc)
      model.alloc(e.buffer, e.bytes);
    else
      model.free(e.buffer, e.bytes);
  }

  /// Live bytes handed out, after the model's rounding.
  std::uint64_t allocated() const noexcept { return s_.allocated; }
  /// Bytes held from the device or the OS.
  std::uint64_t reserved() const noexcept { return s_.reserved; }
  /// Whether an allocation failed (the model then ignores the rest of the stream).
  bool oom() const noexcept { return s_.oom; }

 protected:
  model_stats s_;  ///< current values, peaks and counts
};

}  // namespace dwsr::sim::detail
