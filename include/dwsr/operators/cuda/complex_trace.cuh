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
/// The derivative-based attributes (relative amplitude change, frequency and
/// those built on them) take the reference's FirstDerivative, which reads
/// 3 x 3 traces around a sample: the envelopes or phases go to a cube-sized
/// temporary first, then one tiled kernel (derivative_kernel) takes the
/// derivative and finishes the attribute (derivative_attribute). A second
/// derivative is written through that temporary and copied back.
///
/// Memory (device): the input, the output, one temporary cube for the
/// derivative-based attributes (two for dominant_frequency and
/// quality_factor: phases and envelopes), plus the batch buffers on the
/// cuFFT path. NumPy's formulation holds the input, two cube-sized complex
/// spectra and the complex signal, about 7x the input.

#include <cufft.h>

#include <complex>
#include <cstddef>
#include <cstdint>
#include <numbers>
#include <span>

#include "dwsr/exec/detail/cuda_check.hpp"
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

/// The reference's time difference [-0.5, 0, 0.5] (reflect borders) of trace
/// p (n samples) at t: of the samples, or (Phase) of numpy.unwrap(p). Rounded
/// to float and with the CPU's operations (derivative_stream.hpp), which
/// stores the differences as floats.
template <bool Phase>
__host__ __device__ inline float trace_difference(const float* p, std::int64_t n, std::int64_t t) {
  if (n == 1) return 0.0f;
  if constexpr (Phase) {
    auto step = [p](std::int64_t k) { return unwrapped_step(sub_rn(double(p[k]), double(p[k - 1]))); };
    if (t == 0) return static_cast<float>(mul_rn(0.5, step(1)));
    if (t == n - 1) return static_cast<float>(mul_rn(0.5, step(n - 1)));
    return static_cast<float>(mul_rn(0.5, add_rn(step(t + 1), step(t))));
  } else {
    const auto lo = t == 0 ? 0 : t - 1, hi = t == n - 1 ? n - 1 : t + 1;
    return static_cast<float>(mul_rn(0.5, sub_rn(double(p[hi]), double(p[lo]))));
  }
}

/// The derivative-based attributes, voxel by voxel, from a cube `src` of
/// envelopes, phases or a first attribute and D, the reference's
/// FirstDerivative of src along time (derivative_kernel computes it), with
/// their definitions in operators/complex_trace.hpp and the CPU's float and
/// double steps:
/// - frequency (src: phases): |D(unwrap(phase))| scale, scale = fs / 2 pi;
/// - sweetness (src: phases, y: the envelope): y / max(frequency, 5);
/// - rac (src: envelopes): clip(D(env) / env, -1, 1), NaN -> 0;
/// - bandwidth (src: envelopes): |rac| / 2 pi;
/// - dominant (src: envelopes, y: the frequency): hypot(frequency, rac / 2 pi);
/// - quality (src: envelopes, y: the frequency): pi frequency / rac, NaN -> 0;
/// - derivative (src: any attribute): D(src).
struct derivative_attribute {
  enum class kind : std::uint8_t { frequency, sweetness, rac, bandwidth, dominant, quality, derivative };
  kind what;
  const float* src;
  float* y;
  cube_geometry g;
  double scale = 1.0;
  /// Whether attribute `k` reads phases (their unwrapped difference is taken).
  __host__ __device__ static bool of_phase(kind k) { return k == kind::frequency || k == kind::sweetness; }
  /// Writes voxel i's attribute from d, the FirstDerivative of src there.
  __device__ void finish(std::uint64_t i, float d) const {
    constexpr double pi = std::numbers::pi;
    if (of_phase(what)) {
      const auto f = static_cast<float>(fabs(double(d) * scale));
      y[i] = what == kind::sweetness ? y[i] / (f < 5.0f ? 5.0f : f) : f;
      return;
    }
    if (what == kind::derivative) {
      y[i] = d;
      return;
    }
    const float r = fminf(fmaxf(nan_to_zero(d / src[i]), -1.0f), 1.0f);
    switch (what) {
      case kind::rac: y[i] = r; break;
      case kind::bandwidth: y[i] = static_cast<float>(fabs(r) / (2 * pi)); break;
      case kind::dominant: {
        const double a = y[i], b = mul_rn(double(r), 1 / (2 * pi));
        y[i] = static_cast<float>(sqrt(add_rn(mul_rn(a, a), mul_rn(b, b))));
        break;
      }
      case kind::quality: y[i] = nan_to_zero(static_cast<float>(pi * y[i] / double(r))); break;
      default: break;
    }
  }
};

