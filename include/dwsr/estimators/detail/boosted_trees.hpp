#pragma once
/// \file Gradient-boosted regression trees through XGBoost's C API
/// (Debian's libxgboost-dev): fit on a dense float matrix, predict rows.
/// One thread and a fixed seed, so the same rows give the same trees, bit
/// for bit. Programs that include it use the CMake target dwsr_xgboost
/// (XGBoost's headers, DWSR_WITH_XGBOOST); the library itself is loaded at
/// the first fit (xgboost_library.hpp).

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dwsr/error.hpp"
#include "dwsr/estimators/detail/xgboost_library.hpp"
#include "dwsr/estimators/estimate.hpp"

namespace dwsr::estimators::detail {

/// The boosting's settings.
struct boosted_trees_options {
  int rounds = 200;   ///< trees
  int max_depth = 4;  ///< of each tree
  double eta = 0.1;   ///< learning rate
  std::uint64_t seed = 0;
};

/// Throws dwsr::error with XGBoost's message when a call failed.
inline void xgb_check(int status, const char* call) {
  if (status != 0) throw error(std::string("XGBoost ") + call + " failed: " + xgboost().get_last_error());
}

/// The trees' target for run `r`: log2 of its held bytes, so that small and
/// large runs weigh alike. Throws invalid_input (positive_held).
inline float log2_target(std::string_view estimator, const labelled_run& r) {
  return float(std::log2(positive_held(estimator, r)));
}

/// A fitted ensemble (see the file comment).
class boosted_trees {
 public:
  /// Fits `y` (one target per row) on `x` (rows x cols, row-major). Throws
  /// invalid_input for sizes that disagree or an empty matrix.
  void fit(std::span<const float> x, std::size_t cols, std::span<const float> y, const boosted_trees_options& o) {
    if (cols == 0 || y.empty() || x.size() != y.size() * cols)
      throw invalid_input("boosted trees: " + std::to_string(x.size()) + " values for " + std::to_string(y.size()) +
                          " rows of " + std::to_string(cols) + " columns; expected rows x columns, at least one");
    const auto data = matrix(x, cols);
    xgb_check(xgboost().matrix_set_float_info(data.get(), "label", y.data(), y.size()), "XGDMatrixSetFloatInfo");
    BoosterHandle b = nullptr;
    DMatrixHandle train[] = {data.get()};
    xgb_check(xgboost().booster_create(train, 1, &b), "XGBoosterCreate");
    booster_.reset(b);
    const std::string params[][2] = {{"objective", "reg:squarederror"},
                                     {"tree_method", "exact"},
                                     {"nthread", "1"},
                                     {"verbosity", "0"},
                                     {"max_depth", std::to_string(o.max_depth)},
                                     {"eta", std::to_string(o.eta)},
                                     {"seed", std::to_string(o.seed)}};
    for (const auto& [k, v] : params)
      xgb_check(xgboost().booster_set_param(b, k.c_str(), v.c_str()), "XGBoosterSetParam");
    for (int i = 0; i < o.rounds; ++i)
      xgb_check(xgboost().booster_update_one_iter(b, i, data.get()), "XGBoosterUpdateOneIter");
    cols_ = cols;
  }

  bool fitted() const noexcept { return booster_ != nullptr; }

  /// One prediction per row of `x` (row-major, the fitted column count).
  std::vector<float> predict(std::span<const float> x) const {
    if (!booster_ || x.size() % cols_ != 0)
      throw invalid_input("boosted trees: predict " + std::to_string(x.size()) + " values; expected a fitted model " +
                          "and rows of " + std::to_string(cols_) + " columns");
    const auto data = matrix(x, cols_);
    bst_ulong n = 0;
    const float* out = nullptr;
    xgb_check(xgboost().booster_predict(booster_.get(), data.get(), 0, 0, 0, &n, &out), "XGBoosterPredict");
    return {out, out + n};
  }

 private:
  struct matrix_free {
    void operator()(DMatrixHandle h) const { xgboost().matrix_free(h); }
  };
  struct booster_free {
    void operator()(BoosterHandle h) const { xgboost().booster_free(h); }
  };
  using matrix_ptr = std::unique_ptr<void, matrix_free>;

  static matrix_ptr matrix(std::span<const float> x, std::size_t cols) {
    DMatrixHandle h = nullptr;
    xgb_check(
        xgboost().matrix_create_from_mat(x.data(), x.size() / cols, cols, std::numeric_limits<float>::quiet_NaN(), &h),
        "XGDMatrixCreateFromMat");
    return matrix_ptr(h);
  }

  std::unique_ptr<void, booster_free> booster_;
  std::size_t cols_ = 0;
};

}  // namespace dwsr::estimators::detail
