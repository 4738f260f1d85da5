#pragma once
/// \file What the real and the meta context share: the event bus, the node
/// being executed, the thread count, and the memory budget. Keeping this in one
/// place is what makes both contexts emit identical events.

#include <atomic>
#include <cstdint>
#include <limits>
#include <string>

#include "dwsr/core/limits.hpp"
#include "dwsr/error.hpp"
#include "dwsr/memory/event_bus.hpp"

namespace dwsr {

/// Settings of an execution context.
struct context_options {
  std::size_t threads = 1;                                           ///< T: per-thread scratch is sized by this
  std::uint64_t budget = std::numeric_limits<std::uint64_t>::max();  ///< bytes; exceeding throws out_of_memory
  std::string name = "worker 0";                                     ///< named in out_of_memory messages
  /// When set and true, the run stops with dwsr::cancelled at its next
  /// allocation or parallel piece (host contexts); buffers are freed as usual.
  const std::atomic<bool>* cancel = nullptr;
};

class context_base {
 public:
  context_base(event_bus& bus, context_options options) : bus_(&bus), options_(std::move(options)) {
    if (options_.threads == 0 || options_.threads > max_threads)
      throw invalid_input("thread count " + std::to_string(options_.threads) + "; expected 1 to " +
                          std::to_string(max_threads) + " threads");
  }
  context_base(const context_base&) = delete;
  context_base& operator=(const context_base&) = delete;

  /// T, the number of threads an operator may use (and size scratch for).
  std::size_t threads() const noexcept { return options_.threads; }
  /// The graph node whose allocations are being emitted.
  node_id node() const noexcept { return node_; }
  void set_node(node_id n) noexcept { node_ = n; }
  /// Bytes alive through this context now.
  std::uint64_t live() const noexcept { return live_.load(std::memory_order_relaxed); }
  const context_options& options() const noexcept { return options_; }
  event_bus& bus() const noexcept { return *bus_; }
  /// Throws dwsr::cancelled when the caller has asked the run to stop.
  void check_cancelled() const {
    if (options_.cancel && options_.cancel->load(std::memory_order_relaxed))
      throw cancelled(options_.name + ": stopped at the caller's request");
  }

 protected:
  /// Reserves `bytes` against the budget, then emits the alloc event (`bound`:
  /// the bytes are an upper bound, see event::bound).
  event admit(std::uint64_t bytes, device dev, buffer_role role, bool bound = false) {
    check_cancelled();
    auto now = live_.load(std::memory_order_relaxed);
    do {
      if (bytes > options_.budget || now > options_.budget - bytes) over_budget(bytes, now, role);
      if (bus_->one_thread()) {  // no other thread allocates: no atomic read-modify-write
        live_.store(now + bytes, std::memory_order_relaxed);
        break;
      }
    } while (!live_.compare_exchange_weak(now, now + bytes, std::memory_order_relaxed));
    return bus_->alloc(bytes, dev, role, node_, bound);
  }
  void retire(const event& allocated) noexcept {
    bus_->free(allocated);
    if (bus_->one_thread())
      live_.store(live_.load(std::memory_order_relaxed) - allocated.bytes, std::memory_order_relaxed);
    else
      live_.fetch_sub(allocated.bytes, std::memory_order_relaxed);
  }
  /// Emits the alloc event of memory the budget does not cover (a CUDA
  /// context's pinned host staging: its budget is the device's memory).
  event admit_outside_budget(std::uint64_t bytes, device dev, buffer_role role) {
    check_cancelled();
    return bus_->alloc(bytes, dev, role, node_, false);
  }
  void retire_outside_budget(const event& allocated) noexcept { bus_->free(allocated); }

 private:
  [[noreturn]] void over_budget(std::uint64_t bytes, std::uint64_t now, buffer_role role) const {
    throw out_of_memory(options_.name + ", node " + std::to_string(node_) + ": " + std::string(name_of(role)) +
                            " buffer of " + std::to_string(bytes) + " bytes with " + std::to_string(now) +
                            " bytes live exceeds the budget of " + std::to_string(options_.budget) + " bytes",
                        bytes, options_.budget);
  }

  event_bus* bus_;
  context_options options_;
  node_id node_ = 0;
  std::atomic<std::uint64_t> live_{0};
};

}  // namespace dwsr
