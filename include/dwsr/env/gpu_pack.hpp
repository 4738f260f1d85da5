#pragma once
/// \file GpuPack: co-locate arriving jobs on G GPUs and MIG slices. Jobs
/// arrive from a seeded trace of the pool's kinds (env/gpu_pack_jobs.hpp);
/// each step places the job at the head of the queue on one device, or waits.
/// A device's memory over time is the sum of its jobs' profiles (each the
/// co-location replay's usage of the job alone, highest per 1/32 of its
/// duration); a placement that takes that sum past the device's capacity
/// runs the job out of memory, and CARMA's recovery relaunches it on a whole
/// GPU of its own, at the cost of its whole duration again.
///
/// Time: an integer clock of the pool's ticks. A step:
/// - action g in 0..G-1 places the head job on device g, starting now. Then,
///   while the queue is empty and jobs remain, the clock advances event by
///   event (arrivals, completions, failures) until the next job arrives: the
///   next decision is at the next arrival, or now when jobs still queue.
/// - action G waits: the clock advances to the next event (every event of
///   that tick is processed), then on as above while the queue is empty. A
///   wait when no event is pending changes nothing.
/// An episode ends (terminated) when every job of the trace completed: the
/// step that places the last job runs the clock to the last completion. It is
/// truncated after max_steps steps.
///
/// Out of memory: when the job placed last takes the device's summed profile
/// past its capacity at some tick (the earliest such tick t, checked over the
/// job's whole duration against the jobs already there, which were all
/// checked when they were placed), that job fails at t: it holds its memory
/// until t, loses its work, and is queued, in the order of failure, for the
/// recovery GPU (options.recovery, a whole GPU apart from the G devices),
/// which runs one job at a time, each alone, for its full duration. Jobs
/// already on the device are never the ones to fail. The profile is the
/// allocator's reserved bytes, highest per segment: the replay's
/// empty_cache() before an OOM and the profile's lower values within a
/// segment are not credited (conservative).
///
/// Reward: r = work / W_ref - cost / T_ref, where work is the voxels of the
/// jobs completed during the step (on a device or the recovery GPU), W_ref and
/// T_ref the pool's mean work and duration (both parts, so that train and test
/// share a scale), and cost the step's time:
/// - flow_time (the default): the ticks the clock advanced times the jobs in
///   the system (arrived, not completed) over each interval. A terminated
///   episode's return is (total work) / W_ref - (the jobs' summed response
///   times) / T_ref, and summed completion times are the integral of the jobs
///   not yet completed over time: a policy that has completed at least as many
///   jobs at every moment (more throughput all along) never scores less.
/// - makespan: the ticks the clock advanced. The return is (total work) /
///   W_ref - makespan / T_ref: monotone in the episode's mean throughput, but
///   one long job sets the makespan and hides the other jobs' waits (on the
///   default pool, heuristics differ by a few percent of the return).
/// The trace's work is fixed, so the work term is the same for every policy
/// of a terminated episode; it rewards completing before truncation.
///
/// Concurrency: a device runs at most its limit of jobs at once, by default
/// its compute slices (7 for a whole GPU, 3 for a 3g MIG slice): each job
/// takes a seventh of the GPU's SMs. The device model leaves compute out (jobs
/// do not slow each other down), so without a limit only memory would bind;
/// options.max_running sets one limit for every device instead.
///
/// Mask: action g is valid when a job waits, device g runs fewer jobs than
/// its limit and its capacity holds the head job's peak alone; wait is
/// always valid. An invalid action (masked, or outside 0..G) is a wait, with
/// info.invalid_action set.
///
/// Observation (float32, each value clipped to its bounds): per device g,
/// log2 of its capacity in GiB, its usage now / capacity, its highest usage
/// over the next T_ref ticks / capacity (jobs already placed), its jobs /
/// its limit; then the head job's peak / the largest device's capacity,
/// log2 of its duration / T_ref and of its work / W_ref (0, 0, 0 when none
/// waits), the queue / jobs, the jobs yet to arrive / jobs, the recovery
/// GPU's backlog / T_ref and the clock / T_ref.
///
/// Determinism: the trace is drawn at reset from the environment's stream
/// (core/random.hpp): kinds uniform over the part, gaps exponential with mean
/// T_ref / (load x the devices' limits summed) ticks (portable_log, rounded
/// down to ticks), the first at tick 0; or given whole (options.trace, the
/// same every episode). The rest is integer arithmetic; logs are
/// portable_log. A step allocates nothing: the running jobs of each device
/// live in fixed slots.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dwsr/core/random.hpp"
#include "dwsr/env/env.hpp"
#include "dwsr/env/gpu_pack_jobs.hpp"
#include "dwsr/env/peak_predict.hpp"
#include "dwsr/env/spaces.hpp"
#include "dwsr/error.hpp"
#include "dwsr/sim/device_model.hpp"

