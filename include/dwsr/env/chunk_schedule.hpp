#pragma once
/// \file ChunkSchedule: pick the chunk of the next blocks of a cube, online,
/// under a per-worker budget (issue 12's sequential environment). reset()
/// draws a task of its part (env/chunk_tasks.hpp); the cube is processed in
/// slabs along inline, and each step takes a candidate k (Discrete(8), the
/// k-th largest chunk): a slab of candidate k's inline extent (clipped at the
/// cube's end), split into k's blocks along crossline, run by the W workers.
///
/// The hidden density: each episode draws a level L uniform in
/// [density_low, density_high] and a value uniform in [L/2, L] every
/// density_knot inlines, linearly interpolated between them: how full the
/// data-dependent tables are (event_picks' picks over their bound) along the
/// cube. The agent never observes it; a slab's density is the highest of its
/// inlines', and its blocks' peak the candidate's envelope at that density.
///
/// A step:
/// - fits (peak <= budget): the slab is done; it lasts as long as the slowest
///   worker (env/chunk_tasks.hpp's time model);
/// - out of memory (peak > budget): nothing is done and the slab stays to do;
///   the step costs the failed block's time (the slab's largest block) plus
///   retry_seconds (restarting the worker);
/// - an invalid action (outside 0 to 7, or masked): nothing is done, the step
///   costs retry_seconds, info.invalid_action is set. Never an exception.
///
/// The reward: r = voxels / V - seconds / T_ref, with V the cube's voxels and
/// T_ref the whole cube's time at the advisor's candidate (the largest whose
/// peak at d = 1 fits: today's safe choice, advisor_action), so that a
/// finished episode returns 1 - T / T_ref: monotone in its throughput, 0 for
/// the advisor, positive when faster.
///
/// Terminated when every inline is done; truncated at the step limit (by
/// default 4 x the slabs of the smallest candidate).
///
/// The mask: 1 where the candidate's peak at d = 0 (the best case) fits.
///
/// Observation (float32, each value clipped into its bounds):
///   [0, 8)   log2(peak_k(0) / budget), candidate k, in [-10, 6]
///   [8, 16)  log2(peak_k(1) / budget), in [-10, 6]
///   16       fraction of the inlines done, [0, 1]
///   17       elapsed seconds / T_ref, [0, 8]
///   18       steps / step limit, [0, 1]
///   19       the last step's peak / budget (an OOM's: what it asked), [0, 4]
///   20       the last step was out of memory, 0 or 1
///   21       the last slab's density (0 when the graph has no data-dependent
///            operator, or no slab ran), [0, 1]
///   22       W / 8, [0, 1]
///   23       T / 4, [0, 1]
/// The first 16 are computed once per task, with portable arithmetic
/// (core/random.hpp's portable_log), so observations are the same bits on
/// any standard library; the rest is + - * / and comparisons.
///
/// Copies share the pool; a step allocates nothing (the density field's
/// buffer is sized for the pool's largest cube at construction).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dwsr/core/random.hpp"
#include "dwsr/env/chunk_tasks.hpp"
#include "dwsr/env/env.hpp"
#include "dwsr/env/peak_predict.hpp"
#include "dwsr/env/spaces.hpp"
#include "dwsr/error.hpp"

