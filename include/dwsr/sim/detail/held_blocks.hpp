#pragma once
/// \file Which block each live buffer of a block-based model holds, and the
/// accounting of handing a block out and taking it back: the part of alloc
/// and free that glibc's, PyTorch's, CuPy's and RMM's models share. Buffer
/// ids are checked by detail/live_buffers.hpp; a model's events are numbered
/// by its allocs and frees so far. A zero-byte buffer holds no block (dwsr's
/// contexts and those allocators make none).
///
/// Blocks (in a block_arena) need the fields size, requested and allocated.

#include <cstdint>
#include <optional>
#include <string_view>

#include "dwsr/sim/allocator_model.hpp"
#include "dwsr/sim/detail/block_arena.hpp"
#include "dwsr/sim/detail/live_buffers.hpp"

namespace dwsr::sim::detail {

/// Live buffers of a model and the blocks they hold.
class held_blocks {
 public:
  /// Errors name `model` (a string that outlives the table: the model's name).
  explicit held_blocks(std::string_view model) : ids_(model) {}

  /// Starts alloc(id, bytes): checks the id and records the buffer. Returns
  /// true when the allocation needs nothing more (zero bytes: no block).
  bool open(model_stats& s, std::uint64_t id, std::uint64_t bytes) {
    ids_.add(id, s.allocs + s.frees, no_block);
    if (bytes != 0) return false;
    ++s.allocs;
    return true;
  }

  /// Ends an opened alloc that ran out of memory; returns false, its result.
  bool fail(model_stats& s, std::uint64_t id, std::uint64_t bytes) noexcept {
    ids_.forget(id);
    s.oom = true;
    s.oom_bytes = bytes;
    return false;
  }

  /// Ends an opened alloc: block b goes to buffer `id`, which requested `bytes`.
  template <class Block>
  void hand_out(model_stats& s, block_arena<Block>& blocks, std::uint64_t id, std::uint32_t b, std::uint64_t bytes) {
    blocks[b].allocated = true;
    blocks[b].requested = bytes;
    ids_.set(id, b);
    s.allocated += blocks[b].size;
    s.requested += bytes;
    ++s.allocs;
    update_peaks(s);
  }

  /// Starts free(id): checks the id and takes its block back (no longer
  /// allocated; the model then merges or releases it). Returns the block, or
  /// no_block for a zero-byte buffer.
  template <class Block>
  std::uint32_t take_back(model_stats& s, block_arena<Block>& blocks, std::uint64_t id) {
    const auto b = ids_.remove(id, s.allocs + s.frees);
    ++s.frees;
    if (b == no_block) return b;
    s.allocated -= blocks[b].size;
    s.requested -= blocks[b].requested;
    blocks[b].allocated = false;
    blocks[b].requested = 0;
    return b;
  }

  /// The block of live buffer `id`; none for a zero-byte or unknown buffer.
  std::optional<std::uint32_t> block_of(std::uint64_t id) const noexcept {
    const auto* b = ids_.find(id);
    if (!b || *b == no_block) return std::nullopt;
    return *b;
  }

 private:
  live_buffers<std::uint32_t> ids_;
};

}  // namespace dwsr::sim::detail
