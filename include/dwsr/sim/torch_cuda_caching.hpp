#pragma once
/// \file PyTorch's CUDA caching allocator (native backend, one device, one
/// stream), rule by rule as in shared notes/allocators.md: rounding (with
/// roundup_power2_divisions), small and large pools, segment sizes, best fit
/// with the lowest address on ties, oversize blocks (max_split_size), the split
/// thresholds, merging on free within a segment, the garbage collection of a
/// memory fraction, the release-and-retry path before OOM, empty_cache, and
/// expandable segments mapped page by page.
///
/// `allocated` is torch.cuda.memory_allocated() (block sizes), `reserved` is
/// memory_reserved() (segments, or mapped pages), `requested` the bytes asked.
/// The capacity is the device memory the allocator may take (total memory less
/// the CUDA context and other users); cudaMalloc and page maps fail beyond it.
/// Addresses come from a first-fit model of cudaMalloc (detail/address_space.hpp).
///
/// This header holds the allocator's policy (malloc, free, the release paths,
/// garbage collection); the blocks and pools are in detail/torch_blocks.hpp,
/// expandable segments in detail/torch_expandable.hpp, and the inspection that
/// tests use in detail/torch_inspect.hpp.
///
/// Cost: one hash probe per event, a search and one to three updates of the
/// pool's ordered free-block set (detail/ordered_blocks.hpp); segment creation
/// and the release paths are rare and may be linear in the pool size.

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dwsr/error.hpp"
#include "dwsr/sim/allocator_model.hpp"
#include "dwsr/sim/detail/address_space.hpp"
#include "dwsr/sim/detail/block_arena.hpp"
#include "dwsr/sim/detail/held_blocks.hpp"
#include "dwsr/sim/detail/model_base.hpp"
#include "dwsr/sim/detail/settings.hpp"
#include "dwsr/sim/detail/torch_blocks.hpp"
#include "dwsr/sim/detail/torch_config.hpp"
#include "dwsr/sim/detail/torch_expandable.hpp"
#include "dwsr/sim/detail/torch_inspect.hpp"
#include "dwsr/sim/torch_start_state.hpp"

namespace dwsr::sim {

/// The model of torch.cuda's caching allocator.
class torch_cuda_caching_model : public detail::model_base<torch_cuda_caching_model> {
 public:
  static constexpr std::string_view name = "torch_cuda_caching";
  using settings_type = detail::torch_settings;
  /// One block as seen from outside (for tests and inspection).
  using block_info = detail::torch_block_info;

  explicit torch_cuda_caching_model(settings_type settings = {}, std::optional<std::uint64_t> capacity = {})
      : cfg_(settings), heap_(capacity.value_or(unlimited)), expandable_(cfg_.large_segment_size) {
    if (cfg_.memory_fraction >= 0) {
      if (!capacity)
        detail::bad_setting(name, "'per_process_memory_fraction' needs the device's memory as a capacity (--capacity)");
      set_fraction_ = true;
      allowed_ = static_cast<std::uint64_t>(cfg_.memory_fraction * static_cast<double>(*capacity));
    }
  }
  /// Builds the model from PYTORCH_CUDA_ALLOC_CONF syntax, e.g. "max_split_size_mb:128,expandable_segments:True".
  explicit torch_cuda_caching_model(std::string_view conf, std::optional<std::uint64_t> capacity = {})
      : torch_cuda_caching_model(detail::parse_torch_settings(conf), capacity) {}

