#pragma once
/// \file PeakPredict's learned policies as estimators (`linucb`, `reinforce`),
/// so that the leaderboard scores the RL environments' agents against real
/// execution. fit() makes the labelled runs a PeakPredict pool
/// (env/peak_predict.hpp, discrete variant), every run in its train part:
/// each run's feature vector (estimators/job_features.hpp) with its measured
/// held bytes as the true peak. The policy then trains there for
/// steps_per_run steps per run (train_bandit, seeded), and the policy and
/// the bins' peaks are kept. predict() takes the greedy bin for the job's
/// features, and predicts the bin's upper edge, a train run's held bytes.
///
/// A policy learns from rewards alone, as an agent in the arena does: an
/// under-prediction costs PeakPredict's out-of-memory reward, an
/// over-prediction its idle share. It never sees a label. Like the trees,
/// it cannot predict beyond the largest run it was fitted on. It has at
/// most `bins` quantile bins, and one per run when there are fewer runs.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dwsr/env/bandit_training.hpp"
#include "dwsr/env/peak_predict.hpp"
#include "dwsr/error.hpp"
#include "dwsr/estimators/job_features.hpp"

namespace dwsr::estimators {

/// A PeakPredict estimator's settings; `policy` is the policy's own.
template <class PolicyOptions>
struct peak_bandit_options {
  std::int64_t bins = 16;             ///< quantile bins of the runs' held bytes, at most
  std::uint64_t steps_per_run = 200;  ///< training steps per labelled run
  std::uint64_t seed = 0;             ///< the training episodes' draw
  PolicyOptions policy = {};          ///< the policy's settings
};

/// PeakPredict's `Policy` (a BanditPolicy with greedy(), constructed from
/// the spaces and its options) as an estimator named `name` (see the file comment).
template <class Policy, class PolicyOptions>
class peak_bandit {
 public:
  using options_type = peak_bandit_options<PolicyOptions>;

  peak_bandit(std::string_view name, options_type o) : name_(name), options_(o) {}
  std::string_view name() const noexcept { return name_; }

  /// Trains the policy on `runs` (see the file comment). Throws
  /// invalid_input for no runs, a run whose held bytes are not finite and
  /// > 0, or 0 steps per run, and what the policy's constructor throws.
  void fit(std::span<const labelled_run> runs) {
    if (runs.empty()) throw invalid_input(std::string(name_) + ": no training runs; expected at least 1");
    if (options_.steps_per_run == 0)
      throw invalid_input(std::string(name_) + ": 0 training steps per run; expected at least 1");
    auto pool = std::make_shared<env::peak_jobs>();
    pool->label = "held";
    pool->split = "all train";
    for (std::size_t k = 0; k < runs.size(); ++k) {
      const double held = positive_held(name_, runs[k]);
      const auto f = job_features(runs[k].job, name_, k == 0 ? &pool->features : nullptr);
      pool->x.insert(pool->x.end(), f.begin(), f.end());
      pool->peak.push_back(held);
      pool->test.push_back(0);
      pool->row.push_back(k);
      pool->graph.push_back(-1);
    }
    const auto steps = options_.steps_per_run * runs.size();
    env::peak_predict_bins e(std::move(pool),
                             {.bins = std::clamp<std::int64_t>(options_.bins, 1, std::int64_t(runs.size()))});
    Policy p(e.observation_space(), e.action_space(), options_.policy);
    env::train_bandit(e, p, {.steps = steps, .seed = options_.seed, .window = steps});
    bin_peaks_ = e.bin_peaks();
    policy_ = std::move(p);
  }

  /// The greedy bin's held bytes, shared evenly among the workers. Throws
  /// invalid_input before fit.
  estimate predict(const estimate_job& j) const {
    if (!policy_) throw invalid_input(std::string(name_) + ": predict before fit; expected fit(runs) first");
    const auto f = job_features(j, name_);
    return shared_by_workers(bin_peaks_[std::size_t(policy_->greedy(f))], j);
  }

 private:
  std::string_view name_;
  options_type options_;
  mutable std::optional<Policy> policy_;  // mutable: greedy() maps features into the policy's own scratch
  std::vector<double> bin_peaks_;
};

}  // namespace dwsr::estimators
