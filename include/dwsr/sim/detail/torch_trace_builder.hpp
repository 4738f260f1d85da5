#pragma once
/// \file Turns the entries of a PyTorch memory snapshot (from its JSON or its
/// pickle reader) into a torch_trace: alloc and free events, the blocks and
/// segments live when recording began, the cache releases, the OOM, and the
/// things the replay does not model, counted by name. Entries arrive one by
/// one (a snapshot may hold millions); only addresses and event records are
/// kept.

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "dwsr/error.hpp"
#include "dwsr/memory/event.hpp"
#include "dwsr/sim/detail/torch_config.hpp"
#include "dwsr/sim/torch_start_state.hpp"

namespace dwsr::sim {

/// Something a snapshot holds that the replay treats differently from
/// PyTorch, and how often.
struct torch_note {
  std::string what;
  std::uint64_t count = 0;
  friend bool operator==(const torch_note&, const torch_note&) = default;
};

/// One GPU's allocation history from a PyTorch memory snapshot.
struct torch_trace {
  std::vector<event> events;  ///< alloc and free events (device cuda, node 0, role temporary)
  std::size_t gpu = 0;        ///< the index in device_traces these came from
  std::uint64_t entries = 0;  ///< entries of that GPU's trace, of every action
  /// The first events allocate the blocks live when recording began (ids 1..start_events).
  std::uint64_t start_events = 0;
  /// Segments and blocks when recording began, laid out from the snapshot's
  /// `segments`; none when the snapshot has no `segments` (then models place
  /// the start blocks by their own rules).
  std::optional<torch_start_state> start;
  std::vector<std::uint64_t> releases;              ///< empty_cache() happened right before these events
  std::uint64_t recorded_peak_reserved = 0;         ///< peak of PyTorch's reserved memory (start + segment actions)
  bool recorded_reserved_complete = true;           ///< false when the start's segments are not known
  std::optional<std::uint64_t> recorded_oom_event;  ///< the event of the allocation that raised OutOfMemoryError
  std::uint64_t recorded_oom_bytes = 0;             ///< its size (rounded, as PyTorch records it)
  std::optional<std::uint64_t> recorded_capacity;   ///< reserved at the OOM entry plus its device_free
  std::string recorded_settings;                    ///< the run's PYTORCH_CUDA_ALLOC_CONF, as far as the snapshot says
  std::vector<torch_note> notes;                    ///< what the replay does not model, by name and count
};

namespace detail {

/// One entry of device_traces, as read (fields absent in the entry are empty).
struct torch_entry {
  std::string_view action;
  std::optional<std::uint64_t> addr, size, device_free;
  std::optional<std::int64_t> stream;
};

/// The snapshot's allocator_settings (the keys dwsr reads).
struct torch_recorded_settings {
  std::string conf;  ///< PYTORCH_CUDA_ALLOC_CONF
  std::optional<std::int64_t> max_split_size;
  std::optional<double> garbage_collection_threshold;
  std::optional<bool> expandable_segments;

  /// The settings as PYTORCH_CUDA_ALLOC_CONF text ("" for PyTorch's defaults).
  std::string text() const {
    if (!conf.empty()) return conf;
    std::string t;
    auto add = [&](const std::string& s) { t += (t.empty() ? "" : ",") + s; };
    if (max_split_size && *max_split_size > 0 && static_cast<std::uint64_t>(*max_split_size) % MiB == 0)
      add("max_split_size_mb:" + std::to_string(static_cast<std::uint64_t>(*max_split_size) / MiB));
    if (expandable_segments && *expandable_segments) add("expandable_segments:True");
    return t;
  }
};

/// Builds torch_traces from entries (see the file comment).
class torch_trace_builder {
 public:
  explicit torch_trace_builder(std::string name) : name_(std::move(name)) {}

  /// Starts the entries of the next GPU.
  void begin_device() { devices_.emplace_back(); }
  /// Number of GPUs seen so far.
  std::size_t devices() const noexcept { return devices_.size(); }
  /// Entries of GPU i.
  std::uint64_t entries(std::size_t i) const noexcept { return devices_[i].entries; }

