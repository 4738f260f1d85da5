#pragma once
/// \file The reference's volume-curvature formulas at each voxel (H, K, Kmax,
/// Kmin from the dips u, v and the uniform-filtered first derivatives of u and
/// v), for one voxel and for a row of voxels in vector lanes.
///
/// Limit: arithmetic, about 45 float operations per voxel, 7 of them divisions
/// and 4 square roots. A loop calling std::sqrt does not vectorise (math errno),
/// so curvature_row runs the formulas in three passes over blocks of samples,
/// the roots between them in vector lanes (sqrt_lanes.hpp): the same
/// operations in the same order, hence the same bits, as curvature::at.

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "dwsr/core/simd_isa.hpp"
#include "dwsr/operators/detail/sqrt_lanes.hpp"

namespace dwsr::operators::detail {

/// The curvature attributes at one voxel from the dips (u, v) = -(il, xl) /
/// dip_factor and the uniform-filtered first derivatives of u and v, in the
/// reference's float32 operation order (so its +-inf and NaN fall alike).
/// at() composes three stages around its square roots: radicands_of, then
/// mean_gaussian (H, K), then principal.
struct curvature {
  float H, K, Kmax, Kmin;

  // The reference's surface (u, v, w = 1) with w's derivatives 0 and E = G = 1,
  // kept as named operands: x + 0 is not folded (it turns -0 into +0).
  static constexpr float w = 1, wx = 0, wy = 0, wz = 0, E = 1, G = 1;

  /// The three radicands: u^2 + v^2 + w^2, u^2 + v^2 and v^2 + w^2.
  struct radicands {
    float uvw, uv, vw;
  };
  static radicands radicands_of(float u, float v) {
    const float u2 = u * u, v2 = v * v, w2 = w * w;
    const float u2pv2 = u2 + v2;
    return {u2pv2 + w2, u2pv2, v2 + w2};
  }

  /// The mean (H) and Gaussian (K) curvatures, given the roots s, su and sv of
  /// the radicands uvw, uv and vw.
  static void mean_gaussian(float u, float v, float ux, float uy, float uz, float vx, float vy, float vz, float s,
                            float su, float sv, float& H, float& K) {
    const float uv = u * v, vw = v * w, u2 = u * u, v2 = v * v, w2 = w * w;
    const float u2pv2 = u2 + v2, v2pw2 = v2 + w2;
    const float F = -(u * w) / (su * sv);
    const float D = -(-uv * vx + u2 * vy + v2 * ux - uv * uy) / (u2pv2 * s);
    const float Di = -(vw * (uy + vx) - 2 * u * w * vy - v2 * (uz + wx) + uv * (vz + wy)) / (2 * su * sv * s);
    const float Dii = -(-vw * wy + v2 * wz + w2 * vy - vw * vz) / (v2pw2 * s);
    H = (E * Dii - 2 * F * Di + G * D) / (2 * (E * G - F * F));
    K = (D * Dii - Di * Di) / (E * G - F * F);
  }

  static float zero_nan(float x) { return std::isnan(x) ? 0.0f : x; }

  /// The attributes from H, K and root = sqrt(H^2 - K); NaN -> 0.
  static curvature principal(float H, float K, float root) {
    return {zero_nan(H), zero_nan(K), zero_nan(H + root), zero_nan(H - root)};
  }

  static curvature at(float u, float v, float ux, float uy, float uz, float vx, float vy, float vz) {
    const radicands r = radicands_of(u, v);
    float H, K;
    mean_gaussian(u, v, ux, uy, uz, vx, vy, vz, std::sqrt(r.uvw), std::sqrt(r.uv), std::sqrt(r.vw), H, K);
    return principal(H, K, std::sqrt(H * H - K));
  }
};

/// curvature::at for n voxels: from u[t], v[t] and the derivatives f[0..5][t]
/// (ux, uy, uz, vx, vy, vz), writes H, K, Kmax, Kmin to y[0..3][t], in the lanes
/// of Isa (call it inside with_simd_isa; every Isa gives the same bits).
template <simd_isa Isa>
inline void curvature_row(const float* u, const float* v, const float* const* f, float* const* y, std::uint64_t n) {
  // Each pass writes only this scratch (the outputs last), so the compiler
  // vectorises it without checking the rows for overlap.
  constexpr std::uint64_t block = 64;
  alignas(64) float s[block], su[block], sv[block], H[block], K[block], root[block];
  const float *ux = f[0], *uy = f[1], *uz = f[2], *vx = f[3], *vy = f[4], *vz = f[5];
  for (std::uint64_t t0 = 0; t0 < n; t0 += block) {
    const std::uint64_t m = std::min(block, n - t0);
    for (std::uint64_t k = 0; k < m; ++k) {
      const auto r = curvature::radicands_of(u[t0 + k], v[t0 + k]);
      s[k] = r.uvw, su[k] = r.uv, sv[k] = r.vw;
    }
    sqrt_each<Isa>(s, m), sqrt_each<Isa>(su, m), sqrt_each<Isa>(sv, m);
    for (std::uint64_t k = 0; k < m; ++k) {
      const auto t = t0 + k;
      curvature::mean_gaussian(u[t], v[t], ux[t], uy[t], uz[t], vx[t], vy[t], vz[t], s[k], su[k], sv[k], H[k], K[k]);
      root[k] = H[k] * H[k] - K[k];
    }
    sqrt_each<Isa>(root, m);
    for (std::uint64_t k = 0; k < m; ++k) {
      const auto c = curvature::principal(H[k], K[k], root[k]);
      y[0][t0 + k] = c.H, y[1][t0 + k] = c.K, y[2][t0 + k] = c.Kmax, y[3][t0 + k] = c.Kmin;
    }
  }
}

}  // namespace dwsr::operators::detail
