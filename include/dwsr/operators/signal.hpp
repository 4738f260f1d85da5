#pragma once
/// \file The signal-processing family (reference: dasf-seismic-extras
/// signal.py): derivative stencils, amplitude scaling and windowed measures.
/// phase_rotation lives in complex_trace.hpp.
///
/// Memory: input + output + per-thread scratch (a panel of lines, a trace) and,
/// for gradient_magnitude, two inline slices.
/// Separable passes run from the input into the output and then in place
/// (detail/separable.hpp). The reference needs 4x (derivatives), 5x
/// (histogram_equalization), 11-12x (rms, trace_agc, reflection_intensity).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "dwsr/core/simd_isa.hpp"
#include "dwsr/operators/detail/common.hpp"
#include "dwsr/operators/detail/kernel_param.hpp"
#include "dwsr/operators/detail/separable.hpp"
#include "dwsr/operators/detail/sigma_params.hpp"
#include "dwsr/operators/detail/sqrt_lanes.hpp"
#include "dwsr/ops/operator.hpp"

namespace dwsr::operators {

namespace detail {

/// Shared by the family: one float32 output.
struct signal_op : float32_output {
  static constexpr std::string_view family = "signal";
};

/// The `axis` parameter (-3 to 2) as 0, 1 or 2, or invalid_input.
inline int derivative_axis(std::string_view op, const param_values& p) {
  const double a = p.real("axis");
  if (!(a >= -3 && a <= 2))
    throw invalid_input("parameter 'axis' of '" + std::string(op) + "' = " + format_value(a) +
                        ": expected an axis from -3 to 2 (0 or -3: inline, 1 or -2: crossline, 2 or -1: time)");
  return static_cast<int>(a < 0 ? a + 3 : a);
}

/// A derivative along one axis with smoothing along the other two: the
/// reference's FirstDerivative / SecondDerivative, operator Derived.
/// Stencil::derivative and Stencil::smoothing are kernel_recipes of the same odd size.
template <class Derived, class Stencil>
struct derivative_op : signal_op {
  static std::vector<param_spec> params() {
    return {{"axis", param_kind::integer, -1.0, "axis to differentiate: 0 inline, 1 crossline, 2 or -1 time"}};
  }
  explicit derivative_op(const param_values& p = param_values::bind(Derived::name, params()))
      : axis(derivative_axis(Derived::name, p)) {}
  dwsr::halo halo() const {
    const auto r = Stencil::derivative().size() / 2;
    return {.radius = {r, r, r}};
  }
  /// Derivative along `axis`, then smoothing along the other axes in ascending order.
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::kernel_bank<Ctx> bank(ctx, {Stencil::derivative(), Stencil::smoothing()});
    std::array<detail::filter_pass, 3> passes{{{axis, bank[0]}}};
    std::size_t n = 1;
    for (int a = 0; a < 3; ++a)
      if (a != axis) passes[n++] = {a, bank[1]};
    detail::separable_filter(ctx, in.data(), out[0].as<float>().data(), in.shape(), passes);
  }
  int axis;
};

struct first_stencil {
  static detail::kernel_recipe derivative() { return detail::kernel_recipe::fixed({-0.5, 0.0, 0.5}); }
  static detail::kernel_recipe smoothing() { return detail::kernel_recipe::fixed({0.178947, 0.642105, 0.178947}); }
};
struct second_stencil {
  static detail::kernel_recipe derivative() {
    return detail::kernel_recipe::fixed({0.232905, 0.002668, -0.471147, 0.002668, 0.232905});
  }
  static detail::kernel_recipe smoothing() {
    return detail::kernel_recipe::fixed({0.030320, 0.249724, 0.439911, 0.249724, 0.030320});
  }
};

/// Windowed RMS: sqrt of the box mean of x^2 (uniform passes along time,
/// crossline, inline; size-1 axes skipped), NaN -> 0, then y = finish(rms, x)
/// written to y. Squaring, the time pass and (when no other pass follows)
/// finish run trace by trace while the trace is in cache: one sweep of the
/// cube instead of three, with separable_filter's bits and scratch.
template <class Ctx, class Finish>
void windowed_rms(Ctx& ctx, cube_view<const float> in, float* y, const std::array<std::uint64_t, 3>& k,
                  Finish&& finish) {
  using detail::kernel_recipe;
  detail::kernel_bank<Ctx> bank(
      ctx, {kernel_recipe::uniform(k[0]), kernel_recipe::uniform(k[1]), kernel_recipe::uniform(k[2])});
  std::array<detail::filter_pass, 3> passes;
  std::size_t n = 0;
  for (int a = 2; a >= 0; --a)
    if (k[std::size_t(a)] > 1) passes[n++] = {a, bank[std::size_t(a)]};
  const auto s = in.shape();
  detail::line_scratch<Ctx> scratch(ctx, 1, detail::panel_floats(s, std::span(passes.data(), n)));
  if constexpr (!Ctx::computes) return;
  const bool time_pass = k[2] > 1;
  const bool strided = n > (time_pass ? 1u : 0u);
  const auto finish_line = [&](const float* xl, float* yl, std::uint64_t nt) {
    detail::sqrt_nan_to_zero(yl, nt);
    for (std::uint64_t t = 0; t < nt; ++t) yl[t] = finish(yl[t], xl[t]);
  };
  const auto nt = s.samples;
  const float* x = in.data();
  const auto isa = simd_isa_in_use();
  ctx.parallel_for(
      s.traces(),
      [&](std::uint64_t b, std::uint64_t e, std::size_t slot) {
        float* buf = scratch.row(slot, 0);
        with_simd_isa(isa, [&](auto lanes) {
          for (auto tr = b; tr < e; ++tr) {
            const float* xl = x + tr * nt;
            float* yl = y + tr * nt;
            for (std::uint64_t t = 0; t < nt; ++t) yl[t] = xl[t] * xl[t];
            if (time_pass) detail::correlate_line<lanes()>(yl, yl, nt, passes[0].kernel, buf);
            if (!strided) finish_line(xl, yl, nt);
          }
        });
      },
      16);
  if (!strided) return;
  for (std::size_t i = time_pass ? 1 : 0; i < n; ++i)
    detail::correlate_axis(ctx, y, y, s, passes[i].axis, passes[i].kernel, scratch);
  ctx.parallel_for(
      s.traces(),
      [&](std::uint64_t b, std::uint64_t e, std::size_t) {
        for (auto tr = b; tr < e; ++tr) finish_line(x + tr * nt, y + tr * nt, nt);
      },
      16);
}

/// The reference's histogram bin edges: numpy.linspace(min, max, 256) in
/// double, cast to float32 (the last edge is max itself).
inline void histogram_edges(float lo, float hi, float* edges) {
  const double start = lo, step = (double(hi) - start) / 255.0;
  for (int k = 0; k < 255; ++k) edges[k] = static_cast<float>(k * step + start);
  edges[255] = hi;
}

/// 1 / the mean spacing of n + 1 nearly equally spaced nodes from lo to hi (0 when hi == lo).
inline double inverse_step(double lo, double hi, std::size_t n) {
  return hi > lo ? static_cast<double>(n) / (hi - lo) : 0.0;
}

/// The largest k < n with nodes[k] <= x, for non-decreasing, nearly equally
/// spaced nodes with nodes[0] <= x: std::upper_bound's answer - 1, found from
/// the guess (x - lo) * inv_step and a step or two to either side instead of
/// eight halvings.
template <class T, class V>
std::size_t last_at_most(const T* nodes, std::size_t n, V x, double lo, double inv_step) {
  const double guess = (static_cast<double>(x) - lo) * inv_step;
  auto k = static_cast<std::size_t>(std::clamp(guess, 0.0, static_cast<double>(n - 1)));
  while (k + 1 < n && nodes[k + 1] <= x) ++k;
  while (k > 0 && nodes[k] > x) --k;
  return k;
}

}  // namespace detail

