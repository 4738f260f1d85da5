#pragma once
/// \file The frequency family: zero-phase Butterworth filters and wavelet
/// convolutions along time (reference: dasf-seismic-extras frequency.py), and
/// the RGB blend of three complex-trace attributes (dasf-seismic frequency.py).
///
/// Memory: the filters and convolutions hold the input, the output and, per
/// thread, padded traces of scratch (the filters four double traces, the
/// convolutions one float trace, one spectrum, and one wavelet spectrum in all). rgb_blending streams its three
/// attributes slice by slice like the complex-trace family and needs one extra inline slice.
///
/// Limits (one thread, 512-sample traces, measured on a 2-core x86-64 EPYC
/// without FMA or AVX, as the portable build targets):
/// - Butterworth filters: arithmetic. A section costs 9 double flops a sample
///   a pass (5 mul, 4 add), so lowpass and highpass (3 sections, 21 samples
///   of padding a side) ~59 flops a sample and bandpass (6 sections, 39) ~125.
///   Four traces filtered per call in SSE2 doubles reach ~13 Gflop/s, about
///   half of the core's two-lane add + mul peak; the rest is the recursion's
///   latency (four dependent operations a sample a section) and the padding.
/// - Wavelet convolutions: FFT flops. One r2c and one c2r transform of 640
///   points per trace (~60 flops a sample); FFTW takes ~60 % of the time, the
///   spectrum product and the copies in and out the rest.
/// - rgb_blending: the instantaneous-frequency stream plus a second analytic
///   signal per trace for the envelope and cosine, so about two
///   instantaneous_frequency passes' worth of FFTs.

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <numbers>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "dwsr/operators/detail/analytic_attributes.hpp"
#include "dwsr/operators/detail/butterworth.hpp"
#include "dwsr/operators/detail/sample_rate_param.hpp"
#include "dwsr/operators/detail/wavelet_convolution.hpp"
#include "dwsr/ops/operator.hpp"

namespace dwsr::operators {

namespace detail {

/// Order of the reference's Butterworth prototypes (a bandpass has twice it).
inline constexpr int butterworth_order = 6;

/// `name`'s value as a fraction of the Nyquist frequency of sample interval `sr` ms, in (0, 1).
inline double normalised_cutoff(const param_values& p, const std::string& name, double sr) {
  const double f = p.real(name), nyquist = 500.0 / sr;
  if (!(f > 0 && f < nyquist))
    throw invalid_input("parameter '" + name + "' = " + format_value(f) + " Hz: expected a frequency between 0 and " +
                        "the Nyquist frequency " + format_value(nyquist) + " Hz (sample_rate " + format_value(sr) +
                        " ms), both exclusive");
  return f / nyquist;
}

/// Operators that read whole traces and write one float32 cube.
struct along_time : float32_output {
  static constexpr std::string_view family = "frequency";
  dwsr::halo halo() const { return {.whole_traces = true}; }
};

/// filtfilt of every trace with `filter`, in parallel, detail::filter_lanes
/// traces at a time (a thread's last group repeats its last trace); per thread,
/// filter_lanes padded traces of double scratch.
template <class Ctx>
void filter_traces(Ctx& ctx, const butterworth& filter, cube_view<const float> in, cube_view<float> out) {
  const auto n = in.shape().samples;
  const auto stride = detail::aligned_stride(detail::filtfilt_scratch(filter, n), sizeof(lane_doubles));
  auto scratch = ctx.template allocate<lane_doubles>(stride * ctx.threads(), buffer_role::workspace);
  ctx.parallel_for(in.shape().traces(), [&](std::uint64_t b, std::uint64_t e, std::size_t slot) {
    for (auto tr = b; tr < e; tr += filter_lanes) {
      const float* x[filter_lanes];
      float* y[filter_lanes];
      for (std::uint64_t l = 0; l < filter_lanes; ++l) {
        const auto t = std::min(tr + l, e - 1);
        x[l] = in.trace(t).data(), y[l] = out.trace(t).data();
      }
      detail::filtfilt(filter, x, n, y, scratch.data() + slot * stride);
    }
  });
}

/// A Butterworth filter operator: the design and its application.
struct filter_base : along_time {
  explicit filter_base(butterworth f) : filter(f) {}
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    filter_traces(ctx, filter, in, out[0].as<float>());
  }
  butterworth filter;
};

/// An order-6 Butterworth filter with one cutoff `freq` in Hz (lowpass or highpass).
template <class Derived, band_kind Kind>
struct cutoff_filter : filter_base {
  static std::vector<param_spec> params() {
    return {{"freq", param_kind::real, 30.0, "cutoff frequency in Hz (-3 dB per pass, -6 dB after both)"},
            sample_rate_spec()};
  }
  explicit cutoff_filter(const param_values& p = param_values::bind(Derived::name, params()))
      : filter_base(design(p)), freq(p.real("freq")), sample_rate(p.real("sample_rate")) {}
  double freq, sample_rate;

