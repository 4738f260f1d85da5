#pragma once
/// \file The window parameters of the dip and edge-detection families: a
/// `kernel` of three window sizes (inline, crossline, time) and `dip_factor`.

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dwsr/ops/param.hpp"

namespace dwsr::operators::detail {

/// Largest window size accepted along one axis.
inline constexpr double max_window_size = 4096;  // named in kernel_value's message

/// The `kernel` parameter's spec with a default of (i, x, t).
inline param_spec kernel_spec(double i, double x, double t) {
  return {"kernel",
          param_kind::reals,
          std::vector<double>{i, x, t},
          "window size along inline, crossline and time (samples)",
          3,
          {}};
}

/// The `dip_factor` parameter's spec (the reference's default 10).
inline param_spec dip_factor_spec() {
  return {"dip_factor", param_kind::real, 10.0, "scale of the dips (dip = -gradient ratio * dip_factor)"};
}

/// The bound `kernel`, checked: three whole numbers in [1, max_window_size].
inline std::array<std::uint64_t, 3> kernel_value(std::string_view op, const param_values& p) {
  const auto& k = p.reals("kernel");
  std::array<std::uint64_t, 3> out{};
  for (std::size_t a = 0; a < 3; ++a) {
    const double v = k.at(a);
    if (!(v >= 1 && v <= max_window_size && v == std::floor(v))) {
      std::string message = "parameter 'kernel' of '";
      message.append(op).append("': entry ").append(std::to_string(a)).append(" (");
      message.append(format_value(v)).append(") is not a whole number in [1, 4096]; ");
      message.append("give three window sizes, e.g. kernel=3,3,9");
      throw invalid_input(message);
    }
    out[a] = static_cast<std::uint64_t>(v);
  }
  return out;
}

/// The bound `dip_factor`, checked: finite and non-zero.
inline double dip_factor_value(std::string_view op, const param_values& p) {
  const double f = p.real("dip_factor");
  if (!(std::isfinite(f) && f != 0))
    throw invalid_input("parameter 'dip_factor' of '" + std::string(op) + "' = " + format_value(f) +
                        ": expected a finite, non-zero scale, e.g. dip_factor=10");
  return f;
}

/// Parameters of operators with a `kernel` only (default i x x x t).
template <std::uint64_t I, std::uint64_t X, std::uint64_t T>
struct kernel_params_of {
  static std::vector<param_spec> params() { return {kernel_spec(I, X, T)}; }
  kernel_params_of(std::string_view op, const param_values& p) : kernel(kernel_value(op, p)) {}
  std::array<std::uint64_t, 3> kernel;
};
/// `kernel` with the reference's default 3 x 3 x 3.
using kernel_params = kernel_params_of<3, 3, 3>;

/// Parameters of operators with `dip_factor` and `kernel` (default 3 x 3 x 3).
struct dip_params {
  static std::vector<param_spec> params() { return {dip_factor_spec(), kernel_spec(3, 3, 3)}; }
  dip_params(std::string_view op, const param_values& p)
      : dip_factor(dip_factor_value(op, p)), kernel(kernel_value(op, p)) {}
  double dip_factor;
  std::array<std::uint64_t, 3> kernel;
};

}  // namespace dwsr::operators::detail
