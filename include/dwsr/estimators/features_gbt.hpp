#pragma once
/// \file The `features_gbt` estimator: gradient-boosted trees (XGBoost) on
/// the whole feature vector of a job, the one `dwsr dataset` writes
/// (estimators/job_features.hpp). One ensemble for all graphs,
/// fitted on log2 of the held bytes. Unlike volume_*, it sees the chunking
/// and the graph's code, so it may carry what it learnt to graphs it never
/// saw (the family split); as trees, it cannot predict beyond the largest
/// run it was fitted on (the extrapolation split).

#include <cmath>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dwsr/concepts.hpp"
#include "dwsr/error.hpp"
#include "dwsr/estimators/detail/boosted_trees.hpp"
#include "dwsr/estimators/job_features.hpp"

namespace dwsr::estimators {

/// One booster on the feature vector (see the file comment).
class features_gbt {
 public:
  explicit features_gbt(detail::boosted_trees_options o = {}) : options_(o) {}
  std::string_view name() const noexcept { return "features_gbt"; }

  /// The job's feature vector (estimators/job_features.hpp).
  static std::vector<float> features(const estimate_job& j) { return job_features(j, "features_gbt"); }

  /// Fits the ensemble. Throws invalid_input for no runs or a run whose
  /// held bytes are not finite and > 0.
  void fit(std::span<const labelled_run> runs) {
    if (runs.empty()) throw invalid_input("features_gbt: no training runs; expected at least 1");
    std::vector<float> x, y;
    std::size_t cols = 0;
    for (const auto& r : runs) {
      y.push_back(detail::log2_target(name(), r));
      const auto f = features(r.job);
      cols = f.size();
      x.insert(x.end(), f.begin(), f.end());
    }
    trees_.fit(x, cols, y, options_);
  }

  /// Throws invalid_input before fit.
  estimate predict(const estimate_job& j) const {
    if (!trees_.fitted()) throw invalid_input("features_gbt: predict before fit; expected fit(runs) first");
    return shared_by_workers(std::exp2(double(trees_.predict(features(j)).front())), j);
  }

 private:
  detail::boosted_trees_options options_;
  detail::boosted_trees trees_;
};

static_assert(FittedEstimator<features_gbt>);

}  // namespace dwsr::estimators
