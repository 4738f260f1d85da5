#pragma once
/// \file The complex-trace attribute family: attributes of the analytic signal
/// a = hilbert(x) along time (reference: dasf-seismic-extras complex_trace.py).
///
/// Memory: per-trace attributes hold the input, the output and, per thread, one
/// real and one complex trace of scratch. Attributes built on the reference's
/// 3-D FirstDerivative stream inline slices through detail::derivative_stream
/// (six slices per derivative), never a cube-sized temporary.

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <numbers>
#include <span>
#include <string_view>
#include <vector>

#include "dwsr/operators/detail/analytic_signal.hpp"
#include "dwsr/operators/detail/common.hpp"
#include "dwsr/operators/detail/derivative_stream.hpp"
#include "dwsr/ops/operator.hpp"

namespace dwsr::operators {

namespace detail {

/// Operators without parameters.
struct no_params {
  static std::vector<param_spec> params() { return {}; }
  explicit no_params(const param_values& = {}) {}
};

/// Operators with the reference's `sample_rate` (sample interval, ms).
struct sample_rate_param {
  static std::vector<param_spec> params() {
    return {{"sample_rate", param_kind::real, 4.0, "sample interval in milliseconds"}};
  }
  explicit sample_rate_param(const param_values& p = param_values::bind("", params()))
      : sample_rate(p.real("sample_rate")) {
    if (!(sample_rate > 0))
      throw invalid_input("parameter 'sample_rate' = " + format_value(sample_rate) +
                          ": expected a positive sample interval in milliseconds");
  }
  /// Sampling frequency in Hz.
  double fs() const { return 1000.0 / sample_rate; }
  double sample_rate;
};

/// Halo of an attribute built on `Derivatives` nested first derivatives: each
/// reads one neighbour per side across inline and crossline; all need whole traces.
template <std::uint64_t Derivatives>
struct complex_trace_halo {
  static constexpr std::string_view family = "complex_trace";
  dwsr::halo halo() const { return {.radius = {Derivatives, Derivatives, 0}, .whole_traces = true}; }
  std::vector<output_spec> outputs() const { return {{"", dtype::float32}}; }
};

/// Calls f(trace index, analytic signal, slot) for every trace, in parallel.
template <class Ctx, class F>
void for_each_analytic(Ctx& ctx, cube_view<const float> in, F&& f) {
  analytic_workspace<Ctx> ws(ctx, in.shape().samples);
  ctx.parallel_for(in.shape().traces(), [&](std::uint64_t b, std::uint64_t e, std::size_t slot) {
    for (auto tr = b; tr < e; ++tr) f(tr, ws.analytic(slot, in.trace(tr).data()), slot, ws);
  });
}

/// Writes f(analytic, input) of every sample: attributes that are pointwise in a.
template <class Ctx, class F>
void analytic_pointwise(Ctx& ctx, cube_view<const float> in, cube_view<float> out, F&& f) {
  const auto n = in.shape().samples;
  for_each_analytic(ctx, in, [&](std::uint64_t tr, const std::complex<float>* a, std::size_t, const auto&) {
    const float* x = in.trace(tr).data();
    float* y = out.trace(tr).data();
    for (std::uint64_t t = 0; t < n; ++t) y[t] = f(a[t], x[t]);
  });
}

inline float degrees(std::complex<float> a) {
  return std::atan2(a.imag(), a.real()) * static_cast<float>(180.0 / std::numbers::pi);
}
/// cos(angle(a)) without the angle: Re(a) / |a| (and cos(angle(0)) = 1).
inline float cosine_of_phase(std::complex<float> a) {
  const float r = std::abs(a);
  return r > 0 ? a.real() / r : 1.0f;
}

/// Spreads, over each envelope lobe (troughs of env start new lobes), the value
/// pick(peak) at the lobe's first envelope maximum; NaN becomes 0.
template <class Pick>
void spread_over_lobes(const float* env, std::uint64_t n, float* out, Pick&& pick) {
  std::uint64_t start = 0;
  auto flush = [&](std::uint64_t end) {
    std::uint64_t peak = start;
    for (auto t = start + 1; t < end; ++t)
      if (env[t] > env[peak]) peak = t;
    const float v = nan_to_zero(pick(peak));
    std::fill(out + start, out + end, v);
    start = end;
  };
  for (std::uint64_t t = 1; t + 1 < n; ++t)
    if (env[t] < env[t - 1] && env[t] < env[t + 1]) flush(t);
  flush(n);
}

/// Envelope of the traces of inline slice `il` into `dst`.
template <class Ctx>
void envelope_slice(Ctx& ctx, const analytic_workspace<Ctx>& ws, cube_view<const float> in, std::uint64_t il,
                    float* dst) {
  const auto nt = in.shape().samples;
  ctx.parallel_for(in.shape().crosslines, [&](std::uint64_t b, std::uint64_t e, std::size_t slot) {
    for (auto x = b; x < e; ++x) {
      const auto* a = ws.analytic(slot, in.trace(il, x).data());
      for (std::uint64_t t = 0; t < nt; ++t) dst[x * nt + t] = std::abs(a[t]);
    }
  });
}

/// relative_amplitude_change, one inline slice at a time: clip(D(env) / env, -1, 1), NaN -> 0.
template <class Ctx>
class rac_stream {
 public:
  // The source lambda captures only `this`, so std::function stores it inline:
  // no heap allocation outside the context.
  rac_stream(Ctx& ctx, const analytic_workspace<Ctx>& ws, cube_view<const float> in)
      : ctx_(&ctx), ws_(&ws), in_(in), slice_(in.shape().crosslines * in.shape().samples),
        d_(ctx, in.shape(), time_difference::plain,
           [this](std::uint64_t il, float* dst) { envelope_slice(*ctx_, *ws_, in_, il, dst); }) {}

