#pragma once
/// \file Digital Butterworth filters as second-order sections (designed like
/// scipy.signal.butter: analog prototype, band transform, bilinear transform
/// with prewarping) and scipy.signal.filtfilt's zero-phase filtering of one
/// trace: odd extension by padlen = 3 max(len(a), len(b)) samples, initial
/// states scaled from the filter's step steady state (lfilter_zi), a forward
/// and a backward pass. Everything is double precision.
///
/// Sections instead of one order-N polynomial: the cascade has the same
/// transfer function and the same steady-state initial conditions, so it gives
/// filtfilt's output, with far less rounding for order 12 (the bandpass).

#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <numbers>
#include <string>
#include <utility>

#include "dwsr/error.hpp"

namespace dwsr::operators::detail {

/// Which frequencies a Butterworth filter passes.
enum class band_kind : std::uint8_t { lowpass, highpass, bandpass };

/// One second-order section: (b0 + b1 z^-1 + b2 z^-2) / (1 + a1 z^-1 + a2 z^-2).
struct biquad {
  double b0 = 1, b1 = 0, b2 = 0, a1 = 0, a2 = 0;

  /// The section's response at z (a point of the unit circle).
  std::complex<double> response(std::complex<double> z) const {
    const auto zi = 1.0 / z;
    return (b0 + zi * (b1 + zi * b2)) / (1.0 + zi * (a1 + zi * a2));
  }
  /// Gain for a constant input (z = 1).
  double dc_gain() const { return (b0 + b1 + b2) / (1 + a1 + a2); }
  /// The section's two states (transposed direct form II) in the steady state
  /// of a constant input of 1: scipy's lfilter_zi.
  std::array<double, 2> steady_state() const {
    const double g = dc_gain();
    return {b1 + b2 - (a1 + a2) * g, b2 - a2 * g};
  }
};

/// A Butterworth filter of prototype order `order` (even) as a cascade of
/// second-order sections; a bandpass has twice the order.
class butterworth {
 public:
  static constexpr std::size_t max_sections = 8;

  /// Designs the filter. Cutoffs are fractions of the Nyquist frequency, in
  /// (0, 1) (the caller validates them); `high` is used by bandpass only.
  butterworth(band_kind kind, int order, double low, double high = 0) {
    if (order < 2 || order % 2 != 0 || order > int(max_sections))
      throw invalid_input("Butterworth order " + std::to_string(order) + ": expected an even order from 2 to " +
                          std::to_string(max_sections));
    const std::size_t n = static_cast<std::size_t>(order);
    sections_ = kind == band_kind::bandpass ? n : n / 2;
    // scipy's butter works at fs = 2: analog cutoffs are 4 tan(pi Wn / 2).
    constexpr double fs2 = 4.0;
    auto warp = [](double wn) { return fs2 * std::tan(std::numbers::pi * wn / 2); };
    const double w1 = warp(low), w2 = kind == band_kind::bandpass ? warp(high) : 0.0;
    const double wo = kind == band_kind::bandpass ? std::sqrt(w1 * w2) : w1, bw = w2 - w1;
    // Zeros: lowpass at z = -1, highpass at z = 1, bandpass one of each per section.
    const double b1 = kind == band_kind::lowpass ? 2.0 : kind == band_kind::highpass ? -2.0 : 0.0;
    const double b2 = kind == band_kind::bandpass ? -1.0 : 1.0;
    std::size_t s = 0;
    auto add_pole = [&](std::complex<double> analog) {
      const auto z = (fs2 + analog) / (fs2 - analog);  // bilinear transform
      if (z.imag() <= 0 || s == sections_) return;     // one pole of each conjugate pair
      sections_data_[s++] = {1.0, b1, b2, -2 * z.real(), std::norm(z)};
    };
    for (std::size_t k = 0; k < n; ++k) {
      // Prototype poles -exp(i pi m / 2N), m = -N+1, -N+3, ..., N-1 (the left half-plane).
      const double m = -double(n) + 1 + 2 * double(k);
      const auto p = -std::exp(std::complex<double>(0, std::numbers::pi * m / (2 * double(n))));
      if (kind == band_kind::lowpass) {
        add_pole(wo * p);
      } else if (kind == band_kind::highpass) {
        add_pole(wo / p);
      } else {
        const auto half = p * (bw / 2);
        const auto root = std::sqrt(half * half - wo * wo);
        add_pole(half + root);
        add_pole(half - root);
      }
    }
    // Unit gain where the band is centred (DC, Nyquist, or the warped centre
    // frequency of the bandpass), shared equally by the sections.
    const double centre = kind == band_kind::lowpass    ? 0.0
                          : kind == band_kind::highpass ? std::numbers::pi
                                                        : 2 * std::atan(wo / fs2);
    const auto at = std::exp(std::complex<double>(0, centre));
    std::complex<double> total = 1.0;
    for (std::size_t i = 0; i < sections_; ++i) {
      auto& q = sections_data_[i];
      const double g = 1.0 / std::abs(q.response(at));
      q.b0 *= g, q.b1 *= g, q.b2 *= g;
      total *= q.response(at);
    }
    if (total.real() < 0) {  // the overall gain is +1 there, as scipy's k makes it
      auto& q = sections_data_[0];
      q.b0 = -q.b0, q.b1 = -q.b1, q.b2 = -q.b2;
    }
  }

