#pragma once
/// \file A sink that keeps live and peak requested bytes per device: the exact
/// memory of a run as dwsr requested it, before any allocator model.

#include <array>
#include <atomic>
#include <cstdint>

#include "dwsr/memory/event.hpp"

namespace dwsr {

/// Live and peak bytes per device. Lock-free, safe to feed from many threads.
class peak_counter {
 public:
  void on_event(const event& e) noexcept {
    auto& slot = per_device_[static_cast<std::size_t>(e.dev)];
    if (e.act == action::alloc) {
      const auto now = slot.live.fetch_add(e.bytes, std::memory_order_relaxed) + e.bytes;
      auto peak = slot.peak.load(std::memory_order_relaxed);
      while (now > peak && !slot.peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
      }
      slot.allocs.fetch_add(1, std::memory_order_relaxed);
    } else {
      slot.live.fetch_sub(e.bytes, std::memory_order_relaxed);
      slot.frees.fetch_add(1, std::memory_order_relaxed);
    }
  }
  /// Bytes alive now on a device.
  std::uint64_t live(device d = device::host) const noexcept { return at(d).live.load(); }
  /// Highest live bytes seen on a device.
  std::uint64_t peak(device d = device::host) const noexcept { return at(d).peak.load(); }
  std::uint64_t allocs(device d = device::host) const noexcept { return at(d).allocs.load(); }
  std::uint64_t frees(device d = device::host) const noexcept { return at(d).frees.load(); }

 private:
  struct counters {
    std::atomic<std::uint64_t> live{0}, peak{0}, allocs{0}, frees{0};
  };
  const counters& at(device d) const noexcept { return per_device_[static_cast<std::size_t>(d)]; }
  std::array<counters, 2> per_device_{};
};

/// Live and peak bytes of one device, fed by one thread at a time: the sink
/// of a single event_bus, which delivers its events under its lock. Plain
/// integers, no atomic read-modify-write per event: what the meta execution's
/// planners count with, millions of events per plan.
class serial_peak_counter {
 public:
  explicit serial_peak_counter(device d = device::host) noexcept : device_(d) {}
  void on_event(const event& e) noexcept {
    if (e.dev != device_) return;
    if (e.act == action::alloc) {
      live_ += e.bytes;
      peak_ = live_ > peak_ ? live_ : peak_;
    } else {
      live_ -= e.bytes;
    }
  }
  std::uint64_t live() const noexcept { return live_; }
  std::uint64_t peak() const noexcept { return peak_; }

 private:
  device device_;
  std::uint64_t live_ = 0, peak_ = 0;
};

}  // namespace dwsr
