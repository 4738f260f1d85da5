#pragma once
/// \file Small helpers several operator families share.

#include <array>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

#include "dwsr/core/host_device.hpp"
#include "dwsr/ops/param.hpp"
#include "dwsr/ops/protocol.hpp"

/// Declares operator `op_name` over a base (the trailing arguments) that
/// implements its whole protocol and computation: the operator adds only its
/// name and one-line summary, and inherits the base's constructor.
#define DWSR_DECLARE_OPERATOR(op_name, summary_text, ...)     \
  struct op_name : __VA_ARGS__ {                              \
    static constexpr std::string_view name = #op_name;        \
    static constexpr std::string_view summary = summary_text; \
    using base = __VA_ARGS__;                                 \
    using base::base;                                         \
  };

namespace dwsr::operators::detail {

/// NaN becomes 0, as the reference's nan_to_num does for the attributes that use it.
DWSR_HOST_DEVICE inline float nan_to_zero(float v) { return std::isnan(v) ? 0.0f : v; }

/// Operators without parameters.
struct no_params {
  static std::vector<param_spec> params() { return {}; }
  explicit no_params(const param_values& = {}) {}
};

/// Params (whose constructor takes the operator's name, for messages, and the
/// bound values) bound under operator Derived's name: Derived inherits the
/// constructor (`using bound_params::bound_params;`).
template <class Derived, class Params>
struct bound_params : Params {
  explicit bound_params(const param_values& p = param_values::bind(Derived::name, Params::params()))
      : Params(Derived::name, p) {}
};

/// The one unnamed float32 output of most operators (the reference's file
/// name is the operator's).
struct float32_output {
  std::vector<output_spec> outputs() const { return {{"", dtype::float32}}; }
};

/// A window's halo: kernel / 2 per axis, after `extra` samples of derivatives.
inline dwsr::halo window_halo(const std::array<std::uint64_t, 3>& kernel, std::uint64_t extra = 0) {
  return {.radius = {extra + kernel[0] / 2, extra + kernel[1] / 2, extra + kernel[2] / 2}};
}

}  // namespace dwsr::operators::detail