/// A block of the derivative kernel: derivative_tile_x crosslines by
/// derivative_tile_t samples, over derivative_segment inlines.
inline constexpr int derivative_tile_x = 8, derivative_tile_t = 32, derivative_segment = 32;

/// derivative_attribute over the cube, a block per tile of crosslines and
/// samples and segment of inlines. For each inline plane from the segment's
/// first - 1 to its last + 1 (reflected), the block writes the tile's time
/// differences, one crossline beyond each side, to shared memory once; each
/// thread smooths its sample across crossline and keeps the last three
/// planes' rows in registers, from which the inline smoothing of the plane
/// before follows. Each difference is taken once per tile instead of nine
/// times per voxel. Arithmetic as the CPU's stream (derivative_stream.hpp):
/// time difference, crossline smoothing, inline smoothing with
/// [0.178947, 0.642105, 0.178947], each stage in double without fused
/// multiply-adds and rounded to float.
template <bool Phase>
__global__ void __launch_bounds__(derivative_tile_x* derivative_tile_t)
    derivative_kernel(derivative_attribute op, std::uint32_t tiles_t) {
  constexpr int tx_n = derivative_tile_x, tt_n = derivative_tile_t;
  constexpr double w[3] = {0.178947, 0.642105, 0.178947};
  __shared__ float diff[(tx_n + 2) * tt_n];
  const auto& g = op.g;
  const std::int64_t x0 = std::int64_t(blockIdx.x / tiles_t) * tx_n, t0 = std::int64_t(blockIdx.x % tiles_t) * tt_n;
  const std::int64_t first = std::int64_t(blockIdx.y) * derivative_segment;
  const std::int64_t last = first + derivative_segment < g.n[0] ? first + derivative_segment : g.n[0];
  const int tid = int(threadIdx.x), tt = tid % tt_n, tx = tid / tt_n;
  const std::int64_t x = x0 + tx, t = t0 + tt;
  const bool mine = x < g.n[1] && t < g.n[2];
  const std::int64_t plane = g.n[1] * g.n[2];
  float rows[3] = {0, 0, 0};
  for (std::int64_t p = first - 1; p <= last; ++p) {
    const float* src = op.src + reflect(p, g.n[0]) * plane;
    for (int k = tid; k < (tx_n + 2) * tt_n; k += tx_n * tt_n) {
      const std::int64_t xs = x0 + k / tt_n - 1, ts = t0 + k % tt_n;
      if (ts < g.n[2]) diff[k] = trace_difference<Phase>(src + reflect(xs, g.n[1]) * g.n[2], g.n[2], ts);
    }
    __syncthreads();
    if (mine) {
      double row = 0;
      for (int b = 0; b < 3; ++b) row = add_rn(row, mul_rn(w[b], double(diff[(tx + b) * tt_n + tt])));
      rows[0] = rows[1], rows[1] = rows[2], rows[2] = static_cast<float>(row);
    }
    __syncthreads();
    if (p > first && mine) {
      double acc = 0;
      for (int a = 0; a < 3; ++a) acc = add_rn(acc, mul_rn(w[a], double(rows[a])));
      op.finish(std::uint64_t(g.at(p - 1, x, t)), static_cast<float>(acc));
    }
  }
}

/// Runs `op` over a cube of `shape` on the context's stream (nothing under the meta context).
template <class Ctx>
void for_each_derivative(Ctx& ctx, shape3 shape, const derivative_attribute& op) {
  if constexpr (Ctx::computes) {
    if (shape.voxels() == 0) return;
    ctx.compute([&] {
      const auto tiles_x = (shape.crosslines + derivative_tile_x - 1) / derivative_tile_x;
      const auto tiles_t = (shape.samples + derivative_tile_t - 1) / derivative_tile_t;
      const dim3 grid(static_cast<unsigned>(tiles_x * tiles_t),
                      static_cast<unsigned>((shape.inlines + derivative_segment - 1) / derivative_segment));
      const unsigned threads = derivative_tile_x * derivative_tile_t;
      if (derivative_attribute::of_phase(op.what))
        derivative_kernel<true><<<grid, threads, 0, ctx.stream()>>>(op, static_cast<std::uint32_t>(tiles_t));
      else
        derivative_kernel<false><<<grid, threads, 0, ctx.stream()>>>(op, static_cast<std::uint32_t>(tiles_t));
      dwsr::detail::cuda_check(cudaGetLastError(), "derivative kernel launch");
    });
  }
}

