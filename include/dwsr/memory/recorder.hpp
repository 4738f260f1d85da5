#pragma once
/// \file A sink that keeps every event, in the order received.

#include <mutex>
#include <vector>

#include "dwsr/memory/event.hpp"

namespace dwsr {

/// Records events. Safe to feed from several threads; when fed by an event_bus
/// the order is the sequence order.
class recorder {
 public:
  void on_event(const event& e) {
    std::lock_guard lock(mutex_);
    events_.push_back(e);
  }
  /// The events so far (call when no execution is feeding the recorder).
  const std::vector<event>& events() const noexcept { return events_; }
  /// A copy of the events so far, safe while executions feed the recorder.
  std::vector<event> snapshot() const {
    std::lock_guard lock(mutex_);
    return events_;
  }
  /// How many events so far (safe while executions feed the recorder).
  std::size_t size() const {
    std::lock_guard lock(mutex_);
    return events_.size();
  }
  void clear() {
    std::lock_guard lock(mutex_);
    events_.clear();
  }

 private:
  mutable std::mutex mutex_;
  std::vector<event> events_;
};

}  // namespace dwsr