 private:
  static butterworth design(const param_values& p) {
    const double sr = sample_interval(p);
    return {Kind, butterworth_order, normalised_cutoff(p, "freq", sr)};
  }
};

/// The reference's wavelet time axis, numpy.arange(-0.256, 0.256, sr) for a
/// sample interval of sr seconds: its length, and t_i = t_0 + i (t_1 - t_0).
struct wavelet_axis {
  explicit wavelet_axis(double sample_rate_ms) : step(sample_rate_ms / 1000) {
    const double count = std::ceil((stop - start) / step);
    taps = count < 1 ? 1 : static_cast<std::uint64_t>(count);
  }
  double operator[](std::uint64_t i) const {
    if (i == 0) return start;
    const double delta = (start + step) - start;
    return i == 1 ? start + step : start + double(i) * delta;
  }
  static constexpr double start = -0.512 / 2, stop = 0.512 / 2;
  double step;
  std::uint64_t taps;
};

/// Convolves every trace with the wavelet sample(t) on `axis` (mode 'same').
template <class Ctx, class Sample>
void convolve_traces(Ctx& ctx, const wavelet_axis& axis, Sample&& sample, cube_view<const float> in,
                     cube_view<float> out) {
  auto conv = [&] {
    auto wavelet = ctx.template allocate<double>(axis.taps, buffer_role::temporary);
    if constexpr (Ctx::computes)
      for (std::uint64_t i = 0; i < axis.taps; ++i) wavelet[i] = sample(axis[i]);
    return detail::wavelet_convolution<Ctx>(ctx, in.shape().samples, axis.taps, wavelet.data());
  };
  const auto c = conv();
  ctx.parallel_for(in.shape().traces(), [&](std::uint64_t b, std::uint64_t e, std::size_t slot) {
    for (auto tr = b; tr < e; ++tr) c.convolve(slot, in.trace(tr).data(), out.trace(tr).data());
  });
}

/// A list of numbers as `--param` writes it ("5,10,40,60").
inline std::string join(const std::vector<double>& xs) {
  std::string out;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (i) out.push_back(',');
    out.append(format_value(xs[i]));
  }
  return out;
}

/// numpy.sinc: sin(pi x) / (pi x), 1 at 0.
inline double numpy_sinc(double x) {
  const double y = std::numbers::pi * (x == 0 ? 1.0e-20 : x);
  return std::sin(y) / y;
}

}  // namespace detail

/// lowpass_filter: order-6 Butterworth lowpass at `freq` Hz, zero-phase
/// (scipy.signal.filtfilt semantics: odd padding of 21 samples, steady-state
/// initial conditions, forward and backward passes) along time, four traces
/// at a time (arithmetic-bound: ~59 flops a sample, ~0.9 GB/s). Differs from
/// the reference: dwsr designs and filters in double precision (second-order
/// sections), the reference casts the coefficients to float32 and filters in
/// float32.
DWSR_DECLARE_OPERATOR(lowpass_filter, "zero-phase order-6 Butterworth lowpass along time",
                      detail::cutoff_filter<lowpass_filter, detail::band_kind::lowpass>)

/// highpass_filter: order-6 Butterworth highpass at `freq` Hz, zero-phase along
/// time like lowpass_filter. Differs from the reference, whose HighpassFilter
/// computes a lowpass (its btype attribute is name-mangled, so the lowpass
/// design is used): dwsr's is a true highpass, at lowpass_filter's cost
/// (tested analytically: a sine
/// above the cutoff passes, one below is attenuated by |H(f)|^2), designed and
/// applied in double precision.
DWSR_DECLARE_OPERATOR(highpass_filter, "zero-phase order-6 Butterworth highpass along time",
                      detail::cutoff_filter<highpass_filter, detail::band_kind::highpass>)

