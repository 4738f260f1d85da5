#pragma once
/// \file The reference's `sample_rate` parameter (the sample interval in
/// milliseconds, default 4), shared by the complex-trace and frequency families.

#include <string_view>
#include <vector>

#include "dwsr/error.hpp"
#include "dwsr/ops/param.hpp"

namespace dwsr::operators::detail {

/// The `sample_rate` parameter's spec.
inline param_spec sample_rate_spec() {
  return {"sample_rate", param_kind::real, 4.0, "sample interval in milliseconds"};
}

/// The bound sample interval in ms, checked: positive.
inline double sample_interval(const param_values& p) {
  const double sr = p.real("sample_rate");
  if (!(sr > 0))
    throw invalid_input("parameter 'sample_rate' = " + format_value(sr) +
                        ": expected a positive sample interval in milliseconds");
  return sr;
}

/// Parameters of operators with `sample_rate` only.
struct sample_rate_param {
  static std::vector<param_spec> params() { return {sample_rate_spec()}; }
  explicit sample_rate_param(const param_values& p = param_values::bind("", params()))
      : sample_rate(sample_interval(p)) {}
  /// Sampling frequency in Hz.
  double fs() const { return 1000.0 / sample_rate; }
  double sample_rate;
};

}  // namespace dwsr::operators::detail