/// first_derivative: [-0.5, 0, 0.5] along `axis`, then [0.178947, 0.642105,
/// 0.178947] along the two other axes (ascending), reflect borders. Differs
/// from the reference for axis -2 and -3 only: the reference compares those to
/// non-negative axis numbers and so smooths the wrong axes; dwsr treats them as 1 and 0.
/// Speed: three 3-tap passes, ~1.0 GB/s per core: the passes' double
/// multiply-adds are the limit (detail/separable.hpp), not memory.
DWSR_DECLARE_OPERATOR(first_derivative, "3-tap derivative along an axis, smoothed along the others",
                      detail::derivative_op<first_derivative, detail::first_stencil>)

/// second_derivative: the reference's 5-tap second-derivative stencil along
/// `axis`, 5-tap smoothing along the two others (axis numbering as first_derivative).
/// Speed: three 5-tap passes, ~0.7 GB/s per core, bound as first_derivative.
DWSR_DECLARE_OPERATOR(second_derivative, "5-tap second derivative along an axis, smoothed along the others",
                      detail::derivative_op<second_derivative, detail::second_stencil>)

/// histogram_equalization: the cube's CDF over 255 bins spanning [min, max],
/// interpolated (numpy.interp, float64) at bin centres. Two reduction passes:
/// min/max, then integer bin counts. Non-finite samples are left out of the
/// statistics (the reference fails or returns NaN everywhere on them); NaN
/// maps to NaN, +-inf to the CDF's ends.
/// Speed: three sweeps (range, counts, interpolation), ~0.55 GB/s per core;
/// bins and nodes come from an arithmetic guess checked against its neighbours
/// (exact), so the per-sample double interpolation and the sweeps are the limit.
struct histogram_equalization : detail::signal_op, detail::no_params {
  static constexpr std::string_view name = "histogram_equalization";
  static constexpr std::string_view summary = "cumulative histogram (255 bins over the cube's range) of each sample";
  static constexpr std::size_t bins = 255;
  using no_params::no_params;
  dwsr::halo halo() const { return {}; }
  std::size_t reduction_passes() const { return 2; }