namespace dwsr::env {

/// One arrival of a trace: a job of pool kind `kind` at tick `tick`.
struct gpu_pack_arrival {
  std::uint32_t kind = 0;
  std::uint64_t tick = 0;
  bool operator==(const gpu_pack_arrival&) const = default;
};

/// What a GpuPack step's time costs (see the file comment).
enum class gpu_pack_time_cost {
  makespan,   ///< dt / T_ref
  flow_time,  ///< dt x jobs in the system / T_ref
};

/// GpuPack's default devices: an H100 whole and three of its MIG slices.
inline std::vector<sim::device_spec> default_gpu_pack_devices() {
  return {sim::device_named("h100-80gb"), sim::device_named("h100-80gb/3g.40gb"),
          sim::device_named("h100-80gb/2g.20gb"), sim::device_named("h100-80gb/1g.10gb")};
}

/// GpuPack's settings.
struct gpu_pack_options {
  pool_part part = pool_part::train;
  std::vector<sim::device_spec> devices = default_gpu_pack_devices();  ///< the G devices actions place on
  sim::device_spec recovery = sim::device_named("h100-80gb");          ///< where a job that ran out of memory reruns
  std::size_t jobs = 32;                                               ///< arrivals per episode (drawn traces)
  double load = 2;  ///< arrival rate x T_ref / the limits' sum: above 1, jobs arrive faster than the devices run them
  std::size_t max_running = 0;          ///< jobs one device runs at once; 0: its compute slices (see the file comment)
  std::uint64_t max_steps = 0;          ///< truncation; 0: 8 x the trace's jobs
  std::vector<gpu_pack_arrival> trace;  ///< when not empty, every episode's arrivals (kinds of the part)
  gpu_pack_time_cost time_cost = gpu_pack_time_cost::flow_time;
};

/// What GpuPack reports beside the reward.
struct gpu_pack_info {
  std::uint64_t job = 0;        ///< the head job's index in the trace (the next to arrive when none waits)
  std::uint64_t kind = 0;       ///< the head job's kind in the pool (0 when none waits)
  std::int64_t placed = -1;     ///< step: the device this step placed a job on; -1 when it waited
  std::uint64_t clock = 0;      ///< ticks since the episode began
  double seconds = 0;           ///< the clock in seconds
  double work = 0;              ///< step: voxels of the jobs completed during the step
  std::uint64_t completed = 0;  ///< jobs completed so far
  std::uint64_t ooms = 0;       ///< jobs that ran out of memory so far
  std::uint64_t queued = 0;     ///< jobs arrived and not placed
  bool invalid_action = false;  ///< step: the action was invalid (a wait)
  bool operator==(const gpu_pack_info&) const = default;
};

namespace detail {

/// Compute slices of device d: a MIG profile's ("3g.40gb": 3), 7 for a
/// whole GPU or a device the catalogue does not know.
inline std::size_t compute_slices(const sim::device_spec& d) {
  for (const auto& g : sim::gpu_catalogue())
    if (g.name == d.gpu)
      for (const auto& p : g.profiles)
        if (p.name == d.profile) return p.compute_slices;
  return 7;
}

/// log2 of a positive finite x from portable arithmetic.
inline double portable_log2(double x) noexcept { return portable_log(x) * 1.4426950408889634; }

/// What copies of a GpuPack share.
struct gpu_pack_model {
  std::shared_ptr<const gpu_pack_jobs> jobs;
  std::vector<std::uint32_t> part;  ///< kinds of the part
  std::vector<sim::device_spec> devices;
  sim::device_spec recovery;
  std::vector<float> log2_capacity;  ///< per device, GiB
  std::vector<std::uint32_t> limit;  ///< per device: jobs it runs at once
  std::uint64_t largest = 0;         ///< the largest device's capacity
  std::vector<gpu_pack_arrival> trace;
  std::size_t jobs_per_episode = 0, max_running = 0;
  std::uint64_t max_steps = 0, horizon = 1;
  double mean_ticks = 1, mean_work = 1, mean_gap = 1;
  gpu_pack_time_cost time_cost = gpu_pack_time_cost::makespan;
  box_space observations{{}, {}, {0}};
  discrete_space actions;
};

inline std::shared_ptr<const gpu_pack_model> make_gpu_pack_model(std::shared_ptr<const gpu_pack_jobs> jobs,
                                                                 const gpu_pack_options& o) {
  if (!jobs || jobs->kinds.empty()) throw invalid_input("GpuPack without a job pool; expected at least one kind");
  const auto& p = *jobs;
  if (o.devices.empty() || o.devices.size() > 256)
    throw invalid_input(std::to_string(o.devices.size()) + " devices; expected 1 to 256");
  if (o.max_running > 1024)
    throw invalid_input("max_running " + std::to_string(o.max_running) + ": expected 0 (compute slices) to 1024");
  if (!(std::isfinite(o.load) && o.load > 0))
    throw invalid_input("load " + std::to_string(o.load) + ": expected a positive finite rate");
  const auto want = o.part == pool_part::test;
  const char* part_name = want ? "test" : "train";
  auto m = std::make_shared<gpu_pack_model>();
  for (std::uint32_t k = 0; k < p.size(); ++k)
    if (p.kinds[k].test == want) m->part.push_back(k);
  if (m->part.empty())
    throw invalid_input(std::string("the pool's ") + part_name + " part has no job kind; expected at least one");
  for (const auto& d : o.devices) {
    if (d.capacity == 0) throw invalid_input("device " + quote(d.name) + " of 0 bytes; expected a capacity");
    m->largest = std::max(m->largest, d.capacity);
    m->log2_capacity.push_back(float(portable_log2(double(d.capacity) / double(std::uint64_t{1} << 30))));
    m->limit.push_back(std::uint32_t(o.max_running ? o.max_running : compute_slices(d)));
    m->max_running = std::max<std::size_t>(m->max_running, m->limit.back());
  }
  // Every kind that can arrive (the part's, or the trace's) fits some device and the recovery GPU.
  auto check_fits = [&](std::uint32_t k) {
    const auto& kind = p.kinds[k];
    if (kind.peak > m->largest || kind.peak > o.recovery.capacity)
      throw invalid_input("job kind " + std::to_string(k) + " (" + kind.name + ") peaks at " +
                          std::to_string(kind.peak) + " bytes, more than the largest device (" +
                          std::to_string(m->largest) + ") or the recovery GPU " + quote(o.recovery.name) + " (" +
                          std::to_string(o.recovery.capacity) + "); expected every kind that arrives to fit both");
  };
  if (o.trace.empty()) {
    if (o.jobs == 0 || o.jobs > 1'000'000)
      throw invalid_input(std::to_string(o.jobs) + " jobs per episode; expected 1 to 1000000");
    m->jobs_per_episode = o.jobs;
    for (auto k : m->part) check_fits(k);
  } else {
    if (o.trace.size() > 1'000'000)
      throw invalid_input("a trace of " + std::to_string(o.trace.size()) + " jobs; expected at most 1000000");
    for (std::size_t i = 0; i < o.trace.size(); ++i) {
      const auto& a = o.trace[i];
      if (a.kind >= p.size() || p.kinds[a.kind].test != want)
        throw invalid_input("trace job " + std::to_string(i) + " of kind " + std::to_string(a.kind) +
                            ": expected a kind of the pool's " + part_name + " part");
      if (i > 0 && a.tick < o.trace[i - 1].tick)
        throw invalid_input("trace job " + std::to_string(i) + " arrives at tick " + std::to_string(a.tick) +
                            ", before job " + std::to_string(i - 1) + "; expected arrivals in time order");
      check_fits(a.kind);
    }
    m->trace = o.trace;
    m->jobs_per_episode = o.trace.size();
  }
  m->max_steps = o.max_steps ? o.max_steps : 8 * std::uint64_t(m->jobs_per_episode);
  double ticks = 0, work = 0;
  for (const auto& k : p.kinds) ticks += double(k.ticks()), work += double(k.work);
  m->mean_ticks = ticks / double(p.size());
  m->mean_work = std::max(1.0, work / double(p.size()));
  double slots = 0;
  for (auto l : m->limit) slots += double(l);
  m->mean_gap = m->mean_ticks / (o.load * slots);
  m->horizon = std::max<std::uint64_t>(1, std::uint64_t(m->mean_ticks));
  m->devices = o.devices;
  m->recovery = o.recovery;
  m->time_cost = o.time_cost;
  m->actions = {std::int64_t(o.devices.size()) + 1};
  std::vector<float> lo, hi;
  for (std::size_t g = 0; g < o.devices.size(); ++g) {
    lo.insert(lo.end(), {0, 0, 0, 0});
    hi.insert(hi.end(), {8, 1, 1, 1});
  }
  lo.insert(lo.end(), {0, -16, -16, 0, 0, 0, 0});
  hi.insert(hi.end(), {1, 16, 16, 1, 1, 64, 1024});
  const auto d = lo.size();
  m->observations = box_space(std::move(lo), std::move(hi), {d});
  m->jobs = std::move(jobs);
  return m;
}

}  // namespace detail

/// GpuPack (see the file comment). Satisfies MaskedEnvironment.
class gpu_pack {
 public:
  using action_space_type = discrete_space;
  using info_type = gpu_pack_info;
  /// The clock's value for "no event pending".
  static constexpr std::uint64_t never = std::numeric_limits<std::uint64_t>::max();

