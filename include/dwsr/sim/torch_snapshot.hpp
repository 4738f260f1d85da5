#pragma once
/// \file Reads the allocation history of a real PyTorch run, so that it can be
/// replayed through any model: a memory snapshot, as users have it,
///
///     torch.cuda.memory._record_memory_history(max_entries=1_000_000)
///     ...  # the run
///     torch.cuda.memory._dump_snapshot("snap.pickle")
///
/// read from the pickle (detail/pickle.hpp: a safe reader that imports and
/// calls nothing) or from a JSON export of the same dict. Frames and other keys
/// are skipped.
///
/// Entries become events of device cuda: `alloc` allocates `size` requested
/// bytes, `free_completed` (or the older `free`) frees the block at `addr`
/// (`free_requested` is not yet a free: PyTorch defers it while other streams
/// use the block), `oom` is the allocation that raised OutOfMemoryError, and a
/// run of `segment_free` entries is a release of the cache (empty_cache()).
/// A recording that began mid-run starts with alloc events for the blocks live
/// then, laid out from the snapshot's `segments` (torch_start_state.hpp).
/// Segment entries give PyTorch's own reserved memory, reported beside the
/// models'. Everything the replay does not model is counted in `notes`.
/// Buffer ids are numbered from 1: the start blocks by address, then the
/// recorded allocations in order.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <istream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dwsr/error.hpp"
#include "dwsr/memory/event.hpp"
#include "dwsr/sim/detail/pickle.hpp"
#include "dwsr/sim/detail/torch_snapshot_json.hpp"
#include "dwsr/sim/detail/torch_snapshot_pickle.hpp"
#include "dwsr/sim/detail/torch_trace_builder.hpp"

namespace dwsr::sim {

namespace detail {

// The GPU to return: `gpu`, or the only one with entries.
inline std::size_t pick_gpu(const torch_trace_builder& b, const std::string& name, std::optional<std::size_t> gpu) {
  if (gpu) {
    if (*gpu >= b.devices())
      throw invalid_input(name + ": GPU " + std::to_string(*gpu) + " is not in the trace, which has " +
                          std::to_string(b.devices()) + " device traces");
    return *gpu;
  }
  std::vector<std::size_t> used;
  for (std::size_t i = 0; i < b.devices(); ++i)
    if (b.entries(i) > 0) used.push_back(i);
  if (used.size() == 1) return used[0];
  if (used.empty())
    throw invalid_input(name +
                        ": the device traces are empty; record the history with "
                        "torch.cuda.memory._record_memory_history() before the run");
  std::string list;
  for (auto i : used) list.append(list.empty() ? "" : ", ").append(std::to_string(i));
  throw invalid_input(name + ": the trace has entries for GPUs " + list + "; choose one (--gpu N)");
}

}  // namespace detail

/// Whether a file's first byte starts a pickle (the PROTO opcode of protocols 2 to 5).
inline bool is_pickle_start(int first_byte) noexcept { return first_byte == 0x80; }

/// Reads a snapshot, a pickle or JSON (the snapshot dict, or the bare list of
/// per-GPU lists). `gpu` picks a GPU; without it, the trace must have entries
/// for exactly one GPU. `name` is named in errors.
inline torch_trace read_torch_snapshot(std::istream& in, const std::string& name = "<snapshot>",
                                       std::optional<std::size_t> gpu = {}) {
  detail::torch_trace_builder builder(name);
  bool found = false;
  if (is_pickle_start(in.peek())) {
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto doc = detail::parse_pickle(std::move(bytes), name);
    found = detail::torch_snapshot_pickle(doc, name, builder).walk();
  } else {
    detail::torch_snapshot_json h(name, builder);
    nlohmann::json::sax_parse(in, &h);
    found = h.found();
  }
  if (!found)
    throw invalid_input(name +
                        ": no 'device_traces' list; expected a snapshot from "
                        "torch.cuda.memory._dump_snapshot() or its JSON export");
  return builder.finish(detail::pick_gpu(builder, name, gpu));
}

/// Reads a snapshot file (io_error when it cannot be opened).
inline torch_trace read_torch_snapshot(const std::filesystem::path& path, std::optional<std::size_t> gpu = {}) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw io_error("cannot open snapshot '" + path.string() + "'");
  return read_torch_snapshot(in, path.string(), gpu);
}

}  // namespace dwsr::sim