  void next(std::uint64_t il, float* dst) {
    if constexpr (!Ctx::computes) return;
    d_.next(il, dst);
    const float* env = d_.source_slice(il);
    ctx_->parallel_for(slice_, [&](std::uint64_t b, std::uint64_t e, std::size_t) {
      for (auto k = b; k < e; ++k) dst[k] = std::clamp(nan_to_zero(dst[k] / env[k]), -1.0f, 1.0f);
    }, 4096);
  }

 private:
  Ctx* ctx_;
  const analytic_workspace<Ctx>* ws_;
  cube_view<const float> in_;
  std::uint64_t slice_;
  derivative_stream<Ctx> d_;
};

/// instantaneous_frequency, one inline slice at a time: |D(unwrap(phase))| fs / 2 pi.
template <class Ctx>
class frequency_stream {
 public:
  frequency_stream(Ctx& ctx, const analytic_workspace<Ctx>& ws, cube_view<const float> in, double fs)
      : ctx_(&ctx), ws_(&ws), in_(in), slice_(in.shape().crosslines * in.shape().samples),
        scale_(fs / (2 * std::numbers::pi)),
        d_(ctx, in.shape(), time_difference::unwrapped_phase, [this](std::uint64_t il, float* dst) { phase(il, dst); }) {}

  void next(std::uint64_t il, float* dst) {
    if constexpr (!Ctx::computes) return;
    d_.next(il, dst);
    ctx_->parallel_for(slice_, [&](std::uint64_t b, std::uint64_t e, std::size_t) {
      for (auto k = b; k < e; ++k) dst[k] = static_cast<float>(std::abs(dst[k] * scale_));
    }, 4096);
  }

 private:
  // Wrapped phase of the traces of slice il (the stream unwraps its steps).
  void phase(std::uint64_t il, float* dst) const {
    const auto nt = in_.shape().samples;
    ctx_->parallel_for(in_.shape().crosslines, [&](std::uint64_t b, std::uint64_t e, std::size_t slot) {
      for (auto x = b; x < e; ++x) {
        const auto* a = ws_->analytic(slot, in_.trace(il, x).data());
        for (std::uint64_t t = 0; t < nt; ++t) dst[x * nt + t] = std::arg(a[t]);
      }
    });
  }