  /// Pass 0 folds the finite min and max into values[0..1]; pass 1 adds the
  /// block's bin counts to values[2..256].
  template <ExecutionContext Ctx>
  void reduce(Ctx& ctx, cube_view<const float> block, std::size_t pass, reduction& acc) const {
    if (pass == 0) return fold_range(ctx, block, acc);
    detail::thread_rows<std::uint64_t, Ctx> counts(ctx, 1, bins);
    auto edges = ctx.template allocate<float>(bins + 1, buffer_role::workspace);
    if constexpr (Ctx::computes) {
      if (acc.values.size() < 2) throw invalid_input("histogram_equalization: pass 1 needs pass 0's min and max first");
      acc.values.resize(2 + bins, 0.0);
      const auto lo = static_cast<float>(acc.values[0]), hi = static_cast<float>(acc.values[1]);
      if (!(lo <= hi)) return;  // no finite sample in the cube
      detail::histogram_edges(lo, hi, edges.data());
      const double inv_step = detail::inverse_step(edges[0], edges[bins], bins);
      for (std::size_t s = 0; s < ctx.threads(); ++s) std::fill_n(counts.row(s, 0), bins, 0);
      const float* x = block.data();
      const float* e = edges.data();
      ctx.parallel_for(
          block.size(),
          [&](std::uint64_t b, std::uint64_t end, std::size_t slot) {
            auto* c = counts.row(slot, 0);
            for (auto i = b; i < end; ++i) {
              if (!(x[i] >= e[0] && x[i] <= e[bins])) continue;  // NaN and samples outside the edges
              ++c[std::min(detail::last_at_most(e, bins + 1, x[i], e[0], inv_step), bins - 1)];
            }
          },
          1 << 14);
      for (std::size_t s = 0; s < ctx.threads(); ++s)
        for (std::size_t k = 0; k < bins; ++k) acc.values[2 + k] += static_cast<double>(counts.row(s, 0)[k]);
    }
  }

  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out, const reduction& r) const {
    // centres, cdf and slopes of numpy.interp, in double
    auto table = ctx.template allocate<double>(3 * bins, buffer_role::workspace);
    auto edges = ctx.template allocate<float>(bins + 1, buffer_role::workspace);
    if constexpr (Ctx::computes) {
      if (r.values.size() != 2 + bins)
        throw invalid_input("histogram_equalization: run needs both reduction passes (" + std::to_string(2 + bins) +
                            " values), got " + std::to_string(r.values.size()));
      double* xp = table.data();
      double* fp = xp + bins;
      double* slope = fp + bins;
      detail::histogram_edges(static_cast<float>(r.values[0]), static_cast<float>(r.values[1]), edges.data());
      double cum = 0;
      for (std::size_t k = 0; k < bins; ++k) {
        xp[k] = static_cast<float>((edges[k] + edges[k + 1]) / 2.0f);
        fp[k] = (cum += r.values[2 + k]);
      }
      for (std::size_t k = 0; k < bins; ++k) fp[k] /= cum;
      for (std::size_t k = 0; k + 1 < bins; ++k) slope[k] = (fp[k + 1] - fp[k]) / (xp[k + 1] - xp[k]);
      const double inv_step = detail::inverse_step(xp[0], xp[bins - 1], bins - 1);
      const float* x = in.data();
      float* y = out[0].as<float>().data();
      ctx.parallel_for(
          in.size(),
          [&](std::uint64_t b, std::uint64_t e, std::size_t) {
            for (auto i = b; i < e; ++i) y[i] = static_cast<float>(interp(x[i], xp, fp, slope, inv_step));
          },
          1 << 14);
    }
  }

 private:
  template <class Ctx>
  static void fold_range(Ctx& ctx, cube_view<const float> block, reduction& acc) {
    detail::thread_rows<float, Ctx> range(ctx, 1, 2);
    if constexpr (Ctx::computes) {
      constexpr float inf = std::numeric_limits<float>::infinity();
      for (std::size_t s = 0; s < ctx.threads(); ++s) range.row(s, 0)[0] = inf, range.row(s, 0)[1] = -inf;
      const float* x = block.data();
      ctx.parallel_for(
          block.size(),
          [&](std::uint64_t b, std::uint64_t e, std::size_t slot) {
            float lo = range.row(slot, 0)[0], hi = range.row(slot, 0)[1];
            for (auto i = b; i < e; ++i) {
              // branch-free, so the loop vectorises: NaN and +-inf leave lo and hi as they are
              const bool finite = x[i] - x[i] == 0.0f;
              lo = std::min(lo, finite ? x[i] : inf);
              hi = std::max(hi, finite ? x[i] : -inf);
            }
            range.row(slot, 0)[0] = lo, range.row(slot, 0)[1] = hi;
          },
          1 << 14);
      if (acc.values.empty()) acc.values = {double(inf), double(-inf)};
      for (std::size_t s = 0; s < ctx.threads(); ++s) {
        acc.values[0] = std::min(acc.values[0], double(range.row(s, 0)[0]));
        acc.values[1] = std::max(acc.values[1], double(range.row(s, 0)[1]));
      }
    }
  }

  // numpy.interp(x, xp, fp) with numpy's rules at the ends and at exact nodes.
  static double interp(float value, const double* xp, const double* fp, const double* slope, double inv_step) {
    const double x = value;
    if (std::isnan(x)) return x;
    if (x < xp[0]) return fp[0];
    if (x > xp[bins - 1]) return fp[bins - 1];
    const auto j = detail::last_at_most(xp, bins, x, xp[0], inv_step);
    if (j == bins - 1 || xp[j] == x) return fp[j];
    double y = slope[j] * (x - xp[j]) + fp[j];
    if (std::isnan(y)) {
      y = slope[j] * (x - xp[j + 1]) + fp[j + 1];
      if (std::isnan(y) && fp[j] == fp[j + 1]) y = fp[j];
    }
    return y;
  }
};