namespace dwsr::env {

/// ChunkSchedule's settings.
struct chunk_schedule_options {
  pool_part part = pool_part::train;
  double retry_seconds = 0.02;  ///< what an out-of-memory or invalid step costs beside the failed block
  double density_low = 0.05;    ///< the episode's density level is uniform in [density_low, density_high]
  double density_high = 1.0;
  std::uint64_t density_knot = 64;  ///< inlines between the density field's knots
  std::uint64_t step_limit = 0;     ///< 0: 4 x the smallest candidate's slabs of the task
};

/// What ChunkSchedule reports beside the reward (numbers and flags only).
struct chunk_info {
  std::uint64_t task = 0;        ///< the task's index in the pool
  std::int64_t action = -1;      ///< the step's action (-1 after reset)
  std::uint64_t voxels = 0;      ///< done by this step
  double seconds = 0;            ///< this step's simulated seconds
  double peak = 0;               ///< this step's per-block peak, bytes (0: none ran)
  double budget = 0;             ///< bytes per worker
  double density = 0;            ///< the slab's hidden density
  bool oom = false;              ///< the slab ran out of memory
  bool invalid_action = false;   ///< the action was outside the space or masked
  double voxels_per_second = 0;  ///< this step's
  std::uint64_t inlines_done = 0;
  double elapsed = 0;                    ///< the episode's seconds so far
  double episode_voxels_per_second = 0;  ///< the episode's so far
  bool operator==(const chunk_info&) const = default;
};

/// Values of ChunkSchedule's observation.
inline constexpr std::size_t chunk_observation_size = 2 * chunk_candidates + 8;

namespace detail {

/// What copies of a ChunkSchedule share.
struct chunk_model {
  std::shared_ptr<const chunk_tasks> tasks;
  std::vector<std::uint64_t> part;                            ///< indices of the part's tasks
  std::vector<std::array<float, 2 * chunk_candidates>> plan;  ///< per task: the first 16 observed values
  box_space observations{{}, {}, {0}};
  discrete_space actions{std::int64_t(chunk_candidates)};
  chunk_schedule_options options;
  std::uint64_t most_inlines = 0;
};

inline float clipped(double v, float lo, float hi) noexcept {
  return std::min(hi, std::max(lo, static_cast<float>(v)));
}

inline std::shared_ptr<const chunk_model> make_chunk_model(std::shared_ptr<const chunk_tasks> tasks,
                                                           const chunk_schedule_options& o) {
  if (!tasks) throw invalid_input("ChunkSchedule without a task pool");
  if (!(o.retry_seconds >= 0 && o.retry_seconds < 1e6))
    throw invalid_input("retry_seconds " + std::to_string(o.retry_seconds) + "; expected 0 to 1e6");
  if (!(o.density_low >= 0 && o.density_low <= o.density_high && o.density_high <= 1))
    throw invalid_input("density " + std::to_string(o.density_low) + " to " + std::to_string(o.density_high) +
                        "; expected 0 <= low <= high <= 1");
  if (o.density_knot == 0) throw invalid_input("density_knot 0; expected at least 1 inline");
  if (o.step_limit > (std::uint64_t{1} << 32))
    throw invalid_input("step_limit " + std::to_string(o.step_limit) + "; expected at most 2^32 (0: the default)");
  auto m = std::make_shared<chunk_model>();
  const auto want = o.part == pool_part::test;
  const double ln2 = portable_log(2.0);
  for (std::uint64_t i = 0; i < tasks->size(); ++i) {
    const auto& t = tasks->tasks[i];
    if (t.test == want) m->part.push_back(i);
    m->most_inlines = std::max(m->most_inlines, t.cube.inlines);
    auto& p = m->plan.emplace_back();
    const double b = double(t.budget);
    for (std::size_t k = 0; k < chunk_candidates; ++k) {
      const auto& c = t.candidates[k];
      p[k] = clipped(c.peak0 > 0 ? portable_log(c.peak0 / b) / ln2 : -10.0, -10, 6);
      p[chunk_candidates + k] = clipped(c.peak1 > 0 ? portable_log(c.peak1 / b) / ln2 : -10.0, -10, 6);
    }
  }
  if (m->part.empty())
    throw invalid_input(std::string("the task pool's ") + (want ? "test" : "train") +
                        " part has no task; expected at least one (more tasks)");
  std::vector<float> lo(chunk_observation_size, 0), hi(chunk_observation_size, 1);
  for (std::size_t k = 0; k < 2 * chunk_candidates; ++k) lo[k] = -10, hi[k] = 6;
  hi[2 * chunk_candidates + 1] = 8;  // elapsed / T_ref
  hi[2 * chunk_candidates + 3] = 4;  // peak / budget
  m->observations = box_space(std::move(lo), std::move(hi), {chunk_observation_size});
  m->tasks = std::move(tasks);
  m->options = o;
  return m;
}

}  // namespace detail

/// ChunkSchedule (see the file comment). Satisfies MaskedEnvironment.
class chunk_schedule {
 public:
  using action_space_type = discrete_space;
  using info_type = chunk_info;

