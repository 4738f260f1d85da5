#pragma once
/// \file A block's work as Dask tasks: what each task holds while it runs and
/// what it leaves behind for its dependents. DASF runs on Dask, whose workers
/// run single-threaded tasks and keep a task's result until every dependent
/// has run; graph/dask_model.hpp schedules these tasks on T slots.
///
/// Two ways to cut a graph into tasks:
/// - fused: one task per block runs the whole graph (map_blocks over a fused
///   graph). Its memory is the block's own event sequence with one thread:
///   the halo-extended input (map_overlap concatenates the neighbours into a
///   new array, held until the task ends), every node's outputs and scratch,
///   and the graph's outputs until they are stored at the end of the node that
///   makes them. The task leaves nothing behind.
/// - unfused: one task reads the block's extended input, and one task per
///   graph node runs that node on the block. A task's results (a node's
///   outputs, the input) are allocated when it starts and held until its last
///   dependent on the block has run, or freed when it ends if nothing reads
///   them (graph outputs are stored by the task that makes them). Its scratch
///   is what the node allocates and frees while it runs.
///
/// Both come from one meta execution of the block with threads = 1 (the step
/// that plan_chunked runs), split by the event's node: a node's first
/// allocations are its outputs (graph/schedule.hpp allocates them before the
/// node runs), the rest of its allocations are scratch. A reduction phase
/// becomes the reducing node's ancestors plus a task for the fold, whose
/// allocations are all scratch.
///
/// A task's duration comes from the time profile when one is given (the copy
/// of the window for the input task, the node's cost at one thread for a node
/// task, their sum for a fused task), else is the block's extended voxels per
/// step, so that larger blocks take longer.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "dwsr/exec/meta_context.hpp"
#include "dwsr/graph/chunked.hpp"
#include "dwsr/memory/recorder.hpp"
#include "dwsr/sim/time_profile.hpp"

namespace dwsr {

/// How a graph is cut into Dask tasks (see the file comment).
enum class dask_split { fused, unfused };

/// "fused" or "unfused".
constexpr std::string_view name_of(dask_split s) noexcept { return s == dask_split::fused ? "fused" : "unfused"; }

/// One task of one block.
struct dask_task {
  std::vector<std::size_t> deps;  ///< tasks of the same block whose results it reads
  std::uint64_t results = 0;      ///< bytes of its results: allocated at its start, held for its dependents
  std::uint64_t scratch = 0;      ///< highest bytes it allocates beyond its results while it runs
  double seconds = 0;             ///< its duration (or, without a profile, a duration proportional to voxels)
  /// What it holds while it runs.
  std::uint64_t running() const noexcept { return results + scratch; }
};

/// The tasks of one block in one phase, dependencies before dependents.
struct dask_block {
  std::vector<dask_task> tasks;
  /// How many tasks read each task's results.
  std::vector<std::size_t> dependents() const {
    std::vector<std::size_t> n(tasks.size(), 0);
    for (const auto& t : tasks)
      for (const auto d : t.deps) ++n[d];
    return n;
  }
  /// The least any order must reach: a task running with its inputs held.
  std::uint64_t floor() const {
    std::uint64_t most = 0;
    for (const auto& t : tasks) {
      auto held = t.running();
      for (const auto d : std::set<std::size_t>(t.deps.begin(), t.deps.end())) held += tasks[d].results;
      most = std::max(most, held);
    }
    return most;
  }
};

namespace detail {

/// Highest running sum of a sequence of signed byte changes, from zero.
struct running_peak {
  std::int64_t live = 0, peak = 0;
  void add(std::int64_t bytes) { peak = std::max(peak, live += bytes); }
};

}  // namespace detail

/// The tasks of block `b` in phase `ph` of schedule `s`, cut as `split`, with
/// durations from `profile` (may be null). Throws invalid_input when the
/// profile lacks one of the graph's operators.
inline dask_block make_dask_block(const chunked_schedule& s, const schedule_phase& ph, const block& b, dask_split split,
                                  const sim::time_profile* profile) {
  const auto& g = s.graph();
  const auto& ns = g.nodes();
  const auto voxels = b.extended().voxels();
  auto cost = [&](std::optional<std::size_t> node) {
    if (!profile) return double(voxels);
    return node ? profile->of(ns[*node].spec.op).seconds(voxels, 1) : profile->copy.seconds(voxels, 1);
  };
  recorder rec;
  {
    event_bus bus(rec, emitters::one_thread);
    meta_context ctx(bus, {.threads = 1});
    reduction acc;
    run_step(
        ctx, s, ph, b, detail::run_phase_reductions(s), &acc, nullptr, [](float*) {}, nullptr);
  }
  const auto& events = rec.events();
  // The nodes the phase runs, in order; the fold of a reduction phase last.
  std::vector<std::size_t> order;
  const auto needed = ph.reduces() ? ancestors(g, *ph.node) : std::vector<bool>(ns.size(), true);
  for (std::size_t k = 0; k < ns.size(); ++k)
    if (needed[k]) order.push_back(k);
  if (ph.reduces()) order.push_back(*ph.node);

  dask_block out;
  if (split == dask_split::fused) {
    detail::running_peak p;
    for (const auto& e : events) p.add(e.act == action::alloc ? std::int64_t(e.bytes) : -std::int64_t(e.bytes));
    double seconds = cost(std::nullopt);
    for (const auto k : order) seconds += cost(k);
    out.tasks.push_back({{}, 0, std::uint64_t(p.peak), seconds});
    return out;
  }
  // Task 0 reads the input; task i + 1 runs order[i].
  std::vector<std::size_t> task_of(ns.size(), 0);
  for (std::size_t i = 0; i < order.size(); ++i) task_of[order[i]] = i + 1;
  out.tasks.push_back({{}, events.front().bytes, 0, cost(std::nullopt)});
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto k = order[i];
    const bool fold = ph.reduces() && i + 1 == order.size();
    dask_task t;
    for (const auto& r : ns[k].inputs) t.deps.push_back(r.node == cube_ref::input ? 0 : task_of[r.node]);
    t.seconds = cost(k);
    std::set<std::uint64_t> result_ids;
    std::size_t outputs = fold ? 0 : ns[k].outputs.size();
    detail::running_peak scratch;
    for (const auto& e : events) {
      if (e.node != event_node(k)) continue;
      if (e.act == action::alloc && outputs > 0) {
        --outputs;
        t.results += e.bytes;
        result_ids.insert(e.buffer);
      } else if (!result_ids.count(e.buffer)) {
        scratch.add(e.act == action::alloc ? std::int64_t(e.bytes) : -std::int64_t(e.bytes));
      }
    }
    t.scratch = std::uint64_t(scratch.peak);
    out.tasks.push_back(std::move(t));
  }
  return out;
}

}  // namespace dwsr
