#pragma once
/// \file Scoring memory estimates against measured peaks, the leaderboard's
/// numbers: how far estimates are off (median and p95 relative error), how
/// often an estimate used as a memory limit would have been an out-of-memory
/// (under_rate, with a bootstrap upper bound: xMem's "probability of
/// estimation failure as a safe OOM threshold"), and how much memory the
/// estimates that were high enough leave idle. Every number is reproducible
/// from the inputs and a seed on any standard library: the quantile is written
/// out (NumPy's default) and the bootstrap draws from dwsr's own generator.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "dwsr/core/random.hpp"
#include "dwsr/error.hpp"

namespace dwsr::leaderboard {

/// The scores of one estimator on one split's runs (all rates and errors as fractions, 0.1 = 10%).
struct error_metrics {
  std::size_t runs = 0;           ///< runs scored
  double median_rel_error = 0;    ///< median of |predicted - actual| / actual
  double p95_rel_error = 0;       ///< 95th percentile of the same
  double under_rate = 0;          ///< share of runs with predicted < actual - tolerance (an OOM as a limit)
  double idle_when_over = 0;      ///< mean of max(0, (predicted - actual) / actual) over the other runs
  double safe_failure = 0;        ///< probability of failure as a memory limit: point estimate (= under_rate)
  double safe_failure_upper = 0;  ///< 95th percentile of that rate over bootstrap resamples of the runs
};

namespace detail {

/// Shortest text that reads back as `x` ("-5", "1.5e+06", "nan"), for messages.
inline std::string shortest(double x) {
  char buf[40];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, x);
  return ec == std::errc{} ? std::string(buf, end) : std::to_string(x);
}

}  // namespace detail

/// The q-quantile of `values` by linear interpolation between order
/// statistics (Hyndman and Fan's type 7, NumPy's default `np.quantile`, R's
/// default `quantile`): with x sorted ascending, h = (n - 1) q, the result is
/// x[floor h] + (h - floor h) (x[floor h + 1] - x[floor h]). So q = 0 gives
/// the minimum, q = 1 the maximum, and the median of an even count is the
/// mean of the middle two. Throws invalid_input for no values, a NaN value,
/// or q outside [0, 1].
inline double quantile(std::vector<double> values, double q) {
  if (values.empty()) throw invalid_input("quantile of no values; expected at least one value");
  if (!(q >= 0 && q <= 1)) throw invalid_input("quantile " + detail::shortest(q) + "; expected a number in [0, 1]");
  for (std::size_t i = 0; i < values.size(); ++i)
    if (std::isnan(values[i]))
      throw invalid_input("quantile value " + std::to_string(i) + " is nan; expected a number");
  std::sort(values.begin(), values.end());
  const double h = static_cast<double>(values.size() - 1) * q;
  const auto lo = static_cast<std::size_t>(h);  // floor: h >= 0
  if (lo + 1 >= values.size()) return values.back();
  return values[lo] + (h - static_cast<double>(lo)) * (values[lo + 1] - values[lo]);
}

namespace detail {

/// Throws invalid_input unless the two spans are one finite prediction >= 0
/// and one finite measured peak > 0 per run, and the tolerance is finite >= 0.
inline void check_scoring_input(std::span<const double> predicted, std::span<const double> actual, double tolerance) {
  if (predicted.size() != actual.size())
    throw invalid_input(std::to_string(predicted.size()) + " predictions for " + std::to_string(actual.size()) +
                        " measured runs; expected one prediction per run");
  if (predicted.empty()) throw invalid_input("no runs to score; expected at least one prediction and measured peak");
  if (!(std::isfinite(tolerance) && tolerance >= 0))
    throw invalid_input("tolerance " + shortest(tolerance) + "; expected a finite number of bytes >= 0");
  for (std::size_t i = 0; i < predicted.size(); ++i) {
    if (!(std::isfinite(predicted[i]) && predicted[i] >= 0))
      throw invalid_input("prediction " + std::to_string(i) + " is " + shortest(predicted[i]) +
                          "; expected a finite number of bytes >= 0");
    if (!(std::isfinite(actual[i]) && actual[i] > 0))
      throw invalid_input("measured peak " + std::to_string(i) + " is " + shortest(actual[i]) +
                          "; expected a finite number of bytes > 0");
  }
}

/// The 95th percentile of the failure rate over `resamples` bootstrap
/// resamples (n runs drawn with replacement) of runs whose failures are
/// flagged in `under`. All runs failing or none gives that rate in every
/// resample, so no draws are made then.
inline double bootstrap_upper(const std::vector<bool>& under, std::size_t failures, std::uint64_t seed,
                              std::size_t resamples) {
  const auto n = under.size();
  if (failures == 0 || failures == n) return static_cast<double>(failures) / static_cast<double>(n);
  xoshiro256ss rng(stream_key(seed, 0, 0));
  std::vector<double> rates(resamples);
  for (auto& rate : rates) {
    std::size_t k = 0;
    for (std::size_t draw = 0; draw < n; ++draw) {
      // uniform() < 1, so the index is below n; exact while n < 2^53.
      const auto i = static_cast<std::size_t>(rng.uniform() * static_cast<double>(n));
      k += under[i] ? 1 : 0;
    }
    rate = static_cast<double>(k) / static_cast<double>(n);
  }
  return quantile(std::move(rates), 0.95);
}

}  // namespace detail

/// Scores the estimates `predicted[i]` of runs that measured `actual[i]`
/// bytes at peak. `tolerance` is the probe's resolution in bytes: an estimate
/// within it below the peak is not counted as an out-of-memory. The bootstrap
/// draws `bootstrap` resamples from a generator seeded by `seed`, so the same
/// inputs and seed give the same numbers everywhere. Throws invalid_input
/// (naming the run, from 0) for spans of different sizes, no runs, a negative
/// or non-finite prediction, a measured peak <= 0 or non-finite, a negative
/// or non-finite tolerance, or no bootstrap resamples.
inline error_metrics score_estimates(std::span<const double> predicted, std::span<const double> actual,
                                     double tolerance, std::uint64_t seed = 0, std::size_t bootstrap = 10000) {
  detail::check_scoring_input(predicted, actual, tolerance);
  if (bootstrap == 0) throw invalid_input("bootstrap 0; expected at least one resample (10000 by default)");
  const auto n = predicted.size();
  std::vector<double> rel(n);
  std::vector<bool> under(n);
  std::size_t failures = 0, over = 0;
  double idle = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double p = predicted[i], a = actual[i];
    rel[i] = std::abs(p - a) / a;
    under[i] = p < a - tolerance;
    if (under[i]) {
      ++failures;
    } else {
      ++over;
      idle += std::max(0.0, (p - a) / a);  // within tolerance below the peak: nothing idle
    }
  }
  error_metrics m;
  m.runs = n;
  m.median_rel_error = quantile(rel, 0.5);
  m.p95_rel_error = quantile(std::move(rel), 0.95);
  m.under_rate = static_cast<double>(failures) / static_cast<double>(n);
  m.idle_when_over = over == 0 ? 0.0 : idle / static_cast<double>(over);
  m.safe_failure = m.under_rate;
  m.safe_failure_upper = detail::bootstrap_upper(under, failures, seed, bootstrap);
  return m;
}

}  // namespace dwsr::leaderboard