/// bandpass_filter: Butterworth bandpass between `freq_lp` and `freq_hp` Hz
/// (order-6 prototype, order 12 in all), zero-phase along time (padding 39
/// samples; arithmetic-bound: ~125 flops a sample, about half of
/// lowpass_filter's speed). Differs from the reference: double-precision sections, where the
/// reference filters with float32 coefficients of the order-12 polynomial,
/// which moves its output by up to ~5e-3 of its range.
struct bandpass_filter : detail::filter_base {
  static constexpr std::string_view name = "bandpass_filter";
  static constexpr std::string_view summary = "zero-phase Butterworth bandpass (order-6 prototype) along time";
  static std::vector<param_spec> params() {
    return {{"freq_lp", param_kind::real, 10.0, "lower edge of the band in Hz"},
            {"freq_hp", param_kind::real, 60.0, "upper edge of the band in Hz"},
            detail::sample_rate_spec()};
  }
  explicit bandpass_filter(const param_values& p = param_values::bind(name, params()))
      : filter_base(design(p)),
        freq_lp(p.real("freq_lp")),
        freq_hp(p.real("freq_hp")),
        sample_rate(p.real("sample_rate")) {}
  double freq_lp, freq_hp, sample_rate;

 private:
  static detail::butterworth design(const param_values& p) {
    const double sr = detail::sample_interval(p);
    const double lo = detail::normalised_cutoff(p, "freq_lp", sr);
    const double hi = detail::normalised_cutoff(p, "freq_hp", sr);
    if (!(lo < hi))
      throw invalid_input("parameters 'freq_lp' = " + format_value(p.real("freq_lp")) +
                          " Hz and 'freq_hp' = " + format_value(p.real("freq_hp")) + " Hz: expected freq_lp < freq_hp");
    return {detail::band_kind::bandpass, detail::butterworth_order, lo, hi};
  }
};

/// cwt_ricker: every trace convolved (numpy 'same' alignment) with a Ricker
/// wavelet of peak frequency `freq`, (1 - 2 (pi f t)^2) exp(-(pi f t)^2),
/// sampled like the reference at t = -0.256 s + k dt over 0.512 s (128 taps at 4 ms).
/// FFT-bound: one r2c and one c2r transform of 640 points per 512-sample trace.
struct cwt_ricker : detail::along_time {
  static constexpr std::string_view name = "cwt_ricker";
  static constexpr bool fft_based = true;
  static constexpr std::string_view summary = "convolution along time with a 0.512 s Ricker wavelet";
  static std::vector<param_spec> params() {
    return {{"freq", param_kind::real, 25.0, "peak frequency of the Ricker wavelet in Hz"}, detail::sample_rate_spec()};
  }
  explicit cwt_ricker(const param_values& p = param_values::bind(name, params()))
      : freq(p.real("freq")), sample_rate(detail::sample_interval(p)) {
    if (!(freq > 0))
      throw invalid_input("parameter 'freq' = " + format_value(freq) + " Hz: expected a positive peak frequency");
  }
  /// The wavelet at t seconds.
  double wavelet(double t) const {
    const double pf = std::numbers::pi * freq;
    const double a = (pf * t) * (pf * t);
    return (1 - 2 * a) * std::exp(-a);
  }
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::convolve_traces(
        ctx, detail::wavelet_axis(sample_rate), [this](double t) { return wavelet(t); }, in, out[0].as<float>());
  }
  double freq, sample_rate;
};

