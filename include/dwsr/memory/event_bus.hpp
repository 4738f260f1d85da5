#pragma once
/// \file Numbers events and buffers and delivers them to a sink, one at a time.

#include <cstdint>
#include <mutex>
#include <type_traits>

#include "dwsr/memory/event.hpp"
#include "dwsr/memory/event_sink.hpp"

namespace dwsr {

/// Which threads emit through a bus.
enum class emitters : std::uint8_t {
  any_thread,  ///< several may at once: the bus takes a lock
  one_thread,  ///< one only, the creator's promise (a meta execution on a bus of its own): no lock
};

/// The single point through which a context's allocations become events.
/// Sequence numbers and buffer ids are assigned under one lock and the sink is
/// called under it too, so sinks see a gap-free stream in sequence order even
/// when many threads allocate at once. A bus that one thread uses skips the
/// lock: planning runs millions of meta executions, each on one thread.
class event_bus {
 public:
  explicit event_bus(event_sink_ref sink = {}, emitters who = emitters::any_thread) : sink_(sink), who_(who) {}
  event_bus(const event_bus&) = delete;
  event_bus& operator=(const event_bus&) = delete;

  /// Emits an alloc event for a new buffer and returns it (its buffer id is
  /// new); `bound` marks bytes that are an upper bound (event::bound).
  event alloc(std::uint64_t bytes, device dev, buffer_role role, node_id node, bool bound = false) {
    return locked_if_shared([&] {
      event e{next_seq_++, action::alloc, dev, role, node, next_buffer_++, bytes, bound};
      sink_.on_event(e);
      return e;
    });
  }
  /// Emits the free matching an earlier alloc event.
  void free(const event& allocated) {
    locked_if_shared([&] {
      event e = allocated;
      e.seq = next_seq_++;
      e.act = action::free;
      sink_.on_event(e);
    });
  }
  /// Number of events emitted so far.
  std::uint64_t events() const {
    return locked_if_shared([&] { return next_seq_; });
  }
  /// Whether one thread only emits through this bus.
  bool one_thread() const noexcept { return who_ == emitters::one_thread; }

 private:
  /// f() under the lock, or without it on a one-thread bus: two branches, not
  /// an empty unique_lock made and destroyed per event (1 % of a plan's
  /// instructions).
  template <class F>
  std::invoke_result_t<F&> locked_if_shared(F&& f) const {
    if (one_thread()) return f();
    const std::lock_guard lock(mutex_);
    return f();
  }

  mutable std::mutex mutex_;
  event_sink_ref sink_;
  emitters who_;
  std::uint64_t next_seq_ = 0;
  std::uint64_t next_buffer_ = 1;
};

}  // namespace dwsr
