#pragma once
/// \file The `linucb` estimator: the contextual bandit that learns in
/// PeakPredict's discrete variant (env/policies.hpp's LinUCB), as an
/// estimator (estimators/peak_bandit.hpp: fitted as a PeakPredict pool of
/// the labelled runs, predicting the greedy bin's held bytes).

#include "dwsr/concepts.hpp"
#include "dwsr/env/policies.hpp"
#include "dwsr/estimators/peak_bandit.hpp"

namespace dwsr::estimators {

/// The linucb estimator's settings.
using linucb_options = peak_bandit_options<env::linucb_options>;

/// PeakPredict's LinUCB policy as an estimator.
class linucb : public peak_bandit<env::linucb, env::linucb_options> {
 public:
  explicit linucb(linucb_options o = {}) : peak_bandit("linucb", o) {}
};

static_assert(FittedEstimator<linucb>);

}  // namespace dwsr::estimators
