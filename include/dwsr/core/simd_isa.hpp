#pragma once
/// \file The x86-64 vector instruction set a hot kernel runs with, chosen once
/// per process at run time. The build targets baseline x86-64 (SSE2: two
/// doubles per instruction) so that one binary runs anywhere; kernels bound by
/// arithmetic are also compiled, with GCC, as AVX2 (four doubles) and AVX-512
/// (eight) clones: with_simd_isa's wrappers, marked DWSR_TARGET_AVX2 /
/// DWSR_TARGET_AVX512, inline the kernel's whole body (`flatten`), which the
/// compiler then vectorises for that instruction set. simd_isa_in_use() picks
/// the widest the CPU and operating system support, capped by the environment
/// variable DWSR_SIMD (baseline, avx2 or avx512) for side-by-side comparisons.
///
/// Every clone computes the baseline's bits: vector division and square root
/// are IEEE's correctly rounded operations, GCC reassociates nothing without
/// -ffast-math, and no multiply-add is fused (AVX2 alone brings no FMA; the
/// AVX-512 clone, whose instruction set includes FMA, turns contraction off).
/// Tests compare every clone the CPU can run with the baseline bit for bit.

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <type_traits>

#include "dwsr/error.hpp"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#define DWSR_SIMD_CLONES 1
#define DWSR_TARGET_AVX2 __attribute__((target("avx2"), flatten))
#define DWSR_TARGET_AVX512 \
  __attribute__((target("avx512f,avx512vl,avx512dq,prefer-vector-width=512"), flatten, optimize("fp-contract=off")))
#else
// Baseline only: clang fuses multiply-adds by default (its clones would need
// a different switch), and nvcc's host pass runs no CPU kernel.
#define DWSR_SIMD_CLONES 0
#endif

namespace dwsr {

/// The instruction sets a cloned kernel can run with, narrowest first.
enum class simd_isa : std::uint8_t { baseline, avx2, avx512 };

inline std::string_view name(simd_isa isa) {
  switch (isa) {
    case simd_isa::avx2: return "avx2";
    case simd_isa::avx512: return "avx512";
    case simd_isa::baseline: break;
  }
  return "baseline";
}

/// The instruction set named `text` (as DWSR_SIMD spells it).
inline simd_isa parse_simd_isa(std::string_view text) {
  for (const auto isa : {simd_isa::baseline, simd_isa::avx2, simd_isa::avx512})
    if (text == name(isa)) return isa;
  throw invalid_input("DWSR_SIMD is '" + std::string(text) + "'; expected baseline, avx2 or avx512");
}

/// The widest instruction set of a clone this build has and this CPU (with
/// its operating system's saved vector state) runs.
inline simd_isa cpu_simd_isa() {
#if DWSR_SIMD_CLONES
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    return simd_isa::avx512;
  if (__builtin_cpu_supports("avx2")) return simd_isa::avx2;
#endif
  return simd_isa::baseline;
}

/// cpu_simd_isa(), capped by DWSR_SIMD when it is set; decided on the first
/// call (an unknown DWSR_SIMD throws invalid_input there).
inline simd_isa simd_isa_in_use() {
  static const simd_isa chosen = [] {
    const simd_isa cpu = cpu_simd_isa();
    const char* cap = std::getenv("DWSR_SIMD");
    if (cap == nullptr || *cap == '\0') return cpu;
    const simd_isa wanted = parse_simd_isa(cap);
    return wanted < cpu ? wanted : cpu;
  }();
  return chosen;
}

/// The instruction set Isa as a type: a kernel's lanes argument.
template <simd_isa Isa>
using simd_lanes = std::integral_constant<simd_isa, Isa>;

#if DWSR_SIMD_CLONES
template <class F>
DWSR_TARGET_AVX2 void in_avx2(F& f) {
  f(simd_lanes<simd_isa::avx2>{});
}
template <class F>
DWSR_TARGET_AVX512 void in_avx512(F& f) {
  f(simd_lanes<simd_isa::avx512>{});
}
#endif

/// Runs f(simd_lanes<isa>{}) compiled for `isa` (which the CPU must run):
/// everything f calls is inlined into that instruction set's clone. f's body
/// should be a leaf kernel (no thread pool, no allocation), since all of it is
/// inlined into every clone.
template <class F>
void with_simd_isa(simd_isa isa, F&& f) {
#if DWSR_SIMD_CLONES
  if (isa == simd_isa::avx512) return in_avx512(f);
  if (isa == simd_isa::avx2) return in_avx2(f);
#endif
  (void)isa;
  f(simd_lanes<simd_isa::baseline>{});
}

}  // namespace dwsr
