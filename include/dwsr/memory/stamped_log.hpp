#pragma once
/// \file The events of several jobs running at once, in one timeline: each
/// event is stamped under one lock with a strictly increasing time (seconds
/// since the log began), so the record's order is the time order. What a
/// co-location replay (sim/colocate.hpp) is checked against.

#include <chrono>
#include <cmath>
#include <cstddef>
#include <mutex>
#include <vector>

#include "dwsr/memory/event.hpp"

namespace dwsr {

/// A timeline of several jobs' events (see the file comment).
struct stamped_log {
  struct entry {
    double time;      ///< seconds since the log began
    std::size_t job;  ///< which job emitted it
    event e;
  };
  std::mutex lock;
  std::vector<entry> entries;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();

  /// Stamps job `job`'s event `e` now (just after the last entry, on a tie).
  void add(std::size_t job, const event& e) {
    std::lock_guard guard(lock);
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!entries.empty() && t <= entries.back().time) t = std::nextafter(entries.back().time, 1e300);
    entries.push_back({t, job, e});
  }
};

/// The EventSink of one job feeding a shared stamped_log.
struct stamped_sink {
  stamped_log* log;
  std::size_t job;
  void on_event(const event& e) { log->add(job, e); }
};

}  // namespace dwsr
