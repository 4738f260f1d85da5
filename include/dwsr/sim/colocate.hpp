#pragma once
/// \file Co-located jobs on one device: several processes share a GPU or a
/// MIG slice (sim/device_model.hpp), each replaying its own event stream
/// through its own allocator model, interleaved in time. The replay reports
/// the device's peak (when, and what each job held then), the first
/// allocation the device could not serve, and each job's outcome.
///
/// The model:
/// - A job is a process. From its start it holds a fixed overhead (its CUDA
///   context: default_process_overhead unless given), then replays its events
///   through its allocator model (sim/any_model.hpp, unlimited on its own:
///   the device is the limit). It ends at start + duration, releasing
///   everything it still holds, its allocator's cache included.
/// - Its events happen at start + times[i] when times are given (e.g. from a
///   time model: graph/colocated_job.hpp), else spread evenly over the
///   duration: event i of n at start + duration x i / n.
/// - The device's usage is the sum over the jobs alive of overhead + the
///   model's reserved bytes (what the allocator holds from the device).
/// - Steps happen in time order; at equal times, by job index, then in the
///   job's own order (start, events, end): the replay is deterministic.
/// - An allocation that would take the device's usage past its capacity
///   first releases the job's own cached memory (torch.cuda.empty_cache(), as
///   PyTorch does before it reports an OOM; models without a cache have none);
///   if it still does not fit, the job fails: it runs out of memory at that
///   event, and releases everything it holds at once (the process exits). A
///   job whose overhead does not fit fails at its start (its context cannot
///   be created). Other jobs run on. With stop_at_first_oom, the replay ends
///   at the first failure instead. A caller that relaunches a failed job
///   elsewhere (e.g. on a whole GPU) reads its failure time from the result.
///
/// What it leaves out: jobs do not slow each other down (each keeps its own
/// times), and the driver's own fragmentation of device memory is not
/// modelled (an allocation fits when the bytes are free).
///
/// Cost: a k-way merge of the jobs' streams, O(events x log jobs), plus what
/// each allocator model costs per event.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <queue>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "dwsr/error.hpp"
#include "dwsr/memory/event.hpp"
#include "dwsr/sim/any_model.hpp"
#include "dwsr/sim/device_model.hpp"

namespace dwsr::sim {

/// Default memory a process holds before its first allocation: 512 MiB,
/// about what a CUDA 12 context with lazy module loading plus a framework's
/// kernels occupy on an A100 or H100 (nvidia-smi's per-process usage of an
/// idle PyTorch or CuPy process is 300-600 MiB). Override per job.
inline constexpr std::uint64_t default_process_overhead = 512 * mib;

/// One process on the device (see the file comment).
struct job {
  std::string name;                                   ///< shown in results and messages
  std::vector<event> events;                          ///< its stream, every event on this device
  std::string allocator = "exact";                    ///< allocator model spec (make_model)
  std::uint64_t overhead = default_process_overhead;  ///< bytes held from start to end (CUDA context)
  double start = 0;                                   ///< seconds
  double duration = 0;                                ///< seconds from start to end
  std::vector<double> times;                          ///< seconds after start, one per event, non-decreasing; or empty
};

/// One job's part of a replay.
struct job_result {
  std::string name;
  double start = 0;
  double end = 0;                    ///< when it completed or failed
  bool failed = false;               ///< ran out of memory (end is when)
  std::uint64_t events = 0;          ///< events replayed (the failing one included)
  std::uint64_t peak = 0;            ///< highest overhead + reserved while it was alive
  std::uint64_t cache_releases = 0;  ///< times the device being full made it release its cache
  model_stats stats;                 ///< its allocator model at its end
};

/// An allocation (or a context) the device could not serve.
struct device_oom {
  double time = 0;
  std::size_t job = 0;                 ///< index into the jobs
  std::optional<std::uint64_t> event;  ///< index into the job's events; none: its context at start
  std::uint64_t requested = 0;         ///< bytes the event (or the context) asked for
  std::uint64_t usage = 0;             ///< device usage right before it, all jobs
  std::uint64_t capacity = 0;
  friend bool operator==(const device_oom&, const device_oom&) = default;
};

/// The device's usage after one step.
struct usage_point {
  double time = 0;
  std::uint64_t bytes = 0;
  friend bool operator==(const usage_point&, const usage_point&) = default;
};

/// The result of a co-location replay.
struct colocate_result {
  device_spec device;
  std::uint64_t capacity = 0;
  std::uint64_t peak = 0;              ///< highest device usage
  double peak_time = 0;                ///< first time it was reached
  std::vector<std::uint64_t> at_peak;  ///< each job's overhead + reserved then (0 when not alive)
  std::vector<device_oom> ooms;        ///< every failure, in time order
  std::vector<job_result> jobs;        ///< in the order given
  std::vector<usage_point> timeline;   ///< after every step, when asked for
  bool stopped = false;                ///< stop_at_first_oom ended the replay early

