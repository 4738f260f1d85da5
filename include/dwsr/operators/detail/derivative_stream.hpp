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
#include <cstring>
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

/// Two doubles (GCC/Clang vector extension: one SSE2 register on x86-64,
/// where wider vectors' comparisons would be split into scalar code).
using double_lanes = double __attribute__((vector_size(2 * sizeof(double))));

/// unwrapped_phase_step of each lane, with the same operations, so bit for
/// bit equal to it (the comparisons select, they do not round).
inline double_lanes unwrapped_phase_steps(double_lanes d) {
  constexpr double pi = std::numbers::pi, two_pi = 2 * std::numbers::pi;
  const double_lanes zero{}, pis = zero + pi;
  const double_lanes y = d + pi;
  const double_lanes above = (y - two_pi) - pi;
  const double_lanes below = (y < zero ? y + two_pi : y) - pi;
  double_lanes m = d > zero ? above : below;
  m = ((m == -pis) & (d > zero)) ? pis : m;
  return ((d < pis) & (d > -pis)) ? d : m;
}

/// A finish step that leaves the derivative as it is.
struct keep_derivative {
  void operator()(std::uint64_t, float*, const float*) const {}
};

/// Streams D(source) slice by slice. Buffers: 2 source slices, 1 differenced
/// slice, 3 smoothed slices (workspace).
///
/// Each inline slice costs two parallel passes over its traces (three for
/// the first): one fetches the next source slice and differences it along
/// time, one smooths it along crossline and smooths the output along inline,
/// with the caller's finish step fused in. A thread pass costs a few
/// microseconds to start and join, so passes per slice, not per step.
template <class Ctx>
class derivative_stream {
 public:
  /// source(il, slice) writes inline slice `il` (crosslines x samples floats);
  /// it is called once per slice, in order.
  using slice_fn = std::function<void(std::uint64_t il, float* slice)>;
  /// source(il, x, slot, kept) returns trace (il, x) to difference (valid
  /// until the slot's next call); it may write that trace's samples of the
  /// kept source slice to `kept`, or leave them. Called once per trace, in
  /// parallel, slices in order.
  using trace_fn = std::function<const float*(std::uint64_t il, std::uint64_t x, std::size_t slot, float* kept)>;

  derivative_stream(Ctx& ctx, shape3 shape, time_difference diff, slice_fn source)
      : derivative_stream(ctx, shape, diff) {
    slice_source_ = std::move(source);
  }
  derivative_stream(Ctx& ctx, shape3 shape, time_difference diff, trace_fn source)
      : derivative_stream(ctx, shape, diff) {
    trace_source_ = std::move(source);
  }

  /// Writes D(source) of inline slice `il` to dst, then calls finish(x, y, kept)
  /// for each of its traces (y: the trace's derivative in dst, kept: its
  /// samples in source_slice(il)); call for il = 0, 1, ... in order.
  template <class Finish = keep_derivative>
  void next(std::uint64_t il, float* dst, Finish&& finish = {}) {
    if constexpr (!Ctx::computes) return;
    const auto last = shape_.inlines - 1;
    const auto nt = shape_.samples;
    // Slice whose crossline smoothing the output pass does first (none: last + 1).
    std::uint64_t pending = last + 1;
    if (il == 0) {
      difference_slice(0);
      pending = 0;
      if (last > 0) {
        ctx_->parallel_for(shape_.crosslines, [&](std::uint64_t b, std::uint64_t e, std::size_t) {
          for (auto x = b; x < e; ++x) smooth_crossline(0, x);
        });
        difference_slice(1);
        pending = 1;
      }
    } else if (il < last) {
      difference_slice(il + 1);
      pending = il + 1;
    }
    const float* prev = smoothed(il == 0 ? 0 : il - 1);
    const float* here = smoothed(il);
    const float* next = smoothed(std::min(il + 1, last));
    const float* kept = source_slice(il);
    // Named constants, not a structured binding: lambdas may not capture bindings before clang 16.
    constexpr double w0 = smoothing_weights[0], w1 = smoothing_weights[1], w2 = smoothing_weights[2];
    ctx_->parallel_for(shape_.crosslines, [&](std::uint64_t b, std::uint64_t e, std::size_t) {
      for (auto x = b; x < e; ++x) {
        if (pending <= last) smooth_crossline(pending, x);
        const auto o = x * nt;
        for (std::uint64_t t = o; t < o + nt; ++t)
          dst[t] = static_cast<float>(w0 * prev[t] + w1 * here[t] + w2 * next[t]);
        finish(x, dst + o, kept + o);
      }
    });
  }

