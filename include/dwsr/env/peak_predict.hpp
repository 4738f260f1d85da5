#pragma once
/// \file PeakPredict: predict a job's peak memory before it runs, a
/// contextual bandit of one step per episode. reset() draws a job of the
/// pool's part (env/peak_jobs.hpp) and observes its feature vector; step()
/// takes a predicted peak and ends the episode (terminated, never
/// truncated). The reward follows xMem's two axes of evaluation:
///
/// - under-prediction (predicted < true peak): the job runs out of memory,
///   a fixed cost, oom_reward (-10 by default: ten times what predicting
///   twice the true peak costs);
/// - over-prediction: -(predicted - true) / true, the memory left idle
///   relative to what the job needed (0 for the exact peak, -1 for twice it).
///
/// Two action spaces, one class template:
/// - peak_predict: Box of one float32, log2 of the predicted bytes, within
///   integer bounds around the pool's peaks (floor(log2 smallest) to
///   ceil(log2 largest), both parts, so that train and test share a space);
/// - peak_predict_bins: Discrete(bins) over quantiles of the train part's
///   peaks: action k predicts the upper edge of bin k, the train peak of
///   nearest rank (k + 1) / bins (the last bin's edge is the largest train peak).
///
/// An invalid action (NaN, outside the box, a bin outside 0 to bins - 1, a
/// box action of other than one value) gets the out-of-memory reward with
/// info.invalid_action set: no prediction is no better than a wrong one.
///
/// Observations are float32 with honest bounds: each feature's smallest and
/// largest value over the whole pool. step() observes the job again (the
/// episode's last observation). Copies of an environment share the pool and
/// the spaces; a step allocates nothing.
///
/// 2^x is computed with portable arithmetic (core/random.hpp's portable_exp
/// and an exact ldexp), so rewards are the same bits on any standard library.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "dwsr/core/random.hpp"
#include "dwsr/env/env.hpp"
#include "dwsr/env/peak_jobs.hpp"
#include "dwsr/env/spaces.hpp"
#include "dwsr/error.hpp"

namespace dwsr::env {

/// The default reward of an out-of-memory (or invalid) prediction.
inline constexpr double peak_oom_reward = -10.0;

/// Which part of the pool's split an environment draws jobs from.
enum class pool_part { train, test };

/// PeakPredict's settings.
struct peak_predict_options {
  pool_part part = pool_part::train;
  double oom_reward = peak_oom_reward;  ///< reward of an under-prediction or an invalid action
  std::int64_t bins = 16;               ///< peak_predict_bins: quantile bins of the train peaks
};

/// What PeakPredict reports beside the reward.
struct peak_info {
  std::uint64_t job = 0;        ///< the job's index in the pool
  double true_peak = 0;         ///< bytes
  double predicted = 0;         ///< bytes (step; 0 for an invalid action)
  bool oom = false;             ///< predicted < true_peak (step)
  bool invalid_action = false;  ///< the action was invalid (step)
  bool operator==(const peak_info&) const = default;
};

/// The reward of predicting `predicted` bytes for a job that needs `truth`
/// (see the file comment): `oom_reward` below it, minus the idle share above.
inline double peak_reward(double predicted, double truth, double oom_reward) noexcept {
  return predicted < truth ? oom_reward : -(predicted - truth) / truth;
}

namespace detail {

/// 2^x for x in about [-1000, 1000], from portable arithmetic: an exact
/// power of two times 2^frac by portable_exp.
inline double portable_exp2(double x) noexcept {
  const double whole = std::floor(x);
  return std::ldexp(portable_exp((x - whole) * 0.6931471805599453), static_cast<int>(whole));
}

/// floor(log2 v) and ceil(log2 v) of a positive finite v, exactly (frexp).
inline int floor_log2(double v) noexcept {
  int e = 0;
  std::frexp(v, &e);
  return e - 1;
}
inline int ceil_log2(double v) noexcept {
  int e = 0;
  return std::frexp(v, &e) == 0.5 ? e - 1 : e;
}

/// What copies of a PeakPredict share: the pool, a part's jobs, the spaces.
struct peak_model {
  std::shared_ptr<const peak_jobs> jobs;
  std::vector<std::uint64_t> part;  ///< indices of the part's jobs
  box_space observations{{}, {}, {0}};
  box_space log2_peak{{0}, {0}, {1}};
  discrete_space bins;
  std::vector<double> bin_peak;  ///< bytes per bin
  double oom_reward = peak_oom_reward;
};

inline std::shared_ptr<const peak_model> make_peak_model(std::shared_ptr<const peak_jobs> jobs,
                                                         const peak_predict_options& o) {
  if (!jobs) throw invalid_input("PeakPredict without a job pool");
  if (!std::isfinite(o.oom_reward) || o.oom_reward > 0)
    throw invalid_input("oom_reward " + std::to_string(o.oom_reward) + ": expected a finite cost, at most 0");
  if (o.bins < 1 || o.bins > 1 << 20)
    throw invalid_input("bins " + std::to_string(o.bins) + ": expected 1 to " + std::to_string(1 << 20));
  auto m = std::make_shared<peak_model>();
  const auto& p = *jobs;
  const auto want = std::uint8_t(o.part == pool_part::test);
  std::vector<double> train;
  for (std::uint64_t j = 0; j < p.size(); ++j) {
    if (p.test[j] == want) m->part.push_back(j);
    if (!p.test[j]) train.push_back(p.peak[j]);
  }
  if (m->part.empty())
    throw invalid_input(std::string("the pool's ") + (want ? "test" : "train") + " part of split " + quote(p.split) +
                        " has no job; expected at least one (more rows, or another split)");
  if (train.empty())
    throw invalid_input("the pool's train part of split " + quote(p.split) +
                        " has no job; expected at least one (the action space is drawn from it)");
  const auto d = p.dim();
  std::vector<float> lo(d), hi(d);
  for (std::size_t k = 0; k < d; ++k) lo[k] = hi[k] = p.x[k];
  for (std::uint64_t j = 1; j < p.size(); ++j)
    for (std::size_t k = 0; k < d; ++k) {
      lo[k] = std::min(lo[k], p.x[j * d + k]);
      hi[k] = std::max(hi[k], p.x[j * d + k]);
    }
  m->observations = box_space(std::move(lo), std::move(hi), {d});
  const auto [least, most] = std::minmax_element(p.peak.begin(), p.peak.end());
  m->log2_peak = box_space::scalar(float(floor_log2(*least)), float(ceil_log2(*most)));
  std::sort(train.begin(), train.end());
  m->bins = {o.bins};
  const auto n = std::uint64_t(o.bins), count = std::uint64_t(train.size());
  for (std::uint64_t k = 0; k < n; ++k) m->bin_peak.push_back(train[((k + 1) * count + n - 1) / n - 1]);
  m->jobs = std::move(jobs);
  m->oom_reward = o.oom_reward;
  return m;
}

}  // namespace detail

/// PeakPredict over `ActionSpace`: box_space (log2 bytes) or discrete_space
/// (quantile bins); see the file comment. Satisfies Environment.
template <class ActionSpace>
class basic_peak_predict {
  static_assert(std::is_same_v<ActionSpace, box_space> || std::is_same_v<ActionSpace, discrete_space>);

