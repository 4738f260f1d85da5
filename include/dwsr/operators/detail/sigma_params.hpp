#pragma once
/// \file The `sigmas` parameter of gaussian operators: three standard
/// deviations (samples) along (inline, crossline, time). Window sizes
/// (`kernel`) are in kernel_param.hpp.

#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dwsr/error.hpp"
#include "dwsr/ops/param.hpp"

namespace dwsr::operators::detail {

/// Largest standard deviation accepted (samples).
inline constexpr double max_sigma = 1e5;

/// A `sigmas` parameter spec with the given defaults.
inline param_spec sigmas_spec(std::array<double, 3> defaults, std::string doc) {
  return {"sigmas", param_kind::reals, std::vector<double>(defaults.begin(), defaults.end()), std::move(doc), 3};
}

/// The `sigmas` parameter, checked: each > 0 (>= 0 when `zero_allowed`: that
/// axis is then not filtered) and at most max_sigma; else invalid_input.
inline std::array<double, 3> gaussian_sigmas(std::string_view op, const param_values& p, bool zero_allowed) {
  const auto& v = p.reals("sigmas");
  for (std::size_t i = 0; i < 3; ++i)
    if (!(zero_allowed ? v[i] >= 0 : v[i] > 0) || v[i] > max_sigma)
      throw invalid_input("parameter 'sigmas' of '" + std::string(op) + "' = " + format_value(v) + ": entry " +
                          std::to_string(i) + " is " + format_value(v[i]) + "; expected three standard deviations " +
                          (zero_allowed ? ">= 0" : "> 0") + " and at most 100000 samples, e.g. sigmas=1,1,1");
  return {v[0], v[1], v[2]};
}

}  // namespace dwsr::operators::detail
