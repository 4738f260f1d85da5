#pragma once
/// \file Numbers events and buffers and delivers them to a sink, one at a time.

#include <cstdint>
#include <mutex>

#include "dwsr/memory/event.hpp"
#include "dwsr/memory/event_sink.hpp"

namespace dwsr {

/// The single point through which a context's allocations become events.
/// Sequence numbers and buffer ids are assigned under one lock and the sink is
/// called under it too, so sinks see a gap-free stream in sequence order even
/// when many threads allocate at once.
class event_bus {
 public:
  explicit event_bus(event_sink_ref sink = {}) : sink_(sink) {}
  event_bus(const event_bus&) = delete;
  event_bus& operator=(const event_bus&) = delete;

  /// Emits an alloc event for a new buffer and returns it (its buffer id is
  /// new); `bound` marks bytes that are an upper bound (event::bound).
  event alloc(std::uint64_t bytes, device dev, buffer_role role, node_id node, bool bound = false) {
    std::lock_guard lock(mutex_);
    event e{next_seq_++, action::alloc, dev, role, node, next_buffer_++, bytes, bound};
    sink_.on_event(e);
    return e;
  }
  /// Emits the free matching an earlier alloc event.
  void free(const event& allocated) {
    std::lock_guard lock(mutex_);
    event e = allocated;
    e.seq = next_seq_++;
    e.act = action::free;
    sink_.on_event(e);
  }
  /// Number of events emitted so far.
  std::uint64_t events() const {
    std::lock_guard lock(mutex_);
    return next_seq_;
  }

 private:
  mutable std::mutex mutex_;
  event_sink_ref sink_;
  std::uint64_t next_seq_ = 0;
  std::uint64_t next_buffer_ = 1;
};

}  // namespace dwsr