  Ctx* ctx_;
  const analytic_workspace<Ctx>* ws_;
  cube_view<const float> in_;
  std::uint64_t slice_;
  double scale_;
  derivative_stream<Ctx> d_;
};

/// Runs `stream.next` for every inline slice of `out`, then finish(il, slice).
template <class Ctx, class Stream, class Finish>
void stream_slices(Ctx&, Stream& stream, cube_view<float> out, Finish&& finish) {
  if constexpr (!Ctx::computes) return;
  const auto slice = out.shape().crosslines * out.shape().samples;
  for (std::uint64_t il = 0; il < out.shape().inlines; ++il) {
    float* dst = out.data() + il * slice;
    stream.next(il, dst);
    finish(il, dst);
  }
}

/// A derivative of a stream: D(stream) slice by slice.
template <class Ctx, class Stream>
void derivative_of(Ctx& ctx, Stream& stream, cube_view<float> out) {
  derivative_stream<Ctx> d(ctx, out.shape(), time_difference::plain,
                           [&stream](std::uint64_t il, float* dst) { stream.next(il, dst); });
  stream_slices(ctx, d, out, [](std::uint64_t, float*) {});
}

/// For every trace of slice `il`: f(env, x, y) with the trace's envelope.
template <class Ctx, class F>
void with_envelope(Ctx& ctx, const analytic_workspace<Ctx>& ws, cube_view<const float> in, std::uint64_t il,
                   float* slice, F&& f) {
  const auto nt = in.shape().samples;
  ctx.parallel_for(in.shape().crosslines, [&](std::uint64_t b, std::uint64_t e, std::size_t slot) {
    for (auto x = b; x < e; ++x) {
      const float* trace = in.trace(il, x).data();
      const auto* a = ws.analytic(slot, trace);
      float* env = ws.real_scratch(slot);
      for (std::uint64_t t = 0; t < nt; ++t) env[t] = std::abs(a[t]);
      f(env, trace, slice + x * nt);
    }
  });
}

}  // namespace detail

/// hilbert: the analytic signal a = x + i H(x), complex64.
struct hilbert : detail::no_params, detail::complex_trace_halo<0> {
  static constexpr std::string_view name = "hilbert";
  static constexpr std::string_view summary = "analytic signal x + iH(x) along time (complex64)";
  using no_params::no_params;
  std::vector<output_spec> outputs() const { return {{"", dtype::complex64}}; }
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    auto y = out[0].as<std::complex<float>>();
    const auto n = in.shape().samples;
    detail::for_each_analytic(ctx, in, [&](std::uint64_t tr, const std::complex<float>* a, std::size_t, const auto&) {
      std::copy(a, a + n, y.trace(tr).data());
    });
  }
};

/// Defines a complex-trace attribute that is a pointwise function of (a, x).
#define DWSR_ANALYTIC_POINTWISE(op_name, doc, expr)                                                    \
  struct op_name : detail::no_params, detail::complex_trace_halo<0> {                           \
    static constexpr std::string_view name = #op_name;                                                \
    static constexpr std::string_view summary = doc;                                                  \
    using no_params::no_params;                                                                       \
    template <ExecutionContext Ctx>                                                                   \
    void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {             \
      detail::analytic_pointwise(ctx, in, out[0].as<float>(),                                      \
                                    [](std::complex<float> a, [[maybe_unused]] float x) { return expr; }); \
    }                                                                                                 \
  };

/// envelope: |a|.
DWSR_ANALYTIC_POINTWISE(envelope, "amplitude of the analytic signal |a|", std::abs(a))
/// instantaneous_phase: angle(a) in degrees.
DWSR_ANALYTIC_POINTWISE(instantaneous_phase, "phase of the analytic signal, degrees", detail::degrees(a))
/// cosine_instantaneous_phase: cos(angle(a)).
DWSR_ANALYTIC_POINTWISE(cosine_instantaneous_phase, "cosine of the instantaneous phase",
                        detail::cosine_of_phase(a))
#undef DWSR_ANALYTIC_POINTWISE

/// phase_rotation: Re(a) cos(phi) - Im(a) sin(phi), phi = rotation in degrees.
struct phase_rotation : detail::complex_trace_halo<0> {
  static constexpr std::string_view name = "phase_rotation";
  static constexpr std::string_view summary = "trace rotated in phase by `rotation` degrees";
  static std::vector<param_spec> params() {
    return {{"rotation", param_kind::real, 90.0, "phase rotation in degrees"}};
  }
  explicit phase_rotation(const param_values& p = param_values::bind(name, params()))
      : rotation(p.real("rotation")) {}
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    const double phi = rotation * std::numbers::pi / 180.0;
    const double c = std::cos(phi), s = std::sin(phi);
    detail::analytic_pointwise(ctx, in, out[0].as<float>(), [=](std::complex<float> a, float) {
      return detail::nan_to_zero(static_cast<float>(a.real() * c - a.imag() * s));
    });
  }
  double rotation;
};

/// relative_amplitude_change: clip(D(env) / env, -1, 1), NaN -> 0.
struct relative_amplitude_change : detail::no_params, detail::complex_trace_halo<1> {
  static constexpr std::string_view name = "relative_amplitude_change";
  static constexpr std::string_view summary = "clip(d/dt envelope / envelope, -1, 1)";
  using no_params::no_params;
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::analytic_workspace<Ctx> ws(ctx, in.shape().samples);
    detail::rac_stream<Ctx> rac(ctx, ws, in);
    detail::stream_slices(ctx, rac, out[0].as<float>(), [](std::uint64_t, float*) {});
  }
};