/// The phases (and, with `envelope`, the envelopes into it) of `in`, then
/// the instantaneous frequency into `out` (sweetness: envelope / max(it, 5)
/// when the envelopes are in `out`). `phase`: a cube-sized device buffer.
template <class Ctx>
void frequency_into(Ctx& ctx, cube_view<const float> in, float* phase, float* out, float* envelope, double fs,
                    bool sweetness) {
  using kind = analytic_store::kind;
  for_each_analytic(ctx, in,
                    {.what = envelope ? kind::radians_and_modulus : kind::radians, .out = envelope, .phase = phase});
  for_each_derivative(
      ctx, in.shape(),
      derivative_attribute{sweetness ? derivative_attribute::kind::sweetness : derivative_attribute::kind::frequency,
                           phase, out, cube_geometry::of(in.shape()), fs / (2 * std::numbers::pi)});
}

/// y = D(y), through `scratch` (a cube-sized device buffer): the second
/// derivative-based stage of amplitude_acceleration and frequency_change.
template <class Ctx>
void differentiate_in_place(Ctx& ctx, shape3 shape, float* y, float* scratch) {
  for_each_derivative(
      ctx, shape, derivative_attribute{derivative_attribute::kind::derivative, y, scratch, cube_geometry::of(shape)});
  ctx.copy(y, scratch, shape.voxels() * sizeof(float));
}

/// An attribute of the relative amplitude change (`what`: rac or bandwidth;
/// with `differentiate`, D(rac)): the envelopes in a temporary, then the
/// attribute into `out`.
template <class Ctx>
void run_rac_attribute(Ctx& ctx, cube_view<const float> in, float* out, derivative_attribute::kind what,
                       bool differentiate) {
  auto env = ctx.template allocate<float>(in.shape().voxels(), buffer_role::temporary);
  for_each_analytic(ctx, in, {.what = analytic_store::kind::modulus, .out = env.data()});
  for_each_derivative(ctx, in.shape(), derivative_attribute{what, env.data(), out, cube_geometry::of(in.shape())});
  if (differentiate) differentiate_in_place(ctx, in.shape(), out, env.data());
}

/// An attribute of the instantaneous frequency (`what`: frequency or
/// sweetness; dominant or quality combine it with the relative amplitude
/// change; with `differentiate`, D(frequency)).
template <class Ctx>
void run_frequency_attribute(Ctx& ctx, cube_view<const float> in, float* out, double fs,
                             derivative_attribute::kind what, bool differentiate = false) {
  using kind = derivative_attribute::kind;
  const auto n = in.shape().voxels();
  auto phase = ctx.template allocate<float>(n, buffer_role::temporary);
  if (derivative_attribute::of_phase(what)) {
    frequency_into(ctx, in, phase.data(), out, what == kind::sweetness ? out : nullptr, fs, what == kind::sweetness);
    if (differentiate) differentiate_in_place(ctx, in.shape(), out, phase.data());
    return;
  }
  auto env = ctx.template allocate<float>(n, buffer_role::temporary);
  frequency_into(ctx, in, phase.data(), out, env.data(), fs, false);
  for_each_derivative(ctx, in.shape(), derivative_attribute{what, env.data(), out, cube_geometry::of(in.shape())});
}

/// What a lobe response takes at each envelope lobe's peak p.
enum class lobe_pick : std::uint8_t {
  value,      ///< y[p] (the frequency, already in y)
  degrees,    ///< y[p] in degrees (y holds the phase in radians)
  amplitude,  ///< x[p], the trace's sample
  polarity,   ///< env[p] * sign(x[p])
};

/// The lobe responses, a thread per trace (operators/complex_trace.hpp's
/// spread_over_lobes): troughs of the envelope start new lobes; each lobe
/// takes the pick at its first envelope maximum, NaN -> 0. y is read at the
/// peak before the lobe is written, so it may hold the values to pick.
struct lobe_spread {
  const float* env;
  const float* x;
  float* y;
  std::int64_t n;
  lobe_pick pick;
  __device__ void operator()(std::uint64_t tr, std::uint64_t, std::size_t) const {
    const float* e = env + tr * n;
    const float* xs = x + tr * n;
    float* out = y + tr * n;
    std::int64_t start = 0;
    auto flush = [&](std::int64_t end) {
      std::int64_t p = start;
      for (auto t = start + 1; t < end; ++t)
        if (e[t] > e[p]) p = t;
      float v = 0;
      switch (pick) {
        case lobe_pick::value: v = out[p]; break;
        case lobe_pick::degrees: v = out[p] * static_cast<float>(180.0 / std::numbers::pi); break;
        case lobe_pick::amplitude: v = xs[p]; break;
        case lobe_pick::polarity: v = e[p] * static_cast<float>((xs[p] > 0) - (xs[p] < 0)); break;
      }
      v = nan_to_zero(v);
      for (auto t = start; t < end; ++t) out[t] = v;
      start = end;
    };
    for (std::int64_t t = 1; t + 1 < n; ++t)
      if (e[t] < e[t - 1] && e[t] < e[t + 1]) flush(t);
    flush(n);
  }
};