  std::size_t sections() const { return sections_; }
  const biquad& section(std::size_t i) const { return sections_data_[i]; }
  /// len(a) == len(b) of the equivalent single polynomial (order + 1).
  std::size_t polynomial_length() const { return 2 * sections_ + 1; }
  /// filtfilt's default padding for this filter: 3 max(len(a), len(b)).
  std::size_t default_padlen() const { return 3 * polynomial_length(); }

  /// |H(f)| at `f` (a fraction of Nyquist): for tests and documentation.
  double magnitude(double f) const {
    const auto z = std::exp(std::complex<double>(0, std::numbers::pi * f));
    std::complex<double> h = 1.0;
    for (std::size_t i = 0; i < sections_; ++i) h *= sections_data_[i].response(z);
    return std::abs(h);
  }

 private:
  std::size_t sections_ = 0;
  std::array<biquad, max_sections> sections_data_{};
};

/// Padding filtfilt applies to a trace of n samples: the filter's default,
/// limited to n - 1 (scipy raises for traces no longer than the default).
inline std::uint64_t filtfilt_padlen(const butterworth& f, std::uint64_t n) {
  const std::uint64_t pad = f.default_padlen();
  return n > pad ? pad : (n == 0 ? 0 : n - 1);
}

/// Doubles a trace of n samples needs as filtfilt scratch.
inline std::uint64_t filtfilt_scratch(const butterworth& f, std::uint64_t n) { return n + 2 * filtfilt_padlen(f, n); }

/// Traces filtered together, one per vector lane. The recursions are serial
/// along time (each sample needs the section's previous output), so a single
/// trace leaves the FP units waiting on latency; lanes fill them, and each lane
/// performs exactly the scalar operations of one trace, so results do not
/// depend on which traces share a vector. Four lanes are two SSE2 registers:
/// two independent recursions per section interleave in the pipeline.
inline constexpr std::uint64_t filter_lanes = 4;

/// filter_lanes doubles, one per trace (GCC/Clang vector extension: SSE2 on x86-64).
using lane_doubles = double __attribute__((vector_size(filter_lanes * sizeof(double))));

/// Runs the cascade of `Sections` sections over ext[0, len) in place, forwards
/// or backwards, every lane starting every section from the steady state of a
/// constant input equal to its first sample. Sample-major, so that the
/// sections' recursions overlap in the CPU; the section count is a template
/// argument so that the states stay in registers.
template <std::size_t Sections>
void cascade(const butterworth& f, lane_doubles* ext, std::uint64_t len, bool backwards) {
  biquad q[Sections];
  lane_doubles z0[Sections], z1[Sections];
  lane_doubles level = ext[backwards ? len - 1 : 0];  // constant input level seen by section s
  for (std::size_t s = 0; s < Sections; ++s) {
    q[s] = f.section(s);
    const auto zi = q[s].steady_state();  // times the section's input level
    z0[s] = zi[0] * level;
    z1[s] = zi[1] * level;
    level *= q[s].dc_gain();
  }
  const auto step = [&](lane_doubles& v) {
    lane_doubles x = v;
    for (std::size_t s = 0; s < Sections; ++s) {
      const lane_doubles y = q[s].b0 * x + z0[s];
      z0[s] = q[s].b1 * x - q[s].a1 * y + z1[s];
      z1[s] = q[s].b2 * x - q[s].a2 * y;
      x = y;
    }
    v = x;
  };
  if (backwards)
    for (std::uint64_t i = len; i-- > 0;) step(ext[i]);
  else
    for (std::uint64_t i = 0; i < len; ++i) step(ext[i]);
}

/// cascade<f.sections()>.
template <std::size_t... S>
void cascade(const butterworth& f, lane_doubles* ext, std::uint64_t len, bool backwards, std::index_sequence<S...>) {
  ((f.sections() == S + 1 ? cascade<S + 1>(f, ext, len, backwards) : void()), ...);
}

/// scipy.signal.filtfilt(b, a, x) with the filter's default odd padding, of
/// filter_lanes traces of n samples at once: lane l reads x[l] and writes y[l]
/// (lanes may repeat a trace; a repeated trace is written identically).
/// `ext` is scratch of filtfilt_scratch(f, n) lane_doubles.
inline void filtfilt(const butterworth& f, const float* const* x, std::uint64_t n, float* const* y, lane_doubles* ext) {
  if (n == 0) return;
  const std::uint64_t pad = filtfilt_padlen(f, n);
  const std::uint64_t len = n + 2 * pad;
  for (std::uint64_t l = 0; l < filter_lanes; ++l) {
    const float* xl = x[l];
    const double first = xl[0], last = xl[n - 1];
    // Odd extension: 2 x[0] - x[pad..1] | x | 2 x[n-1] - x[n-2..n-1-pad].
    for (std::uint64_t k = 0; k < pad; ++k) {
      ext[k][l] = 2 * first - double(xl[pad - k]);
      ext[pad + n + k][l] = 2 * last - double(xl[n - 2 - k]);
    }
    for (std::uint64_t i = 0; i < n; ++i) ext[pad + i][l] = xl[i];
  }
  constexpr auto counts = std::make_index_sequence<butterworth::max_sections>();
  detail::cascade(f, ext, len, false, counts);
  detail::cascade(f, ext, len, true, counts);
  for (std::uint64_t l = 0; l < filter_lanes; ++l)
    for (std::uint64_t i = 0; i < n; ++i) y[l][i] = static_cast<float>(ext[pad + i][l]);
}

}  // namespace dwsr::operators::detail