  /// The source slice `il` (kept), valid after next(il) until next(il + 1) returns.
  const float* source_slice(std::uint64_t il) const { return sources_.data() + (il % 2) * slice_; }

 private:
  derivative_stream(Ctx& ctx, shape3 shape, time_difference diff)
      : ctx_(&ctx),
        shape_(shape),
        slice_(shape.crosslines * shape.samples),
        diff_(diff),
        sources_(ctx.template allocate<float>(2 * slice_, buffer_role::workspace)),
        differenced_(ctx.template allocate<float>(slice_, buffer_role::workspace)),
        smoothed_(ctx.template allocate<float>(3 * slice_, buffer_role::workspace)) {}

  float* smoothed(std::uint64_t il) const { return smoothed_.data() + (il % 3) * slice_; }

  // Fetches source slice j and differences it along time, in one pass for a trace source.
  void difference_slice(std::uint64_t j) {
    float* s = sources_.data() + (j % 2) * slice_;
    const auto nt = shape_.samples;
    float* d = differenced_.data();
    if (slice_source_) {
      slice_source_(j, s);
      ctx_->parallel_for(shape_.crosslines, [&](std::uint64_t b, std::uint64_t e, std::size_t) {
        for (auto x = b; x < e; ++x) difference(s + x * nt, d + x * nt);
      });
      return;
    }
    ctx_->parallel_for(shape_.crosslines, [&](std::uint64_t b, std::uint64_t e, std::size_t slot) {
      for (auto x = b; x < e; ++x) difference(trace_source_(j, x, slot, s + x * nt), d + x * nt);
    });
  }

  // Smooths trace x of the differenced slice (slice j's) along crossline into smoothed(j).
  void smooth_crossline(std::uint64_t j, std::uint64_t x) const {
    const auto nt = shape_.samples;
    const auto nx = shape_.crosslines;
    const float* d = differenced_.data();
    const float* lo = d + (x == 0 ? 0 : x - 1) * nt;
    const float* mid = d + x * nt;
    const float* hi = d + std::min(x + 1, nx - 1) * nt;
    float* out = smoothed(j) + x * nt;
    constexpr double w0 = smoothing_weights[0], w1 = smoothing_weights[1], w2 = smoothing_weights[2];
    for (std::uint64_t t = 0; t < nt; ++t) out[t] = static_cast<float>(w0 * lo[t] + w1 * mid[t] + w2 * hi[t]);
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
    // Each step u[t] - u[t-1] (zero beyond the ends) is computed once, two
    // at a time, into a chunk on the stack: step[k] is u[t0+k] - u[t0+k-1].
    constexpr std::uint64_t chunk = 256;
    double step[chunk + 1];
    step[0] = 0.0;
    for (std::uint64_t t0 = 0; t0 < n; t0 += chunk) {
      const auto len = std::min(chunk, n - t0);
      const auto steps = std::min(len, n - 1 - t0);  // steps ending inside the trace
      std::uint64_t k = 0;
      for (; k + 2 <= steps; k += 2) {
        const float* p = x + t0 + k;
        const double_lanes d = {double(p[1]) - double(p[0]), double(p[2]) - double(p[1])};
        const double_lanes u = unwrapped_phase_steps(d);
        std::memcpy(step + k + 1, &u, sizeof u);
      }
      for (; k < steps; ++k) step[k + 1] = unwrapped_phase_step(double(x[t0 + k + 1]) - double(x[t0 + k]));
      for (; k < len; ++k) step[k + 1] = 0.0;
      for (k = 0; k < len; ++k) out[t0 + k] = static_cast<float>(0.5 * (step[k + 1] + step[k]));
      step[0] = step[len];
    }
  }

  Ctx* ctx_;
  shape3 shape_;
  std::uint64_t slice_;
  time_difference diff_;
  slice_fn slice_source_;
  trace_fn trace_source_;
  buffer<float, Ctx> sources_;
  buffer<float, Ctx> differenced_;
  buffer<float, Ctx> smoothed_;
};

}  // namespace dwsr::operators::detail