  /// The snapshot's `segments` (call once per segment; no_segments() if the list is empty).
  void segment(torch_snapshot_segment s) {
    have_segments_ = true;
    segments_.push_back(std::move(s));
  }
  /// The snapshot has a `segments` list.
  void segments_present() noexcept { have_segments_ = true; }
  /// The snapshot's allocator_settings.
  torch_recorded_settings settings;

  /// Entry number `index` of the current GPU.
  void entry(const torch_entry& e) {
    auto& d = devices_.back();
    const auto index = d.entries++;
    auto where = [&] {
      return name_ + ": device_traces[" + std::to_string(devices_.size() - 1) + "][" + std::to_string(index) + "]: ";
    };
    auto fail = [&](const std::string& why) { throw invalid_input(where() + why); };
    auto need = [&](const std::optional<std::uint64_t>& v, const char* what) {
      if (!v) fail("'" + std::string(e.action) + "' entry without '" + what + "'");
      return *v;
    };
    // The entry's size as a change of the reserved total in direction `sign`; an
    // error when the total would leave 64 bits (no GPU reserves 2^63 bytes).
    auto segment_size = [&](std::int64_t sign) {
      constexpr auto max = std::numeric_limits<std::int64_t>::max();
      const auto size = need(e.size, "size");
      const bool fits =
          size <= static_cast<std::uint64_t>(max) && (sign > 0 ? d.delta <= max - static_cast<std::int64_t>(size)
                                                               : d.delta >= -max + static_cast<std::int64_t>(size));
      if (!fits)
        fail("'" + std::string(e.action) + "' of " + std::to_string(size) +
             " bytes takes the reserved total out of 64-bit range; the size is corrupt");
      return static_cast<std::int64_t>(size);
    };
    const auto a = e.action;
    const bool releasing = d.releasing;
    d.releasing = false;
    const bool after_request = d.last_requested && e.addr && *d.last_requested == *e.addr;
    d.last_requested.reset();
    if (a == "alloc") {
      const auto addr = need(e.addr, "addr");
      const auto size = need(e.size, "size");
      if (d.live.count(addr)) fail("alloc at address " + std::to_string(addr) + ", which is already allocated");
      d.touched.insert(addr);
      d.bytes.push_back(size);
      const auto id = static_cast<std::uint64_t>(d.bytes.size());
      d.live.emplace(addr, id);
      d.events.push_back({0, action::alloc, device::cuda, buffer_role::temporary, 0, id, size});
      if (e.stream) {
        if (!d.first_stream) d.first_stream = *e.stream;
        if (*e.stream != *d.first_stream) ++d.other_stream_allocs;
      }
    } else if (a == "free_completed" || a == "free") {
      const auto addr = need(e.addr, "addr");
      auto it = d.live.find(addr);
      if (it == d.live.end()) {
        if (d.touched.count(addr))
          fail("'" + std::string(a) + "' of address " + std::to_string(addr) +
               ", which is already free (an address freed twice)");
        // Live before recording began: a start block.
        d.touched.insert(addr);
        d.start_freed.push_back({addr, 0, e.size.value_or(0), start_tag | d.start_freed.size(), false});
        it = d.live.emplace(addr, start_tag | (d.start_freed.size() - 1)).first;
      }
      const auto id = it->second;
      d.live.erase(it);
      const auto bytes = id & start_tag ? d.start_freed[id & ~start_tag].requested : d.bytes[id - 1];
      d.events.push_back({0, action::free, device::cuda, buffer_role::temporary, 0, id, bytes});
      if (a == "free_completed" && !after_request) ++d.deferred_frees;
    } else if (a == "free_requested") {
      d.last_requested = e.addr;
    } else if (a == "segment_alloc" || a == "segment_map") {
      const auto addr = need(e.addr, "addr");
      d.delta += segment_size(+1);
      d.max_delta = std::max(d.max_delta, d.delta);
      if (a == "segment_alloc") d.seg_touched.insert(addr);
    } else if (a == "segment_free" || a == "segment_unmap") {
      const auto addr = need(e.addr, "addr");
      const auto size = static_cast<std::uint64_t>(segment_size(-1));
      d.delta -= static_cast<std::int64_t>(size);
      if (a == "segment_free" && d.seg_touched.insert(addr).second)
        d.start_segments.push_back({addr, size, 0, 0, size == torch_small_buffer});
      if (!releasing) {  // the first of a run of releases that follow no free: empty_cache() or the OOM path
        d.releases.push_back(d.events.size());
      }
      d.releasing = true;
    } else if (a == "oom") {
      const auto size = need(e.size, "size");
      if (!d.oom_event) {
        d.oom_event = d.events.size();
        d.oom_bytes = size;
        d.oom_delta = d.delta;
        d.device_free = e.device_free.value_or(0);
      }
      // The malloc that raised: it fails in a replay that runs out where PyTorch did; where a
      // setting would have served it, the block is freed at once (the program went on without it).
      d.bytes.push_back(size);
      const auto id = static_cast<std::uint64_t>(d.bytes.size());
      d.events.push_back({0, action::alloc, device::cuda, buffer_role::temporary, 0, id, size});
      d.events.push_back({0, action::free, device::cuda, buffer_role::temporary, 0, id, size});
    } else if (a == "snapshot") {
      // a marker, no change of the pool
    } else if (a.empty()) {
      fail("entry without 'action'");
    } else {
      fail("unknown action '" + std::string(a.substr(0, 64)) +
           "'; expected alloc, free_requested, free_completed, segment_alloc, segment_free, segment_map, "
           "segment_unmap, oom or snapshot");
    }
  }

