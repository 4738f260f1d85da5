#pragma once
/// \file Square roots of float and double arrays in SIMD lanes. The build keeps
/// math errno on, so a loop calling std::sqrt does not vectorise (the call may
/// set errno); the SSE2 roots (baseline x86-64) are the same correctly rounded
/// IEEE operation, so results are std::sqrt's bit for bit, four floats or two
/// doubles per instruction.

#include <cmath>
#include <cstddef>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace dwsr::operators::detail {

/// y[t] = sqrt(y[t]) for t < n, NaN (from NaN or negative input) -> 0.
inline void sqrt_nan_to_zero(float* y, std::uint64_t n) {
  std::uint64_t t = 0;
#if defined(__SSE2__)
  for (; t + 4 <= n; t += 4) {
    const __m128 r = _mm_sqrt_ps(_mm_loadu_ps(y + t));
    _mm_storeu_ps(y + t, _mm_and_ps(r, _mm_cmpord_ps(r, r)));  // NaN lanes -> +0
  }
#endif
  for (; t < n; ++t) {
    const float r = std::sqrt(y[t]);
    y[t] = std::isnan(r) ? 0.0f : r;
  }
}

/// x[k] = sqrt(x[k]) for k < n (NaN for a negative x, as std::sqrt).
inline void sqrt_each(double* x, std::size_t n) {
  std::size_t k = 0;
#if defined(__SSE2__)
  for (; k + 2 <= n; k += 2) _mm_storeu_pd(x + k, _mm_sqrt_pd(_mm_loadu_pd(x + k)));
#endif
  for (; k < n; ++k) x[k] = std::sqrt(x[k]);
}

}  // namespace dwsr::operators::detail
