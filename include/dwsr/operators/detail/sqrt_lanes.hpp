#pragma once
/// \file Square roots of float and double arrays in SIMD lanes. The build keeps
/// math errno on, so a loop calling std::sqrt does not vectorise (the call may
/// set errno); the SSE2 roots (baseline x86-64) and those of the AVX2 and
/// AVX-512 clones (core/simd_isa.hpp) are the same correctly rounded IEEE
/// operation, so results are std::sqrt's bit for bit, two to eight doubles (four
/// to sixteen floats) per instruction.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "dwsr/core/simd_isa.hpp"

#if DWSR_SIMD_CLONES
#include <immintrin.h>
#elif defined(__SSE2__)
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

// Each instruction set's roots of float or double lanes (intrinsics need
// their instruction set's target: the wider ones are inlined into that set's
// clones). Each returns how many it took.
#if DWSR_SIMD_CLONES
template <class T>
DWSR_TARGET_AVX2 inline std::size_t sqrt_lanes_avx2(T* x, std::size_t n) {
  constexpr std::size_t lanes = 32 / sizeof(T);
  std::size_t k = 0;
  for (; k + lanes <= n; k += lanes)
    if constexpr (std::is_same_v<T, float>)
      _mm256_storeu_ps(x + k, _mm256_sqrt_ps(_mm256_loadu_ps(x + k)));
    else
      _mm256_storeu_pd(x + k, _mm256_sqrt_pd(_mm256_loadu_pd(x + k)));
  return k;
}
template <class T>
DWSR_TARGET_AVX512 inline std::size_t sqrt_lanes_avx512(T* x, std::size_t n) {
  // The masked forms: _mm512_sqrt_ps and _pd trip GCC 12 -Wuninitialized.
  constexpr std::size_t lanes = 64 / sizeof(T);
  std::size_t k = 0;
  for (; k + lanes <= n; k += lanes)
    if constexpr (std::is_same_v<T, float>) {
      const __m512 v = _mm512_loadu_ps(x + k);
      _mm512_storeu_ps(x + k, _mm512_mask_sqrt_ps(v, 0xffff, v));
    } else {
      const __m512d v = _mm512_loadu_pd(x + k);
      _mm512_storeu_pd(x + k, _mm512_mask_sqrt_pd(v, 0xff, v));
    }
  return k;
}
#endif
#if defined(__SSE2__)
template <class T>
inline std::size_t sqrt_lanes_sse2(T* x, std::size_t n) {
  constexpr std::size_t lanes = 16 / sizeof(T);
  std::size_t k = 0;
  for (; k + lanes <= n; k += lanes)
    if constexpr (std::is_same_v<T, float>)
      _mm_storeu_ps(x + k, _mm_sqrt_ps(_mm_loadu_ps(x + k)));
    else
      _mm_storeu_pd(x + k, _mm_sqrt_pd(_mm_loadu_pd(x + k)));
  return k;
}
#endif

/// x[k] = sqrt(x[k]) for k < n (NaN for a negative x, as std::sqrt), T float
/// or double, in the lanes of Isa (inlined into that instruction set's clone
/// of a kernel).
template <simd_isa Isa = simd_isa::baseline, class T>
inline void sqrt_each(T* x, std::size_t n) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  std::size_t k = 0;
#if DWSR_SIMD_CLONES
  if constexpr (Isa == simd_isa::avx512) k = sqrt_lanes_avx512(x, n);
  if constexpr (Isa == simd_isa::avx2) k = sqrt_lanes_avx2(x, n);
#endif
#if defined(__SSE2__)
  k += sqrt_lanes_sse2(x + k, n - k);
#endif
  for (; k < n; ++k) x[k] = std::sqrt(x[k]);
}

}  // namespace dwsr::operators::detail
