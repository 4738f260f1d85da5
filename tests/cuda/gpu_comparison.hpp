#pragma once
// A CUDA operator's output against the CPU operator's, for the cuda tests and
// bench/cuda_table: the largest difference over well-conditioned voxels and
// the tolerance of the reference tests (1e-4 max(1, max |cpu|)).
//
// The phase attributes are ill-conditioned where the analytic signal is
// small: an angle moves by |da| / |a| there, and numpy.unwrap's steps near
// +-pi may go either way, which the frequency's smoothing spreads over the
// 3 x 3 traces around. Voxels whose 3 x 3 x 3 neighbourhood has an envelope
// below 2 % of the cube's largest (on a sparse reflectivity cube, most of
// them) may differ beyond the tolerance, but only a few do (`outside`); the
// rest are held to the tolerance.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "dwsr/core/shape.hpp"

namespace dwsr::testing {

/// Whether an operator's values are angles of the analytic signal (or built on them).
inline bool phase_based(const std::string& op) {
  return op == "instantaneous_phase" || op == "cosine_instantaneous_phase" || op == "instantaneous_frequency" ||
         op == "sweetness";
}

/// The outcome of a comparison.
struct gpu_comparison {
  double max_abs_diff = 0;                  ///< over the compared voxels
  double tolerance = 0;                     ///< 1e-4 max(1, max |cpu|)
  std::uint64_t worst = 0;                  ///< index of the largest difference
  std::uint64_t finiteness_mismatches = 0;  ///< finite on one side only
  std::uint64_t ill_conditioned = 0;        ///< voxels not held to the tolerance
  std::uint64_t outside = 0;                ///< values beyond the tolerance, ill-conditioned or not
  bool ok() const { return finiteness_mismatches == 0 && max_abs_diff <= tolerance; }
};

/// Voxels of `shape` whose 3 x 3 x 3 neighbourhood has an envelope below `fraction` of the largest.
inline std::vector<bool> weak_envelope(const float* envelope, shape3 s, double fraction = 0.02) {
  double largest = 0;
  for (std::uint64_t i = 0; i < s.voxels(); ++i) largest = std::max(largest, double(envelope[i]));
  const auto n = s.voxels();
  std::vector<bool> weak(n, false);
  for (std::uint64_t i = 0; i < n; ++i) {
    if (double(envelope[i]) >= fraction * largest) continue;
    const auto t = std::int64_t(i % s.samples), x = std::int64_t(i / s.samples % s.crosslines),
               il = std::int64_t(i / s.samples / s.crosslines);
    for (std::int64_t a = -1; a <= 1; ++a)
      for (std::int64_t b = -1; b <= 1; ++b)
        for (std::int64_t c = -1; c <= 1; ++c) {
          const auto p = il + a, q = x + b, r = t + c;
          if (p < 0 || q < 0 || r < 0 || p >= std::int64_t(s.inlines) || q >= std::int64_t(s.crosslines) ||
              r >= std::int64_t(s.samples))
            continue;
          weak[std::uint64_t((p * std::int64_t(s.crosslines) + q) * std::int64_t(s.samples) + r)] = true;
        }
  }
  return weak;
}

/// Compares n floats (complex values as pairs: `per_voxel` floats a voxel);
/// `weak` (or empty) marks voxels not held to the tolerance.
inline gpu_comparison compare_outputs(const float* gpu, const float* cpu, std::uint64_t n, std::uint64_t per_voxel,
                                      const std::vector<bool>& weak) {
  gpu_comparison c;
  double largest = 0;
  for (std::uint64_t i = 0; i < n; ++i)
    if (std::isfinite(cpu[i])) largest = std::max(largest, std::abs(double(cpu[i])));
  c.tolerance = 1e-4 * std::max(1.0, largest);
  for (std::uint64_t i = 0; i < n; ++i) {
    if (std::isfinite(gpu[i]) != std::isfinite(cpu[i])) {
      ++c.finiteness_mismatches;
      continue;
    }
    if (!std::isfinite(cpu[i])) continue;
    const double d = std::abs(double(gpu[i]) - double(cpu[i]));
    c.outside += d > c.tolerance;
    if (!weak.empty() && weak[i / per_voxel]) {
      c.ill_conditioned += (i % per_voxel == 0);
      continue;
    }
    if (d > c.max_abs_diff) c.max_abs_diff = d, c.worst = i;
  }
  return c;
}

}  // namespace dwsr::testing