/// time_gain: x * (t + 2)^gain_val at 0-based sample t (the reference's
/// (1 + cumsum(ones))^gain_val, in float32). Needs whole traces (absolute time).
/// The gain is powf's; numpy's vectorised float32 power may differ by 1-2 ulp.
struct time_gain : detail::signal_op {
  static constexpr std::string_view name = "time_gain";
  static constexpr std::string_view summary = "amplitude gain growing with time: x (t + 2)^gain_val";
  static std::vector<param_spec> params() { return {{"gain_val", param_kind::real, 1.5, "exponent of the gain"}}; }
  explicit time_gain(const param_values& p = param_values::bind(name, params())) : gain_val(p.real("gain_val")) {}
  dwsr::halo halo() const { return {.whole_traces = true}; }
  /// The gains of samples 0 to nt - 1 into g (the CUDA operator's too, so
  /// that both scale by the same bits).
  void gains(float* g, std::uint64_t nt) const {
    const auto e = static_cast<float>(gain_val);
    for (std::uint64_t t = 0; t < nt; ++t) g[t] = std::pow(static_cast<float>(t + 2), e);
  }
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    const auto nt = in.shape().samples;
    auto gain = ctx.template allocate<float>(nt, buffer_role::workspace);
    if constexpr (Ctx::computes) {
      gains(gain.data(), nt);
      const float* x = in.data();
      const float* g = gain.data();
      float* y = out[0].as<float>().data();
      ctx.parallel_for(
          in.shape().traces(),
          [&](std::uint64_t b, std::uint64_t end, std::size_t) {
            for (auto tr = b; tr < end; ++tr)
              for (std::uint64_t t = 0; t < nt; ++t) y[tr * nt + t] = x[tr * nt + t] * g[t];
          },
          64);
    }
  }
  double gain_val;
};

