#pragma once
/// \file The feature vector of a configuration (a graph, a cube, a chunking,
/// W x T, an allocator, a budget), computed without running anything: what
/// memory estimators learn from (graph/dataset.hpp writes it per row). Two
/// parts, each emitted with its columns so that names and values cannot drift:
///
/// - code_features: what the graph's operators' code says, computed once per
///   graph: its structure (nodes, depth, width, two-input nodes, results alive
///   at once), the operators' declarations (halo radii, axes read whole,
///   reduction passes, FFT-based nodes, bytes per voxel of their outputs) and
///   one meta execution on a canonical whole cube (canonical_shape) at one and
///   at two threads: allocation events by role, peak and allocated bytes per
///   voxel, and the scratch one more thread adds.
/// - execution_features: the input and the execution: shape, bytes, chunk,
///   blocks, halo overhead, the largest block, W, T, the execution model
///   (dwsr's, or Dask's fused or unfused), the allocator (one-hot over
///   sim::model_catalogue) and the budget. The chunk columns are left out
///   when the chunk is what is to be predicted (dataset task "chunk").
///
/// Every column has a name, a unit and a line of documentation, written to
/// the dataset's columns.json.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dwsr/graph/chunked.hpp"
#include "dwsr/graph/dask_tasks.hpp"
#include "dwsr/sim/any_model.hpp"

namespace dwsr {

/// One column of a feature or label matrix.
struct column {
  std::string name;
  std::string unit;  ///< "bytes", "voxels", "seconds", "count", "flag", "ratio", "bytes/voxel", ...
  std::string doc;
};

/// The whole cube the code features' meta execution runs on: small, with
/// traces long enough for every operator's default window.
inline constexpr shape3 canonical_shape{32, 32, 256};

/// The columns and values of one feature vector, filled in emission order.
class feature_vector {
 public:
  /// Appends a value; the first vector filled also records the columns.
  void operator()(std::string_view name, std::string_view unit, std::string_view doc, double value) {
    if (recording_) columns_.push_back({std::string(name), std::string(unit), std::string(doc)});
    values_.push_back(value);
  }
  /// A vector that records values only (columns known from an earlier one).
  static feature_vector values_only() {
    feature_vector v;
    v.recording_ = false;
    return v;
  }
  const std::vector<column>& columns() const noexcept { return columns_; }
  /// Whether it records the columns (the first vector filled).
  bool recording() const noexcept { return recording_; }
  const std::vector<double>& values() const noexcept { return values_; }
  void clear() noexcept { values_.clear(); }
  /// Makes room for n values: a row's vector, filled once per row, grows once.
  void reserve(std::size_t n) { values_.reserve(n); }