 public:
  using action_space_type = ActionSpace;
  using info_type = peak_info;

  /// An environment drawing from `jobs`' part `o.part`. Throws invalid_input
  /// for an empty part, or an empty train part (the spaces come from it).
  explicit basic_peak_predict(std::shared_ptr<const peak_jobs> jobs, const peak_predict_options& o = {})
      : model_(detail::make_peak_model(std::move(jobs), o)) {}

  /// float32 feature vectors, each feature within the pool's range.
  const box_space& observation_space() const noexcept { return model_->observations; }
  /// One float32 of log2 bytes, or the quantile bins.
  const ActionSpace& action_space() const noexcept {
    if constexpr (std::is_same_v<ActionSpace, box_space>)
      return model_->log2_peak;
    else
      return model_->bins;
  }
  /// The pool the jobs come from.
  const peak_jobs& jobs() const noexcept { return *model_->jobs; }
  /// Bytes action k of the discrete variant predicts (the bins' upper edges).
  const std::vector<double>& bin_peaks() const noexcept { return model_->bin_peak; }

  /// Draws a job and observes its features (see Environment).
  void reset(std::optional<std::uint64_t> seed, std::span<float> obs, peak_info& info) {
    check_size(obs);
    if (seed) rng_ = xoshiro256ss(stream_key(*seed, 0, 0));
    const auto& part = model_->part;
    job_ = part[rng_.next() % part.size()];
    observe(obs);
    info = {.job = job_, .true_peak = model_->jobs->peak[job_]};
    running_ = true;
  }

  /// Scores the predicted peak; the episode terminates. Throws invalid_input
  /// only when no episode is running (before reset, or stepped twice).
  step_result step(typename action_of<ActionSpace>::type action, std::span<float> obs, peak_info& info) {
    check_size(obs);
    if (!running_) throw invalid_input("PeakPredict step() without a running episode; expected reset() first");
    running_ = false;
    const double truth = model_->jobs->peak[job_];
    info = {.job = job_, .true_peak = truth};
    observe(obs);
    double predicted = 0;
    if constexpr (std::is_same_v<ActionSpace, box_space>) {
      if (!model_->log2_peak.contains(action)) return invalid(info);
      predicted = detail::portable_exp2(double(action[0]));
    } else {
      if (!model_->bins.contains(action)) return invalid(info);
      predicted = model_->bin_peak[std::size_t(action)];
    }
    info.predicted = predicted;
    info.oom = predicted < truth;
    return {peak_reward(predicted, truth, model_->oom_reward), true, false};
  }

 private:
  void check_size(std::span<float> obs) const {
    if (obs.size() != model_->jobs->dim())
      throw invalid_input("an observation buffer of " + std::to_string(obs.size()) + " floats; expected " +
                          std::to_string(model_->jobs->dim()) + " (the observation space's size)");
  }
  void observe(std::span<float> obs) const noexcept {
    const auto d = model_->jobs->dim();
    std::copy_n(model_->jobs->x.data() + job_ * d, d, obs.data());
  }
  step_result invalid(peak_info& info) const noexcept {
    info.invalid_action = true;
    return {model_->oom_reward, true, false};
  }

  std::shared_ptr<const detail::peak_model> model_;
  xoshiro256ss rng_{stream_key(0, 0, 0)};
  std::uint64_t job_ = 0;
  bool running_ = false;
};

/// PeakPredict with a Box action: log2 of the predicted bytes.
using peak_predict = basic_peak_predict<box_space>;
/// PeakPredict with a Discrete action: a quantile bin of the train peaks.
using peak_predict_bins = basic_peak_predict<discrete_space>;

static_assert(Environment<peak_predict>);
static_assert(Environment<peak_predict_bins>);

}  // namespace dwsr::env