  /// An environment drawing tasks of `tasks`' part `o.part`. Throws
  /// invalid_input for an empty part or options out of range.
  explicit chunk_schedule(std::shared_ptr<const chunk_tasks> tasks, const chunk_schedule_options& o = {})
      : model_(detail::make_chunk_model(std::move(tasks), o)) {
    density_.assign(model_->most_inlines, 0);
  }

  /// 24 float32 values (see the file comment).
  const box_space& observation_space() const noexcept { return model_->observations; }
  /// Discrete(8): the candidate chunks, largest first.
  const discrete_space& action_space() const noexcept { return model_->actions; }
  /// The pool the tasks come from.
  const chunk_tasks& tasks() const noexcept { return *model_->tasks; }
  /// The episode's task (after reset).
  const chunk_task& task() const noexcept { return model_->tasks->tasks[task_]; }
  /// The episode's step limit (after reset).
  std::uint64_t step_limit() const noexcept { return limit_; }
  /// The next slab's first inline.
  std::uint64_t inlines_done() const noexcept { return done_; }
  /// The hidden density of inline i of the episode's cube (for tests and analysis; never observed).
  double density(std::uint64_t i) const noexcept { return density_[i]; }

  /// Writes 1 for each candidate whose best-case peak fits the budget, 0
  /// otherwise. Throws invalid_input for a mask of other than 8 bytes.
  void action_mask(std::span<std::uint8_t> mask) const {
    if (mask.size() != chunk_candidates)
      throw invalid_input("an action mask of " + std::to_string(mask.size()) + " bytes; expected " +
                          std::to_string(chunk_candidates));
    const auto& m = task().mask;
    std::copy(m.begin(), m.end(), mask.begin());
  }

  /// Draws a task of the part and its density field (see Environment).
  void reset(std::optional<std::uint64_t> seed, std::span<float> obs, chunk_info& info) {
    check_size(obs);
    if (seed) rng_ = xoshiro256ss(stream_key(*seed, 0, 0));
    const auto& part = model_->part;
    start(part[rng_.next() % part.size()], obs, info);
  }

  /// Starts an episode on task `task` of the pool (an index into tasks(),
  /// of this environment's part), its density field drawn as reset() draws
  /// it: what a policy would do on one given task (real mode, analysis).
  /// Throws invalid_input for a task outside the pool or the part, or a
  /// buffer of the wrong size.
  void reset_task(std::uint64_t task, std::optional<std::uint64_t> seed, std::span<float> obs, chunk_info& info) {
    check_size(obs);
    const auto& part = model_->part;
    if (!std::binary_search(part.begin(), part.end(), task))
      throw invalid_input("task " + std::to_string(task) + "; expected one of the " + std::to_string(part.size()) +
                          " tasks of this environment's part of the pool of " + std::to_string(tasks().size()));
    if (seed) rng_ = xoshiro256ss(stream_key(*seed, 0, 0));
    start(task, obs, info);
  }

 private:
  /// Starts an episode on task `index` (reset's second half).
  void start(std::uint64_t index, std::span<float> obs, chunk_info& info) {
    const auto& o = model_->options;
    task_ = index;
    const auto& t = task();
    limit_ = o.step_limit ? o.step_limit : 4 * t.smallest_slabs;
    const double level = rng_.uniform(o.density_low, o.density_high);
    // Knots every density_knot inlines, from inline 0 to past the last.
    const auto n = t.cube.inlines, knot = o.density_knot;
    double left = level * (0.5 + 0.5 * rng_.uniform()), right = level * (0.5 + 0.5 * rng_.uniform());
    for (std::uint64_t i = 0; i < n; ++i) {
      const auto r = i % knot;
      if (r == 0 && i > 0) left = right, right = level * (0.5 + 0.5 * rng_.uniform());
      density_[i] = left + (right - left) * (double(r) / double(knot));
    }
    done_ = steps_ = 0;
    elapsed_ = 0;
    voxels_ = 0;
    last_peak_ = last_density_ = 0;
    last_oom_ = false;
    running_ = true;
    info = {.task = task_, .budget = double(t.budget)};
    observe(obs);
  }