  /// The trace of GPU `gpu` (moved out).
  torch_trace finish(std::size_t gpu) {
    auto& d = devices_[gpu];
    torch_trace t;
    t.gpu = gpu;
    t.entries = d.entries;
    t.recorded_settings = settings.text();
    torch_settings recorded;
    try {
      recorded = parse_torch_settings(t.recorded_settings);
    } catch (const invalid_input& e) {
      t.notes.push_back({"allocator settings of the recording not modelled ('" + t.recorded_settings + "')", 1});
      t.recorded_settings.clear();
    }

    // Start segments: freed in the trace before any alloc, or listed and never allocated in the trace.
    auto segs = std::move(d.start_segments);
    std::uint64_t expandable = 0, private_pools = 0;
    std::unordered_set<std::uint64_t> listed_blocks;  // allocated blocks in `segments`, untouched by the trace
    auto blocks = std::move(d.start_freed);
    for (const auto& s : segments_) {
      if (s.device != gpu) continue;
      if (s.private_pool) ++private_pools;
      if (!d.seg_touched.count(s.address)) {
        if (s.expandable) ++expandable;
        segs.push_back({s.address, s.total_size, 0, 0, !s.large});
      }
      for (const auto& b : s.blocks)
        if (b.allocated && !d.touched.count(b.address)) blocks.push_back({b.address, b.size, b.requested, 0, false});
    }
    // Ids: start blocks 1..k by address, then the recorded buffers.
    std::vector<std::size_t> order(blocks.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](std::size_t x, std::size_t y) { return blocks[x].address < blocks[y].address; });
    const auto k = static_cast<std::uint64_t>(blocks.size());
    std::vector<std::uint64_t> start_id(blocks.size());
    for (std::size_t r = 0; r < order.size(); ++r) start_id[order[r]] = r + 1;
    for (std::size_t i = 0; i < blocks.size(); ++i) blocks[i].id = start_id[i];
    t.start_events = k;
    t.events.reserve(k + d.events.size());
    for (auto i : order)
      t.events.push_back(
          {t.events.size(), action::alloc, device::cuda, buffer_role::temporary, 0, blocks[i].id, blocks[i].requested});
    for (auto e : d.events) {
      e.seq = t.events.size();
      e.buffer = e.buffer & start_tag ? start_id[e.buffer & ~start_tag] : e.buffer + k;
      t.events.push_back(e);
    }
    d.events.clear();
    for (auto r : d.releases) t.releases.push_back(r + k);

