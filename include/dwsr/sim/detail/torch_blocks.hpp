#pragma once
/// \file The memory of the PyTorch caching allocator model: its blocks (pieces
/// of segments, linked to their address neighbours), its two pools (small and
/// large) with their free blocks, the device's addresses and capacity, and the
/// block operations that malloc, free, the release paths and expandable
/// segments share.

#include <array>
#include <cstdint>
#include <map>

#include "dwsr/sim/allocator_model.hpp"
#include "dwsr/sim/detail/address_space.hpp"
#include "dwsr/sim/detail/block_arena.hpp"
#include "dwsr/sim/detail/ordered_blocks.hpp"
#include "dwsr/sim/detail/torch_config.hpp"

namespace dwsr::sim::detail {

/// A block: a piece of a segment, or of an expandable segment's address range.
struct torch_block {
  std::uint64_t addr = 0, size = 0, requested = 0;
  std::uint64_t gc_base = 0;  ///< the pool's clock when it became free (its age is measured from there)
  std::uint32_t prev = no_block, next = no_block;
  std::uint32_t segment = no_block;  ///< its expandable segment, or no_block
  bool allocated = false, mapped = true, small = false;
};

/// A pool: its free mapped blocks, its unmapped blocks, and the GC's clock.
struct torch_pool {
  ordered_blocks blocks;                            ///< free mapped blocks by (size, address)
  std::map<std::uint64_t, std::uint32_t> unmapped;  ///< unmapped blocks of expandable segments, by address
  std::uint64_t free_calls = 0;                     ///< get_free_block calls: the clock of the GC's block ages
  bool small = false;
};

/// Blocks, pools, addresses and capacity of one device.
struct torch_heap {
  block_arena<torch_block> blocks;
  std::array<torch_pool, 2> pools;  ///< small, large
  address_space va{address_space::default_base, torch_small_buffer};
  std::uint64_t capacity;  ///< device memory the allocator may take

  explicit torch_heap(std::uint64_t device_capacity) : capacity(device_capacity) { pools[0].small = true; }

  /// The pool of block b.
  torch_pool& pool_of(std::uint32_t b) noexcept { return pools[blocks[b].small ? 0 : 1]; }
  /// Whether the device has `n` more bytes beyond `reserved`.
  bool device_has(const model_stats& s, std::uint64_t n) const noexcept {
    return s.reserved <= capacity && n <= capacity - s.reserved;
  }
  /// Whether block b shares its segment with other blocks.
  bool is_split(std::uint32_t b) const noexcept { return blocks[b].prev != no_block || blocks[b].next != no_block; }

  /// Puts free mapped block b into its pool's free set; its age starts now.
  void insert_free(torch_pool& p, std::uint32_t b) {
    blocks[b].gc_base = p.free_calls;
    p.blocks.insert({blocks[b].size, blocks[b].addr}, b);
  }
  /// Takes block b out of its pool's free set.
  void erase_free(torch_pool& p, std::uint32_t b) { p.blocks.erase(block_key{blocks[b].size, blocks[b].addr}); }

  /// Merges `src`, a neighbour of `dst`, into dst when src is free and mapped
  /// as dst is (src leaves its pool's sets and is destroyed).
  void try_merge(torch_pool& p, std::uint32_t dst, std::uint32_t src) {
    if (src == no_block) return;
    const torch_block& s = blocks[src];
    if (s.allocated || s.mapped != blocks[dst].mapped) return;
    if (s.mapped)
      erase_free(p, src);
    else
      p.unmapped.erase(s.addr);
    if (blocks[dst].prev == src)
      absorb_prev(blocks, dst);
    else
      absorb_next(blocks, dst);
  }

  /// cudaFree of free block b, a whole segment.
  void release_block(model_stats& s, torch_pool& p, std::uint32_t b) {
    erase_free(p, b);
    release_segment(s, va, blocks[b].addr, blocks[b].size);
    blocks.destroy(b);
  }
};

}  // namespace dwsr::sim::detail
