#pragma once
/// \file The `volume_linear` estimator: the Unicamp thesis's method, one
/// regression of the measured peak on the input volume per operator. Here
/// "operator" is the job's graph (its operators in node order): held bytes =
/// a + b x input bytes, least squares over the training runs of that graph.
/// A graph seen once is fitted through the origin (b alone); a graph never
/// seen falls back to one regression over every training run. It ignores
/// the chunking, W and T, as the method does: that is what it is measured
/// for. The worker's peak is the held bytes shared among the W workers.

#include <algorithm>
#include <cmath>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "dwsr/concepts.hpp"
#include "dwsr/error.hpp"

namespace dwsr::estimators {

/// Least squares of held bytes on input bytes (see the file comment).
class volume_linear {
 public:
  std::string_view name() const noexcept { return "volume_linear"; }

  /// Fits one line per graph and the pooled line. Throws invalid_input for
  /// no runs or a run whose held bytes are not finite and >= 0.
  void fit(std::span<const labelled_run> runs) {
    if (runs.empty()) throw invalid_input("volume_linear: no training runs; expected at least 1");
    std::map<std::string, sums> per;
    sums all;
    for (const auto& r : runs) {
      if (!std::isfinite(r.held) || r.held < 0)
        throw invalid_input("volume_linear: run of job " + std::to_string(r.job.id) + " holds " +
                            std::to_string(r.held) + " bytes; expected a finite number >= 0");
      const double x = double(r.job.input_bytes());
      per[r.job.operators].add(x, r.held);
      all.add(x, r.held);
    }
    lines_.clear();
    for (const auto& [k, s] : per) lines_[k] = s.solve();
    pooled_ = all.solve();
    fitted_ = true;
  }

  /// Throws invalid_input before fit.
  estimate predict(const estimate_job& j) const {
    if (!fitted_) throw invalid_input("volume_linear: predict before fit; expected fit(runs) first");
    const auto it = lines_.find(j.operators);
    const auto& l = it == lines_.end() ? pooled_ : it->second;
    return shared_by_workers(std::max(0.0, l.a + l.b * double(j.input_bytes())), j);
  }

 private:
  struct line_fit {
    double a = 0, b = 0;  ///< held = a + b x input bytes
  };
  struct sums {
    double n = 0, x = 0, y = 0, xx = 0, xy = 0;
    void add(double xi, double yi) {
      n += 1;
      x += xi;
      y += yi;
      xx += xi * xi;
      xy += xi * yi;
    }
    line_fit solve() const {
      const double var = n * xx - x * x;
      if (n >= 2 && var > 1e-9 * n * xx) {  // two distinct volumes at least
        const double b = (n * xy - x * y) / var;
        return {(y - b * x) / n, b};
      }
      return {0, xx > 0 ? xy / xx : 0};  // through the origin
    }
  };
  std::map<std::string, line_fit> lines_;
  line_fit pooled_;
  bool fitted_ = false;
};

static_assert(FittedEstimator<volume_linear>);

}  // namespace dwsr::estimators
