#pragma once
/// \file The `linucb` estimator: the contextual bandit that learns in
/// PeakPredict's discrete variant (env/peak_predict.hpp, env/policies.hpp),
/// used as an estimator so that the leaderboard scores the RL environments'
/// learned policy against real execution. fit() makes the labelled runs a
/// PeakPredict pool, every run in its train part: each run's feature vector
/// (estimators/job_features.hpp) with its measured held bytes as the true
/// peak. LinUCB then trains there for steps_per_run steps per run
/// (train_bandit, seeded), and the policy and the bins' peaks are kept.
/// predict() takes the greedy bin for the job's features, and predicts the
/// bin's upper edge, a train run's held bytes.
///
/// It learns from rewards alone, as an agent in the arena does: an
/// under-prediction costs PeakPredict's out-of-memory reward, an
/// over-prediction its idle share. It never sees a label. Like the trees,
/// it cannot predict beyond the largest run it was fitted on. It has
/// at most `bins` quantile bins, and one per run when there are fewer runs.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "dwsr/concepts.hpp"
#include "dwsr/env/bandit_training.hpp"
#include "dwsr/env/peak_predict.hpp"
#include "dwsr/env/policies.hpp"
#include "dwsr/error.hpp"
#include "dwsr/estimators/job_features.hpp"

namespace dwsr::estimators {

/// The linucb estimator's settings.
struct linucb_options {
  std::int64_t bins = 16;             ///< quantile bins of the runs' held bytes, at most
  std::uint64_t steps_per_run = 200;  ///< training steps per labelled run
  std::uint64_t seed = 0;             ///< the training episodes' draw
  env::linucb_options policy = {};    ///< LinUCB's exploration, ridge and reward floor
};

/// PeakPredict's LinUCB policy as an estimator (see the file comment).
class linucb {
 public:
  explicit linucb(linucb_options o = {}) : options_(o) {}
  std::string_view name() const noexcept { return "linucb"; }

  /// Trains the policy on `runs` (see the file comment). Throws
  /// invalid_input for no runs, a run whose held bytes are not finite and
  /// > 0, or 0 steps per run.
  void fit(std::span<const labelled_run> runs) {
    if (runs.empty()) throw invalid_input("linucb: no training runs; expected at least 1");
    if (options_.steps_per_run == 0) throw invalid_input("linucb: 0 training steps per run; expected at least 1");
    auto pool = std::make_shared<env::peak_jobs>();
    pool->label = "held";
    pool->split = "all train";
    for (std::size_t k = 0; k < runs.size(); ++k) {
      const double held = positive_held(name(), runs[k]);
      const auto f = job_features(runs[k].job, name(), k == 0 ? &pool->features : nullptr);
      pool->x.insert(pool->x.end(), f.begin(), f.end());
      pool->peak.push_back(held);
      pool->test.push_back(0);
      pool->row.push_back(k);
      pool->graph.push_back(-1);
    }
    const auto steps = options_.steps_per_run * runs.size();
    env::peak_predict_bins e(std::move(pool),
                             {.bins = std::clamp<std::int64_t>(options_.bins, 1, std::int64_t(runs.size()))});
    env::linucb p(e.observation_space(), e.action_space(), options_.policy);
    env::train_bandit(e, p, {.steps = steps, .seed = options_.seed, .window = steps});
    bin_peaks_ = e.bin_peaks();
    policy_ = std::move(p);
  }

  /// The greedy bin's held bytes, shared evenly among the workers. Throws
  /// invalid_input before fit.
  estimate predict(const estimate_job& j) const {
    if (!policy_) throw invalid_input("linucb: predict before fit; expected fit(runs) first");
    const auto f = job_features(j, name());
    return shared_by_workers(bin_peaks_[std::size_t(policy_->greedy(f))], j);
  }

 private:
  linucb_options options_;
  mutable std::optional<env::linucb> policy_;  // mutable: greedy() maps features into the policy's own scratch
  std::vector<double> bin_peaks_;
};

static_assert(FittedEstimator<linucb>);

}  // namespace dwsr::estimators