/// rescale_amplitude_range: clip(x, min_val, max_val) (NaN stays NaN, as numpy.clip).
struct rescale_amplitude_range : detail::signal_op {
  static constexpr std::string_view name = "rescale_amplitude_range";
  static constexpr std::string_view summary = "amplitudes clipped to [min_val, max_val]";
  static std::vector<param_spec> params() {
    return {{"min_val", param_kind::real, -0.5, "lowest amplitude kept"},
            {"max_val", param_kind::real, 0.5, "highest amplitude kept"}};
  }
  explicit rescale_amplitude_range(const param_values& p = param_values::bind(name, params()))
      : min_val(p.real("min_val")), max_val(p.real("max_val")) {
    if (!(min_val <= max_val))
      throw invalid_input("parameters 'min_val' = " + format_value(min_val) + " and 'max_val' = " +
                          format_value(max_val) + " of 'rescale_amplitude_range': expected min_val <= max_val");
  }
  dwsr::halo halo() const { return {}; }
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    if constexpr (!Ctx::computes) return;
    const auto lo = static_cast<float>(min_val), hi = static_cast<float>(max_val);
    const float* x = in.data();
    float* y = out[0].as<float>().data();
    ctx.parallel_for(
        in.size(),
        [&](std::uint64_t b, std::uint64_t e, std::size_t) {
          for (auto i = b; i < e; ++i) y[i] = x[i] < lo ? lo : (x[i] > hi ? hi : x[i]);
        },
        1 << 14);
  }
  double min_val, max_val;
};

/// rms: sqrt of the mean of x^2 over a box window `kernel` (reflect borders),
/// NaN -> 0. Computed as uniform passes over x^2 in the output (time,
/// crossline, inline), then sqrt: no patch array. Speed (1 x 1 x 9): one sweep,
/// ~1.7 GB/s per core, the 9-tap time pass's rate (detail/separable.hpp).
struct rms : detail::signal_op, detail::bound_params<rms, detail::kernel_params_of<1, 1, 9>> {
  static constexpr std::string_view name = "rms";
  static constexpr std::string_view summary = "root mean square over a window";
  using bound_params::bound_params;
  dwsr::halo halo() const { return detail::window_halo(kernel); }
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::windowed_rms(ctx, in, out[0].as<float>().data(), kernel, [](float r, float) { return r; });
  }
};

