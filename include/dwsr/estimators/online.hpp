#pragma once
/// \file The `online` estimator: another estimator corrected by what was
/// measured, as Sizey and KS+ size workflow tasks from their history.
///
/// Before a job runs, it multiplies the base estimator's prediction by the
/// largest ratio of measured to predicted held bytes among the last `window`
/// runs it observed (1 before any): an estimate that would have covered each
/// of them. Once the job's first blocks (one per worker) have finished, what
/// the process held then is measured, and the estimate becomes that
/// measurement times the largest ratio of a whole run's held bytes to its
/// first blocks' among the same runs (1 before any): the rest of a chunked
/// run repeats its first blocks, except for edge blocks of another shape and
/// workers that meet at their peaks later.
///
/// fit() fits the base (when it learns) and seeds both histories with the
/// training runs; observe() adds a run measured since. The leaderboard
/// predicts each test run after its first blocks, then observes it, in the
/// suite's order.

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
    first_ratios_.clear();
    for (const auto& r : runs) observe(r.job, r.held, r.first_blocks_held);
  }

  /// The base's estimate times the correction: before the job runs.
  estimate predict(const estimate_job& j) const { return scaled(base_.predict(j), correction()); }

  /// The estimate once the job's first blocks have finished holding
  /// `first_blocks_held` bytes: that times the history's whole-run to
  /// first-blocks ratio. Without a measurement (0), predict(j).
  estimate predict(const estimate_job& j, double first_blocks_held) const {
    check_measured(j, first_blocks_held, "its first blocks");
    if (first_blocks_held <= 0) return predict(j);
    const double held = first_blocks_held * first_blocks_correction();
    const auto e = base_.predict(j);
    return e.held > 0 ? scaled(e, held / e.held) : shared_by_workers(held, j);
  }

  /// Adds a run whose held bytes were measured, and those of its first
  /// blocks where measured (> 0). Throws invalid_input for a measurement that
  /// is not a finite number >= 0.
  void observe(const estimate_job& j, double measured_held, double first_blocks_held = 0) {
    check_measured(j, measured_held, "the run");
    check_measured(j, first_blocks_held, "its first blocks");
    const double predicted = base_.predict(j).held;
    if (predicted > 0) push(ratios_, measured_held / predicted);
    if (first_blocks_held > 0) push(first_ratios_, measured_held / first_blocks_held);
  }

  /// The factor applied to the base's estimates before a job runs.
  double correction() const noexcept { return largest(ratios_); }

  /// The factor applied to a job's first blocks' measurement.
  double first_blocks_correction() const noexcept { return largest(first_ratios_); }

 private:
  static estimate scaled(estimate e, double c) {
    e.held *= c;
    e.worker_peak *= c;
    if (e.upper) *e.upper *= c;
    return e;
  }
  static void check_measured(const estimate_job& j, double bytes, const char* what) {
    if (!(bytes >= 0) || bytes > 1e300)
      throw invalid_input("online estimator: job " + std::to_string(j.id) + ": " + what +
                          " measured at a held size that is not a finite number >= 0");
  }
  void push(std::deque<double>& history, double ratio) {
    history.push_back(ratio);
    if (history.size() > window_) history.pop_front();
  }
  static double largest(const std::deque<double>& history) noexcept {
    return history.empty() ? 1.0 : *std::max_element(history.begin(), history.end());
  }

  Base base_;
  std::size_t window_;
  std::string name_;
  std::deque<double> ratios_;        ///< whole run over the base's prediction
  std::deque<double> first_ratios_;  ///< whole run over its first blocks
};

}  // namespace dwsr::estimators