  /// Starts from what PyTorch held when a recording began: the segments of
  /// `start`, free, at their addresses (as fixed segments, whatever the
  /// settings); each start block is then handed out, at its address and size,
  /// by the first allocation of its id (a snapshot trace's start events). Call
  /// on a new model; invalid_input when segments overlap.
  void adopt(const torch_start_state& start) {
    if (start.segments.empty()) return;
    heap_.va = detail::address_space(start.segments.front().address, detail::torch_small_buffer);
    for (const auto& seg : start.segments) {
      if (!heap_.va.claim(seg.address, seg.size))
        throw invalid_input("torch_cuda_caching: start segment at address " + std::to_string(seg.address) +
                            " overlaps another");
      detail::torch_block nb;
      nb.addr = seg.address;
      nb.size = seg.size;
      nb.small = seg.small;
      const auto b = heap_.blocks.make(nb);
      heap_.insert_free(heap_.pools[seg.small ? 0 : 1], b);
      start_free_.emplace(seg.address, b);
      s_.reserved += seg.size;
      ++s_.segments;
      for (const auto& blk : seg.blocks) planned_.emplace(blk.id, std::pair{blk.address, blk.size});
    }
    detail::update_peaks(s_);
  }

  /// torch's malloc: false when it raises OutOfMemoryError (after releasing the cache).
  bool alloc(std::uint64_t id, std::uint64_t bytes) {
    if (owners_.open(s_, id, bytes)) return true;  // torch returns a null pointer and makes no block
    if (!planned_.empty()) {
      if (const auto it = planned_.find(id); it != planned_.end()) {
        const auto [addr, size] = it->second;
        planned_.erase(it);
        owners_.hand_out(s_, heap_.blocks, id, carve(addr, size), bytes);
        return true;
      }
      abandon_start();
    }
    const auto size = cfg_.round_size(bytes);
    detail::torch_pool& p = heap_.pools[size <= detail::torch_small_size ? 0 : 1];
    const auto alloc_size = cfg_.allocation_size(size);
    auto b = get_free_block(p, size);
    if (b == detail::no_block) {
      if (gc_active()) garbage_collect();
      b = alloc_block(p, size, alloc_size, false);
      if (b == detail::no_block && release_available_cached_blocks(p, size))
        b = alloc_block(p, size, alloc_size, false);
      if (b == detail::no_block) {
        release_cached_blocks();
        b = alloc_block(p, size, alloc_size, true);
      }
    }
    if (b == detail::no_block) return owners_.fail(s_, id, bytes);
    const auto remaining = heap_.blocks[b].size - size;
    const bool split = (p.small || cfg_.expandable_segments)
                           ? remaining >= detail::torch_min_block
                           : (size < cfg_.max_split_size && remaining > detail::torch_small_size);
    if (split) {  // the front piece is handed out, the tail stays free in the segment
      const auto front = detail::split_before(heap_.blocks, b, size);
      heap_.insert_free(p, b);
      b = front;
    }
    owners_.hand_out(s_, heap_.blocks, id, b, bytes);
    return true;
  }

  /// torch's free: the block merges with free neighbours of its segment and returns to its pool.
  void free(std::uint64_t id, std::uint64_t /*bytes*/ = 0) {
    if (!planned_.empty()) abandon_start();
    const auto b = owners_.take_back(s_, heap_.blocks, id);
    if (b == detail::no_block) return;
    auto& p = heap_.pool_of(b);
    heap_.try_merge(p, b, heap_.blocks[b].prev);
    heap_.try_merge(p, b, heap_.blocks[b].next);
    heap_.insert_free(p, b);
  }

  /// torch.cuda.empty_cache(): releases every fully free segment (and unmaps free pages of expandable ones).
  void empty_cache() { release_cached_blocks(); }

  const settings_type& settings() const noexcept { return cfg_; }

  model_stats stats() const {
    model_stats s = s_;
    for (const auto& p : heap_.pools)
      if (!p.blocks.empty()) s.largest_free = std::max(s.largest_free, p.blocks.largest().size);
    s.total_free = s_.reserved - s_.allocated;
    return s;
  }