/// rms2: the reference's second RMS implementation; same values as rms.
struct rms2 : rms {
  static constexpr std::string_view name = "rms2";
  static constexpr std::string_view summary = "root mean square over a window (the reference's RMS2; same as rms)";
  explicit rms2(const param_values& p = param_values::bind(name, params())) : rms(p) {}
};

/// trace_agc: x * (1.5 - rms / max(rms)) with rms over a 1 x 1 x kernel[2]
/// window and max(rms) over the cube (one reduction pass), NaN -> 0. Unlike
/// the reference, the kernel must span one trace (1, 1, n): a reduction folds
/// blocks without their halo, so a window across traces would make chunked
/// results differ from whole-cube ones. Speed: two sweeps (reduction, run),
/// each one rms: ~0.8 GB/s per core.
struct trace_agc : detail::signal_op, detail::kernel_params_of<1, 1, 9> {
  static constexpr std::string_view name = "trace_agc";
  static constexpr std::string_view summary = "automatic gain control: x (1.5 - rms / max rms)";
  explicit trace_agc(const param_values& p = param_values::bind(name, params())) : kernel_params_of(name, p) {
    if (kernel[0] != 1 || kernel[1] != 1)
      throw invalid_input("parameter 'kernel' of 'trace_agc' = " + format_value(p.reals("kernel")) +
                          ": expected a window within one trace, 1,1,n (e.g. 1,1,9)");
  }
  dwsr::halo halo() const { return {.radius = {0, 0, kernel[2] / 2}, .whole_traces = true}; }
  std::size_t reduction_passes() const { return 1; }

  /// Folds the block's largest RMS into values[0]: each trace is squared into
  /// its thread's panel, filtered along time in place there and folded, so
  /// only T panels are extra and the block is one parallel sweep.
  template <ExecutionContext Ctx>
  void reduce(Ctx& ctx, cube_view<const float> block, std::size_t, reduction& acc) const {
    const auto s = block.shape();
    detail::kernel_bank<Ctx> bank(ctx, {detail::kernel_recipe::uniform(kernel[2])});
    const auto k = bank[0];
    detail::line_scratch<Ctx> scratch(ctx, 1, detail::panel_floats(s, 2, kernel[2]));
    detail::thread_rows<float, Ctx> largest(ctx, 1, 1);
    if constexpr (Ctx::computes) {
      const auto nt = s.samples;
      for (std::size_t t = 0; t < ctx.threads(); ++t) largest.row(t, 0)[0] = 0;
      const auto isa = simd_isa_in_use();
      ctx.parallel_for(
          s.traces(),
          [&](std::uint64_t b, std::uint64_t e, std::size_t slot) {
            // the largest mean square (NaN skipped), rooted once: sqrt is monotone
            constexpr std::uint64_t ways = 8;
            float most[ways] = {};
            float* buf = scratch.row(slot, 0);
            float* m = buf + k.before();  // the squares, then their means
            with_simd_isa(isa, [&](auto lanes) {
              for (auto tr = b; tr < e; ++tr) {
                const float* x = block.data() + tr * nt;
                for (std::uint64_t t = 0; t < nt; ++t) m[t] = x[t] * x[t];
                detail::reflect_ends(buf, nt, k);
                detail::correlate_extended<lanes()>(buf, buf, nt, k);
                std::uint64_t t = 0;
                for (; t + ways <= nt; t += ways)
                  for (std::uint64_t u = 0; u < ways; ++u) most[u] = buf[t + u] > most[u] ? buf[t + u] : most[u];
                for (; t < nt; ++t) most[0] = buf[t] > most[0] ? buf[t] : most[0];
              }
            });
            float& row = largest.row(slot, 0)[0];
            for (const float v : most) row = std::max(row, std::sqrt(v));
          },
          16);
      if (acc.values.empty()) acc.values = {0.0};
      for (std::size_t t = 0; t < ctx.threads(); ++t)
        acc.values[0] = std::max(acc.values[0], double(largest.row(t, 0)[0]));
    }
  }

  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out, const reduction& r) const {
    if constexpr (Ctx::computes)
      if (r.values.size() != 1)
        throw invalid_input("trace_agc: run needs the reduction's largest RMS, got " + std::to_string(r.values.size()) +
                            " values");
    const auto most = Ctx::computes ? static_cast<float>(r.values[0]) : 1.0f;
    detail::windowed_rms(ctx, in, out[0].as<float>().data(), kernel,
                         [most](float rms, float x) { return detail::nan_to_zero(x * (1.5f - rms / most)); });
  }
};

