#pragma once
/// \file The state of PyTorch's caching allocator when a recording began, so
/// that a snapshot recorded mid-run replays from what PyTorch really held.
///
/// Most snapshots start recording after the model is on the GPU: their first
/// frees name blocks the trace never allocated, and segments exist before the
/// first entry. The snapshot's `segments` list the allocator's segments and
/// blocks when the snapshot was taken; walking the trace forward tells which
/// of them existed before it (never allocated in the trace) and which blocks
/// were live at its start (freed before any alloc at their address, or live
/// at the end and never touched). rebuild_start_state lays these out: each
/// start segment at its address and size, each start block at its address;
/// the space between blocks is free, as PyTorch merges free neighbours.
///
/// A block live at the end has its exact size in `segments`. A block freed
/// during the trace does not (the free entry carries the requested bytes):
/// its size is the request rounded as the recorded settings round it, plus
/// the free space after it when that space is too small to have been split
/// off (large pool: at most 1 MiB below max_split_size, less than
/// max_non_split_rounding above).

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dwsr/error.hpp"
#include "dwsr/sim/detail/torch_config.hpp"

namespace dwsr::sim {

/// A block of a segment as the snapshot's `segments` list it.
struct torch_snapshot_block {
  std::uint64_t address = 0, size = 0, requested = 0;
  bool allocated = false;  ///< state active_allocated or active_pending_free (not yet returned to the pool)
};

/// A segment as the snapshot's `segments` list it (at the time of the snapshot).
struct torch_snapshot_segment {
  std::uint64_t device = 0, address = 0, total_size = 0;
  std::int64_t stream = 0;
  bool large = true, expandable = false;
  bool private_pool = false;  ///< segment_pool_id is not (0, 0): a CUDA graph's pool or a torch.cuda.MemPool
  std::vector<torch_snapshot_block> blocks;
};

/// A block live when recording began; `id` is its buffer id in the replay.
struct torch_start_block {
  std::uint64_t id = 0, address = 0, size = 0, requested = 0;
  friend bool operator==(const torch_start_block&, const torch_start_block&) = default;
};

/// A segment held when recording began, with its live blocks by address.
struct torch_start_segment {
  std::uint64_t address = 0, size = 0;
  bool small = false;  ///< a segment of the small pool (2 MiB, requests up to 1 MiB)
  std::vector<torch_start_block> blocks;
  friend bool operator==(const torch_start_segment&, const torch_start_segment&) = default;
};

/// What PyTorch held when recording began: segments by address.
struct torch_start_state {
  std::vector<torch_start_segment> segments;

  /// Bytes of all segments (memory_reserved() at the start).
  std::uint64_t reserved() const noexcept {
    std::uint64_t r = 0;
    for (const auto& s : segments) r += s.size;
    return r;
  }
  /// Bytes of all live blocks (memory_allocated() at the start).
  std::uint64_t allocated() const noexcept {
    std::uint64_t a = 0;
    for (const auto& s : segments)
      for (const auto& b : s.blocks) a += b.size;
    return a;
  }
  /// Number of live blocks.
  std::size_t blocks() const noexcept {
    std::size_t n = 0;
    for (const auto& s : segments) n += s.blocks.size();
    return n;
  }
};

/// A segment or block found live at the start, before its layout is known.
struct torch_start_item {
  std::uint64_t address = 0, size = 0, requested = 0;  ///< size 0: not known (the block was freed in the trace)
  std::uint64_t id = 0;
  bool small = false;  ///< for segments
};

/// Lays out the start segments and blocks (see the file comment). Throws
/// invalid_input naming the first block that lies in no segment or overlaps
/// another. `name` is named in errors.
inline torch_start_state rebuild_start_state(std::vector<torch_start_item> segments,
                                             std::vector<torch_start_item> blocks,
                                             const detail::torch_settings& recorded, const std::string& name) {
  auto by_address = [](const torch_start_item& a, const torch_start_item& b) { return a.address < b.address; };
  std::sort(segments.begin(), segments.end(), by_address);
  std::sort(blocks.begin(), blocks.end(), by_address);
  torch_start_state out;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const auto& s = segments[i];
    if (i > 0 && s.address < segments[i - 1].address + segments[i - 1].size)
      throw invalid_input(name + ": the segments at addresses " + std::to_string(segments[i - 1].address) + " and " +
                          std::to_string(s.address) + " overlap");
    out.segments.push_back({s.address, s.size, s.small, {}});
  }
  std::size_t seg = 0;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const auto& b = blocks[i];
    while (seg < segments.size() && segments[seg].address + segments[seg].size <= b.address) ++seg;
    if (seg == segments.size() || b.address < segments[seg].address)
      throw invalid_input(name + ": the block at address " + std::to_string(b.address) +
                          ", live when recording began, lies in no segment of the snapshot");
    auto& s = out.segments[seg];
    const auto seg_end = s.address + s.size;
    // The block's end: its own size, else the rounded request and the unsplittable space after it.
    const auto limit = i + 1 < blocks.size() ? std::min(seg_end, blocks[i + 1].address) : seg_end;
    std::uint64_t size = b.size;
    if (size == 0) {
      size = recorded.round_size(b.requested);
      const auto room = limit > b.address ? limit - b.address : 0;
      if (size <= room && !s.small) {
        const auto gap = room - size;
        const bool unsplit =
            size < recorded.max_split_size ? gap <= detail::torch_small_size : gap < recorded.max_non_split_rounding;
        if (unsplit) size = room;
      }
    }
    if (size > seg_end - b.address || (i + 1 < blocks.size() && b.address + size > blocks[i + 1].address))
      throw invalid_input(name + ": the block at address " + std::to_string(b.address) + " (" + std::to_string(size) +
                          " bytes), live when recording began, overlaps the next block or its segment's end");
    s.blocks.push_back({b.id, b.address, size, b.requested});
  }
  return out;
}

}  // namespace dwsr::sim
