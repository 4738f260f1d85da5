#pragma once
/// \file The noise-reduction family: 3-D smoothing filters with scipy.ndimage's
/// semantics ("reflect" borders, origin 0), NaN set to 0 afterwards
/// (reference: dasf-seismic-extras noise_reduction.py).
///
/// Memory: input + output + per-thread scratch. The separable filters
/// (gaussian, convolution) run their first pass from the input into the output
/// and the others in place on it, with one panel of lines per thread
/// (detail/separable.hpp); median keeps one trace of sorted window columns
/// per thread (detail/rank_filter.hpp). The reference needs 2.25x its input.

#include <array>
#include <cmath>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "dwsr/operators/detail/common.hpp"
#include "dwsr/operators/detail/kernel_param.hpp"
#include "dwsr/operators/detail/rank_filter.hpp"
#include "dwsr/operators/detail/separable.hpp"
#include "dwsr/operators/detail/sigma_params.hpp"
#include "dwsr/ops/operator.hpp"

namespace dwsr::operators {

namespace detail {

/// Shared by the family: one float32 output.
struct noise_reduction_op : float32_output {
  static constexpr std::string_view family = "noise_reduction";
};

/// The window's upper median (rank size // 2, as scipy), by exact selection.
struct window_median {
  template <class Ctx>
  static void apply(Ctx& ctx, cube_view<const float> in, float* y, const std::array<std::uint64_t, 3>& k) {
    rank_filter(ctx, in.data(), y, in.shape(), k, k[0] * k[1] * k[2] / 2);
  }
};

/// The window's mean: uniform passes along inline, crossline, time; size-1 axes skipped.
struct window_mean {
  template <class Ctx>
  static void apply(Ctx& ctx, cube_view<const float> in, float* y, const std::array<std::uint64_t, 3>& k) {
    kernel_bank<Ctx> bank(ctx,
                          {kernel_recipe::uniform(k[0]), kernel_recipe::uniform(k[1]), kernel_recipe::uniform(k[2])});
    std::array<filter_pass, 3> passes;
    std::size_t n = 0;
    for (int a = 0; a < 3; ++a)
      if (k[std::size_t(a)] > 1) passes[n++] = {a, bank[std::size_t(a)]};
    separable_filter(ctx, in.data(), y, in.shape(), std::span(passes.data(), n));
  }
};

/// Operator Derived: Filter::apply over a box window of `kernel` (default 3 x 3
/// x 3), then NaN -> 0.
template <class Derived, class Filter>
struct box_filter : noise_reduction_op, bound_params<Derived, kernel_params> {
  using bound_params<Derived, kernel_params>::bound_params;
  dwsr::halo halo() const { return window_halo(this->kernel); }
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    auto y = out[0].as<float>();
    Filter::apply(ctx, in, y.data(), this->kernel);
    transform_in_place(ctx, y.data(), y.size(), [](float v) { return nan_to_zero(v); });
  }
};

}  // namespace detail

/// gaussian: scipy.ndimage.gaussian_filter(x, sigmas, truncate=truncate), NaN -> 0.
/// Passes along inline, crossline and time in that order (as scipy), each of
/// radius int(truncate sigma + 0.5); an axis with sigma 0 is not filtered.
/// Speed (sigma 1: 9 taps): three passes, the pass rate (double
/// multiply-adds, detail/separable.hpp) over three: ~0.55 GB/s per core in
/// SSE2 lanes; AVX-512's give 1.5x that (an Intel VM: 0.25 -> 0.38 GB/s).
struct gaussian : detail::noise_reduction_op {
  static constexpr std::string_view name = "gaussian";
  static constexpr std::string_view summary = "3-D gaussian smoothing (scipy gaussian_filter, reflect)";
  static std::vector<param_spec> params() {
    return {detail::sigmas_spec({1, 1, 1}, "standard deviations along inline, crossline, time (samples; 0: none)"),
            {"truncate", param_kind::real, 4.0, "kernel radius in standard deviations"}};
  }
  explicit gaussian(const param_values& p = param_values::bind(name, params()))
      : sigmas(detail::gaussian_sigmas(name, p, true)), truncate(p.real("truncate")) {
    if (!(truncate > 0 && truncate <= 100))
      throw invalid_input("parameter 'truncate' of 'gaussian' = " + format_value(truncate) +
                          ": expected a radius in standard deviations above 0 and at most 100, e.g. 4");
  }
  /// Whether the filter smooths along `axis` (scipy skips sigma <= 1e-15).
  bool filters(int axis) const { return sigmas[std::size_t(axis)] > detail::negligible_sigma; }
  dwsr::halo halo() const {
    dwsr::halo h;
    for (int a = 0; a < 3; ++a)
      h.radius[std::size_t(a)] = filters(a) ? detail::gaussian_radius(sigmas[std::size_t(a)], truncate) : 0;
    return h;
  }
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    auto y = out[0].as<float>();
    auto recipe = [&](int a) {
      return filters(a) ? detail::kernel_recipe::gaussian(sigmas[std::size_t(a)], 0, truncate)
                        : detail::kernel_recipe::uniform(1);
    };
    detail::kernel_bank<Ctx> bank(ctx, {recipe(0), recipe(1), recipe(2)});
    std::array<detail::filter_pass, 3> passes;
    std::size_t n = 0;
    for (int a = 0; a < 3; ++a)
      if (filters(a)) passes[n++] = {a, bank[std::size_t(a)]};
    detail::separable_filter(ctx, in.data(), y.data(), in.shape(), std::span(passes.data(), n));
    detail::transform_in_place(ctx, y.data(), y.size(), [](float v) { return detail::nan_to_zero(v); });
  }
  std::array<double, 3> sigmas;
  double truncate;
};

/// median: scipy.ndimage.median_filter(x, size=kernel), NaN -> 0. Exact
/// selection, so finite results equal scipy's bit for bit (even sizes: the
/// upper median, rank size // 2, as scipy). Speed (3 x 3 x 3): bound by ~275
/// min/max operations a sample (detail/rank_filter.hpp), ~0.11 GB/s per core in
/// SSE2 lanes, ~0.18 GB/s in AVX-512's; other windows sort columns and merge,
/// ~0.015 GB/s.
DWSR_DECLARE_OPERATOR(median, "3-D median filter of a box window (scipy median_filter, reflect)",
                      detail::box_filter<median, detail::window_median>)

/// convolution: scipy.ndimage.uniform_filter(x, size=kernel) (the mean over a
/// box window), NaN -> 0. Passes along inline, crossline, time; size-1 axes skipped.
/// Speed (3 x 3 x 3): three 3-tap passes, ~0.9 GB/s per core (detail/separable.hpp).
DWSR_DECLARE_OPERATOR(convolution, "3-D box mean filter (scipy uniform_filter, reflect)",
                      detail::box_filter<convolution, detail::window_mean>)

}  // namespace dwsr::operators
