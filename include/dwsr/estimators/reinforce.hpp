#pragma once
/// \file The `reinforce` estimator: a policy-gradient agent (env/pg_bandit.hpp:
/// REINFORCE's softmax policy over PeakPredict's bins, one-step episodes) as
/// an estimator (estimators/peak_bandit.hpp: fitted as a PeakPredict pool of
/// the labelled runs, predicting the greedy bin's held bytes). Beside
/// `linucb`, the RL environments' other kind of learner on the board.

#include "dwsr/concepts.hpp"
#include "dwsr/env/pg_bandit.hpp"
#include "dwsr/estimators/peak_bandit.hpp"

namespace dwsr::estimators {

/// The reinforce estimator's settings.
using reinforce_options = peak_bandit_options<env::pg_bandit_options>;

/// PeakPredict learned by REINFORCE, as an estimator.
class reinforce : public peak_bandit<env::pg_bandit, env::pg_bandit_options> {
 public:
  explicit reinforce(reinforce_options o = {}) : peak_bandit("reinforce", o) {}
};

static_assert(FittedEstimator<reinforce>);

}  // namespace dwsr::estimators