/// A lobe response of `in` into `out`: the envelopes in a temporary (and the
/// phases, in radians, in `out` for degrees), then the spread.
template <class Ctx>
void run_lobe_response(Ctx& ctx, cube_view<const float> in, float* out, lobe_pick pick) {
  auto env = ctx.template allocate<float>(in.shape().voxels(), buffer_role::temporary);
  using kind = analytic_store::kind;
  if (pick == lobe_pick::degrees)
    for_each_analytic(ctx, in, {.what = kind::radians_and_modulus, .out = env.data(), .phase = out});
  else
    for_each_analytic(ctx, in, {.what = kind::modulus, .out = env.data()});
  ctx.parallel_for(in.shape().traces(),
                   lobe_spread{env.data(), in.data(), out, std::int64_t(in.shape().samples), pick});
}

/// response_frequency: the frequency and the envelopes, then the spread.
template <class Ctx>
void run_response_frequency(Ctx& ctx, cube_view<const float> in, float* out, double fs) {
  const auto n = in.shape().voxels();
  auto phase = ctx.template allocate<float>(n, buffer_role::temporary);
  auto env = ctx.template allocate<float>(n, buffer_role::temporary);
  frequency_into(ctx, in, phase.data(), out, env.data(), fs, false);
  ctx.parallel_for(in.shape().traces(),
                   lobe_spread{env.data(), in.data(), out, std::int64_t(in.shape().samples), lobe_pick::value});
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

/// An attribute of the relative amplitude change (D: its time derivative).
template <class Cpu, detail::derivative_attribute::kind What, bool Differentiate = false>
struct rac_attribute : Cpu {
  using Cpu::Cpu;
  template <class Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::run_rac_attribute(ctx, in, out[0].as<float>().data(), What, Differentiate);
  }
};

/// An attribute of the instantaneous frequency (D: its time derivative).
template <class Cpu, detail::derivative_attribute::kind What, bool Differentiate = false>
struct frequency_attribute : Cpu {
  using Cpu::Cpu;
  template <class Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::run_frequency_attribute(ctx, in, out[0].as<float>().data(), this->fs(), What, Differentiate);
  }
};

using attribute_kind = detail::derivative_attribute::kind;
using relative_amplitude_change = rac_attribute<operators::relative_amplitude_change, attribute_kind::rac>;
using amplitude_acceleration = rac_attribute<operators::amplitude_acceleration, attribute_kind::rac, true>;
using instantaneous_bandwidth = rac_attribute<operators::instantaneous_bandwidth, attribute_kind::bandwidth>;
using instantaneous_frequency = frequency_attribute<operators::instantaneous_frequency, attribute_kind::frequency>;
using frequency_change = frequency_attribute<operators::frequency_change, attribute_kind::frequency, true>;
using sweetness = frequency_attribute<operators::sweetness, attribute_kind::sweetness>;
using dominant_frequency = frequency_attribute<operators::dominant_frequency, attribute_kind::dominant>;
using quality_factor = frequency_attribute<operators::quality_factor, attribute_kind::quality>;

/// A lobe response: the pick at each envelope lobe's peak, spread over the lobe.
template <class Cpu, detail::lobe_pick Pick>
struct lobe_response : Cpu {
  using Cpu::Cpu;
  template <class Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::run_lobe_response(ctx, in, out[0].as<float>().data(), Pick);
  }
};

using response_phase = lobe_response<operators::response_phase, detail::lobe_pick::degrees>;
using response_amplitude = lobe_response<operators::response_amplitude, detail::lobe_pick::amplitude>;
using apparent_polarity = lobe_response<operators::apparent_polarity, detail::lobe_pick::polarity>;

/// response_frequency: the instantaneous frequency at each envelope lobe's peak.
struct response_frequency : operators::response_frequency {
  using operators::response_frequency::response_frequency;
  template <class Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::run_response_frequency(ctx, in, out[0].as<float>().data(), fs());
  }
};

}  // namespace dwsr::operators::cuda
