#pragma once
/// \file A co-location job (sim/colocate.hpp) from a chunked run: one
/// worker's whole event stream (worker_events, the stream the real run emits)
/// with a time for each event from the time model.
///
/// Timing: a worker runs its blocks one after another, phase by phase, and
/// holds nothing between blocks, so its stream splits into one segment per
/// block where its live buffers return to none. With a time profile, block b
/// lasts what the time model predicts for it (block_seconds, times the
/// contention of the whole run's W x T threads on the profile's cores, as
/// predict_time counts it); without one, default_seconds_per_voxel per
/// extended voxel and per step (the copy and each node the phase runs), a
/// placeholder that keeps bigger blocks longer but is no measurement. A
/// block's events are spread evenly over its time: event i of m at
/// block start + duration x i / m. The job's duration is the sum of its
/// blocks' times, the worker's busy time of predict_time.

#include <cstdint>
#include <string>
#include <vector>

#include "dwsr/error.hpp"
#include "dwsr/graph/chunked.hpp"
#include "dwsr/graph/time_model.hpp"
#include "dwsr/memory/recorder.hpp"
#include "dwsr/sim/colocate.hpp"
#include "dwsr/sim/time_profile.hpp"

namespace dwsr {

/// Seconds per extended voxel and per step of a block when no time profile is given.
inline constexpr double default_seconds_per_voxel = 1e-9;

/// How colocated_job builds a job.
struct colocated_job_options {
  std::size_t worker = 0;                                  ///< whose stream
  const sim::time_profile* profile = nullptr;              ///< the time model's profile; none: the default rate
  std::size_t cores = 0;                                   ///< cores for the contention (0: the profile's)
  std::string allocator = "exact";                         ///< the job's allocator model spec
  std::uint64_t overhead = sim::default_process_overhead;  ///< the job's process overhead
  double start = 0;                                        ///< seconds
  std::string name;                                        ///< empty: "worker <w>"
};

/// Worker o.worker's job of schedule `s` (see the file comment). Throws
/// invalid_input for a worker out of range or an operator the profile lacks.
inline sim::job colocated_job(const chunked_schedule& s, const colocated_job_options& o = {}) {
  if (o.worker >= s.workers())
    throw invalid_input("worker " + std::to_string(o.worker) + " of a schedule with " + std::to_string(s.workers()) +
                        " workers; expected 0 to " + std::to_string(s.workers() - 1));
  const auto& g = s.graph();
  const auto threads = s.options().threads;
  recorder stream;
  worker_events(s, o.worker, stream);

  // Each block's seconds, in the order the worker runs them.
  std::vector<double> seconds;
  std::vector<const sim::step_cost*> costs;
  double contention = 1;
  if (o.profile) {
    costs = node_costs(g, *o.profile);
    contention = predict_time(s, *o.profile, o.cores).contention;
  }
  for (const auto& ph : s.phases()) {
    const auto needed = phase_nodes(g, ph);
    std::size_t steps = 1;
    for (bool n : needed) steps += n;
    s.for_each_block(o.worker, [&](const block& b) {
      const auto voxels = b.extended().voxels();
      seconds.push_back(o.profile ? block_seconds(*o.profile, costs, needed, voxels, threads) * contention
                                  : default_seconds_per_voxel * double(voxels) * double(steps));
    });
  }

  sim::job j;
  j.name = o.name.empty() ? "worker " + std::to_string(o.worker) : o.name;
  j.events = stream.events();
  j.allocator = o.allocator;
  j.overhead = o.overhead;
  j.start = o.start;
  j.times.reserve(j.events.size());
  // Split the stream where the worker's live buffers return to none.
  std::size_t first = 0, live = 0, blk = 0;
  double t = 0;
  for (std::size_t i = 0; i < j.events.size(); ++i) {
    live = j.events[i].act == action::alloc ? live + 1 : live - 1;
    if (live != 0) continue;
    if (blk == seconds.size()) break;
    const auto m = double(i + 1 - first);
    for (std::size_t k = first; k <= i; ++k) j.times.push_back(t + seconds[blk] * double(k - first) / m);
    t += seconds[blk++];
    first = i + 1;
  }
  if (blk != seconds.size() || j.times.size() != j.events.size())
    throw error("worker " + std::to_string(o.worker) + "'s stream has " + std::to_string(blk) + " blocks where " +
                std::to_string(seconds.size()) + " were expected; a worker must hold nothing between blocks");
  j.duration = t;
  return j;
}

}  // namespace dwsr
