#pragma once
/// \file The reference's FirstDerivative along time (a [-0.5, 0, 0.5] central
/// difference along time, then [0.178947, 0.642105, 0.178947] smoothing along
/// inline and crossline, scipy.ndimage "reflect" borders) computed one inline
/// slice at a time. It pulls source slices in order and keeps a ring of a few
/// slices, so attributes built on derivatives (relative amplitude change,
/// instantaneous frequency, ...) need no cube-sized temporary.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numbers>

#include "dwsr/core/shape.hpp"
#include "dwsr/memory/buffer.hpp"

namespace dwsr::operators::detail {

/// Smoothing weights the reference applies across the two non-derivative axes.
inline constexpr double smoothing_weights[3] = {0.178947, 0.642105, 0.178947};

/// How consecutive samples are differenced along time.
enum class time_difference : std::uint8_t {
  plain,            ///< x[t+1] - x[t-1], halved
  unwrapped_phase,  ///< the same on numpy.unwrap(x): steps of |d| >= pi wrap into [-pi, pi)
};

/// numpy.unwrap's step between consecutive wrapped phases (period 2 pi), as
/// numpy writes it; the stream uses unwrapped_phase_step, tested equal to it.
inline double unwrapped_step(double d) {
  if (std::abs(d) < std::numbers::pi) return d;
  double m = std::fmod(d + std::numbers::pi, 2 * std::numbers::pi);
  if (m < 0) m += 2 * std::numbers::pi;
  m -= std::numbers::pi;
  return (m == -std::numbers::pi && d > 0) ? std::numbers::pi : m;
}

/// unwrapped_step(d), bit for bit, for the difference d of two phases in
/// [-pi, pi] (as float rounds them), without fmod and branches: then d + pi
/// lies in [-pi, 4 pi), where fmod(d + pi, 2 pi) is d + pi - 2 pi (exact) for
/// d >= pi and d + pi itself for d <= -pi.
inline double unwrapped_phase_step(double d) {
  constexpr double pi = std::numbers::pi, two_pi = 2 * std::numbers::pi;
  const double y = d + pi;
  const double above = (y - two_pi) - pi;
  const double below = (y < 0 ? y + two_pi : y) - pi;
  double m = d > 0 ? above : below;
  m = (m == -pi && d > 0) ? pi : m;
  return std::abs(d) < pi ? d : m;
}

/// Streams D(source) slice by slice. source(il, dst) must write inline slice
/// `il` (crosslines x samples floats); it is called once per slice, in order.
/// Buffers: 2 source slices, 1 differenced slice, 3 smoothed slices (workspace).
template <class Ctx>
class derivative_stream {
 public:
  using source_fn = std::function<void(std::uint64_t il, float* slice)>;

  derivative_stream(Ctx& ctx, shape3 shape, time_difference diff, source_fn source)
      : ctx_(&ctx),
        shape_(shape),
        slice_(shape.crosslines * shape.samples),
        diff_(diff),
        source_(std::move(source)),
        sources_(ctx.template allocate<float>(2 * slice_, buffer_role::workspace)),
        differenced_(ctx.template allocate<float>(slice_, buffer_role::workspace)),
        smoothed_(ctx.template allocate<float>(3 * slice_, buffer_role::workspace)) {}

  /// Writes D(source) of inline slice `il` to dst; call for il = 0, 1, ... in order.
  void next(std::uint64_t il, float* dst) {
    if constexpr (!Ctx::computes) return;
    const auto last = shape_.inlines - 1;
    if (il == 0) {
      advance(0);
      if (last > 0) advance(1);
    } else if (il < last) {
      advance(il + 1);
    }
    const float* prev = smoothed(il == 0 ? 0 : il - 1);
    const float* here = smoothed(il);
    const float* next = smoothed(std::min(il + 1, last));
    // Named constants, not a structured binding: lambdas may not capture bindings before clang 16.
    constexpr double w0 = smoothing_weights[0], w1 = smoothing_weights[1], w2 = smoothing_weights[2];
    ctx_->parallel_for(
        slice_,
        [&](std::uint64_t b, std::uint64_t e, std::size_t) {
          for (auto k = b; k < e; ++k) dst[k] = static_cast<float>(w0 * prev[k] + w1 * here[k] + w2 * next[k]);
        },
        4096);
  }

  /// The source slice `il`, valid after next(il) until next(il + 1) returns.
  const float* source_slice(std::uint64_t il) const { return sources_.data() + (il % 2) * slice_; }

 private:
  const float* smoothed(std::uint64_t il) const { return smoothed_.data() + (il % 3) * slice_; }

  // Fetches source slice j, differences it along time, smooths along crossline.
  void advance(std::uint64_t j) {
    float* s = sources_.data() + (j % 2) * slice_;
    source_(j, s);
    const auto nt = shape_.samples;
    const auto nx = shape_.crosslines;
    float* d = differenced_.data();
    ctx_->parallel_for(nx, [&](std::uint64_t b, std::uint64_t e, std::size_t) {
      for (auto x = b; x < e; ++x) difference(s + x * nt, d + x * nt);
    });
    float* g = smoothed_.data() + (j % 3) * slice_;
    // Named constants, not a structured binding: lambdas may not capture bindings before clang 16.
    constexpr double w0 = smoothing_weights[0], w1 = smoothing_weights[1], w2 = smoothing_weights[2];
    ctx_->parallel_for(nx, [&](std::uint64_t b, std::uint64_t e, std::size_t) {
      for (auto x = b; x < e; ++x) {
        const float* lo = d + (x == 0 ? 0 : x - 1) * nt;
        const float* mid = d + x * nt;
        const float* hi = d + std::min(x + 1, nx - 1) * nt;
        float* out = g + x * nt;
        for (std::uint64_t t = 0; t < nt; ++t) out[t] = static_cast<float>(w0 * lo[t] + w1 * mid[t] + w2 * hi[t]);
      }
    });
  }

  // Central difference with reflected ends (x[-1] = x[0], x[n] = x[n-1]).
  void difference(const float* x, float* out) const {
    const auto n = shape_.samples;
    if (n == 1) {
      out[0] = 0.0f;
      return;
    }
    if (diff_ == time_difference::plain) {
      out[0] = static_cast<float>(0.5 * (double(x[1]) - double(x[0])));
      for (std::uint64_t t = 1; t + 1 < n; ++t)
        out[t] = static_cast<float>(0.5 * (double(x[t + 1]) - double(x[t - 1])));
      out[n - 1] = static_cast<float>(0.5 * (double(x[n - 1]) - double(x[n - 2])));
      return;
    }
    // On unwrapped phase u, u[t+1] - u[t-1] is the sum of two unwrapped steps,
    // so the cumulative (large, imprecise) unwrapped phase is never formed.
    // Each step u[t] - u[t-1] (zero beyond the ends) is computed once.
    double before = 0.0;
    for (std::uint64_t t = 0; t < n; ++t) {
      const double after = t + 1 < n ? unwrapped_phase_step(double(x[t + 1]) - double(x[t])) : 0.0;
      out[t] = static_cast<float>(0.5 * (after + before));
      before = after;
    }
  }

  Ctx* ctx_;
  shape3 shape_;
  std::uint64_t slice_;
  time_difference diff_;
  source_fn source_;
  buffer<float, Ctx> sources_;
  buffer<float, Ctx> differenced_;
  buffer<float, Ctx> smoothed_;
};

}  // namespace dwsr::operators::detail
