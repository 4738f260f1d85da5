#pragma once
/// \file The complex-trace family on the GPU: attributes of the analytic
/// signal a = x + i H(x) (operators/complex_trace.hpp has their definitions).
/// Each operator is the CPU operator's description (name, parameters, halo,
/// outputs) with a run() for cuda_context and cuda_meta_context.
///
/// Memory (device): the input, the output and hilbert_batches.cuh's fixed
/// batch buffers; the frequency attributes add one cube of phases. NumPy's
/// formulation holds the input, two cube-sized complex spectra and the
/// complex signal (about 7x the input); these hold 2x (3x with phases) plus
/// about 50 MiB.
///
/// Limits: one R2C and one C2R transform per trace (about 5 n log2 n flops
/// each) and, for the pointwise attributes, 3 cube-sized passes over device
/// memory (read x, write y, read-modify the batch); on a Hopper GPU the
/// transforms, not the bandwidth, bound them.

#include <cufft.h>

#include <complex>
#include <cstddef>
#include <cstdint>
#include <numbers>
#include <span>

#include "dwsr/operators/complex_trace.hpp"
#include "dwsr/operators/cuda/detail/device_math.cuh"
#include "dwsr/operators/cuda/detail/hilbert_batches.cuh"

namespace dwsr::operators::cuda {

namespace detail {

/// y[i] = F(x[i], h[i]) over one batch (x, y offset to the batch's first sample).
template <class F>
struct analytic_pointwise {
  const float* x;
  const float* h;
  float* y;
  F f;
  __device__ void operator()(std::uint64_t i, std::uint64_t, std::size_t) const { y[i] = f(x[i], h[i]); }
};

/// Runs F over the analytic signal of every trace of `in` into `out`.
template <class Ctx, class F>
void analytic_map(Ctx& ctx, cube_view<const float> in, float* out, F f) {
  const auto n = in.shape().samples;
  for_each_hilbert_batch(ctx, in, [&](std::uint64_t first, std::uint64_t count, const float* h) {
    ctx.parallel_for(count * n, analytic_pointwise<F>{in.data() + first * n, h, out + first * n, f});
  });
}

/// |a|, as the CPU's modulus (in double).
struct modulus_of {
  __host__ __device__ float operator()(float x, float h) const {
    return static_cast<float>(sqrt(double(x) * x + double(h) * h));
  }
};
/// angle(a) in degrees.
struct degrees_of {
  __host__ __device__ float operator()(float x, float h) const {
    return atan2f(h, x) * static_cast<float>(180.0 / std::numbers::pi);
  }
};
/// cos(angle(a)).
struct cosine_of {
  __host__ __device__ float operator()(float x, float h) const { return cosf(atan2f(h, x)); }
};
/// Re(a) cos(phi) - Im(a) sin(phi), NaN -> 0.
struct rotated {
  double c, s;
  __host__ __device__ float operator()(float x, float h) const {
    return nan_to_zero(static_cast<float>(x * c - h * s));
  }
};
/// Radians angle(a), the frequency attributes' phase.
struct radians_of {
  __host__ __device__ float operator()(float x, float h) const { return atan2f(h, x); }
};

/// The complex signal (x, h).
struct complex_signal {
  const float* x;
  const float* h;
  float2* y;
  __device__ void operator()(std::uint64_t i, std::uint64_t, std::size_t) const { y[i] = float2{x[i], h[i]}; }
};

/// numpy.unwrap's step between consecutive wrapped phases (derivative_stream.hpp).
__host__ __device__ inline double unwrapped_step(double d) {
  constexpr double pi = std::numbers::pi, two_pi = 2 * std::numbers::pi;
  if (d < pi && d > -pi) return d;
  const double y = d + pi;
  const double above = (y - two_pi) - pi;
  const double below = (y < 0 ? y + two_pi : y) - pi;
  const double m = d > 0 ? above : below;
  return (m == -pi && d > 0) ? pi : m;
}

/// The reference's FirstDerivative along time of the unwrapped phase at
/// (trace, t): [-0.5, 0, 0.5] with reflect borders.
__host__ __device__ inline double phase_derivative(const float* p, std::int64_t n, std::int64_t t) {
  if (n == 1) return 0.0;
  auto step = [p](std::int64_t k) { return unwrapped_step(double(p[k]) - double(p[k - 1])); };
  if (t == 0) return 0.5 * step(1);
  if (t == n - 1) return 0.5 * step(n - 1);
  return 0.5 * (step(t) + step(t + 1));
}

/// |D(unwrap(phase))| fs / 2 pi: the time derivative smoothed across crossline
/// and inline with [0.178947, 0.642105, 0.178947] (reflect), in double. With
/// `envelope` set, writes envelope / max(frequency, 5) instead (sweetness,
/// the envelope already in y).
struct frequency_of_phase {
  const float* phase;
  float* y;
  cube_geometry g;
  double scale;
  bool sweetness;
  __device__ void operator()(std::uint64_t i, std::uint64_t, std::size_t) const {
    constexpr double w[3] = {0.178947, 0.642105, 0.178947};
    std::int64_t il, x, t;
    g.split(i, il, x, t);
    double acc = 0;
    for (int a = -1; a <= 1; ++a) {
      const auto il2 = reflect(il + a, g.n[0]);
      double row = 0;
      for (int b = -1; b <= 1; ++b) {
        const auto x2 = reflect(x + b, g.n[1]);
        row += w[b + 1] * phase_derivative(phase + g.at(il2, x2, 0), g.n[2], t);
      }
      acc += w[a + 1] * row;
    }
    const auto f = static_cast<float>(fabs(acc * scale));
    y[i] = sweetness ? y[i] / (f < 5.0f ? 5.0f : f) : f;
  }
};

/// Instantaneous frequency (or sweetness) of `in` into `out`.
template <class Ctx>
void frequency_attribute(Ctx& ctx, cube_view<const float> in, float* out, double fs, bool sweetness) {
  auto phase = ctx.template allocate<float>(in.shape().voxels(), buffer_role::temporary);
  const auto n = in.shape().samples;
  for_each_hilbert_batch(ctx, in, [&](std::uint64_t first, std::uint64_t count, const float* h) {
    const auto* x = in.data() + first * n;
    ctx.parallel_for(count * n, analytic_pointwise<radians_of>{x, h, phase.data() + first * n, {}});
    if (sweetness) ctx.parallel_for(count * n, analytic_pointwise<modulus_of>{x, h, out + first * n, {}});
  });
  ctx.parallel_for(in.shape().voxels(), frequency_of_phase{phase.data(), out, cube_geometry::of(in.shape()),
                                                           fs / (2 * std::numbers::pi), sweetness});
}

}  // namespace detail

/// hilbert: the analytic signal (complex64).
struct hilbert : operators::hilbert {
  using operators::hilbert::hilbert;
  template <class Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    auto* y = reinterpret_cast<float2*>(out[0].as<std::complex<float>>().data());
    const auto n = in.shape().samples;
    detail::for_each_hilbert_batch(ctx, in, [&](std::uint64_t first, std::uint64_t count, const float* h) {
      ctx.parallel_for(count * n, detail::complex_signal{in.data() + first * n, h, y + first * n});
    });
  }
};

