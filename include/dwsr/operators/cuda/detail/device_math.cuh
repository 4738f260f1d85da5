#pragma once
/// \file Per-voxel math of the CUDA operators, `DWSR_HOST_DEVICE` so that
/// the same function is called from a kernel and from a host check, and the
/// launch helpers they share: scipy.ndimage's "reflect" border, and loops
/// over the voxels of a cube view. Plain C++ outside nvcc, so that host
/// tests include it too.

#include <cstdint>

#include "dwsr/core/host_device.hpp"
#include "dwsr/core/shape.hpp"

namespace dwsr::operators::cuda::detail {

/// scipy.ndimage's "reflect" border (d c b a | a b c d | d c b a) of index i
/// on an axis of n samples (n >= 1), for any i; indices inside the axis (the
/// common case) cost one comparison.
DWSR_HOST_DEVICE inline std::int64_t reflect(std::int64_t i, std::int64_t n) {
  if (i >= 0 && i < n) return i;
  if (n == 1) return 0;
  const std::int64_t period = 2 * n;
  i %= period;
  if (i < 0) i += period;
  return i < n ? i : period - 1 - i;
}

/// The three axis lengths and strides of a C-order cube (time fastest).
struct cube_geometry {
  std::int64_t n[3];  ///< inline, crossline, time
  DWSR_HOST_DEVICE std::int64_t at(std::int64_t il, std::int64_t x, std::int64_t t) const {
    return (il * n[1] + x) * n[2] + t;
  }
  /// The coordinates of voxel i (32-bit divisions where the cube allows: a
  /// 64-bit one costs several times more on a GPU).
  DWSR_HOST_DEVICE void split(std::uint64_t i, std::int64_t& il, std::int64_t& x, std::int64_t& t) const {
    if (i <= 0xffffffffu && n[1] * n[2] <= 0xffffffff) {
      const auto j = static_cast<std::uint32_t>(i), nt = static_cast<std::uint32_t>(n[2]);
      const auto r = j / nt;
      t = j - r * nt;
      const auto nx = static_cast<std::uint32_t>(n[1]), q = r / nx;
      x = r - q * nx;
      il = q;
      return;
    }
    t = std::int64_t(i % std::uint64_t(n[2]));
    const auto r = i / std::uint64_t(n[2]);
    x = std::int64_t(r % std::uint64_t(n[1]));
    il = std::int64_t(r / std::uint64_t(n[1]));
  }
  static cube_geometry of(shape3 s) {
    return {{std::int64_t(s.inlines), std::int64_t(s.crosslines), std::int64_t(s.samples)}};
  }
};

/// Double products and sums rounded once each (never fused): the CPU's arithmetic.
DWSR_HOST_DEVICE inline double mul_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
DWSR_HOST_DEVICE inline float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
DWSR_HOST_DEVICE inline double add_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
DWSR_HOST_DEVICE inline double sub_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}

/// NaN -> 0, as the reference's operators finish.
DWSR_HOST_DEVICE inline float nan_to_zero(float v) { return v != v ? 0.0f : v; }

}  // namespace dwsr::operators::cuda::detail
