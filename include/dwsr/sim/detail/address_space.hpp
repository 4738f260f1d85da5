#pragma once
/// \file A model of the addresses a device allocator (cudaMalloc, cuMemAddressReserve)
/// returns: the lowest free range that fits, in a growing address space.
/// Allocator models need addresses only to order blocks (best fit breaks ties
/// by the lowest address) and to know which blocks are neighbours, so the model
/// only has to be deterministic and plausible: freed ranges are reused first
/// fit from the bottom, as the CUDA driver tends to. Models take and give back
/// whole segments through acquire_segment and release_segment, which keep
/// their reserved bytes and counts.

#include <cstdint>
#include <iterator>
#include <map>

#include "dwsr/sim/allocator_model.hpp"

namespace dwsr::sim::detail {

/// First-fit address allocator over [base, infinity).
class address_space {
 public:
  /// Where device addresses start in the models (only their order matters).
  static constexpr std::uint64_t default_base = 0x7f0000000000ull;

  explicit address_space(std::uint64_t base = default_base, std::uint64_t alignment = 512)
      : alignment_(alignment), top_(base) {}

  /// Returns the lowest address of a free range of `size` bytes.
  std::uint64_t allocate(std::uint64_t size) {
    size = round(size);
    for (auto it = holes_.begin(); it != holes_.end(); ++it) {
      if (it->second < size) continue;
      const auto addr = it->first;
      const auto rest = it->second - size;
      holes_.erase(it);
      if (rest) holes_.emplace(addr + size, rest);
      return addr;
    }
    const auto addr = top_;
    top_ += size;
    return addr;
  }

  /// Takes [addr, addr + size), which must be free: a range the device handed
  /// out before the model started (the segments of a recording's start).
  /// Returns false when part of it is taken already.
  bool claim(std::uint64_t addr, std::uint64_t size) {
    size = round(size);
    if (addr >= top_) {
      if (addr > top_) holes_.emplace(top_, addr - top_);
      top_ = addr + size;
      return true;
    }
    auto it = holes_.upper_bound(addr);
    if (it == holes_.begin()) return false;
    --it;
    const auto [start, length] = *it;
    if (addr + size > start + length) return false;
    holes_.erase(it);
    if (addr > start) holes_.emplace(start, addr - start);
    if (start + length > addr + size) holes_.emplace(addr + size, start + length - addr - size);
    return true;
  }

  /// Returns a range obtained from allocate().
  void release(std::uint64_t addr, std::uint64_t size) {
    size = round(size);
    auto next = holes_.lower_bound(addr);
    if (next != holes_.end() && addr + size == next->first) {  // join the following hole
      size += next->second;
      next = holes_.erase(next);
    }
    if (next != holes_.begin()) {  // join the preceding hole
      auto prev = std::prev(next);
      if (prev->first + prev->second == addr) {
        addr = prev->first;
        size += prev->second;
        holes_.erase(prev);
      }
    }
    if (addr + size == top_)
      top_ = addr;
    else
      holes_.emplace(addr, size);
  }

 private:
  std::uint64_t round(std::uint64_t n) const noexcept { return (n + alignment_ - 1) / alignment_ * alignment_; }

  std::uint64_t alignment_;
  std::uint64_t top_;
  std::map<std::uint64_t, std::uint64_t> holes_;  // address -> size, coalesced
};

/// A new segment of `size` bytes from the device (cudaMalloc): returns its
/// address and adds it to the model's reserved bytes, peaks and counts.
inline std::uint64_t acquire_segment(model_stats& s, address_space& va, std::uint64_t size) {
  const auto addr = va.allocate(size);
  s.reserved += size;
  ++s.segments;
  ++s.system_allocs;
  update_peaks(s);
  return addr;
}

/// Gives the segment [addr, addr + size) back to the device (cudaFree).
inline void release_segment(model_stats& s, address_space& va, std::uint64_t addr, std::uint64_t size) {
  va.release(addr, size);
  s.reserved -= size;
  --s.segments;
  ++s.system_frees;
}

}  // namespace dwsr::sim::detail
