#pragma once
/// \file An independent probe of the process's memory, read from the kernel:
/// the peak resident set size above the resident size when the probe started.
/// It checks dwsr's own accounting from outside (it never reads event sizes).
///
/// The kernel's own high-water mark (VmHWM) is kept from per-thread counters
/// that are synced lazily, so it can read a few hundred KiB below the true
/// peak. The probe therefore also samples the exact figure, summed from the
/// page tables (/proc/self/smaps_rollup), whenever sample() is called, and
/// rss_sampler calls it at each local peak of an event stream's live bytes.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "dwsr/memory/event.hpp"

namespace dwsr {

/// A figure of this process from a /proc/self file ("VmRSS:", "VmHWM:" in
/// status, "Rss:" in smaps_rollup), in bytes; 0 where the kernel has none.
inline std::uint64_t proc_self_bytes(const char* file, const char* key) {
  std::FILE* f = std::fopen(file, "r");
  if (!f) return 0;
  char line[256];
  std::uint64_t kib = 0;
  const auto len = std::strlen(key);
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, key, len) == 0) {
      kib = std::strtoull(line + len, nullptr, 10);
      break;
    }
  std::fclose(f);
  return kib * 1024;
}

/// The process's resident bytes now, exact (page tables), or VmRSS where
/// smaps_rollup is missing (Linux < 4.14).
inline std::uint64_t resident_bytes() {
  const auto exact = proc_self_bytes("/proc/self/smaps_rollup", "Rss:");
  return exact ? exact : proc_self_bytes("/proc/self/status", "VmRSS:");
}

/// Measures the peak-RSS increase over a region: resets the kernel's
/// high-water mark to the current RSS first (Linux >= 4.0), so each region is
/// measured on its own. Thread-safe.
class rss_probe {
 public:
  rss_probe() {
    if (std::FILE* f = std::fopen("/proc/self/clear_refs", "w")) {
      std::fputs("5", f);  // 5: reset the peak RSS to the current RSS
      std::fclose(f);
    }
    start_ = resident_bytes();
    peak_ = start_;
  }
  /// Reads the exact resident bytes now and keeps the highest.
  void sample() noexcept {
    const auto now = resident_bytes();
    auto seen = peak_.load(std::memory_order_relaxed);
    while (now > seen && !peak_.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
    }
  }
  /// Resident bytes when the probe started.
  std::uint64_t start() const noexcept { return start_; }
  /// Peak RSS since construction (the higher of the samples and the kernel's
  /// high-water mark) minus the RSS at construction.
  std::uint64_t increase() const {
    const auto hwm = proc_self_bytes("/proc/self/status", "VmHWM:");
    const auto peak = std::max(hwm, peak_.load(std::memory_order_relaxed));
    return peak > start_ ? peak - start_ : 0;
  }

 private:
  std::uint64_t start_ = 0;
  std::atomic<std::uint64_t> peak_{0};
};

/// An event sink for one event stream (one worker's): samples a probe at each
/// local peak of that stream's live bytes, the first free after an allocation.
/// Reading the page tables costs tens of microseconds, so frees in a row
/// sample once.
class rss_sampler {
 public:
  explicit rss_sampler(rss_probe& probe) noexcept : probe_(&probe) {}
  void on_event(const event& e) noexcept {
    if (e.act == action::alloc)
      rising_ = true;
    else if (std::exchange(rising_, false))
      probe_->sample();
  }

 private:
  rss_probe* probe_;
  bool rising_ = false;  ///< an allocation since the last sample
};

}  // namespace dwsr