 public:
  /// Runs the next slab with candidate `action` (see the file comment).
  /// Throws invalid_input only when no episode is running or for a buffer of
  /// the wrong size.
  step_result step(std::int64_t action, std::span<float> obs, chunk_info& info) {
    check_size(obs);
    if (!running_) throw invalid_input("ChunkSchedule step() without a running episode; expected reset() first");
    const auto& t = task();
    const auto& o = model_->options;
    ++steps_;
    info = {.task = task_, .action = action, .budget = double(t.budget)};
    double seconds = o.retry_seconds;
    std::uint64_t voxels = 0;
    last_peak_ = last_density_ = 0;
    last_oom_ = false;
    if (!model_->actions.contains(action) || !t.mask[std::size_t(action)]) {
      info.invalid_action = true;
    } else {
      const auto& c = t.candidates[std::size_t(action)];
      const auto n = std::min(c.chunk.inlines, t.cube.inlines - done_);
      const auto extended = t.extended_inlines(done_, n);
      double d = 0;
      for (std::uint64_t i = done_; i < done_ + n; ++i) d = std::max(d, density_[i]);
      const double peak = c.peak(d);
      info.peak = peak;
      info.density = d;
      last_peak_ = peak / double(t.budget);
      last_density_ = t.picks ? d : 0;
      if (peak > double(t.budget)) {
        info.oom = last_oom_ = true;
        seconds += c.block_per_inline * double(extended) + tasks().options.block_overhead_seconds;
      } else {
        seconds = t.slab_seconds(std::size_t(action), extended);
        voxels = n * t.cube.crosslines * t.cube.samples;
        done_ += n;
      }
    }
    elapsed_ += seconds;
    voxels_ += voxels;
    const double total = double(t.cube.voxels());
    step_result r{double(voxels) / total - seconds / t.reference_seconds, done_ == t.cube.inlines, false};
    r.truncated = !r.terminated && steps_ >= limit_;
    running_ = !(r.terminated || r.truncated);
    info.voxels = voxels;
    info.seconds = seconds;
    info.voxels_per_second = seconds > 0 ? double(voxels) / seconds : 0;
    info.inlines_done = done_;
    info.elapsed = elapsed_;
    info.episode_voxels_per_second = elapsed_ > 0 ? double(voxels_) / elapsed_ : 0;
    observe(obs);
    return r;
  }

 private:
  void check_size(std::span<float> obs) const {
    if (obs.size() != chunk_observation_size)
      throw invalid_input("an observation buffer of " + std::to_string(obs.size()) + " floats; expected " +
                          std::to_string(chunk_observation_size) + " (the observation space's size)");
  }
  void observe(std::span<float> obs) const noexcept {
    const auto& t = task();
    const auto& p = model_->plan[task_];
    std::copy(p.begin(), p.end(), obs.begin());
    auto* x = obs.data() + p.size();
    x[0] = detail::clipped(double(done_) / double(t.cube.inlines), 0, 1);
    x[1] = detail::clipped(elapsed_ / t.reference_seconds, 0, 8);
    x[2] = detail::clipped(double(steps_) / double(limit_), 0, 1);
    x[3] = detail::clipped(last_peak_, 0, 4);
    x[4] = last_oom_ ? 1.0f : 0.0f;
    x[5] = detail::clipped(last_density_, 0, 1);
    x[6] = detail::clipped(double(t.workers) / 8, 0, 1);
    x[7] = detail::clipped(double(t.threads) / 4, 0, 1);
  }

  std::shared_ptr<const detail::chunk_model> model_;
  xoshiro256ss rng_{stream_key(0, 0, 0)};
  std::vector<double> density_;  ///< per inline of the episode's cube (sized for the pool's largest)
  std::uint64_t task_ = 0, done_ = 0, steps_ = 0, limit_ = 1, voxels_ = 0;
  double elapsed_ = 0, last_peak_ = 0, last_density_ = 0;
  bool last_oom_ = false, running_ = false;
};

static_assert(MaskedEnvironment<chunk_schedule>);

/// The advisor's action for the environment's episode: the largest candidate
/// whose peak at density 1 (the worst case) fits the budget, else the
/// smallest that fits at density 0. The baseline policy; never out of memory
/// when one candidate is safe.
inline std::int64_t advisor_action(const chunk_schedule& e) noexcept { return std::int64_t(e.task().advisor); }

}  // namespace dwsr::env