/// cwt_ormsby: every trace convolved (numpy 'same' alignment) with the
/// reference's Ormsby wavelet for corner frequencies f1 < f2 <= f3 < f4, on the
/// same 0.512 s axis as cwt_ricker. Kept as the reference defines it, so that
/// outputs match: each term is (pi f)^2 / (pi df) numpy.sinc(pi f t)^2, and
/// numpy.sinc(x) already is sin(pi x) / (pi x), so the terms are sinc^2 of
/// pi^2 f t rather than the textbook Ormsby's pi f t. FFT-bound like cwt_ricker.
struct cwt_ormsby : detail::along_time {
  static constexpr std::string_view name = "cwt_ormsby";
  static constexpr bool fft_based = true;
  static constexpr std::string_view summary = "convolution along time with the reference's 0.512 s Ormsby wavelet";
  static std::vector<param_spec> params() {
    return {{"freqs", param_kind::reals, std::vector<double>{5, 10, 40, 60},
             "corner frequencies f1,f2,f3,f4 in Hz (f1 < f2 <= f3 < f4)", 4},
            detail::sample_rate_spec()};
  }
  explicit cwt_ormsby(const param_values& p = param_values::bind(name, params()))
      : freqs(p.reals("freqs")), sample_rate(detail::sample_interval(p)) {
    if (freqs.size() != 4 || !(freqs[0] >= 0 && freqs[0] < freqs[1] && freqs[1] <= freqs[2] && freqs[2] < freqs[3]))
      throw invalid_input("parameter 'freqs' = " + detail::join(freqs) +
                          ": expected four corner frequencies 0 <= f1 < f2 <= f3 < f4 in Hz, e.g. 5,10,40,60");
  }
  /// The wavelet at t seconds.
  double wavelet(double t) const {
    const double pi = std::numbers::pi;
    const double p1 = pi * freqs[0], p2 = pi * freqs[1], p3 = pi * freqs[2], p4 = pi * freqs[3];
    auto term = [t](double pf, double width) {
      const double s = detail::numpy_sinc(pf * t);
      return pf * pf / width * (s * s);
    };
    return (term(p4, p4 - p3) - term(p3, p4 - p3)) - (term(p2, p2 - p1) - term(p1, p2 - p1));
  }
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::convolve_traces(
        ctx, detail::wavelet_axis(sample_rate), [this](double t) { return wavelet(t); }, in, out[0].as<float>());
  }
  std::vector<double> freqs;
  double sample_rate;
};

