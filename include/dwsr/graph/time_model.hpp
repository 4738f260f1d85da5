#pragma once
/// \file How long a chunked run takes, predicted from a machine's time profile
/// (sim/time_profile.hpp): every block costs the copy of its window plus, per
/// graph node it runs, the node's fixed cost and its cost per extended voxel
/// at the worker's T threads. A worker runs its blocks one after another; the
/// phases of a run (reduction passes, then the graph) are separated by
/// barriers, so the makespan is the sum over phases of the slowest worker.
/// Workers share the machine's cores: when W x T busy threads exceed them,
/// every worker slows by that ratio.
///
/// Blocks of one shape cost the same, so the prediction counts each worker's
/// blocks per shape (graph/block_classes.hpp), like the memory plan: it costs
/// microseconds whatever the number of blocks.
///
/// What it leaves out: parameters that change an operator's cost (a wider
/// gaussian costs more per voxel than the default the profile measured), the
/// cost of writing outputs to files, and memory-bandwidth contention beyond
/// the core count.

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "dwsr/graph/block_classes.hpp"
#include "dwsr/graph/chunked_schedule.hpp"
#include "dwsr/graph/schedule.hpp"
#include "dwsr/sim/time_profile.hpp"

namespace dwsr {

/// A predicted chunked run.
struct time_prediction {
  double makespan = 0;                 ///< seconds from the first block to the last
  std::vector<double> worker_seconds;  ///< per worker, busy seconds over all phases
  std::size_t idle_workers = 0;        ///< workers without a block
  double contention = 1;               ///< busy threads over cores when above 1 (every step slows by it)
};

/// The nodes a phase runs: all of them, or a reducing node and its ancestors.
inline std::vector<bool> phase_nodes(const graph& g, const schedule_phase& ph) {
  if (!ph.reduces()) return std::vector<bool>(g.nodes().size(), true);
  auto needed = ancestors(g, *ph.node);
  needed[*ph.node] = true;
  return needed;
}

/// The profile's costs of g's nodes, in node order; invalid_input naming
/// the first operator the profile lacks.
inline std::vector<const sim::step_cost*> node_costs(const graph& g, const sim::time_profile& p) {
  std::vector<const sim::step_cost*> costs;
  for (const auto& n : g.nodes()) costs.push_back(&p.of(n.spec.op));
  return costs;
}

/// Seconds one block of `voxels` extended voxels takes with T threads, alone
/// on the machine: the copy of its window plus each node in `needed` (costs
/// from node_costs).
inline double block_seconds(const sim::time_profile& p, const std::vector<const sim::step_cost*>& costs,
                            const std::vector<bool>& needed, std::uint64_t voxels, std::size_t threads) {
  double sec = p.copy.seconds(voxels, threads);
  for (std::size_t n = 0; n < costs.size(); ++n)
    if (needed[n]) sec += costs[n]->seconds(voxels, threads);
  return sec;
}

/// Predicts the run of schedule `s` on a machine of `cores` cores (0: the
/// profile's) from profile `p`. Throws invalid_input when the profile lacks
/// one of the graph's operators.
inline time_prediction predict_time(const chunked_schedule& s, const sim::time_profile& p, std::size_t cores = 0) {
  if (cores == 0) cores = p.cores;
  const auto& g = s.graph();
  const auto threads = s.options().threads;
  const auto costs = node_costs(g, p);
  const block_classes classes(s.blocks());
  const auto& ks = classes.classes();

  time_prediction t;
  t.worker_seconds.assign(s.workers(), 0.0);
  std::size_t busy = 0;
  for (std::size_t w = 0; w < s.workers(); ++w) busy += s.blocks_of(w) > 0;
  t.idle_workers = s.workers() - busy;
  t.contention = std::max(1.0, double(busy * threads) / double(cores));

  std::vector<std::uint64_t> before, upto;  // per class: blocks below a worker's range, reused
  for (const auto& ph : s.phases()) {
    const auto needed = phase_nodes(g, ph);
    std::vector<double> seconds(ks.size());
    for (std::size_t k = 0; k < ks.size(); ++k)
      seconds[k] = block_seconds(p, costs, needed, ks[k].extended.voxels(), threads) * t.contention;
    double slowest = 0;
    classes.counts_below(0, before);
    for (std::size_t w = 0; w < s.workers(); ++w) {
      const auto [first, last] = s.range_of(w);
      if (first == last) break;
      classes.counts_below(last, upto);
      double sec = 0;
      for (std::size_t k = 0; k < ks.size(); ++k) sec += double(upto[k] - before[k]) * seconds[k];
      t.worker_seconds[w] += sec;
      slowest = std::max(slowest, sec);
      std::swap(before, upto);
    }
    t.makespan += slowest;
  }
  return t;
}

}  // namespace dwsr