  /// The address of a live buffer's block (none for zero-byte or unknown buffers).
  std::optional<std::uint64_t> address_of(std::uint64_t id) const {
    const auto b = owners_.block_of(id);
    if (!b) return std::nullopt;
    return heap_.blocks[*b].addr;
  }
  /// Every block, by address.
  std::vector<block_info> blocks() const { return detail::torch_block_list(heap_); }
  /// Checks the internal invariants (links, adjacency, free sets, totals);
  /// throws std::logic_error naming the first broken one. For tests.
  void check() const { detail::check_torch_heap(heap_, s_); }

 private:
  // The free block of the start layout that holds [addr, addr + size), cut to exactly that range.
  std::uint32_t carve(std::uint64_t addr, std::uint64_t size) {
    auto it = start_free_.upper_bound(addr);
    const auto fits = [&](std::uint32_t b) {
      const auto& blk = heap_.blocks[b];
      return !blk.allocated && blk.addr <= addr && size <= blk.size && addr - blk.addr <= blk.size - size;
    };
    if (it == start_free_.begin() || !fits(std::prev(it)->second))
      throw invalid_input("torch_cuda_caching: start block at address " + std::to_string(addr) +
                          " is not free space of a start segment");
    --it;
    auto b = it->second;
    start_free_.erase(it);
    auto& p = heap_.pool_of(b);
    heap_.erase_free(p, b);
    if (heap_.blocks[b].addr < addr) {
      const auto front = detail::split_before(heap_.blocks, b, addr - heap_.blocks[b].addr);
      heap_.insert_free(p, front);
      start_free_.emplace(heap_.blocks[front].addr, front);
    }
    if (heap_.blocks[b].size > size) {
      const auto rest = detail::split_after(heap_.blocks, b, size);
      heap_.insert_free(p, rest);
      start_free_.emplace(heap_.blocks[rest].addr, rest);
    }
    return b;
  }
  // Another event came before every start block was handed out: the rest are ordinary allocations.
  void abandon_start() {
    planned_.clear();
    start_free_.clear();
  }

  bool gc_active() const noexcept { return set_fraction_ && cfg_.garbage_collection_threshold > 0; }

  std::uint32_t get_free_block(detail::torch_pool& p, std::uint64_t size) {
    if (gc_active()) ++p.free_calls;
    auto c = p.blocks.lower_bound({size, 0});
    if (!p.blocks.valid(c)) return detail::no_block;
    auto b = p.blocks.value(c);
    const auto& blocks = heap_.blocks;
    if (blocks[b].segment != detail::no_block) {
      // An expandable block counts with the unmapped space after it: prefer a
      // block that fits without growing the segment's frontier.
      auto grows_to = [&](std::uint32_t i) {
        const auto n = blocks[i].next;
        return blocks[i].size + (n != detail::no_block && !blocks[n].mapped ? blocks[n].size : 0);
      };
      for (auto n = p.blocks.next(c);
           blocks[b].segment != detail::no_block && p.blocks.valid(n) && grows_to(p.blocks.value(n)) < grows_to(b);
           n = p.blocks.next(n)) {
        c = n;
        b = p.blocks.value(c);
      }
    }
    const auto have = blocks[b].size;
    if (size < cfg_.max_split_size && have >= cfg_.max_split_size) return detail::no_block;  // oversize block
    if (size >= cfg_.max_split_size && have - size >= cfg_.max_non_split_rounding) return detail::no_block;
    p.blocks.erase(c);
    return b;
  }

  std::uint32_t alloc_block(detail::torch_pool& p, std::uint64_t size, std::uint64_t alloc_size, bool retry) {
    if (retry) ++s_.retries;
    if (set_fraction_ && (alloc_size > allowed_ || s_.reserved > allowed_ - alloc_size)) return detail::no_block;
    if (cfg_.expandable_segments) return expandable_.allocate(heap_, s_, p, size);
    if (!heap_.device_has(s_, alloc_size)) return detail::no_block;  // cudaMalloc fails
    detail::torch_block nb;
    nb.addr = detail::acquire_segment(s_, heap_.va, alloc_size);
    nb.size = alloc_size;
    nb.small = p.small;
    return heap_.blocks.make(nb);
  }

