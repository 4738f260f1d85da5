#pragma once
/// \file Reads a recorded trace of either format: a dwsr trace (CSV, from
/// `dwsr run --trace`) or a PyTorch memory snapshot (pickle or JSON), told
/// apart by the first non-blank character (byte 0x80 for a pickle, '{' or '['
/// for JSON). A sink with release(device) also gets the snapshot's cache
/// releases; the start state of a snapshot is in the returned record.

#include <cctype>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "dwsr/error.hpp"
#include "dwsr/memory/event_sink.hpp"
#include "dwsr/sim/torch_snapshot.hpp"
#include "dwsr/sim/trace_csv.hpp"

namespace dwsr::sim {

/// What a trace file held besides its events.
struct trace_file {
  std::string format;                   ///< "csv" or "torch_snapshot"
  std::uint64_t events = 0;             ///< events handed to the sink
  std::optional<torch_trace> snapshot;  ///< the snapshot's own records (its events moved out)
};

/// Whether the file at `path` is a PyTorch snapshot (pickle or JSON) rather
/// than a dwsr CSV trace (io_error when it cannot be opened).
inline bool is_snapshot_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw io_error("cannot open trace '" + path.string() + "'");
  char first = 0;
  while (in.get(first) && std::isspace(static_cast<unsigned char>(first))) {
  }
  return first == '{' || first == '[' || is_pickle_start(static_cast<unsigned char>(first));
}

/// Feeds every event of the trace at `path` to `sink`, in order. `gpu` picks a
/// GPU of a PyTorch snapshot (and is an error for a CSV trace).
template <EventSink Sink>
trace_file read_trace(const std::filesystem::path& path, Sink& sink, std::optional<std::size_t> gpu = {}) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw io_error("cannot open trace '" + path.string() + "'");
  char first = 0;
  while (in.get(first) && std::isspace(static_cast<unsigned char>(first))) {
  }
  in.clear();
  in.seekg(0);
  trace_file out;
  if (first == '{' || first == '[' || is_pickle_start(static_cast<unsigned char>(first))) {
    out.format = "torch_snapshot";
    out.snapshot = read_torch_snapshot(in, path.string(), gpu);
    std::size_t r = 0;
    const auto& releases = out.snapshot->releases;
    for (const auto& e : out.snapshot->events) {
      for (; r < releases.size() && releases[r] <= e.seq; ++r)
        if constexpr (requires { sink.release(device::cuda); }) sink.release(device::cuda);
      sink.on_event(e);
    }
    out.events = out.snapshot->events.size();
    out.snapshot->events.clear();
    return out;
  }
  if (gpu) throw invalid_input("--gpu applies to PyTorch snapshots; '" + path.string() + "' is a dwsr CSV trace");
  out.format = "csv";
  trace_csv_reader reader(in, path.string());
  event e;
  while (reader.next(e)) sink.on_event(e), ++out.events;
  return out;
}

}  // namespace dwsr::sim
