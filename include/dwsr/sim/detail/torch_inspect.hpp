#pragma once
/// \file Looking inside the PyTorch caching allocator model, for tests and
/// for people: every block by address, and a check of the invariants (links,
/// adjacency, free sets, totals) that every operation must keep.

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "dwsr/sim/allocator_model.hpp"
#include "dwsr/sim/detail/block_arena.hpp"
#include "dwsr/sim/detail/torch_blocks.hpp"

namespace dwsr::sim::detail {

/// One block as seen from outside.
struct torch_block_info {
  std::uint64_t addr = 0, size = 0, requested = 0;
  bool allocated = false, mapped = true, small = false, expandable = false;
  bool segment_start = false;  ///< first block of its segment (no previous block)
};

/// Every block of `h`, by address.
inline std::vector<torch_block_info> torch_block_list(const torch_heap& h) {
  std::vector<torch_block_info> out;
  h.blocks.for_each([&](std::uint32_t, const torch_block& b) {
    out.push_back(
        {b.addr, b.size, b.requested, b.allocated, b.mapped, b.small, b.segment != no_block, b.prev == no_block});
  });
  std::sort(out.begin(), out.end(),
            [](const torch_block_info& a, const torch_block_info& b) { return a.addr < b.addr; });
  return out;
}

/// Checks the invariants of `h` against the model's statistics `s`; throws
/// std::logic_error naming the first broken one.
inline void check_torch_heap(const torch_heap& h, const model_stats& s) {
  auto fail = [](const std::string& what) { throw std::logic_error("torch_cuda_caching_model: " + what); };
  std::uint64_t allocated = 0, mapped = 0;
  std::size_t free_mapped = 0, unmapped = 0;
  const auto& blocks = h.blocks;
  blocks.for_each([&](std::uint32_t i, const torch_block& b) {
    if (b.prev != no_block && (blocks[b.prev].next != i || blocks[b.prev].addr + blocks[b.prev].size != b.addr))
      fail("broken link before block at " + std::to_string(b.addr));
    if (b.next != no_block && blocks[b.next].prev != i) fail("broken link after " + std::to_string(b.addr));
    if (b.allocated) allocated += b.size;
    if (b.mapped) mapped += b.size;
    const torch_pool& p = h.pools[b.small ? 0 : 1];
    if (!b.allocated && b.mapped) {
      ++free_mapped;
      const auto c = p.blocks.lower_bound({b.size, b.addr});
      if (!p.blocks.valid(c) || p.blocks.value(c) != i) fail("free block missing from its pool");
      for (auto n : {b.prev, b.next})
        if (n != no_block && !blocks[n].allocated && blocks[n].mapped) fail("unmerged free neighbours");
    }
    if (!b.mapped) {
      ++unmapped;
      if (b.allocated) fail("allocated unmapped block");
      auto it = p.unmapped.find(b.addr);
      if (it == p.unmapped.end() || it->second != i) fail("unmapped block missing from its pool");
    }
  });
  if (allocated != s.allocated) fail("allocated bytes disagree with the blocks");
  if (mapped != s.reserved) fail("reserved bytes disagree with the segments");
  if (free_mapped != h.pools[0].blocks.size() + h.pools[1].blocks.size()) fail("stale free blocks in a pool");
  if (unmapped != h.pools[0].unmapped.size() + h.pools[1].unmapped.size()) fail("stale unmapped blocks");
}

}  // namespace dwsr::sim::detail