/// amplitude_acceleration: D(relative_amplitude_change).
struct amplitude_acceleration : detail::no_params, detail::complex_trace_halo<2> {
  static constexpr std::string_view name = "amplitude_acceleration";
  static constexpr std::string_view summary = "d/dt of the relative amplitude change";
  using no_params::no_params;
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::analytic_workspace<Ctx> ws(ctx, in.shape().samples);
    detail::rac_stream<Ctx> rac(ctx, ws, in);
    detail::derivative_of(ctx, rac, out[0].as<float>());
  }
};

/// instantaneous_bandwidth: |relative_amplitude_change| / 2 pi.
struct instantaneous_bandwidth : detail::no_params, detail::complex_trace_halo<1> {
  static constexpr std::string_view name = "instantaneous_bandwidth";
  static constexpr std::string_view summary = "|relative amplitude change| / 2 pi";
  using no_params::no_params;
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::analytic_workspace<Ctx> ws(ctx, in.shape().samples);
    detail::rac_stream<Ctx> rac(ctx, ws, in);
    const auto slice = in.shape().crosslines * in.shape().samples;
    detail::stream_slices(ctx, rac, out[0].as<float>(), [&](std::uint64_t, float* y) {
      for (std::uint64_t k = 0; k < slice; ++k) y[k] = static_cast<float>(std::abs(y[k]) / (2 * std::numbers::pi));
    });
  }
};

/// instantaneous_frequency: |D(unwrap(phase))| / 2 pi * fs, in Hz.
struct instantaneous_frequency : detail::sample_rate_param, detail::complex_trace_halo<1> {
  static constexpr std::string_view name = "instantaneous_frequency";
  static constexpr std::string_view summary = "|d/dt unwrapped phase| / 2 pi * fs, Hz";
  using sample_rate_param::sample_rate_param;
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::analytic_workspace<Ctx> ws(ctx, in.shape().samples);
    detail::frequency_stream<Ctx> freq(ctx, ws, in, fs());
    detail::stream_slices(ctx, freq, out[0].as<float>(), [](std::uint64_t, float*) {});
  }
};

/// frequency_change: D(instantaneous_frequency).
struct frequency_change : detail::sample_rate_param, detail::complex_trace_halo<2> {
  static constexpr std::string_view name = "frequency_change";
  static constexpr std::string_view summary = "d/dt of the instantaneous frequency";
  using sample_rate_param::sample_rate_param;
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::analytic_workspace<Ctx> ws(ctx, in.shape().samples);
    detail::frequency_stream<Ctx> freq(ctx, ws, in, fs());
    detail::derivative_of(ctx, freq, out[0].as<float>());
  }
};

namespace detail {
/// Attributes combining instantaneous frequency with the relative amplitude
/// change: y = combine(frequency, rac), slice by slice (one extra slice).
template <class Ctx, class Combine>
void frequency_and_rac(Ctx& ctx, cube_view<const float> in, cube_view<float> out, double fs, Combine&& combine) {
  analytic_workspace<Ctx> ws(ctx, in.shape().samples);
  frequency_stream<Ctx> freq(ctx, ws, in, fs);
  rac_stream<Ctx> rac(ctx, ws, in);
  const auto slice = in.shape().crosslines * in.shape().samples;
  auto rac_slice = ctx.template allocate<float>(slice, buffer_role::workspace);
  stream_slices(ctx, freq, out, [&](std::uint64_t il, float* y) {
    rac.next(il, rac_slice.data());
    for (std::uint64_t k = 0; k < slice; ++k) y[k] = combine(y[k], rac_slice[k]);
  });
}
}  // namespace detail

/// dominant_frequency: hypot(instantaneous frequency, instantaneous bandwidth).
struct dominant_frequency : detail::sample_rate_param, detail::complex_trace_halo<1> {
  static constexpr std::string_view name = "dominant_frequency";
  static constexpr std::string_view summary = "hypot(instantaneous frequency, instantaneous bandwidth)";
  using sample_rate_param::sample_rate_param;
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::frequency_and_rac(ctx, in, out[0].as<float>(), fs(), [](float f, float rac) {
      return static_cast<float>(std::hypot(double(f), std::abs(double(rac)) / (2 * std::numbers::pi)));
    });
  }
};

