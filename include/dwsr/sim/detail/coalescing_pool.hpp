#pragma once
/// \file Blocks carved from address-ordered segments that merge with their free
/// neighbours when freed: the bookkeeping CuPy's and RMM's pools share. An
/// allocation takes the best fit (the smallest free block that fits, the lowest
/// address on ties) or else a new segment from the model, and hands out its
/// front; the rest stays free.

#include <cstdint>
#include <string_view>

#include "dwsr/sim/allocator_model.hpp"
#include "dwsr/sim/detail/address_space.hpp"
#include "dwsr/sim/detail/block_arena.hpp"
#include "dwsr/sim/detail/held_blocks.hpp"
#include "dwsr/sim/detail/ordered_blocks.hpp"

namespace dwsr::sim::detail {

/// One block of a pool's segment, linked to its address neighbours.
struct pool_block {
  std::uint64_t addr = 0, size = 0, requested = 0;
  std::uint32_t prev = no_block, next = no_block;
  bool allocated = false;
};

/// A pool's blocks, its free blocks by (size, address), who holds what, and
/// the device addresses of its segments.
struct coalescing_pool {
  block_arena<pool_block> blocks;
  ordered_blocks free;
  held_blocks owners;
  address_space va;

  /// A pool whose errors name `model`.
  explicit coalescing_pool(std::string_view model) : owners(model) {}

  /// alloc(id, bytes) of a block of `size` bytes (bytes rounded by the model):
  /// the best fit, or else grow(size), which returns a new free block of at
  /// least `size` bytes (not in the free set) or no_block when out of memory.
  template <class Grow>
  bool allocate(model_stats& s, std::uint64_t id, std::uint64_t bytes, std::uint64_t size, Grow&& grow) {
    if (owners.open(s, id, bytes)) return true;
    std::uint32_t b = take_best_fit(size);
    if (b == no_block) b = grow(size);
    if (b == no_block) return owners.fail(s, id, bytes);
    if (blocks[b].size > size) {  // the remainder stays free, after the block
      const auto r = split_after(blocks, b, size);
      free.insert({blocks[r].size, blocks[r].addr}, r);
    }
    owners.hand_out(s, blocks, id, b, bytes);
    return true;
  }

  /// A new segment of `size` bytes from the device (cudaMalloc), as one free
  /// block outside the free set; the caller has checked that it fits.
  std::uint32_t new_segment(model_stats& s, std::uint64_t size) {
    pool_block b;
    b.addr = acquire_segment(s, va, size);
    b.size = size;
    return blocks.make(b);
  }

  /// Gives the free, unsplit block b (a whole segment) back to the device.
  void free_segment(model_stats& s, std::uint32_t b) {
    free.erase(block_key{blocks[b].size, blocks[b].addr});
    release_segment(s, va, blocks[b].addr, blocks[b].size);
    blocks.destroy(b);
  }

  /// Frees buffer `id`: its block merges with free neighbours of its segment
  /// (never across segments: they are not linked) and becomes free.
  void release(model_stats& s, std::uint64_t id) {
    auto b = owners.take_back(s, blocks, id);
    if (b == no_block) return;
    if (const auto n = blocks[b].next; n != no_block && !blocks[n].allocated) {
      free.erase(block_key{blocks[n].size, blocks[n].addr});
      absorb_next(blocks, b);
    }
    if (const auto p = blocks[b].prev; p != no_block && !blocks[p].allocated) {
      free.erase(block_key{blocks[p].size, blocks[p].addr});
      absorb_next(blocks, p);
      b = p;
    }
    free.insert({blocks[b].size, blocks[b].addr}, b);
  }

  /// The model's statistics with the pool's free blocks: everything reserved
  /// and not handed out is free.
  model_stats stats(const model_stats& s) const {
    model_stats out = s;
    out.largest_free = free.empty() ? 0 : free.largest().size;
    out.total_free = s.reserved - s.allocated;
    return out;
  }

 private:
  // Removes and returns the smallest free block of at least `size` bytes
  // (lowest address among equals), or no_block.
  std::uint32_t take_best_fit(std::uint64_t size) {
    const auto c = free.lower_bound({size, 0});
    if (!free.valid(c)) return no_block;
    const auto b = free.value(c);
    free.erase(c);
    return b;
  }
};

}  // namespace dwsr::sim::detail