namespace detail {

/// Minimum and maximum that propagate NaN (like numpy.min/max) and so do not
/// depend on the order of folding.
inline float nan_min(float a, float b) {
  return std::isnan(a) || std::isnan(b) ? std::numeric_limits<float>::quiet_NaN() : (b < a ? b : a);
}
inline float nan_max(float a, float b) {
  return std::isnan(a) || std::isnan(b) ? std::numeric_limits<float>::quiet_NaN() : (b > a ? b : a);
}

/// Folds v[0, n) into lo and hi with nan_min and nan_max. The result is the
/// same in any order, so SSE2 folds four lanes at a time (tracking NaN apart:
/// minps and maxps do not propagate it).
inline void fold_extremes(const float* v, std::uint64_t n, float& lo, float& hi) {
  std::uint64_t t = 0;
#if defined(__SSE2__)
  if (n >= 4) {
    __m128 mn = _mm_loadu_ps(v), mx = mn, nan = _mm_cmpunord_ps(mn, mn);
    for (t = 4; t + 4 <= n; t += 4) {
      const __m128 x = _mm_loadu_ps(v + t);
      nan = _mm_or_ps(nan, _mm_cmpunord_ps(x, x));
      mn = _mm_min_ps(mn, x);
      mx = _mm_max_ps(mx, x);
    }
    alignas(16) float a[4], b[4];
    _mm_store_ps(a, mn), _mm_store_ps(b, mx);
    if (_mm_movemask_ps(nan))
      lo = hi = std::numeric_limits<float>::quiet_NaN();
    else
      for (int k = 0; k < 4; ++k) lo = nan_min(lo, a[k]), hi = nan_max(hi, b[k]);
  }
#endif
  for (; t < n; ++t) lo = nan_min(lo, v[t]), hi = nan_max(hi, v[t]);
}

/// numpy's astype(int64) of a float32 on x86-64: truncation; NaN and values
/// outside the int64 range give INT64_MIN.
inline std::int64_t truncate_like_numpy(float v) {
  constexpr float limit = 9.2233720368547758e18f;  // 2^63
  if (!(v >= -limit && v < limit)) return std::numeric_limits<std::int64_t>::min();
  return static_cast<std::int64_t>(v);
}

/// The reference's grey level of one attribute value: ((x - min) / max) * 255
/// in float32, truncated. Note it divides by the maximum, not the range, so a
/// channel spans 0..255 only when its minimum is 0 (cosines reach 510).
inline std::int64_t grey(float x, float min, float max) { return truncate_like_numpy(((x - min) / max) * 255.0f); }

/// R + (G << 8) + (B << 16) with int64 wrap-around (numpy's left_shift and +).
inline std::int64_t blend(std::int64_t r, std::int64_t g, std::int64_t b) {
  const auto u =
      static_cast<std::uint64_t>(r) + (static_cast<std::uint64_t>(g) << 8) + (static_cast<std::uint64_t>(b) << 16);
  return static_cast<std::int64_t>(u);
}

/// Calls f(cos, t, len) for chunks [t, t + len) of [t0, t0 + count) with the
/// cosines of the instantaneous phase there (as cosine_instantaneous_phase
/// computes them) from the analytic signal a and its envelope env, a chunk of
/// 64 at a time on the stack.
template <class F>
void for_each_cosine_chunk(const std::complex<float>* a, const float* env, std::uint64_t t0, std::uint64_t count,
                           F&& f) {
  constexpr std::uint64_t chunk = 64;
  float cos[chunk];
  for (std::uint64_t t = t0, end = t0 + count; t < end; t += chunk) {
    const auto len = std::min(chunk, end - t);
    detail::cosine_from_modulus(detail::interleaved_samples{a + t}, env + t, cos, len);
    f(static_cast<const float*>(cos), t, len);
  }
}

/// Calls f(il, x, a, env, frequency, slot) for every trace (il, x), inline
/// slice by inline slice, with the trace's analytic signal, envelope (as the
/// complex-trace operator envelope computes it) and instantaneous frequency.
/// Buffers: the analytic workspace (whose real scratch holds env), the
/// frequency stream's slices and one frequency slice.
template <class Ctx, class F>
void for_each_rgb_trace(Ctx& ctx, cube_view<const float> in, double fs, F&& f) {
  const auto shape = in.shape();
  detail::analytic_workspace<Ctx> ws(ctx, shape.samples);
  detail::frequency_stream<Ctx> freq(ctx, ws, in, fs);
  auto slice = ctx.template allocate<float>(shape.crosslines * shape.samples, buffer_role::workspace);
  if constexpr (!Ctx::computes) return;
  for (std::uint64_t il = 0; il < shape.inlines; ++il) {
    freq.next(il, slice.data());
    const auto nt = shape.samples;
    ctx.parallel_for(shape.crosslines, [&](std::uint64_t b, std::uint64_t e, std::size_t slot) {
      for (auto x = b; x < e; ++x) {
        const auto* a = ws.analytic(slot, in.trace(il, x).data());
        float* env = ws.real_scratch(slot);
        detail::modulus(detail::interleaved_samples{a}, env, nt);
        f(il, x, a, env, slice.data() + x * nt, slot);
      }
    });
  }
}

}  // namespace detail

/// rgb_blending: envelope (red), cosine of the instantaneous phase (green) and
/// instantaneous frequency (blue), each scaled like the reference's to_grey,
/// ((x - min) / max) * 255 truncated, with min and max over the whole cube, and
/// packed as R + (G << 8) + (B << 16) into int64. The reference divides by the
/// maximum rather than the range, so green spans 0..510 and spills into blue's
/// bits; dwsr keeps that, so outputs match. The cube-wide minima and maxima are
/// the reduction (six values: min, max per channel). The envelope's and the
/// cosine's extremes are per trace; the frequency's read one neighbour across
/// inline and crossline, so the reduction is the windowed form: it sees each
/// block's halo and folds only the block's interior.
struct rgb_blending : detail::sample_rate_param {
  static constexpr std::string_view name = "rgb_blending";
  static constexpr bool fft_based = true;
  static constexpr std::string_view family = "frequency";
  static constexpr std::string_view summary =
      "envelope, cos(phase), instantaneous frequency scaled to grey levels, packed R + G<<8 + B<<16 (int64)";
  using sample_rate_param::sample_rate_param;
  /// Instantaneous frequency reads one neighbour across inline and crossline.
  dwsr::halo halo() const { return {.radius = {1, 1, 0}, .whole_traces = true}; }
  std::vector<output_spec> outputs() const { return {{"", dtype::int64}}; }
  std::size_t reduction_passes() const { return 1; }