/// gradient_magnitude: scipy.ndimage.gaussian_gradient_magnitude(x, sigmas)
/// (truncate 4, reflect), NaN -> 0: sqrt(g0^2 + g1^2 + g2^2) in float32, g_d
/// the gaussian derivative along axis d smoothed along the others (passes in
/// scipy's order, inline first). Streams inline slices: the inline pass reads
/// the input, so only two slices and T panels are extra. Speed: nine 9-tap
/// passes in three parallel sweeps a slice, ~0.25 GB/s per core: the pass
/// rate (~2 GB/s, detail/separable.hpp) over nine.
struct gradient_magnitude : detail::signal_op {
  static constexpr std::string_view name = "gradient_magnitude";
  static constexpr std::string_view summary = "magnitude of the gaussian-smoothed gradient";
  static constexpr double truncate = 4.0;
  static std::vector<param_spec> params() {
    return {detail::sigmas_spec({1, 1, 1}, "standard deviations along inline, crossline, time (samples)")};
  }
  explicit gradient_magnitude(const param_values& p = param_values::bind(name, params()))
      : sigmas(detail::gaussian_sigmas(name, p, false)) {}
  dwsr::halo halo() const {
    return {.radius = {detail::gaussian_radius(sigmas[0], truncate), detail::gaussian_radius(sigmas[1], truncate),
                       detail::gaussian_radius(sigmas[2], truncate)}};
  }
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    using detail::kernel_recipe;
    const auto s = in.shape();
    const shape3 one{1, s.crosslines, s.samples};
    const auto slice = one.voxels();
    // smoothing (S) and derivative (D) kernels per axis: S0 D0 S1 D1 S2 D2
    detail::kernel_bank<Ctx> k(
        ctx, {kernel_recipe::gaussian(sigmas[0], 0, truncate), kernel_recipe::gaussian(sigmas[0], 1, truncate),
              kernel_recipe::gaussian(sigmas[1], 0, truncate), kernel_recipe::gaussian(sigmas[1], 1, truncate),
              kernel_recipe::gaussian(sigmas[2], 0, truncate), kernel_recipe::gaussian(sigmas[2], 1, truncate)});
    auto g1 = ctx.template allocate<float>(slice, buffer_role::workspace);
    auto g2 = ctx.template allocate<float>(slice, buffer_role::workspace);
    detail::line_scratch<Ctx> scratch(
        ctx, 1, std::max(detail::panel_floats(one, 1, k[2].size), detail::panel_floats(one, 2, k[4].size)));
    if constexpr (!Ctx::computes) return;
    auto input_slice = [&](std::uint64_t i) { return in.data() + i * slice; };
    const auto nx = s.crosslines, nt = s.samples;
    const auto along = detail::lines_along(one, 1);  // a slice's crossline lines
    const auto panels = detail::panels_per_group(along);
    float* b = g1.data();
    float* c = g2.data();
    const auto isa = simd_isa_in_use();
    // Per slice three parallel sweeps (each pass as in correlate_axis, same bits):
    // inline passes by blocks, crossline passes by panels, time passes and the
    // magnitude trace by trace while the trace is in cache.
    for (std::uint64_t il = 0; il < s.inlines; ++il) {
      float* a = out[0].as<float>().data() + il * slice;  // g0, then the magnitude
      ctx.parallel_for((slice + detail::inline_block - 1) / detail::inline_block,
                       [&](std::uint64_t lo, std::uint64_t hi, std::size_t) {
                         with_simd_isa(isa, [&](auto) {
                           for (auto blk = lo; blk < hi; ++blk) {
                             const auto c0 = blk * detail::inline_block;
                             const auto w = std::min(detail::inline_block, slice - c0);
                             detail::correlate_inline_block(input_slice, il, s.inlines, c0, w, k[1], a);
                             detail::correlate_inline_block(input_slice, il, s.inlines, c0, w, k[0], c);
                           }
                         });
                       });
      ctx.parallel_for(panels, [&](std::uint64_t lo, std::uint64_t hi, std::size_t slot) {
        float* buf = scratch.row(slot, 0);
        with_simd_isa(isa, [&](auto lanes) {
          for (auto p = lo; p < hi; ++p) {  // the three passes of a panel while it is in cache
            detail::correlate_panels<lanes()>(a, a, along, panels, p, p + 1, k[2], buf);
            detail::correlate_panels<lanes()>(c, b, along, panels, p, p + 1, k[3], buf);
            detail::correlate_panels<lanes()>(c, c, along, panels, p, p + 1, k[2], buf);
          }
        });
      });
      ctx.parallel_for(nx, [&](std::uint64_t lo, std::uint64_t hi, std::size_t slot) {
        float* buf = scratch.row(slot, 0);
        with_simd_isa(isa, [&](auto lanes) {
          for (auto x = lo; x < hi; ++x) {
            float *ta = a + x * nt, *tb = b + x * nt, *tc = c + x * nt;
            detail::correlate_line<lanes()>(ta, ta, nt, k[4], buf);
            detail::correlate_line<lanes()>(tb, tb, nt, k[4], buf);
            detail::correlate_line<lanes()>(tc, tc, nt, k[5], buf);
            for (std::uint64_t t = 0; t < nt; ++t) {
              float sum = ta[t] * ta[t];
              sum += tb[t] * tb[t];
              sum += tc[t] * tc[t];
              ta[t] = sum;
            }
            detail::sqrt_nan_to_zero(ta, nt);
          }
        });
      });
    }
  }
  std::array<double, 3> sigmas;
};