/// An attribute that is a pointwise function F of (x, H(x)).
template <class Cpu, class F>
struct pointwise_attribute : Cpu {
  using Cpu::Cpu;
  template <class Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::analytic_map(ctx, in, out[0].as<float>().data(), F{});
  }
};

using envelope = pointwise_attribute<operators::envelope, detail::modulus_of>;
using instantaneous_phase = pointwise_attribute<operators::instantaneous_phase, detail::degrees_of>;
using cosine_instantaneous_phase = pointwise_attribute<operators::cosine_instantaneous_phase, detail::cosine_of>;

/// phase_rotation: the trace rotated in phase by `rotation` degrees.
struct phase_rotation : operators::phase_rotation {
  using operators::phase_rotation::phase_rotation;
  template <class Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    const double phi = rotation * std::numbers::pi / 180.0;
    detail::analytic_map(ctx, in, out[0].as<float>().data(), detail::rotated{std::cos(phi), std::sin(phi)});
  }
};

/// instantaneous_frequency: |D(unwrap(phase))| fs / 2 pi, Hz.
struct instantaneous_frequency : operators::instantaneous_frequency {
  using operators::instantaneous_frequency::instantaneous_frequency;
  template <class Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::frequency_attribute(ctx, in, out[0].as<float>().data(), fs(), false);
  }
};

/// sweetness: envelope / max(instantaneous frequency, 5).
struct sweetness : operators::sweetness {
  using operators::sweetness::sweetness;
  template <class Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::frequency_attribute(ctx, in, out[0].as<float>().data(), fs(), true);
  }
};

}  // namespace dwsr::operators::cuda
