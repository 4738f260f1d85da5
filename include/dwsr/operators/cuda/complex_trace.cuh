#pragma once
/// \file The complex-trace family on the GPU: attributes of the analytic
/// signal a = x + i H(x) (operators/complex_trace.hpp has their definitions).
/// Each operator is the CPU operator's description (name, parameters, halo,
/// outputs) with a run() for cuda_context and cuda_meta_context.
///
/// Two paths compute H(x), chosen by the trace length alone (so the meta
/// context plans the same one):
/// - traces of 2^L samples, 16 to 4096: fused_hilbert.cuh, one kernel that
///   reads the cube once and writes the attribute, no device memory beyond
///   the input and the output;
/// - any other length: hilbert_batches.cuh, batched cuFFT transforms through
///   fixed batch buffers (about 50 MiB with the work area), then a map.
///
/// Memory (device): the input, the output (and one cube of phases for the
/// frequency attributes), plus the batch buffers on the cuFFT path. NumPy's
/// formulation holds the input, two cube-sized complex spectra and the
/// complex signal, about 7x the input.

#include <cufft.h>

#include <complex>
#include <cstddef>
#include <cstdint>
#include <numbers>
#include <span>

#include "dwsr/operators/complex_trace.hpp"
#include "dwsr/operators/cuda/detail/device_math.cuh"
#include "dwsr/operators/cuda/detail/fused_hilbert.cuh"
#include "dwsr/operators/cuda/detail/hilbert_batches.cuh"

namespace dwsr::operators::cuda {

namespace detail {

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

/// What a complex-trace operator writes for sample i of the analytic
/// signal x + i h: one type for every operator, so the fused kernel is
/// compiled once per trace length.
struct analytic_store {
  enum class kind : std::uint8_t { signal, modulus, degrees, cosine, rotated, radians, radians_and_modulus };
  kind what;
  float* out = nullptr;      ///< the attribute (the modulus, for radians_and_modulus)
  float2* signal = nullptr;  ///< the complex signal (signal)
  float* phase = nullptr;    ///< radians (radians, radians_and_modulus)
  rotated rotation{1.0, 0.0};
  __device__ void operator()(std::uint64_t i, float x, float h) const {
    switch (what) {
      case kind::signal: signal[i] = float2{x, h}; break;
      case kind::modulus: out[i] = modulus_of{}(x, h); break;
      case kind::degrees: out[i] = degrees_of{}(x, h); break;
      case kind::cosine: out[i] = cosine_of{}(x, h); break;
      case kind::rotated: out[i] = rotation(x, h); break;
      case kind::radians: phase[i] = radians_of{}(x, h); break;
      case kind::radians_and_modulus:
        phase[i] = radians_of{}(x, h);
        out[i] = modulus_of{}(x, h);
        break;
    }
  }
};

/// store(first + i, x[i], h[i]) over one cuFFT batch.
struct batch_store {
  const float* x;
  const float* h;
  std::uint64_t first;
  analytic_store store;
  __device__ void operator()(std::uint64_t i, std::uint64_t, std::size_t) const { store(first + i, x[i], h[i]); }
};

/// Calls store(i, x[i], H(x)[i]) for every sample of `in` on the device,
/// through the fused kernel where the trace length allows, else through
/// batches of cuFFT transforms.
template <class Ctx>
void for_each_analytic(Ctx& ctx, cube_view<const float> in, const analytic_store& store) {
  const auto n = in.shape().samples;
  if (const int l = fused_log2(n); l > 0) {
    if constexpr (Ctx::computes)
      ctx.compute([&] { fused_hilbert(ctx.stream(), in.data(), in.shape().traces(), l, store); });
    return;
  }
  for_each_hilbert_batch(ctx, in, [&](std::uint64_t first, std::uint64_t count, const float* h) {
    ctx.parallel_for(count * n, batch_store{in.data() + first * n, h, first * n, store});
  });
}

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
  using kind = analytic_store::kind;
  for_each_analytic(ctx, in,
                    {.what = sweetness ? kind::radians_and_modulus : kind::radians, .out = out, .phase = phase.data()});
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
    detail::for_each_analytic(ctx, in, {.what = detail::analytic_store::kind::signal, .signal = y});
  }
};

/// An attribute that is a pointwise function of (x, H(x)).
template <class Cpu, detail::analytic_store::kind What>
struct pointwise_attribute : Cpu {
  using Cpu::Cpu;
  template <class Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::for_each_analytic(ctx, in, {.what = What, .out = out[0].as<float>().data()});
  }
};

using envelope = pointwise_attribute<operators::envelope, detail::analytic_store::kind::modulus>;
using instantaneous_phase = pointwise_attribute<operators::instantaneous_phase, detail::analytic_store::kind::degrees>;
using cosine_instantaneous_phase =
    pointwise_attribute<operators::cosine_instantaneous_phase, detail::analytic_store::kind::cosine>;

/// phase_rotation: the trace rotated in phase by `rotation` degrees.
struct phase_rotation : operators::phase_rotation {
  using operators::phase_rotation::phase_rotation;
  template <class Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    const double phi = rotation * std::numbers::pi / 180.0;
    detail::for_each_analytic(ctx, in,
                              {.what = detail::analytic_store::kind::rotated,
                               .out = out[0].as<float>().data(),
                               .rotation = {std::cos(phi), std::sin(phi)}});
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