  void release_blocks(detail::torch_pool& p) {
    std::vector<std::uint32_t> to_unmap;
    for (const auto b : p.blocks.values()) {
      if (heap_.blocks[b].segment != detail::no_block)
        to_unmap.push_back(b);
      else if (!heap_.is_split(b))
        heap_.release_block(s_, p, b);
    }
    for (const auto b : to_unmap) {
      expandable_.unmap(heap_, s_, p, b);
      if (!heap_.is_split(b)) expandable_.release(heap_, s_, p, b);
    }
  }
  void release_cached_blocks() {
    release_blocks(heap_.pools[1]);
    release_blocks(heap_.pools[0]);
  }

  // With max_split_size set: free the smallest oversize block that covers the
  // request, or else oversize blocks from the largest down until they do.
  bool release_available_cached_blocks(detail::torch_pool& p, std::uint64_t size) {
    if (cfg_.max_split_size == std::numeric_limits<std::uint64_t>::max()) return false;
    const auto want = std::max(size, cfg_.max_split_size);
    const auto c = p.blocks.lower_bound({want, 0});
    if (p.blocks.valid(c) && heap_.blocks[p.blocks.value(c)].segment == detail::no_block) {
      heap_.release_block(s_, p, p.blocks.value(c));
      return true;
    }
    std::vector<std::uint32_t> below;  // blocks before c, ascending
    for (auto i = p.blocks.begin();
         p.blocks.valid(i) && (!p.blocks.valid(c) || i.chunk != c.chunk || i.index != c.index); i = p.blocks.next(i))
      below.push_back(p.blocks.value(i));
    std::uint64_t released = 0;
    for (auto i = below.size(); i-- > 0 && released < want && heap_.blocks[below[i]].size >= cfg_.max_split_size;) {
      if (heap_.blocks[below[i]].segment != detail::no_block) continue;
      released += heap_.blocks[below[i]].size;
      heap_.release_block(s_, p, below[i]);
    }
    return released >= want;
  }

  // Frees whole free large segments whose age (get_free_block calls since they
  // became free) is at least the average, until reserved <= threshold x allowed.
  void garbage_collect() {
    const auto threshold =
        static_cast<std::uint64_t>(cfg_.garbage_collection_threshold * static_cast<double>(allowed_));
    if (s_.reserved <= threshold) return;
    const auto target = s_.reserved - threshold;
    detail::torch_pool& p = heap_.pools[1];
    auto age = [&](std::uint32_t b) { return p.free_calls - heap_.blocks[b].gc_base; };
    std::uint64_t total_age = 0, reclaimed = 0;
    std::int64_t freeable = 0;
    for (const auto b : p.blocks.values())
      if (!heap_.is_split(b)) total_age += age(b), ++freeable;
    if (freeable == 0) return;
    bool freed = true;
    while (reclaimed < target && freed && freeable > 0) {
      const double threshold_age = static_cast<double>(total_age) / static_cast<double>(freeable);
      freed = false;
      for (const auto b : p.blocks.values()) {
        if (heap_.is_split(b) || heap_.blocks[b].segment != detail::no_block ||
            static_cast<double>(age(b)) < threshold_age)
          continue;
        freed = true;
        reclaimed += heap_.blocks[b].size;
        total_age -= age(b);
        --freeable;
        heap_.release_block(s_, p, b);
      }
    }
  }

  settings_type cfg_;
  bool set_fraction_ = false;
  std::uint64_t allowed_ = 0;  // fraction x capacity
  detail::torch_heap heap_;
  detail::torch_expandable expandable_;
  detail::held_blocks owners_{name};
  std::unordered_map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> planned_;  // start block id -> addr, size
  std::map<std::uint64_t, std::uint32_t> start_free_;  // free blocks of the start layout by address, while planned_
};

}  // namespace dwsr::sim
