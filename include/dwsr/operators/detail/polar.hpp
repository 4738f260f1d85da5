#pragma once
/// \file Modulus, angle and cosine of angle of complex samples (interleaved,
/// like the analytic signal, or as two real arrays), written so that whole
/// traces vectorise: glibc's hypotf and atan2f are calls per voxel (~20 ns
/// each), five to ten times the cost of the FFTs that produce the samples.
/// Also arccos, for the dip family's angles, likewise without a call.

#include <cmath>
#include <complex>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace dwsr::operators::detail {

/// |x + i h| as hypot computes it for float inputs: the sum of the exact
/// squares in double, its square root, rounded to float (within an ulp of
/// hypotf; no overflow or underflow for any float input).
inline float modulus(float x, float h) { return static_cast<float>(std::sqrt(double(x) * x + double(h) * h)); }

#if defined(__SSE2__)
namespace sse {
inline __m128 select(__m128 mask, __m128 a, __m128 b) { return _mm_or_ps(_mm_and_ps(mask, a), _mm_andnot_ps(mask, b)); }
inline __m128 splat(float v) { return _mm_set1_ps(v); }
}  // namespace sse
#endif

/// Complex samples as two real arrays: real parts x, imaginary parts h.
struct split_samples {
  const float* x;
  const float* h;
  float re(std::uint64_t t) const { return x[t]; }
  float im(std::uint64_t t) const { return h[t]; }
#if defined(__SSE2__)
  /// Real and imaginary parts of samples [t, t + 4).
  void load4(std::uint64_t t, __m128& r, __m128& i) const { r = _mm_loadu_ps(x + t), i = _mm_loadu_ps(h + t); }
#endif
};

/// Complex samples interleaved (std::complex<float>, FFTW's layout).
struct interleaved_samples {
  const std::complex<float>* a;
  float re(std::uint64_t t) const { return a[t].real(); }
  float im(std::uint64_t t) const { return a[t].imag(); }
#if defined(__SSE2__)
  void load4(std::uint64_t t, __m128& r, __m128& i) const {
    const float* p = reinterpret_cast<const float*>(a + t);
    const __m128 lo = _mm_loadu_ps(p), hi = _mm_loadu_ps(p + 4);
    r = _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
    i = _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
  }
#endif
};

/// y[t] = modulus(re, im * im_scale) of samples t < n, the product in double.
/// With SSE2, four samples per step: std::sqrt may set errno, which keeps the
/// compiler from vectorising it, so the square roots are explicit; they round
/// like std::sqrt. y may alias the samples.
template <class Samples>
void modulus(const Samples& s, float* y, std::uint64_t n, double im_scale = 1.0) {
  std::uint64_t t = 0;
#if defined(__SSE2__)
  const __m128d scale = _mm_set1_pd(im_scale);
  auto half = [&](__m128 xs, __m128 hs) {
    const __m128d a = _mm_cvtps_pd(xs), b = _mm_mul_pd(_mm_cvtps_pd(hs), scale);
    return _mm_cvtpd_ps(_mm_sqrt_pd(_mm_add_pd(_mm_mul_pd(a, a), _mm_mul_pd(b, b))));
  };
  for (; t + 4 <= n; t += 4) {
    __m128 xv, hv;
    s.load4(t, xv, hv);
    _mm_storeu_ps(y + t, _mm_movelh_ps(half(xv, hv), half(_mm_movehl_ps(xv, xv), _mm_movehl_ps(hv, hv))));
  }
#endif
  for (; t < n; ++t) {
    const double a = s.re(t), b = s.im(t) * im_scale;
    y[t] = static_cast<float>(std::sqrt(a * a + b * b));
  }
}

/// Coefficients of atan(z) = z + z^3 P(z^2) on |z| <= tan(pi/8): P is a
/// degree-4 Chebyshev fit (relative error < 1e-8, below float rounding).
inline constexpr float atan_coefficients[5] = {-0.333333313f, 0.199995399f, -0.142639562f, 0.107437313f,
                                               -0.0645192787f};
