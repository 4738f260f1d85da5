#pragma once
/// \file The complex-trace attribute family: attributes of the analytic signal
/// a = hilbert(x) along time (reference: dasf-seismic-extras complex_trace.py).
///
/// Memory: per-trace attributes hold the input, the output and, per thread, one
/// real and one complex trace of scratch. Attributes built on the reference's
/// 3-D FirstDerivative stream inline slices through detail::derivative_stream
/// (six slices per derivative), never a cube-sized temporary.
///
/// Limits (one thread, 512 samples): every attribute costs one r2c and one
/// c2c FFTW transform per trace (~1 us, ~2 ns a sample), and hilbert runs at
/// that limit (~1.1 GB/s). Modulus, angle and cosine are vectorised
/// (detail/polar.hpp, 0.1-0.5 ns a sample), so envelope and
/// cosine_instantaneous_phase run within ~10 % of hilbert and
/// instantaneous_phase within ~25 %. The derivative-based attributes add the
/// derivative stream (two thread passes a slice): the time difference and
/// the smoothing across inline and crossline, in double as the reference's
/// float64 weights make it, ~3 ns a sample a stage. In instantaneous_frequency
/// the FFTs and the angle take about a quarter of the time each, the
/// two-lane unwrapped difference a tenth, the smoothing the rest. sweetness,
/// response_frequency, dominant_frequency and quality_factor take the
/// envelope from the same analytic signal as the frequency.
///
/// The bases in detail/analytic_attributes.hpp carry the protocol: each
/// operator below states its name and summary and what it computes.

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <numbers>
#include <span>
#include <string_view>
#include <vector>

#include "dwsr/operators/detail/analytic_attributes.hpp"
#include "dwsr/ops/operator.hpp"

namespace dwsr::operators {

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

/// envelope: |a|.
struct envelope : detail::pointwise_attribute<envelope> {
  static constexpr std::string_view name = "envelope";
  static constexpr std::string_view summary = "amplitude of the analytic signal |a|";
  using pointwise_attribute::pointwise_attribute;
  static void of_trace(const std::complex<float>* a, float* y, std::uint64_t n) {
    detail::modulus(detail::interleaved_samples{a}, y, n);
  }
};

/// instantaneous_phase: angle(a) in degrees.
struct instantaneous_phase : detail::pointwise_attribute<instantaneous_phase> {
  static constexpr std::string_view name = "instantaneous_phase";
  static constexpr std::string_view summary = "phase of the analytic signal, degrees";
  using pointwise_attribute::pointwise_attribute;
  static void of_trace(const std::complex<float>* a, float* y, std::uint64_t n) {
    detail::angle(detail::interleaved_samples{a}, y, n, detail::degrees_per_radian);
  }
};

/// cosine_instantaneous_phase: cos(angle(a)).
struct cosine_instantaneous_phase : detail::pointwise_attribute<cosine_instantaneous_phase> {
  static constexpr std::string_view name = "cosine_instantaneous_phase";
  static constexpr std::string_view summary = "cosine of the instantaneous phase";
  using pointwise_attribute::pointwise_attribute;
  static void of_trace(const std::complex<float>* a, float* y, std::uint64_t n) {
    detail::cosine(detail::interleaved_samples{a}, y, n);
  }
};

// The two streamed attributes (detail::rac_stream, detail::frequency_stream)
// and their time derivatives; the attributes built on them follow.

/// relative_amplitude_change: clip(D(env) / env, -1, 1), NaN -> 0.
DWSR_DECLARE_OPERATOR(relative_amplitude_change, "clip(d/dt envelope / envelope, -1, 1)",
                      detail::rac_attribute<relative_amplitude_change>)

/// instantaneous_frequency: |D(unwrap(phase))| / 2 pi * fs, in Hz.
DWSR_DECLARE_OPERATOR(instantaneous_frequency, "|d/dt unwrapped phase| / 2 pi * fs, Hz",
                      detail::frequency_attribute<instantaneous_frequency>)

/// amplitude_acceleration: D(relative_amplitude_change).
DWSR_DECLARE_OPERATOR(amplitude_acceleration, "d/dt of the relative amplitude change",
                      detail::derivative_attribute<relative_amplitude_change>)

/// frequency_change: D(instantaneous_frequency).
DWSR_DECLARE_OPERATOR(frequency_change, "d/dt of the instantaneous frequency",
                      detail::derivative_attribute<instantaneous_frequency>)

/// phase_rotation: Re(a) cos(phi) - Im(a) sin(phi), phi = rotation in degrees.
struct phase_rotation : detail::complex_trace_halo<0> {
  static constexpr std::string_view name = "phase_rotation";
  static constexpr std::string_view summary = "trace rotated in phase by `rotation` degrees";
  static std::vector<param_spec> params() {
    return {{"rotation", param_kind::real, 90.0, "phase rotation in degrees"}};
  }
  explicit phase_rotation(const param_values& p = param_values::bind(name, params())) : rotation(p.real("rotation")) {}
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    const double phi = rotation * std::numbers::pi / 180.0;
    const double c = std::cos(phi), s = std::sin(phi);
    const auto n = in.shape().samples;
    const auto y = out[0].as<float>();
    detail::for_each_analytic(ctx, in, [&](std::uint64_t tr, const std::complex<float>* a, std::size_t, const auto&) {
      float* dst = y.trace(tr).data();
      for (std::uint64_t t = 0; t < n; ++t)
        dst[t] = detail::nan_to_zero(static_cast<float>(a[t].real() * c - a[t].imag() * s));
    });
  }
  double rotation;
};