  /// Folds the block's (min, max) of the three attributes into acc.values =
  /// {min R, max R, min G, max G, min B, max B}.
  template <ExecutionContext Ctx>
  void reduce(Ctx& ctx, cube_view<const float> in, std::size_t pass, reduction& acc) const {
    reduce(ctx, in, box3::whole(in.shape()), pass, acc);
  }

  /// The same over the voxels of `interior` only: the frequency reads the
  /// block's halo, so a chunked reduction equals the whole-cube one exactly.
  template <ExecutionContext Ctx>
  void reduce(Ctx& ctx, cube_view<const float> in, const box3& interior, std::size_t, reduction& acc) const {
    auto extremes = ctx.template allocate<float>(6 * ctx.threads(), buffer_role::workspace);
    if constexpr (Ctx::computes) {
      for (std::size_t s = 0; s < ctx.threads(); ++s)
        for (std::size_t c = 0; c < 3; ++c) {
          extremes[6 * s + 2 * c] = std::numeric_limits<float>::infinity();
          extremes[6 * s + 2 * c + 1] = -std::numeric_limits<float>::infinity();
        }
    }
    detail::for_each_rgb_trace(
        ctx, in, fs(),
        [&](std::uint64_t il, std::uint64_t x, const std::complex<float>* a, const float* env, const float* freq,
            std::size_t slot) {
          if (il < interior.begin[0] || il >= interior.end[0] || x < interior.begin[1] || x >= interior.end[1]) return;
          float* m = extremes.data() + 6 * slot;
          const auto t0 = interior.begin[2], count = interior.end[2] - interior.begin[2];
          detail::fold_extremes(env + t0, count, m[0], m[1]);
          detail::fold_extremes(freq + t0, count, m[4], m[5]);
          detail::for_each_cosine_chunk(a, env, t0, count, [&](const float* cos, std::uint64_t, std::uint64_t len) {
            detail::fold_extremes(cos, len, m[2], m[3]);
          });
        });
    if constexpr (Ctx::computes) {
      if (acc.values.empty()) {
        acc.values.assign(6, 0.0);
        for (std::size_t c = 0; c < 3; ++c) {
          acc.values[2 * c] = std::numeric_limits<double>::infinity();
          acc.values[2 * c + 1] = -std::numeric_limits<double>::infinity();
        }
      }
      for (std::size_t s = 0; s < ctx.threads(); ++s)
        for (std::size_t c = 0; c < 3; ++c) {
          auto& lo = acc.values[2 * c];
          auto& hi = acc.values[2 * c + 1];
          lo = detail::nan_min(static_cast<float>(lo), extremes[6 * s + 2 * c]);
          hi = detail::nan_max(static_cast<float>(hi), extremes[6 * s + 2 * c + 1]);
        }
    }
  }

  /// Writes the blend of every voxel with the cube-wide extremes in `r`.
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out, const reduction& r) const {
    if constexpr (Ctx::computes)
      if (r.values.size() != 6)
        throw error("rgb_blending: the reduction holds " + std::to_string(r.values.size()) +
                    " values; expected 6 (fold every block with reduce() before run())");
    float lo[3] = {}, hi[3] = {};
    for (std::size_t c = 0; c < 3 && r.values.size() == 6; ++c)
      lo[c] = static_cast<float>(r.values[2 * c]), hi[c] = static_cast<float>(r.values[2 * c + 1]);
    const auto y = out[0].as<std::int64_t>();
    const auto nt = in.shape().samples;
    detail::for_each_rgb_trace(
        ctx, in, fs(),
        [&](std::uint64_t il, std::uint64_t x, const std::complex<float>* a, const float* env, const float* freq,
            std::size_t) {
          std::int64_t* dst = y.trace(il, x).data();
          detail::for_each_cosine_chunk(a, env, 0, nt, [&](const float* cos, std::uint64_t t0, std::uint64_t len) {
            for (std::uint64_t k = 0, t = t0; k < len; ++k, ++t)
              dst[t] = detail::blend(detail::grey(env[t], lo[0], hi[0]), detail::grey(cos[k], lo[1], hi[1]),
                                     detail::grey(freq[t], lo[2], hi[2]));
          });
        });
  }
};

}  // namespace dwsr::operators