  /// An environment over `jobs`' part `o.part`. Throws invalid_input for an
  /// empty pool or part, no devices, a kind that may arrive (the part's, or
  /// the trace's) that fits no device or not the recovery GPU, a trace of kinds outside the part or out of order,
  /// or settings out of range.
  explicit gpu_pack(std::shared_ptr<const gpu_pack_jobs> jobs, const gpu_pack_options& o = {})
      : model_(detail::make_gpu_pack_model(std::move(jobs), o)),
        trace_(model_->jobs_per_episode),
        slots_(model_->devices.size() * model_->max_running),
        count_(model_->devices.size(), 0),
        recovery_(model_->jobs_per_episode) {}

  const box_space& observation_space() const noexcept { return model_->observations; }
  /// G + 1 actions: a device, or wait (the last).
  const discrete_space& action_space() const noexcept { return model_->actions; }
  /// The pool the kinds come from.
  const gpu_pack_jobs& jobs() const noexcept { return *model_->jobs; }
  /// The G devices.
  const std::vector<sim::device_spec>& devices() const noexcept { return model_->devices; }
  /// The action that waits (G).
  std::int64_t wait_action() const noexcept { return std::int64_t(model_->devices.size()); }
  /// This episode's arrivals.
  std::span<const gpu_pack_arrival> trace() const noexcept { return trace_; }
  /// Ticks since the episode began.
  std::uint64_t clock() const noexcept { return clock_; }
  /// The pool's mean duration (T_ref, ticks) and work (W_ref, voxels).
  double reference_ticks() const noexcept { return model_->mean_ticks; }
  double reference_work() const noexcept { return model_->mean_work; }
  /// The kind of the job at the head of the queue, if one waits.
  std::optional<std::uint32_t> head() const noexcept {
    return placed_ < arrived_ ? std::optional<std::uint32_t>(trace_[placed_].kind) : std::nullopt;
  }
  /// Jobs on device g now.
  std::size_t running(std::size_t g) const noexcept { return count_[g]; }
  /// Jobs device g runs at once at most (see the file comment).
  std::size_t limit(std::size_t g) const noexcept { return model_->limit[g]; }
  /// Bytes device g's jobs hold now (their profiles' sum).
  std::uint64_t usage(std::size_t g) const noexcept { return usage_at(g, clock_); }
  /// Device g's highest usage over [now, now + ticks), from the jobs already there.
  std::uint64_t future_peak(std::size_t g, std::uint64_t ticks) const noexcept {
    std::uint64_t most = usage_at(g, clock_);
    for_each_boundary(g, clock_, clock_ + ticks, [&](std::uint64_t t) { most = std::max(most, usage_at(g, t)); });
    return most;
  }
  /// When the head job would run out of memory if placed on device g now:
  /// the first tick its device's summed profile exceeds the capacity, or none.
  std::optional<std::uint64_t> oom_tick(std::size_t g) const noexcept {
    if (!head() || g >= model_->devices.size()) return std::nullopt;
    const auto& kind = model_->jobs->kinds[trace_[placed_].kind];
    const auto cap = model_->devices[g].capacity, end = clock_ + kind.ticks();
    auto first = never;
    auto check = [&](std::uint64_t t) {
      if (t < first && usage_at(g, t) + level(kind, clock_, end, t) > cap) first = t;
    };
    check(clock_);
    for (std::uint64_t i = 1; i < gpu_pack_segments; ++i) check(clock_ + i * kind.segment_ticks);
    for_each_boundary(g, clock_, end, check);
    return first == never ? std::nullopt : std::optional<std::uint64_t>(first);
  }