/// instantaneous_bandwidth: |relative_amplitude_change| / 2 pi.
struct instantaneous_bandwidth : detail::rac_attribute<instantaneous_bandwidth> {
  static constexpr std::string_view name = "instantaneous_bandwidth";
  static constexpr std::string_view summary = "|relative amplitude change| / 2 pi";
  using streamed_attribute::streamed_attribute;
  static void finish(float* y, const float*, std::uint64_t n) {
    for (std::uint64_t t = 0; t < n; ++t) y[t] = static_cast<float>(std::abs(y[t]) / (2 * std::numbers::pi));
  }
};

/// dominant_frequency: hypot(instantaneous frequency, instantaneous bandwidth).
struct dominant_frequency : detail::frequency_and_rac_attribute<dominant_frequency> {
  static constexpr std::string_view name = "dominant_frequency";
  static constexpr std::string_view summary = "hypot(instantaneous frequency, instantaneous bandwidth)";
  using frequency_and_rac_attribute::frequency_and_rac_attribute;
  static void combine(float* f, const float* rac, std::uint64_t n) {
    detail::modulus(detail::split_samples{f, rac}, f, n, 1 / (2 * std::numbers::pi));
  }
};

/// quality_factor: pi * instantaneous frequency / relative amplitude change, NaN -> 0.
struct quality_factor : detail::frequency_and_rac_attribute<quality_factor> {
  static constexpr std::string_view name = "quality_factor";
  static constexpr std::string_view summary = "pi * instantaneous frequency / relative amplitude change";
  using frequency_and_rac_attribute::frequency_and_rac_attribute;
  static void combine(float* f, const float* rac, std::uint64_t n) {
    for (std::uint64_t k = 0; k < n; ++k)
      f[k] = detail::nan_to_zero(static_cast<float>(std::numbers::pi * f[k] / double(rac[k])));
  }
};

/// sweetness: envelope / max(instantaneous frequency, 5).
struct sweetness : detail::frequency_envelope_attribute<sweetness> {
  static constexpr std::string_view name = "sweetness";
  static constexpr std::string_view summary = "envelope / max(instantaneous frequency, 5 Hz)";
  using frequency_envelope_attribute::frequency_envelope_attribute;
  static void of_trace(const float* env, float* y, std::uint64_t n) {
    for (std::uint64_t t = 0; t < n; ++t) y[t] = env[t] / (y[t] < 5.0f ? 5.0f : y[t]);
  }
};

/// response_phase: instantaneous phase (degrees) at each envelope lobe's peak.
struct response_phase : detail::lobe_response<response_phase> {
  static constexpr std::string_view name = "response_phase";
  static constexpr std::string_view summary = "instantaneous phase at each envelope lobe's peak, degrees";
  using lobe_response::lobe_response;
  static float at_peak(const std::complex<float>* a, const float*, const float*, std::uint64_t p) {
    return detail::degrees(a[p]);
  }
};

/// response_amplitude: the trace's amplitude at each envelope lobe's peak.
struct response_amplitude : detail::lobe_response<response_amplitude> {
  static constexpr std::string_view name = "response_amplitude";
  static constexpr std::string_view summary = "trace amplitude at each envelope lobe's peak";
  using lobe_response::lobe_response;
  static float at_peak(const std::complex<float>*, const float* x, const float*, std::uint64_t p) { return x[p]; }
};

/// apparent_polarity: envelope * sign(trace) at each envelope lobe's peak.
struct apparent_polarity : detail::lobe_response<apparent_polarity> {
  static constexpr std::string_view name = "apparent_polarity";
  static constexpr std::string_view summary = "envelope * sign(trace) at each envelope lobe's peak";
  using lobe_response::lobe_response;
  static float at_peak(const std::complex<float>*, const float* x, const float* env, std::uint64_t p) {
    return env[p] * static_cast<float>((x[p] > 0) - (x[p] < 0));
  }
};

/// response_frequency: instantaneous frequency at each envelope lobe's peak.
struct response_frequency : detail::frequency_envelope_attribute<response_frequency> {
  static constexpr std::string_view name = "response_frequency";
  static constexpr std::string_view summary = "instantaneous frequency at each envelope lobe's peak, Hz";
  using frequency_envelope_attribute::frequency_envelope_attribute;
  static void of_trace(const float* env, float* y, std::uint64_t n) {
    detail::spread_over_lobes(env, n, y, [&](std::uint64_t p) { return y[p]; });
  }
};

}  // namespace dwsr::operators
