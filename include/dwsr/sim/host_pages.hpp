#pragma once
/// \file The host_pages model: what the OS holds for dwsr's host context, which
/// maps every buffer on its own, in whole pages, populated at once, and unmaps
/// it when freed (exec/host_context.hpp). Reserved = the live buffers, each
/// rounded up to the page size; no cache, no fragmentation. Like the exact
/// model it keeps no per-buffer state: a free carries the bytes of its alloc.

#include <cstdint>
#include <optional>
#include <string_view>

#include "dwsr/memory/event.hpp"
#include "dwsr/sim/allocator_model.hpp"

namespace dwsr::sim {

/// Live buffers in whole pages (4096 bytes by default, x86-64 Linux's), with
/// an optional capacity.
class host_pages_model {
 public:
  static constexpr std::string_view name = "host_pages";

  explicit host_pages_model(std::optional<std::uint64_t> capacity = {}, std::uint64_t page = 4096)
      : capacity_(capacity.value_or(unlimited)), page_(page) {}

  void on_event(const event& e) noexcept {
    if (oom_) return;
    if (e.act == action::alloc)
      alloc(e.buffer, e.bytes);
    else
      free(e.buffer, e.bytes);
  }

  /// Maps `bytes` in whole pages; false when they would exceed the capacity.
  bool alloc(std::uint64_t /*id*/, std::uint64_t bytes) noexcept {
    const auto held = pages(bytes);
    if (held > capacity_ - reserved_) {
      oom_ = true;
      oom_bytes_ = bytes;
      return false;
    }
    requested_ += bytes;
    reserved_ += held;
    peak_requested_ = requested_ > peak_requested_ ? requested_ : peak_requested_;
    peak_reserved_ = reserved_ > peak_reserved_ ? reserved_ : peak_reserved_;
    ++allocs_;
    if (bytes) ++mappings_;
    return true;
  }
  /// Unmaps the pages of the matching alloc.
  void free(std::uint64_t /*id*/, std::uint64_t bytes) noexcept {
    requested_ -= bytes;
    reserved_ -= pages(bytes);
    ++frees_;
    if (bytes) --mappings_;
  }

  std::uint64_t allocated() const noexcept { return reserved_; }
  std::uint64_t reserved() const noexcept { return reserved_; }
  bool oom() const noexcept { return oom_; }

  /// Segments are the live mappings; there are no free blocks.
  model_stats stats() const noexcept {
    model_stats s;
    s.requested = requested_;
    s.allocated = s.reserved = reserved_;
    s.peak_requested = peak_requested_;
    s.peak_allocated = s.peak_reserved = peak_reserved_;
    s.segments = mappings_;
    s.allocs = s.system_allocs = allocs_;
    s.frees = s.system_frees = frees_;
    s.oom = oom_;
    s.oom_bytes = oom_bytes_;
    return s;
  }

 private:
  std::uint64_t pages(std::uint64_t bytes) const noexcept { return (bytes + page_ - 1) / page_ * page_; }

  std::uint64_t capacity_;
  std::uint64_t page_;
  std::uint64_t requested_ = 0, reserved_ = 0;
  std::uint64_t peak_requested_ = 0, peak_reserved_ = 0;
  std::uint64_t allocs_ = 0, frees_ = 0, mappings_ = 0;
  std::uint64_t oom_bytes_ = 0;
  bool oom_ = false;
};

}  // namespace dwsr::sim