inline constexpr float atan_reduction = 0.41421356f;  // tan(pi/8)
inline constexpr float quarter_pi = 0.785398163f, half_pi = 1.57079633f, pi_f = 3.14159265f;

// The scalar functions below compute every candidate before selecting one,
// with quiet comparisons (std::isgreater, std::isless): under GCC's default
// trapping math, an operation or a signalling comparison inside a
// conditional keeps a loop of them from vectorising (the dip family's
// batches, dip_azimuth.hpp).

/// atan(q) for q in [0, 1]: q > tan(pi/8) is reduced to pi/4 + atan((q - 1) / (q + 1)).
inline float atan_unit(float q) {
  const float shifted = (q - 1.0f) / (q + 1.0f);
  const bool reduced = std::isgreater(q, atan_reduction);
  const float z = reduced ? shifted : q;
  const float s = z * z;
  const auto& c = atan_coefficients;
  const float p = (((c[4] * s + c[3]) * s + c[2]) * s + c[1]) * s + c[0];
  return (reduced ? quarter_pi : 0.0f) + (z + z * s * p);
}

/// atan2(y, x) in float without a call: within 3 ulp of the exact angle
/// (glibc's atan2f: within 1), with atan2's results for signed zeros
/// (atan2(+-0, -0) = +-pi, atan2(+-0, +0) = +-0) and NaN.
inline float angle(float y, float x) {
  const float ax = std::fabs(x), ay = std::fabs(y);
  const bool steep = std::isgreater(ay, ax);
  const float num = steep ? ax : ay, den = steep ? ay : ax;
  const float r0 = atan_unit(num / (den == 0.0f ? 1.0f : den));  // num = 0 when den = 0
  const float from_steep = half_pi - r0;
  const float r1 = steep ? from_steep : r0;
  const float from_left = pi_f - r1;
  return std::copysign(std::signbit(x) ? from_left : r1, y);
}

/// Coefficients of asin(s) = s + s^3 P(s^2) on |s| <= 1/2: P is a degree-4
/// least-squares fit of the relative error (within 0.7 ulp in float).
inline constexpr float asin_coefficients[5] = {0.166667521f, 0.0749535263f, 0.0454625636f, 0.0242201723f,
                                               0.0420956537f};

/// acos(x) in float without a call: within 2 ulp of the exact angle, NaN
/// outside [-1, 1] and for NaN. |x| > 1/2 takes acos(a) = 2 asin(sqrt((1 -
/// a) / 2)), the rest pi/2 - asin(a), and a negative x pi - acos(-x).
/// In two parts, so that a batch takes its square roots in vector lanes:
/// arccos(x) = arccos_from(x, z, sqrt(z)) with z = arccos_square(x).
inline float arccos_square(float x) {
  const float a = std::fabs(x);
  const float far = (1.0f - a) * 0.5f, near = a * a;
  return std::isgreater(a, 0.5f) ? far : near;
}
inline float arccos_from(float x, float z, float root) {
  const float a = std::fabs(x);
  const bool far = std::isgreater(a, 0.5f);
  const float s = far ? root : a;
  const auto& c = asin_coefficients;
  const float p = s + s * z * ((((c[4] * z + c[3]) * z + c[2]) * z + c[1]) * z + c[0]);  // asin(s)
  const float from_far = 2.0f * p, from_near = half_pi - p;
  const float r = far ? from_far : from_near;  // acos(a)
  const float from_negative = pi_f - r;
  return std::isless(x, 0.0f) ? from_negative : r;
}
inline float arccos(float x) {
  const float z = arccos_square(x);
  return arccos_from(x, z, std::sqrt(z));
}