  /// Starts an episode: draws its trace (or takes options.trace) and runs the
  /// clock to the first arrival (see Environment).
  void reset(std::optional<std::uint64_t> seed, std::span<float> obs, gpu_pack_info& info) {
    check_size(obs);
    if (seed) rng_ = xoshiro256ss(stream_key(*seed, 0, 0));
    const auto& m = *model_;
    if (!m.trace.empty()) {
      std::copy(m.trace.begin(), m.trace.end(), trace_.begin());
    } else {
      std::uint64_t t = 0;
      for (std::size_t i = 0; i < trace_.size(); ++i) {
        trace_[i].kind = m.part[rng_.next() % m.part.size()];
        if (i > 0) t += std::uint64_t(-portable_log(1.0 - rng_.uniform()) * m.mean_gap);
        trace_[i].tick = t;
      }
    }
    std::fill(count_.begin(), count_.end(), 0u);
    clock_ = recovery_free_ = 0;
    arrived_ = placed_ = completed_ = ooms_ = 0;
    recovery_head_ = recovery_tail_ = 0;
    steps_ = 0;
    work_ = 0;
    waited_ = 0;
    settle();
    running_episode_ = true;
    observe(obs);
    info = {};
    fill(info);
  }

  /// Places the head job or waits (see the file comment). Throws
  /// invalid_input only for a buffer of the wrong size or when no episode is
  /// running (before reset, or after it ended).
  step_result step(std::int64_t action, std::span<float> obs, gpu_pack_info& info) {
    check_size(obs);
    if (!running_episode_) throw invalid_input("GpuPack step() without a running episode; expected reset() first");
    ++steps_;
    work_ = 0;
    waited_ = 0;
    const auto before = clock_;
    info = {};
    if (valid(action)) {
      place(std::size_t(action));
      info.placed = action;
      settle();
    } else {
      info.invalid_action = action != wait_action();
      if (const auto t = next_event(); t != never) process(t);
      settle();
    }
    const bool terminated = completed_ == trace_.size();
    const bool truncated = !terminated && steps_ >= model_->max_steps;
    running_episode_ = !(terminated || truncated);
    observe(obs);
    fill(info);
    const double dt = model_->time_cost == gpu_pack_time_cost::makespan ? double(clock_ - before) : double(waited_);
    return {work_ / model_->mean_work - dt / model_->mean_ticks, terminated, truncated};
  }