/// reflection_intensity: the trapezoid integral (numpy.trapz) of the
/// kernel[2] samples around each sample along time, reflect borders, NaN -> 0.
/// As in the reference, only the time extent of `kernel` is used. Speed: one
/// sweep, ~1.45 GB/s per core for 9 samples, the time pass's rate.
struct reflection_intensity : detail::signal_op,
                              detail::bound_params<reflection_intensity, detail::kernel_params_of<1, 1, 9>> {
  static constexpr std::string_view name = "reflection_intensity";
  static constexpr std::string_view summary = "trapezoid integral of the amplitude over a time window";
  using bound_params::bound_params;
  dwsr::halo halo() const { return {.radius = {0, 0, kernel[2] / 2}}; }
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::kernel_bank<Ctx> bank(ctx, {detail::kernel_recipe::trapezoid(kernel[2])});
    const auto s = in.shape();
    detail::line_scratch<Ctx> scratch(ctx, 1, detail::panel_floats(s, 2, kernel[2]));
    if constexpr (!Ctx::computes) return;
    const float* x = in.data();
    float* y = out[0].as<float>().data();
    const auto nt = s.samples;
    const auto isa = simd_isa_in_use();
    // the time pass and NaN -> 0 trace by trace, while the trace is in cache
    ctx.parallel_for(
        s.traces(),
        [&](std::uint64_t b, std::uint64_t e, std::size_t slot) {
          with_simd_isa(isa, [&](auto lanes) {
            for (auto tr = b; tr < e; ++tr) {
              float* yl = y + tr * nt;
              detail::correlate_line<lanes()>(x + tr * nt, yl, nt, bank[0], scratch.row(slot, 0));
              for (std::uint64_t t = 0; t < nt; ++t) yl[t] = detail::nan_to_zero(yl[t]);
            }
          });
        },
        16);
  }
};

}  // namespace dwsr::operators
