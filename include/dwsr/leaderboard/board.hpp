#pragma once
/// \file The leaderboard: estimators scored against a suite's real runs, per
/// split. For each split, learned estimators fit on the train part's
/// measured peaks (labelled_run) and every estimator predicts the test part;
/// metrics.hpp scores the predicted held bytes against the runs' peak RSS
/// increase; an online estimator predicts each test run once the run's
/// first blocks have finished (from what they held) and observes it after.
/// An estimate below the measured peak by more than the probe's resolution
/// counts as under-predicted. The cost of an estimate is its wall time,
/// predict() alone, averaged over the test part. Each estimator also picks a
/// chunk for every test job under a budget (chunk_choice.hpp); the picks'
/// real runs score them, beside the advisor's, in choice_board.

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "dwsr/estimators/linucb.hpp"
#include "dwsr/estimators/online.hpp"
#include "dwsr/estimators/plan.hpp"
#include "dwsr/estimators/reinforce.hpp"
#include "dwsr/estimators/volume_linear.hpp"
#ifdef DWSR_WITH_XGBOOST
#include "dwsr/estimators/features_gbt.hpp"
#include "dwsr/estimators/volume_xgboost.hpp"
#endif
#include "dwsr/leaderboard/chunk_choice.hpp"
#include "dwsr/leaderboard/metrics.hpp"
#include "dwsr/leaderboard/runs.hpp"
#include "dwsr/leaderboard/suite.hpp"
#include "dwsr/memory/child_peak.hpp"