#if defined(__SSE2__)
namespace sse {
/// angle() of four samples, operation for operation (so that results equal the scalar's).
inline __m128 angle(__m128 y, __m128 x) {
  const __m128 sign = splat(-0.0f);
  const __m128 ax = _mm_andnot_ps(sign, x), ay = _mm_andnot_ps(sign, y);
  const __m128 steep = _mm_cmpgt_ps(ay, ax);
  const __m128 num = select(steep, ax, ay), den = select(steep, ay, ax);
  const __m128 q = _mm_div_ps(num, select(_mm_cmpeq_ps(den, _mm_setzero_ps()), splat(1.0f), den));
  const __m128 shifted = _mm_div_ps(_mm_sub_ps(q, splat(1.0f)), _mm_add_ps(q, splat(1.0f)));
  const __m128 reduced = _mm_cmpgt_ps(q, splat(atan_reduction));
  const __m128 z = select(reduced, shifted, q);
  const __m128 s = _mm_mul_ps(z, z);
  const auto& c = atan_coefficients;
  __m128 p = _mm_add_ps(_mm_mul_ps(splat(c[4]), s), splat(c[3]));
  p = _mm_add_ps(_mm_mul_ps(p, s), splat(c[2]));
  p = _mm_add_ps(_mm_mul_ps(p, s), splat(c[1]));
  p = _mm_add_ps(_mm_mul_ps(p, s), splat(c[0]));
  __m128 r = _mm_add_ps(_mm_and_ps(reduced, splat(quarter_pi)), _mm_add_ps(z, _mm_mul_ps(_mm_mul_ps(z, s), p)));
  r = select(steep, _mm_sub_ps(splat(half_pi), r), r);
  const __m128 negative_x = _mm_castsi128_ps(_mm_srai_epi32(_mm_castps_si128(x), 31));
  r = select(negative_x, _mm_sub_ps(splat(pi_f), r), r);
  return _mm_or_ps(r, _mm_and_ps(sign, y));  // r >= +0: copysign
}
}  // namespace sse
#endif

/// y[t] = angle(im, re) * scale of samples t < n (y may alias the samples).
template <class Samples>
void angle(const Samples& s, float* y, std::uint64_t n, float scale = 1.0f) {
  std::uint64_t t = 0;
#if defined(__SSE2__)
  for (; t + 4 <= n; t += 4) {
    __m128 r, i;
    s.load4(t, r, i);
    _mm_storeu_ps(y + t, _mm_mul_ps(sse::angle(i, r), _mm_set1_ps(scale)));
  }
#endif
  for (; t < n; ++t) y[t] = angle(s.im(t), s.re(t)) * scale;
}

/// cos(angle(x + i h)) without the angle: x / |x + i h|, and 1 where the modulus is 0.
inline float cosine(float x, float h) {
  const float r = modulus(x, h);
  return r > 0 ? x / r : 1.0f;
}

/// y[t] = cosine of the angle of samples t < n whose moduli are r (y may alias r, not the samples).
template <class Samples>
void cosine_from_modulus(const Samples& s, const float* r, float* y, std::uint64_t n) {
  std::uint64_t t = 0;
#if defined(__SSE2__)
  for (; t + 4 <= n; t += 4) {
    __m128 re, im;
    s.load4(t, re, im);
    const __m128 m = _mm_loadu_ps(r + t), positive = _mm_cmpgt_ps(m, _mm_setzero_ps());
    const __m128 ratio = _mm_div_ps(re, sse::select(positive, m, _mm_set1_ps(1.0f)));
    _mm_storeu_ps(y + t, sse::select(positive, ratio, _mm_set1_ps(1.0f)));
  }
#endif
  for (; t < n; ++t) y[t] = r[t] > 0 ? s.re(t) / r[t] : 1.0f;
}

/// y[t] = cosine(re, im) of samples t < n (y may not alias the samples).
template <class Samples>
void cosine(const Samples& s, float* y, std::uint64_t n) {
  modulus(s, y, n);
  cosine_from_modulus(s, y, y, n);
}

}  // namespace dwsr::operators::detail
