#pragma once
/// \file The `online` estimator: another estimator corrected by what was
/// measured, as Sizey and KS+ size workflow tasks from their history. It
/// multiplies the base estimator's prediction by the largest ratio of
/// measured to predicted held bytes among the last `window` runs it observed
/// (1 before any): an estimate that would have covered each of them. fit()
/// fits the base (when it learns) and seeds the history with the training
/// runs' ratios; observe() adds a run measured since. The leaderboard
/// observes each test run after predicting it, in the suite's order.
///
/// The form corrects from the first blocks of the same run; dwsr's
/// referee measures whole runs, so the history here is of earlier runs.

#include <algorithm>
#include <cstddef>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "dwsr/concepts.hpp"
#include "dwsr/error.hpp"

namespace dwsr::estimators {

/// `Base` corrected from measured runs (see the file comment).
template <Estimator Base>
class online {
 public:
  explicit online(Base base, std::size_t window = 16)
      : base_(std::move(base)), window_(window), name_("online_" + std::string(base_.name())) {
    if (window_ == 0) throw invalid_input("online estimator: a window of 0 runs; expected at least 1");
  }

  std::string_view name() const noexcept { return name_; }

  /// Fits the base when it learns, then observes every training run.
  void fit(std::span<const labelled_run> runs) {
    if constexpr (FittedEstimator<Base>) base_.fit(runs);
    ratios_.clear();
    for (const auto& r : runs) observe(r.job, r.held);
  }

  /// The base's estimate times the correction.
  estimate predict(const estimate_job& j) const {
    auto e = base_.predict(j);
    const double c = correction();
    e.held *= c;
    e.worker_peak *= c;
    if (e.upper) *e.upper *= c;
    return e;
  }

  /// Adds a run whose held bytes were measured. Throws invalid_input for a
  /// measurement that is not a finite number >= 0.
  void observe(const estimate_job& j, double measured_held) {
    if (!(measured_held >= 0) || measured_held > 1e300)
      throw invalid_input("online estimator: job " + std::to_string(j.id) +
                          " measured at a held size that is not a finite number >= 0");
    const double predicted = base_.predict(j).held;
    if (predicted <= 0) return;  // no ratio to learn from
    ratios_.push_back(measured_held / predicted);
    if (ratios_.size() > window_) ratios_.pop_front();
  }

  /// The factor applied to the base's estimates now.
  double correction() const noexcept {
    return ratios_.empty() ? 1.0 : *std::max_element(ratios_.begin(), ratios_.end());
  }

 private:
  Base base_;
  std::size_t window_;
  std::string name_;
  std::deque<double> ratios_;
};

}  // namespace dwsr::estimators