  /// One byte per action, 1 where it is valid now (see the file comment).
  /// Throws invalid_input for a mask of other than G + 1 bytes.
  void action_mask(std::span<std::uint8_t> mask) const {
    if (mask.size() != model_->devices.size() + 1)
      throw invalid_input("an action mask of " + std::to_string(mask.size()) + " bytes; expected " +
                          std::to_string(model_->devices.size() + 1) + " (the devices and wait)");
    for (std::size_t g = 0; g < model_->devices.size(); ++g) mask[g] = valid(std::int64_t(g));
    mask.back() = 1;
  }

  /// Whether action a places the head job (see the file comment).
  bool valid(std::int64_t a) const noexcept {
    if (a < 0 || a >= wait_action() || placed_ >= arrived_) return false;
    const auto g = std::size_t(a);
    return count_[g] < model_->limit[g] &&
           model_->jobs->kinds[trace_[placed_].kind].peak <= model_->devices[g].capacity;
  }

 private:
  struct slot {
    std::uint64_t start = 0, end = 0;  ///< ticks; end: completion, or the failure when failed
    std::uint32_t kind = 0, job = 0;
    bool failed = false;
  };
  struct recovering {
    std::uint64_t end = 0;
    std::uint32_t job = 0;
  };

  /// Bytes a job of `kind` alive over [start, end) holds at tick t.
  static std::uint64_t level(const gpu_job_kind& kind, std::uint64_t start, std::uint64_t end,
                             std::uint64_t t) noexcept {
    return t < start || t >= end ? 0 : kind.reserved[(t - start) / kind.segment_ticks];
  }
  std::uint64_t usage_at(std::size_t g, std::uint64_t t) const noexcept {
    std::uint64_t sum = 0;
    const auto* s = &slots_[g * model_->max_running];
    for (std::size_t i = 0; i < count_[g]; ++i) sum += level(model_->jobs->kinds[s[i].kind], s[i].start, s[i].end, t);
    return sum;
  }
  /// Calls f(t) for every segment boundary t in (from, to) of device g's jobs.
  template <class F>
  void for_each_boundary(std::size_t g, std::uint64_t from, std::uint64_t to, F&& f) const {
    const auto* s = &slots_[g * model_->max_running];
    for (std::size_t i = 0; i < count_[g]; ++i) {
      const auto seg = model_->jobs->kinds[s[i].kind].segment_ticks;
      const auto stop = std::min(to, s[i].end);
      for (auto t = s[i].start + ((from - s[i].start) / seg + 1) * seg; t < stop; t += seg) f(t);
    }
  }

