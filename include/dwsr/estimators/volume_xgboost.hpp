#pragma once
/// \file The `volume_xgboost` estimator: the Unicamp thesis's trees, one
/// XGBoost regression of the measured peak on the input volume per
/// operator. As for volume_linear, "operator" is the job's graph (its
/// operators in node order); a graph with fewer than two training runs, or
/// never seen, falls back to one regression over every training run. The
/// target is log2 of the held bytes, so that small and large runs weigh
/// alike. Trees predict within the range they were fitted on: on cubes
/// larger than every training cube they predict the largest they saw, which
/// is the failure the thesis reported (5.4 GB predicted for a 16.4 GB run)
/// and what the extrapolation split measures. The worker's peak is the held
/// bytes shared among the W workers.

#include <cmath>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dwsr/concepts.hpp"
#include "dwsr/error.hpp"
#include "dwsr/estimators/detail/boosted_trees.hpp"

namespace dwsr::estimators {

/// One booster per graph on the input volume (see the file comment).
class volume_xgboost {
 public:
  explicit volume_xgboost(detail::boosted_trees_options o = {}) : options_(o) {}
  std::string_view name() const noexcept { return "volume_xgboost"; }

  /// Fits a booster per graph with two runs or more and the pooled one.
  /// Throws invalid_input for no runs or a run whose held bytes are not
  /// finite and > 0.
  void fit(std::span<const labelled_run> runs) {
    if (runs.empty()) throw invalid_input("volume_xgboost: no training runs; expected at least 1");
    std::map<std::string, std::pair<std::vector<float>, std::vector<float>>> per;
    std::vector<float> x, y;
    for (const auto& r : runs) {
      auto& [px, py] = per[r.job.operators];
      py.push_back(detail::log2_target(name(), r));
      px.push_back(volume(r.job));
      x.push_back(px.back());
      y.push_back(py.back());
    }
    trees_.clear();
    for (auto& [k, xy] : per)
      if (xy.first.size() >= 2) trees_[k].fit(xy.first, 1, xy.second, options_);
    pooled_.fit(x, 1, y, options_);
  }

  /// Throws invalid_input before fit.
  estimate predict(const estimate_job& j) const {
    if (!pooled_.fitted()) throw invalid_input("volume_xgboost: predict before fit; expected fit(runs) first");
    const auto it = trees_.find(j.operators);
    const float v = volume(j);
    const auto& t = it == trees_.end() ? pooled_ : it->second;
    return shared_by_workers(std::exp2(double(t.predict(std::span<const float>(&v, 1)).front())), j);
  }

 private:
  // log2 of the input bytes: the trees split on it, whatever its scale.
  static float volume(const estimate_job& j) { return float(std::log2(double(j.input_bytes()))); }

  detail::boosted_trees_options options_;
  std::map<std::string, detail::boosted_trees> trees_;
  detail::boosted_trees pooled_;
};

static_assert(FittedEstimator<volume_xgboost>);

}  // namespace dwsr::estimators