  /// The first allocation the device could not serve, if any.
  std::optional<device_oom> first_oom() const {
    return ooms.empty() ? std::nullopt : std::optional<device_oom>(ooms.front());
  }
};

/// What a replay records and how it treats a failure.
struct colocate_options {
  std::optional<std::uint64_t> capacity;  ///< instead of the device's
  bool timeline = false;                  ///< keep the usage after every step
  bool stop_at_first_oom = false;         ///< end the replay at the first failure
};

namespace detail {

/// Throws invalid_input when job `j`'s timing is not usable.
inline void check_job(const job& j, std::size_t index) {
  const auto who = "job " + std::to_string(index) + (j.name.empty() ? std::string{} : " (" + j.name + ")");
  if (!std::isfinite(j.start) || j.start < 0)
    throw invalid_input(who + ": start " + std::to_string(j.start) + " s; expected a finite time >= 0");
  if (!std::isfinite(j.duration) || j.duration < 0)
    throw invalid_input(who + ": duration " + std::to_string(j.duration) + " s; expected a finite time >= 0");
  if (j.times.empty()) return;
  if (j.times.size() != j.events.size())
    throw invalid_input(who + ": " + std::to_string(j.times.size()) + " event times for " +
                        std::to_string(j.events.size()) + " events; expected one per event, or none");
  double last = 0;
  for (std::size_t i = 0; i < j.times.size(); ++i) {
    if (!std::isfinite(j.times[i]) || j.times[i] < last)
      throw invalid_input(who + ": event " + std::to_string(i) + " at " + std::to_string(j.times[i]) +
                          " s; expected finite times >= 0 that never decrease");
    last = j.times[i];
  }
}

/// When job j's step `pos` happens: 0 is its start, 1..n its events, n + 1 its end.
inline double step_time(const job& j, std::size_t pos) {
  const auto n = j.events.size();
  const double span = j.times.empty() ? j.duration : std::max(j.duration, j.times.back());
  if (pos == 0) return j.start;
  if (pos == n + 1) return j.start + span;
  if (!j.times.empty()) return j.start + j.times[pos - 1];
  return j.start + j.duration * double(pos - 1) / double(n);
}

}  // namespace detail

/// Replays `jobs` co-located on `device` (see the file comment). Throws
/// invalid_input for a bad timing, allocator spec or event stream (naming the job).
inline colocate_result colocate(const device_spec& device, std::span<const job> jobs,
                                const colocate_options& options = {}) {
  colocate_result r;
  r.device = device;
  r.capacity = options.capacity.value_or(device.capacity);
  r.at_peak.assign(jobs.size(), 0);
  std::vector<any_model> models;
  models.reserve(jobs.size());
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    detail::check_job(jobs[j], j);
    models.push_back(make_model(jobs[j].allocator));
    auto& out = r.jobs.emplace_back();
    out.name = jobs[j].name;
    out.start = jobs[j].start;
    out.end = detail::step_time(jobs[j], jobs[j].events.size() + 1);
  }

  std::vector<std::uint64_t> held(jobs.size(), 0);  // overhead + reserved while alive
  std::vector<bool> done(jobs.size(), false);
  std::uint64_t usage = 0;
  auto set_held = [&](std::size_t j, std::uint64_t bytes) {
    usage = usage - held[j] + bytes;
    held[j] = bytes;
    r.jobs[j].peak = std::max(r.jobs[j].peak, bytes);
  };
  auto fail = [&](std::size_t j, double t, std::optional<std::uint64_t> ev, std::uint64_t requested,
                  std::uint64_t before) {
    r.ooms.push_back({t, j, ev, requested, before, r.capacity});
    r.jobs[j].failed = true;
    r.jobs[j].end = t;
    set_held(j, 0);
    done[j] = true;
  };

  // k-way merge: (time, job, position), the smallest first.
  using step = std::tuple<double, std::size_t, std::size_t>;
  std::priority_queue<step, std::vector<step>, std::greater<>> next;
  for (std::size_t j = 0; j < jobs.size(); ++j) next.emplace(jobs[j].start, j, 0);
  while (!next.empty()) {
    const auto [t, j, pos] = next.top();
    next.pop();
    if (done[j]) continue;
    const auto& jb = jobs[j];
    const auto n = jb.events.size();
    const auto before = usage;
    if (pos == 0) {
      if (jb.overhead > r.capacity - std::min(r.capacity, usage)) {
        fail(j, t, std::nullopt, jb.overhead, before);
      } else {
        set_held(j, jb.overhead);
      }
    } else if (pos <= n) {
      const auto& e = jb.events[pos - 1];
      auto& m = models[j];
      try {
        m.on_event(e);
      } catch (const invalid_input& err) {
        throw invalid_input("job " + std::to_string(j) + " (" + jb.name + "), event " + std::to_string(pos - 1) + ": " +
                            err.what());
      }
      ++r.jobs[j].events;
      auto fits = [&] { return usage - held[j] + jb.overhead + m.reserved() <= r.capacity; };
      if (e.act == action::alloc && !m.oom() && !fits()) {
        m.empty_cache();
        ++r.jobs[j].cache_releases;
      }
      if (m.oom() || (e.act == action::alloc && !fits())) {
        r.jobs[j].stats = m.stats();
        fail(j, t, pos - 1, e.bytes, before);
      } else {
        set_held(j, jb.overhead + m.reserved());
      }
    } else {
      r.jobs[j].stats = models[j].stats();
      set_held(j, 0);
      done[j] = true;
    }
    if (usage > r.peak) {
      r.peak = usage;
      r.peak_time = t;
      r.at_peak = held;
    }
    if (options.timeline) r.timeline.push_back({t, usage});
    if (options.stop_at_first_oom && !r.ooms.empty()) {
      r.stopped = true;
      break;
    }
    if (!done[j]) next.emplace(detail::step_time(jb, pos + 1), j, pos + 1);
  }
  for (std::size_t j = 0; j < jobs.size(); ++j)
    if (!done[j]) r.jobs[j].stats = models[j].stats();
  return r;
}

}  // namespace dwsr::sim
