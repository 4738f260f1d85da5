#pragma once
/// \file Square roots of float arrays in SIMD lanes. The build keeps math errno
/// on, so a loop calling std::sqrt does not vectorise (the call may set errno);
/// the SSE2 root is the same correctly rounded IEEE operation, so results are
/// std::sqrt's bit for bit, four samples per instruction.

#include <cmath>
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

}  // namespace dwsr::operators::detail
