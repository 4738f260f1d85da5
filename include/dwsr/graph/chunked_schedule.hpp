#pragma once
/// \file Who runs which block in which phase of a chunked execution: the one
/// schedule that the plan (plan_chunked), the event listing (worker_events) and
/// the real run (run_chunked) all walk, so that they agree event for event.
///
/// The cube is split into blocks of the chunk shape, each extended by the
/// graph's halo (graph/chunking.hpp). Each worker runs a contiguous range of
/// the blocks' C-order numbers, one block after another: with N blocks, the
/// first N mod W workers run floor(N / W) + 1 blocks, the others floor(N / W).
/// Contiguous ranges let a plan count the blocks of each shape a worker runs
/// by arithmetic (graph/block_classes.hpp) instead of visiting them.
///
/// When the graph needs cube-wide reductions and there is more than one block,
/// each (node, pass) is a phase of its own over all blocks, every worker's
/// blocks folded before the next phase starts; the last phase runs the graph. A single block is the whole cube, on
/// which every operator reduces its own input, as a whole-cube run does.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dwsr/core/limits.hpp"
#include "dwsr/error.hpp"
#include "dwsr/graph/chunking.hpp"
#include "dwsr/graph/graph.hpp"

namespace dwsr {

/// How a chunked execution is laid out.
struct chunked_options {
  shape3 chunk{};           ///< block shape; zero extents mean "the whole cube along that axis"
  std::size_t workers = 1;  ///< W
  std::size_t threads = 1;  ///< T per worker
  std::uint64_t budget = std::numeric_limits<std::uint64_t>::max();  ///< bytes per worker
};

/// One phase: a reduction pass of one node over every block, or the run of the graph.
struct schedule_phase {
  std::optional<std::size_t> node;  ///< the reducing node, or none for the graph's run
  std::size_t pass = 0;
  bool reduces() const noexcept { return node.has_value(); }
};

/// The validated layout of a chunked execution of `g` on a cube.
class chunked_schedule {
 public:
  /// Throws invalid_input for zero workers or threads, or more than
  /// max_workers or max_threads (core/limits.hpp), or a chunk that splits
  /// an axis some node reads whole (naming the node and the extent to use).
  chunked_schedule(const graph& g, shape3 cube, const chunked_options& o)
      : graph_(&g), options_(o), blocks_(make_chunking(g, cube, o)) {
    if (blocks_.count() > 1)
      for (std::size_t k = 0; k < g.nodes().size(); ++k)
        for (std::size_t p = 0; p < g.nodes()[k].op->reduction_passes(); ++p) phases_.push_back({k, p});
    phases_.push_back({});
  }

  const dwsr::graph& graph() const noexcept { return *graph_; }
  const chunked_options& options() const noexcept { return options_; }
  const chunking& blocks() const noexcept { return blocks_; }
  std::size_t workers() const noexcept { return options_.workers; }
  /// Phases in order; the last one runs the graph.
  const std::vector<schedule_phase>& phases() const noexcept { return phases_; }
  /// The block numbers [first, last) worker w runs in each phase.
  std::pair<std::uint64_t, std::uint64_t> range_of(std::size_t w) const noexcept {
    const std::uint64_t n = blocks_.count(), workers = options_.workers, k = w;
    const auto share = n / workers, extra = n % workers;
    const auto first = k * share + std::min(k, extra);
    return {first, first + share + (k < extra ? 1 : 0)};
  }
  /// Number of blocks worker w runs in each phase.
  std::uint64_t blocks_of(std::size_t w) const noexcept {
    const auto [first, last] = range_of(w);
    return last - first;
  }
  /// Calls f(block) for worker w's blocks, in order.
  template <class F>
  void for_each_block(std::size_t w, F&& f) const {
    const auto [first, last] = range_of(w);
    for (auto i = first; i < last; ++i) f(blocks_.at(i));
  }

 private:
  static chunking make_chunking(const dwsr::graph& g, shape3 cube, const chunked_options& o) {
    if (o.workers == 0 || o.workers > max_workers)
      throw invalid_input(std::to_string(o.workers) + " workers; expected 1 to " + std::to_string(max_workers));
    if (o.threads == 0 || o.threads > max_threads)
      throw invalid_input(std::to_string(o.threads) + " threads per worker; expected 1 to " +
                          std::to_string(max_threads));
    shape3 chunk = o.chunk;
    if (chunk.inlines == 0) chunk.inlines = cube.inlines;
    if (chunk.crosslines == 0) chunk.crosslines = cube.crosslines;
    if (chunk.samples == 0) chunk.samples = cube.samples;
    static constexpr const char* axis_name[3] = {"inline", "crossline", "time"};
    static constexpr const char* reads[3] = {"wraps around the inline faces", "wraps around the crossline faces",
                                             "reads whole traces"};
    const auto whole = g.whole_axes();
    for (int a = 0; a < 3; ++a) {
      if (!whole[a] || chunk[a] >= cube[a]) continue;
      std::string who, global;  // operators that read the axis whole; those whose result is global
      for (const auto& n : g.nodes()) {
        const auto h = n.op->halo();
        if (!h.whole_axes()[a]) continue;
        auto& list = h.whole_cube ? global : who;
        list += (list.empty() ? "" : ", ") + n.spec.op;
      }
      const std::string why =
          who.empty() ? global + " needs the whole cube at once (its result is global)" : who + " " + reads[a];
      throw invalid_input("chunk " + to_string(chunk) + " splits the " + axis_name[a] + " axis, but " + why +
                          "; use a chunk " + axis_name[a] + " extent of " + std::to_string(cube[a]));
    }
    return chunking(cube, chunk, g.input_halo());
  }

  const dwsr::graph* graph_;
  chunked_options options_;
  chunking blocks_;
  std::vector<schedule_phase> phases_;
};

}  // namespace dwsr
