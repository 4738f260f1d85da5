#pragma once
/// \file The separable filters of the CUDA window operators as data: each
/// operator's passes (axis, weights, tap form), what the first and the last
/// pass add (squaring, finish), the weights as the device receives them and
/// the tile path's plan. Plain C++: the device launches
/// (window_kernels.cuh) and a host test of the tile path share it.

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "dwsr/core/shape.hpp"
#include "dwsr/operators/cuda/detail/tile_filter.hpp"
#include "dwsr/operators/detail/separable.hpp"
#include "dwsr/operators/noise_reduction.hpp"
#include "dwsr/operators/signal.hpp"

namespace dwsr::operators::cuda::detail {

/// A pass of a separable filter: its axis and weights.
struct device_pass {
  int axis;
  operators::detail::kernel_recipe recipe;
  tap_form form = tap_form::ascending;
};

/// A separable filter: passes in order, the first squaring its samples or
/// not, the last applying `finish`. With no pass (no axis filtered), one
/// pass of the identity along time still applies the squaring and the finish.
struct separable_spec {
  std::vector<device_pass> passes;
  bool square_first = false;
  pass_finish finish = pass_finish::none;

  separable_spec(std::vector<device_pass> p, bool square, pass_finish f)
      : passes(std::move(p)), square_first(square), finish(f) {
    if (passes.empty()) passes.push_back({2, operators::detail::kernel_recipe::uniform(1)});
  }

  /// Where pass k's weights start in weights().
  std::size_t offset(std::size_t k) const {
    std::size_t at = 0;
    for (std::size_t j = 0; j < k; ++j) at += passes[j].recipe.size();
    return at;
  }
  /// Every pass's weights, concatenated in order.
  std::vector<double> weights() const {
    std::vector<double> w(offset(passes.size()));
    for (std::size_t k = 0; k < passes.size(); ++k) passes[k].recipe.fill(w.data() + offset(k));
    return w;
  }
  /// Pass k's arithmetic, with weights() at w.
  pass_math math(std::size_t k, const double* w) const {
    const auto size = passes[k].recipe.size();
    return {w + offset(k),          int(size / 2),  int(size - 1 - size / 2),
            square_first && k == 0, passes[k].form, k + 1 == passes.size() ? finish : pass_finish::none};
  }
  /// The tile path over a cube of shape s with weights() at w (passes == 0
  /// where it does not apply; plan_tile says when).
  tile_filter tile(shape3 s, const double* w, double max_work = tile_max_work) const {
    if (passes.size() > 3) return {};
    int axes[3] = {};
    std::uint64_t sizes[3] = {};
    for (std::size_t k = 0; k < passes.size(); ++k) {
      axes[k] = passes[k].axis;
      sizes[k] = passes[k].recipe.size();
    }
    const std::int64_t n[3] = {std::int64_t(s.inlines), std::int64_t(s.crosslines), std::int64_t(s.samples)};
    auto f = plan_tile(n, int(passes.size()), axes, sizes, max_work);
    if (f.passes > 0)
      for (std::size_t k = 0; k < passes.size(); ++k) f.math[k] = math(k, w);
    return f;
  }
};

/// gaussian: one gaussian pass per filtered axis, inline first, NaN -> 0.
inline separable_spec gaussian_spec(const operators::gaussian& op) {
  std::vector<device_pass> passes;
  for (int a = 0; a < 3; ++a)
    if (op.filters(a))
      passes.push_back({a, operators::detail::kernel_recipe::gaussian(op.sigmas[std::size_t(a)], 0, op.truncate)});
  return {std::move(passes), false, pass_finish::nan_to_zero};
}

/// The box mean of window k (size-1 axes skipped), time first or inline first.
inline std::vector<device_pass> box_mean_passes(const std::array<std::uint64_t, 3>& k, bool time_first) {
  std::vector<device_pass> passes;
  for (int step = 0; step < 3; ++step) {
    const int a = time_first ? 2 - step : step;
    if (k[std::size_t(a)] > 1) passes.push_back({a, operators::detail::kernel_recipe::uniform(k[std::size_t(a)])});
  }
  return passes;
}

/// convolution: the box mean, inline first, NaN -> 0.
inline separable_spec convolution_spec(const std::array<std::uint64_t, 3>& k) {
  return {box_mean_passes(k, false), false, pass_finish::nan_to_zero};
}

/// rms: sqrt of the box mean of x^2, time first as the CPU's, NaN -> 0.
inline separable_spec rms_spec(const std::array<std::uint64_t, 3>& k) {
  return {box_mean_passes(k, true), true, pass_finish::sqrt_nan_to_zero};
}

/// reflection_intensity: the trapezoid integral over kernel[2] samples along time, NaN -> 0.
inline separable_spec reflection_intensity_spec(const std::array<std::uint64_t, 3>& k) {
  return {{{2, operators::detail::kernel_recipe::trapezoid(k[2])}}, false, pass_finish::nan_to_zero};
}

/// A derivative along `axis`, smoothed along the other axes in ascending
/// order, the passes in the given forms (the structure tensor's gradients
/// take scipy's symmetric ones).
template <class Stencil>
separable_spec derivative_spec(int axis, tap_form derivative = tap_form::ascending,
                               tap_form smoothing = tap_form::ascending) {
  std::vector<device_pass> passes{{axis, Stencil::derivative(), derivative}};
  for (int a = 0; a < 3; ++a)
    if (a != axis) passes.push_back({a, Stencil::smoothing(), smoothing});
  return {std::move(passes), false, pass_finish::none};
}

}  // namespace dwsr::operators::cuda::detail