 private:
  bool recording_ = true;
  std::vector<column> columns_;
  std::vector<double> values_;
};

namespace detail {

/// Counts a stream's allocations by role, its allocated bytes and its peak.
struct role_counter {
  std::uint64_t allocs[4]{};
  std::uint64_t bound = 0;  // allocations whose size is a bound (data-dependent)
  std::uint64_t allocated = 0, live = 0, peak = 0;
  void on_event(const event& e) {
    if (e.act == action::free) {
      live -= e.bytes;
      return;
    }
    ++allocs[static_cast<std::size_t>(e.role)];
    bound += e.bound;
    allocated += e.bytes;
    peak = std::max(peak, live += e.bytes);
  }
};

/// The meta execution of `g` on the canonical whole cube at `threads` threads.
inline role_counter canonical_run(const graph& g, std::size_t threads) {
  role_counter c;
  worker_events(chunked_schedule(g, canonical_shape, {.threads = threads}), 0, c);
  return c;
}

}  // namespace detail

/// Emits the code features of `g` (see the file comment) into emit(name, unit, doc, value).
template <class Emit>
void code_features(const graph& g, Emit&& emit) {
  const auto& ns = g.nodes();
  std::vector<std::size_t> depth(ns.size(), 1);
  std::size_t two_input = 0, passes = 0, fft = 0, out_bytes = 0;
  for (std::size_t k = 0; k < ns.size(); ++k) {
    for (const auto& r : ns[k].inputs)
      if (r.node != cube_ref::input) depth[k] = std::max(depth[k], depth[r.node] + 1);
    two_input += ns[k].inputs.size() > 1;
    passes += ns[k].op->reduction_passes();
    const auto* reg = g.operators();
    fft += reg && reg->contains(ns[k].spec.op) && reg->find(ns[k].spec.op).fft_based;
    for (const auto& o : ns[k].outputs) out_bytes += size_of(o.type);
  }
  const auto max_depth = *std::max_element(depth.begin(), depth.end());
  std::size_t width = 0;
  for (std::size_t d = 1; d <= max_depth; ++d)
    width = std::max<std::size_t>(width, std::size_t(std::count(depth.begin(), depth.end(), d)));
  // Results alive while node k runs: earlier outputs read at k or later, and k's own.
  std::size_t alive = 0;
  for (std::size_t k = 0; k < ns.size(); ++k) {
    std::size_t now = ns[k].outputs.size();
    for (std::size_t j = 0; j < k; ++j)
      for (auto reader : ns[j].last_reader) now += reader >= k;
    alive = std::max(alive, now);
  }
  std::size_t kept_bytes = 0;
  for (const auto& r : g.outputs()) kept_bytes += size_of(ns[r.node].outputs[r.output].type);

  emit("nodes", "count", "operator nodes of the graph", double(ns.size()));
  emit("depth", "count", "nodes on the longest input-to-output path", double(max_depth));
  emit("width", "count", "most nodes at one depth", double(width));
  emit("two_input_nodes", "count", "nodes reading two cubes", double(two_input));
  emit("graph_outputs", "count", "cubes the graph outputs", double(g.outputs().size()));
  emit("results_alive", "count", "most node outputs alive at once while the graph runs on a block", double(alive));
  const auto halo = g.input_halo();
  const auto whole = g.whole_axes();
  static constexpr const char* halo_name[3] = {"halo_inline", "halo_crossline", "halo_time"};
  static constexpr const char* whole_name[3] = {"whole_inline", "whole_crossline", "whole_time"};
  for (int a = 0; a < 3; ++a)
    emit(halo_name[a], "voxels", "halo radius of the graph's input along the axis", double(halo[std::size_t(a)]));
  for (int a = 0; a < 3; ++a)
    emit(whole_name[a], "flag", "1 when some node reads the axis whole (a chunk may not split it)",
         double(whole[std::size_t(a)]));
  emit("reduction_passes", "count", "cube-wide reduction passes over all nodes (each a phase of its own)",
       double(passes));
  emit("fft_nodes", "count", "nodes whose operator is FFT-based", double(fft));
  emit("output_bytes_per_voxel", "bytes/voxel", "bytes per voxel of every node output", double(out_bytes));
  emit("kept_bytes_per_voxel", "bytes/voxel", "bytes per voxel of the graph's outputs", double(kept_bytes));

  const auto one = detail::canonical_run(g, 1), two = detail::canonical_run(g, 2);
  const double voxels = double(canonical_shape.voxels());
  static constexpr const char* role_name[4] = {"allocs_input", "allocs_output", "allocs_temporary", "allocs_workspace"};
  for (std::size_t r = 0; r < 4; ++r)
    emit(role_name[r], "count", "allocations of the role on the canonical cube, one thread", double(one.allocs[r]));
  emit("allocs_bound", "count",
       "allocations on the canonical cube whose size is an upper bound (data-dependent operators); the peak is "
       "then a bound too",
       double(one.bound));
  emit("peak_bytes_per_voxel", "bytes/voxel", "peak requested bytes per voxel on the canonical cube, one thread",
       double(one.peak) / voxels);
  emit("allocated_bytes_per_voxel", "bytes/voxel", "bytes allocated per voxel on the canonical cube, one thread",
       double(one.allocated) / voxels);
  emit("scratch_per_thread", "bytes", "what a second thread adds to the canonical cube's peak",
       double(two.peak) - double(one.peak));
}

/// A configuration's execution: everything beside the graph.
struct execution_config {
  shape3 cube;
  shape3 chunk;  ///< ignored when features are emitted without the chunk
  std::size_t workers = 1;
  std::size_t threads = 1;
  std::string allocator = "exact";
  std::uint64_t budget = 0;  ///< bytes per worker
  /// How a worker runs its blocks: dwsr's own (one block at a time, T
  /// threads inside), or Dask-style (T single-threaded tasks at once,
  /// graph/dask_model.hpp), the graph fused per block or one task per node.
  std::optional<dask_split> dask;
};

/// Emits the execution features of `e` (see the file comment); `s` is its
/// schedule, or null to leave out the chunk's columns.
template <class Emit>
void execution_features(const execution_config& e, const chunked_schedule* s, Emit&& emit) {
  emit("inlines", "voxels", "cube extent along inline", double(e.cube.inlines));
  emit("crosslines", "voxels", "cube extent along crossline", double(e.cube.crosslines));
  emit("samples", "voxels", "cube extent along time", double(e.cube.samples));
  emit("input_bytes", "bytes", "the float32 cube's bytes", double(e.cube.voxels() * sizeof(float)));
  if (s) {
    const auto& c = s->blocks();
    emit("chunk_inlines", "voxels", "block extent along inline", double(c.chunk().inlines));
    emit("chunk_crosslines", "voxels", "block extent along crossline", double(c.chunk().crosslines));
    emit("chunk_samples", "voxels", "block extent along time", double(c.chunk().samples));
    emit("blocks", "count", "blocks of the chunking", double(c.count()));
    emit("halo_overhead", "ratio", "voxels read with halos over the cube's voxels, minus one", c.halo_overhead());
    std::uint64_t largest = 1;  // the largest extent along each axis makes the largest block
    for (int a = 0; a < 3; ++a) largest *= c.largest_extended(a);
    emit("block_bytes", "bytes", "the largest halo-extended float32 block", double(largest * sizeof(float)));
    emit("blocks_per_worker", "count", "most blocks one worker runs", double(s->blocks_of(0)));
  }
  emit("workers", "count", "W, worker processes", double(e.workers));
  emit("threads", "count", "T, threads per worker", double(e.threads));
  emit("exec_dask", "flag", "1 for Dask-style execution (T single-threaded tasks at once), 0 for dwsr's",
       double(e.dask.has_value()));
  emit("dask_unfused", "flag", "1 when Dask runs one task per node and block rather than one per block",
       double(e.dask == dask_split::unfused));
  static const auto columns = [] {
    std::vector<std::pair<std::string, std::string_view>> out;  // column, model
    for (const auto& [name, doc] : sim::model_catalogue())
      out.emplace_back(std::string("allocator_").append(name), name);
    return out;
  }();
  const auto model = std::string_view(e.allocator).substr(0, e.allocator.find(':'));
  for (const auto& [col, name] : columns)
    emit(col, "flag", "1 when the workers' allocator is this model", double(model == name));
  emit("budget", "bytes", "memory budget per worker", double(e.budget));
}

}  // namespace dwsr
