#pragma once
/// \file Expandable segments of the PyTorch caching allocator model
/// (expandable_segments:True): per pool, a virtual address range reserved once
/// (1 1/8 of the device's memory) and mapped page by page (2 MiB pages for the
/// small pool, the large segment size for the large one) as requests need
/// them; empty_cache unmaps the whole free pages. An unmapped stretch of a
/// range is a block with mapped = false, kept in its pool's `unmapped` set;
/// a request takes mapped free space first and maps only what it lacks.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "dwsr/sim/allocator_model.hpp"
#include "dwsr/sim/detail/block_arena.hpp"
#include "dwsr/sim/detail/torch_blocks.hpp"
#include "dwsr/sim/detail/torch_config.hpp"

namespace dwsr::sim::detail {

/// The expandable segments of one device.
class torch_expandable {
 public:
  /// Segments whose large-pool pages are `large_page` bytes.
  explicit torch_expandable(std::uint64_t large_page) : large_page_(large_page) {}

  /// A free mapped block of at least `size` bytes in pool p, out of the free
  /// set, mapping pages (and reserving a new range) as needed; no_block when
  /// the device cannot map them.
  std::uint32_t allocate(torch_heap& h, model_stats& s, torch_pool& p, std::uint64_t size) {
    auto c = find(h, s, p, size);
    if (c == no_block) return no_block;
    if (!h.blocks[c].mapped && !map(h, s, p, c, std::min(h.blocks[c].size, size))) return no_block;
    while (h.blocks[c].size < size) {  // free, then unmapped: map more and merge
      const auto n = h.blocks[c].next;
      if (n == no_block || h.blocks[n].mapped) return no_block;
      if (!map(h, s, p, n, std::min(size - h.blocks[c].size, h.blocks[n].size))) return no_block;
      c = n;
    }
    h.erase_free(p, c);
    return c;
  }

  /// Unmaps the whole pages inside free block b; the partial pages at its ends
  /// stay mapped free blocks.
  void unmap(torch_heap& h, model_stats& s, torch_pool& p, std::uint32_t b) {
    const auto& seg = segments_[h.blocks[b].segment];
    const auto offset = h.blocks[b].addr - seg.base;
    const auto first = (offset + seg.page - 1) / seg.page, last = (offset + h.blocks[b].size) / seg.page;
    if (first >= last) return;
    h.erase_free(p, b);
    const auto start = seg.base + first * seg.page, bytes = (last - first) * seg.page;
    if (const auto before = start - h.blocks[b].addr; before > 0) h.insert_free(p, split_before(h.blocks, b, before));
    if (h.blocks[b].size > bytes) h.insert_free(p, split_after(h.blocks, b, bytes));
    h.blocks[b].mapped = false;
    h.try_merge(p, b, h.blocks[b].prev);
    h.try_merge(p, b, h.blocks[b].next);
    p.unmapped.emplace(h.blocks[b].addr, b);
    s.reserved -= bytes;
    ++s.system_frees;
  }

  /// Gives back the address range of b's segment, of which b is the only,
  /// unmapped block.
  void release(torch_heap& h, model_stats& s, torch_pool& p, std::uint32_t b) {
    const auto& seg = segments_[h.blocks[b].segment];
    p.unmapped.erase(h.blocks[b].addr);
    h.va.release(seg.base, seg.size);
    --s.segments;
    h.blocks.destroy(b);
  }

 private:
  struct segment {
    std::uint64_t base = 0, size = 0, page = 0;
  };

  // The first block (free or unmapped) from which `size` bytes of free and
  // unmapped space follow, lowest address first; else a new segment's range.
  std::uint32_t find(torch_heap& h, model_stats& s, torch_pool& p, std::uint64_t size) {
    auto fits = [&](std::uint32_t b) {
      std::uint64_t bytes = 0;
      for (; bytes < size && b != no_block && !h.blocks[b].allocated; b = h.blocks[b].next) bytes += h.blocks[b].size;
      return bytes >= size;
    };
    for (const auto& [addr, u] : p.unmapped) {
      auto c = u;
      const auto prev = h.blocks[u].prev;
      if (prev != no_block && !h.blocks[prev].allocated) c = prev;
      if (fits(c)) return c;
    }
    // A new segment reserves 1 1/8 of the device's memory of address space (2^47 B without a capacity).
    const auto page = p.small ? torch_small_buffer : large_page_;
    const std::uint64_t space = h.capacity == unlimited ? (1ull << 47) : h.capacity + h.capacity / 8;
    const auto va_size = (space + page - 1) / page * page;
    if (size > va_size) return no_block;
    segments_.push_back({h.va.allocate(va_size), va_size, page});
    torch_block nb;
    nb.addr = segments_.back().base;
    nb.size = va_size;
    nb.mapped = false;
    nb.small = p.small;
    nb.segment = static_cast<std::uint32_t>(segments_.size() - 1);
    const auto b = h.blocks.make(nb);
    p.unmapped.emplace(nb.addr, b);
    ++s.segments;
    return b;
  }

  // Maps the pages covering the first `size` bytes of unmapped block b.
  bool map(torch_heap& h, model_stats& s, torch_pool& p, std::uint32_t b, std::uint64_t size) {
    const auto page = segments_[h.blocks[b].segment].page;
    const auto bytes = std::min((size + page - 1) / page * page, h.blocks[b].size);
    if (!h.device_has(s, bytes)) return false;  // cuMemCreate fails; pages created so far are released
    p.unmapped.erase(h.blocks[b].addr);
    if (bytes < h.blocks[b].size) {
      const auto r = split_after(h.blocks, b, bytes);  // stays unmapped
      p.unmapped.emplace(h.blocks[r].addr, r);
    }
    h.blocks[b].mapped = true;
    h.try_merge(p, b, h.blocks[b].prev);
    h.try_merge(p, b, h.blocks[b].next);
    h.insert_free(p, b);
    s.reserved += bytes;
    ++s.system_allocs;
    update_peaks(s);
    return true;
  }

  std::uint64_t large_page_;
  std::vector<segment> segments_;
};

}  // namespace dwsr::sim::detail