    std::uint64_t start_reserved = 0;
    if (have_segments_) {
      t.start = rebuild_start_state(segs, blocks, recorded, name_);
      start_reserved = t.start->reserved();
    } else {
      for (const auto& s : segs) start_reserved += s.size;
      t.recorded_reserved_complete = blocks.empty() || d.start_segments_complete(blocks, segs);
      if (k > 0)
        t.notes.push_back(
            {"blocks live when recording began, placed by each model's own rules (the snapshot has no "
             "'segments' to lay them out)",
             k});
    }
    const auto peak = static_cast<std::int64_t>(start_reserved) + d.max_delta;
    t.recorded_peak_reserved = peak > 0 ? static_cast<std::uint64_t>(peak) : 0;
    if (peak < 0 || static_cast<std::int64_t>(start_reserved) + d.delta < 0) t.recorded_reserved_complete = false;
    if (d.oom_event) {
      t.recorded_oom_event = *d.oom_event + k;
      t.recorded_oom_bytes = d.oom_bytes;
      const auto at = static_cast<std::int64_t>(start_reserved) + d.oom_delta;
      if (t.recorded_reserved_complete && at >= 0) t.recorded_capacity = static_cast<std::uint64_t>(at) + d.device_free;
    }
    if (!t.releases.empty())
      t.notes.push_back(
          {"releases of cached segments (runs of segment_free: empty_cache(), or PyTorch's release before "
           "an OOM), replayed as empty_cache()",
           t.releases.size()});
    if (d.other_stream_allocs)
      t.notes.push_back(
          {"allocations on streams other than the first, replayed in one stream's pools (PyTorch keeps "
           "a block on its stream)",
           d.other_stream_allocs});
    if (d.deferred_frees)
      t.notes.push_back({"frees completed after other work (cross-stream uses), replayed when PyTorch completed them",
                         d.deferred_frees});
    if (private_pools)
      t.notes.push_back(
          {"segments of private pools (CUDA graphs, torch.cuda.MemPool), replayed in the common pools", private_pools});
    if (expandable)
      t.notes.push_back({"expandable segments held when recording began, rebuilt as fixed segments", expandable});
    return t;
  }

 private:
  static constexpr std::uint64_t start_tag = std::uint64_t{1} << 63;  // provisional ids of start blocks

  struct device_state {
    std::vector<event> events;  // recorded events, provisional ids
    std::uint64_t entries = 0;
    std::unordered_map<std::uint64_t, std::uint64_t> live;  // address -> provisional id
    std::unordered_set<std::uint64_t> touched;              // addresses an alloc or free named
    std::vector<std::uint64_t> bytes;                       // requested bytes by recorded id - 1
    std::vector<torch_start_item> start_freed;              // start blocks found by their free
    std::unordered_set<std::uint64_t> seg_touched;          // segment addresses the trace named
    std::vector<torch_start_item> start_segments;           // segments freed before any segment_alloc
    std::int64_t delta = 0, max_delta = 0;                  // reserved bytes since the start
    bool releasing = false;
    std::vector<std::uint64_t> releases;
    std::optional<std::uint64_t> last_requested;  // the address of a free_requested just before
    std::optional<std::uint64_t> oom_event;
    std::uint64_t oom_bytes = 0, device_free = 0;
    std::int64_t oom_delta = 0;
    std::optional<std::int64_t> first_stream;
    std::uint64_t other_stream_allocs = 0, deferred_frees = 0;

    // Without `segments`: whether every start block lies in a segment the trace freed.
    static bool start_segments_complete(const std::vector<torch_start_item>& blocks,
                                        std::vector<torch_start_item> segs) {
      std::sort(segs.begin(), segs.end(), [](const auto& a, const auto& b) { return a.address < b.address; });
      for (const auto& b : blocks) {
        auto it = std::upper_bound(segs.begin(), segs.end(), b.address,
                                   [](std::uint64_t a, const torch_start_item& s) { return a < s.address; });
        if (it == segs.begin() || b.address - std::prev(it)->address >= std::prev(it)->size) return false;
      }
      return true;
    }
  };

  std::string name_;
  std::vector<device_state> devices_;
  std::vector<torch_snapshot_segment> segments_;
  bool have_segments_ = false;
};

}  // namespace detail
}  // namespace dwsr::sim