  void place(std::size_t g) {
    const auto& kind = model_->jobs->kinds[trace_[placed_].kind];
    const auto fails = oom_tick(g);
    slots_[g * model_->max_running + count_[g]++] = {clock_, fails.value_or(clock_ + kind.ticks()),
                                                     trace_[placed_].kind, std::uint32_t(placed_), fails.has_value()};
    ++placed_;
  }

  /// The tick of the next event: an arrival, a device's job ending, a recovery ending; never if none.
  std::uint64_t next_event() const noexcept {
    auto t = arrived_ < trace_.size() ? trace_[arrived_].tick : never;
    for (std::size_t g = 0; g < count_.size(); ++g)
      for (std::size_t i = 0; i < count_[g]; ++i) t = std::min(t, slots_[g * model_->max_running + i].end);
    if (recovery_head_ < recovery_tail_) t = std::min(t, recovery_[recovery_head_].end);
    return t;
  }

  /// Runs the clock to tick t and processes its events: the devices' jobs
  /// ending (device by device), then the recovery GPU's, then the arrivals.
  void process(std::uint64_t t) {
    waited_ += (t - clock_) * (arrived_ - completed_);
    clock_ = t;
    const auto& kinds = model_->jobs->kinds;
    for (std::size_t g = 0; g < count_.size(); ++g) {
      auto* s = &slots_[g * model_->max_running];
      for (std::size_t i = 0; i < count_[g];) {
        if (s[i].end != t) {
          ++i;
          continue;
        }
        if (s[i].failed) {
          ++ooms_;
          const auto start = std::max(t, recovery_free_);
          recovery_free_ = start + kinds[s[i].kind].ticks();
          recovery_[recovery_tail_++] = {recovery_free_, s[i].job};
        } else {
          complete(s[i].kind);
        }
        s[i] = s[--count_[g]];
      }
    }
    while (recovery_head_ < recovery_tail_ && recovery_[recovery_head_].end == t)
      complete(trace_[recovery_[recovery_head_++].job].kind);
    while (arrived_ < trace_.size() && trace_[arrived_].tick == t) ++arrived_;
  }
  void complete(std::uint32_t kind) {
    ++completed_;
    work_ += double(model_->jobs->kinds[kind].work);
  }
  /// Processes the events due now, then runs on while no job queues and some remain.
  void settle() {
    for (;;) {
      const auto t = next_event();
      if (t == never) return;
      if (t > clock_ && (placed_ < arrived_ || completed_ == trace_.size())) return;
      process(t);
    }
  }