/// quality_factor: pi * instantaneous frequency / relative amplitude change, NaN -> 0.
struct quality_factor : detail::sample_rate_param, detail::complex_trace_halo<1> {
  static constexpr std::string_view name = "quality_factor";
  static constexpr std::string_view summary = "pi * instantaneous frequency / relative amplitude change";
  using sample_rate_param::sample_rate_param;
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::frequency_and_rac(ctx, in, out[0].as<float>(), fs(), [](float f, float rac) {
      return detail::nan_to_zero(static_cast<float>(std::numbers::pi * f / double(rac)));
    });
  }
};

/// sweetness: envelope / max(instantaneous frequency, 5).
struct sweetness : detail::sample_rate_param, detail::complex_trace_halo<1> {
  static constexpr std::string_view name = "sweetness";
  static constexpr std::string_view summary = "envelope / max(instantaneous frequency, 5 Hz)";
  using sample_rate_param::sample_rate_param;
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::analytic_workspace<Ctx> ws(ctx, in.shape().samples);
    detail::frequency_stream<Ctx> freq(ctx, ws, in, fs());
    const auto nt = in.shape().samples;
    detail::stream_slices(ctx, freq, out[0].as<float>(), [&](std::uint64_t il, float* slice) {
      detail::with_envelope(ctx, ws, in, il, slice, [&](const float* env, const float*, float* y) {
        for (std::uint64_t t = 0; t < nt; ++t) y[t] = env[t] / (y[t] < 5.0f ? 5.0f : y[t]);
      });
    });
  }
};

/// Defines a per-lobe response attribute: the value pick(peak) at each envelope
/// lobe's peak, spread over the lobe (a, x, env: analytic signal, trace, envelope).
#define DWSR_RESPONSE_PER_TRACE(op_name, doc, expr)                                                          \
  struct op_name : detail::no_params, detail::complex_trace_halo<0> {                                 \
    static constexpr std::string_view name = #op_name;                                                      \
    static constexpr std::string_view summary = doc;                                                        \
    using no_params::no_params;                                                                             \
    template <ExecutionContext Ctx>                                                                         \
    void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {                   \
      const auto n = in.shape().samples;                                                                    \
      auto y = out[0].as<float>();                                                                          \
      detail::for_each_analytic(ctx, in, [&](std::uint64_t tr, const std::complex<float>* a, std::size_t slot, \
                                                const auto& ws) {                                           \
        [[maybe_unused]] const float* x = in.trace(tr).data();                                              \
        float* env = ws.real_scratch(slot);                                                                 \
        for (std::uint64_t t = 0; t < n; ++t) env[t] = std::abs(a[t]);                                      \
        detail::spread_over_lobes(env, n, y.trace(tr).data(), [&]([[maybe_unused]] std::uint64_t p) { return expr; }); \
      });                                                                                                   \
    }                                                                                                       \
  };

/// response_phase: instantaneous phase (degrees) at each envelope lobe's peak.
DWSR_RESPONSE_PER_TRACE(response_phase, "instantaneous phase at each envelope lobe's peak, degrees",
                        detail::degrees(a[p]))
/// response_amplitude: the trace's amplitude at each envelope lobe's peak.
DWSR_RESPONSE_PER_TRACE(response_amplitude, "trace amplitude at each envelope lobe's peak", x[p])
/// apparent_polarity: envelope * sign(trace) at each envelope lobe's peak.
DWSR_RESPONSE_PER_TRACE(apparent_polarity, "envelope * sign(trace) at each envelope lobe's peak",
                        env[p] * static_cast<float>((x[p] > 0) - (x[p] < 0)))
#undef DWSR_RESPONSE_PER_TRACE

/// response_frequency: instantaneous frequency at each envelope lobe's peak.
struct response_frequency : detail::sample_rate_param, detail::complex_trace_halo<1> {
  static constexpr std::string_view name = "response_frequency";
  static constexpr std::string_view summary = "instantaneous frequency at each envelope lobe's peak, Hz";
  using sample_rate_param::sample_rate_param;
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::analytic_workspace<Ctx> ws(ctx, in.shape().samples);
    detail::frequency_stream<Ctx> freq(ctx, ws, in, fs());
    const auto nt = in.shape().samples;
    detail::stream_slices(ctx, freq, out[0].as<float>(), [&](std::uint64_t il, float* slice) {
      detail::with_envelope(ctx, ws, in, il, slice, [&](const float* env, const float*, float* y) {
        detail::spread_over_lobes(env, nt, y, [&](std::uint64_t p) { return y[p]; });
      });
    });
  }
};

}  // namespace dwsr::operators