namespace dwsr::leaderboard {

/// The probe's resolution in bytes: how far one reading can lag the pages
/// touched, 64 pages on two CPUs (rss_reading_lag). A program touching a
/// known number of pages reads within it of its baseline-subtracted figure
/// (tests/cli/leaderboard_cli_test.cpp).
inline const double probe_resolution = rss_reading_lag();

/// Whether the probe resolved a run's peak: a run whose RSS increase is
/// below the probe's resolution has no relative error to score, and is left
/// out of fits and scores (`dwsr leaderboard run` says how many).
inline bool resolved(const run_record& r) noexcept { return double(r.rss_increase) >= probe_resolution; }

/// One estimator's score on one split's test part.
struct board_row {
  std::string estimator;
  split part = split::random;
  std::size_t train_runs = 0;
  error_metrics metrics;
  double seconds_per_estimate = 0;
};

/// Every job's predicted held bytes by one estimator, per split: a learned
/// estimator's prediction depends on the split it was fitted on.
struct board_predictions {
  std::string estimator;
  bool learns = false;                      ///< fitted on each split's train part
  std::array<std::vector<double>, 3> held;  ///< per split, per job of the suite (train jobs too)
  /// Per split, per job: the candidate chunk picked under the job's budget;
  /// nullopt for a refusal and for jobs outside the test part.
  std::array<std::vector<std::optional<std::size_t>>, 3> chosen;
};

/// What a leaderboard gives.
struct board {
  std::vector<board_row> rows;
  std::vector<board_predictions> predictions;  ///< plan's first: its picks are the advisor's
  std::vector<double> budgets;                 ///< per job: chunk choosing's budget (choice_budget)
  std::vector<std::vector<std::size_t>> test;  ///< per split: the scored test jobs (indices into the suite)
};

namespace detail {

/// Fits (when it learns) and scores estimator `e` on every split.
template <class E>
void score_estimator(E e, const suite& s, const std::vector<run_record>& runs, std::uint64_t seed, board& b) {
  board_predictions preds{std::string(e.name()), FittedEstimator<E>, {}};
  for (auto part : all_splits) {
    std::vector<labelled_run> train;
    std::vector<std::size_t> test;
    for (std::size_t k = 0; k < s.jobs.size(); ++k) {
      if (!resolved(runs[k]))
        continue;
      else if (s.jobs[k].in_test(part))
        test.push_back(k);
      else
        train.push_back({s.jobs[k].view(), double(runs[k].rss_increase), double(runs[k].first_blocks_rss_increase)});
    }
    if constexpr (FittedEstimator<E>) {
      if (!train.empty()) e.fit(std::span<const labelled_run>(train));
    }
    auto& held = preds.held[std::size_t(part)];
    held.assign(s.jobs.size(), 0.0);
    auto& chosen = preds.chosen[std::size_t(part)];
    chosen.assign(s.jobs.size(), std::nullopt);
    for (auto k : test) chosen[k] = choose_chunk(e, s.jobs[k], b.budgets[k]);
    std::vector<double> predicted, actual;
    const auto t0 = std::chrono::steady_clock::now();
    // In the suite's order: an online estimator predicts each run once its
    // first blocks have finished, and learns the run after predicting it.
    for (auto k : test) {
      const auto j = s.jobs[k].view();
      const double first = double(runs[k].first_blocks_rss_increase);
      if constexpr (EarlyCorrectedEstimator<E>)
        held[k] = e.predict(j, first).held;
      else
        held[k] = e.predict(j).held;
      if constexpr (OnlineEstimator<E>) e.observe(j, double(runs[k].rss_increase), first);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (std::size_t k = 0; k < s.jobs.size(); ++k)  // train jobs too, for the predictions files; not scored
      if (!s.jobs[k].in_test(part)) held[k] = e.predict(s.jobs[k].view()).held;
    for (auto k : test) {
      predicted.push_back(held[k]);
      actual.push_back(double(runs[k].rss_increase));
    }
    board_row row{preds.estimator, part, train.size(), {}, test.empty() ? 0 : seconds / double(test.size())};
    if (!test.empty()) row.metrics = score_estimates(predicted, actual, probe_resolution, seed);
    b.rows.push_back(std::move(row));
    if (b.test.size() < all_splits.size()) b.test.push_back(std::move(test));
  }
  b.predictions.push_back(std::move(preds));
}

}  // namespace detail

/// Scores the built-in estimators (plan, volume_linear, online_volume_linear,
/// linucb, reinforce, and where the program links XGBoost volume_xgboost and
/// features_gbt) on
/// `runs`, the real runs of `s` in its job order. Throws invalid_input when
/// the runs are not the suite's.
inline board score_board(const suite& s, const std::vector<run_record>& runs, std::uint64_t seed = 0) {
  if (runs.size() != s.jobs.size())
    throw invalid_input(std::to_string(runs.size()) + " runs for a suite of " + std::to_string(s.jobs.size()) +
                        " jobs; expected one run per job");
  for (std::size_t k = 0; k < runs.size(); ++k)
    if (runs[k].job != s.jobs[k].id || runs[k].operators != s.jobs[k].operators)
      throw invalid_input("run " + std::to_string(k) + " is of job " + std::to_string(runs[k].job) + " (" +
                          runs[k].operators + "); expected job " + std::to_string(s.jobs[k].id) + " (" +
                          s.jobs[k].operators + ")");
  board b;
  for (const auto& j : s.jobs) b.budgets.push_back(choice_budget(j));
  detail::score_estimator(estimators::plan{}, s, runs, seed, b);
  detail::score_estimator(estimators::volume_linear{}, s, runs, seed, b);
  detail::score_estimator(estimators::online<estimators::volume_linear>{{}}, s, runs, seed, b);
  detail::score_estimator(estimators::linucb{{.seed = seed}}, s, runs, seed, b);
  estimators::reinforce_options pg{.seed = seed};
  pg.policy.policy.seed = seed;  // the network's defaults kept
  detail::score_estimator(estimators::reinforce{pg}, s, runs, seed, b);
#ifdef DWSR_WITH_XGBOOST
  detail::score_estimator(estimators::volume_xgboost{{.seed = seed}}, s, runs, seed, b);
  detail::score_estimator(estimators::features_gbt{{.seed = seed}}, s, runs, seed, b);
#endif
  return b;
}

/// The runs chunk choosing needs: every (job, candidate) some estimator
/// picked, as jobs to run (one worker, the candidate's chunk), in job order.
inline std::vector<std::pair<std::size_t, std::size_t>> picked_runs(const board& b) {
  std::set<std::pair<std::size_t, std::size_t>> picked;
  for (const auto& p : b.predictions)
    for (const auto& per_split : p.chosen)
      for (std::size_t k = 0; k < per_split.size(); ++k)
        if (per_split[k]) picked.insert({k, *per_split[k]});
  return {picked.begin(), picked.end()};
}

/// Every estimator's picks on every split, scored by `runs` (picked_runs()
/// executed) against the advisor's.
inline std::vector<choice_row> choice_board(const suite& s, const board& b, const choice_runs& runs) {
  std::vector<choice_row> rows;
  const auto& advisor = b.predictions.front().chosen;
  for (const auto& p : b.predictions)
    for (auto part : all_splits) {
      const auto i = std::size_t(part);
      rows.push_back(
          score_choices(p.estimator, part, s, b.test[i], p.chosen[i], advisor[i], b.budgets, runs, probe_resolution));
    }
  return rows;
}

/// Scores an external estimator's predicted held bytes (one per run, in the
/// runs' order; NaN where none was given) on the test part of `parts`.
inline std::vector<board_row> score_external(const std::string& name, const std::vector<run_record>& runs,
                                             std::span<const double> held, std::span<const split> parts,
                                             std::uint64_t seed = 0) {
  std::vector<board_row> rows;
  for (auto part : parts) {
    std::vector<double> predicted, actual;
    std::size_t train = 0;
    for (std::size_t k = 0; k < runs.size(); ++k) {
      if (!resolved(runs[k])) continue;
      if (!runs[k].test[std::size_t(part)]) {
        ++train;
        continue;
      }
      predicted.push_back(held[k]);
      actual.push_back(double(runs[k].rss_increase));
    }
    board_row row{name, part, train, {}, 0};
    if (!predicted.empty()) row.metrics = score_estimates(predicted, actual, probe_resolution, seed);
    rows.push_back(std::move(row));
  }
  return rows;
}

/// The rows as a markdown table, one section per split.
inline std::string board_markdown(const std::vector<board_row>& rows) {
  std::ostringstream out;
  out.precision(3);
  for (auto part : all_splits) {
    out << "\n### Split: " << name_of(part) << "\n\n";
    out << "| estimator | train runs | test runs | median rel. error | p95 rel. error | under-predicted | idle when "
           "over | safe-threshold failure (95% upper) | us per estimate |\n";
    out << "|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& r : rows) {
      if (r.part != part) continue;
      const auto& m = r.metrics;
      out << "| " << r.estimator << " | " << r.train_runs << " | " << m.runs << " | " << 100 * m.median_rel_error
          << " % | " << 100 * m.p95_rel_error << " % | " << 100 * m.under_rate << " % | " << 100 * m.idle_when_over
          << " % | " << 100 * m.safe_failure << " % (" << 100 * m.safe_failure_upper << " %) | "
          << 1e6 * r.seconds_per_estimate << " |\n";
    }
  }
  return out.str();
}

}  // namespace dwsr::leaderboard