  void check_size(std::span<float> obs) const {
    if (obs.size() != model_->observations.size())
      throw invalid_input("an observation buffer of " + std::to_string(obs.size()) + " floats; expected " +
                          std::to_string(model_->observations.size()) + " (the observation space's size)");
  }
  void observe(std::span<float> obs) const noexcept {
    const auto& m = *model_;
    std::size_t k = 0;
    auto put = [&](double v) {
      obs[k] = std::clamp(float(v), m.observations.low[k], m.observations.high[k]);
      ++k;
    };
    for (std::size_t g = 0; g < m.devices.size(); ++g) {
      const double cap = double(m.devices[g].capacity);
      put(m.log2_capacity[g]);
      put(double(usage(g)) / cap);
      put(double(future_peak(g, m.horizon)) / cap);
      put(double(count_[g]) / double(m.limit[g]));
    }
    if (const auto h = head()) {
      const auto& kind = m.jobs->kinds[*h];
      put(double(kind.peak) / double(m.largest));
      put(detail::portable_log2(double(kind.ticks()) / m.mean_ticks));
      put(detail::portable_log2(double(std::max<std::uint64_t>(1, kind.work)) / m.mean_work));
    } else {
      for (int i = 0; i < 3; ++i) put(0);
    }
    const double n = double(trace_.size());
    put(double(arrived_ - placed_) / n);
    put(double(trace_.size() - arrived_) / n);
    put(double(recovery_free_ > clock_ ? recovery_free_ - clock_ : 0) / m.mean_ticks);
    put(double(clock_) / m.mean_ticks);
  }
  void fill(gpu_pack_info& info) const noexcept {
    info.job = placed_;
    info.kind = head().value_or(0);
    info.clock = clock_;
    info.seconds = double(clock_) * model_->jobs->tick_seconds;
    info.work = work_;
    info.completed = completed_;
    info.ooms = ooms_;
    info.queued = arrived_ - placed_;
  }

  std::shared_ptr<const detail::gpu_pack_model> model_;
  xoshiro256ss rng_{stream_key(0, 0, 0)};
  std::vector<gpu_pack_arrival> trace_;
  std::vector<slot> slots_;           ///< devices x the largest limit
  std::vector<std::uint32_t> count_;  ///< per device: slots in use
  std::vector<recovering> recovery_;  ///< the recovery GPU's jobs in order, [head, tail) not done
  std::size_t recovery_head_ = 0, recovery_tail_ = 0;
  std::uint64_t clock_ = 0, recovery_free_ = 0, steps_ = 0;
  std::size_t arrived_ = 0, placed_ = 0, completed_ = 0, ooms_ = 0;
  double work_ = 0;           ///< voxels completed in the current step
  std::uint64_t waited_ = 0;  ///< ticks x jobs in the system in the current step
  bool running_episode_ = false;
};

static_assert(MaskedEnvironment<gpu_pack>);

/// First fit: the first device whose usage now plus the head job's peak fits
/// its capacity (a valid action), else wait. Blind to the future: the job
/// may still run out of memory when its neighbours grow.
inline std::int64_t first_fit_action(const gpu_pack& e) {
  const auto h = e.head();
  if (!h) return e.wait_action();
  const auto peak = e.jobs().kinds[*h].peak;
  for (std::size_t g = 0; g < e.devices().size(); ++g)
    if (e.valid(std::int64_t(g)) && e.usage(g) + peak <= e.devices()[g].capacity) return std::int64_t(g);
  return e.wait_action();
}

/// Worst fit: the valid device with the most memory left over the head
/// job's duration (its capacity less the highest usage of the jobs already
/// there, less the head job's peak; the lowest of ties), else wait. It never
/// waits while a device is valid: a job held back blocks every job queued
/// behind it, which on the default pool costs more than the memory it may
/// run out of (docs/env.md). The profiles of the jobs already placed are the
/// model's, as the observation's highest usage ahead is.
inline std::int64_t worst_fit_action(const gpu_pack& e) {
  const auto h = e.head();
  if (!h) return e.wait_action();
  const auto& kind = e.jobs().kinds[*h];
  auto best = e.wait_action();
  double most = 0;
  for (std::size_t g = 0; g < e.devices().size(); ++g) {
    if (!e.valid(std::int64_t(g))) continue;
    const double left = double(e.devices()[g].capacity) - double(e.future_peak(g, kind.ticks())) - double(kind.peak);
    if (best == e.wait_action() || left > most) {
      best = std::int64_t(g);
      most = left;
    }
  }
  return best;
}

/// Safe fit: the first valid device where the head job would not run out of
/// memory over its whole duration (the environment's own check), else wait.
/// An oracle of the profiles a real scheduler only estimates.
inline std::int64_t safe_fit_action(const gpu_pack& e) {
  for (std::size_t g = 0; g < e.devices().size(); ++g)
    if (e.valid(std::int64_t(g)) && !e.oom_tick(g)) return std::int64_t(g);
  return e.wait_action();
}

}  // namespace dwsr::env
