#pragma once
/// \file Per-voxel symmetric eigen-solves in double precision (the reference
/// runs numpy.linalg.eigh / eigvalsh in float64) of the 3x3 gradient structure
/// tensor, in closed form: the eigenvalues are the roots of the characteristic
/// cubic of the shifted, scaled tensor (largest root by Halley steps, the other
/// two from the deflated quadratic, no trigonometric calls), the principal
/// eigenvector the largest cross product of two rows of A - lambda_max I. Only
/// where the two largest eigenvalues nearly coincide (the vector is then
/// ill-conditioned) does cyclic Jacobi take over. Every matrix lives on the
/// stack, nothing is allocated.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <utility>

#include "dwsr/core/host_device.hpp"
#include "dwsr/core/simd_isa.hpp"
#include "dwsr/operators/detail/sqrt_lanes.hpp"

namespace dwsr::operators::detail {

/// Eigenvalues (ascending) and the unit eigenvector of the largest one.
struct tensor_eigen {
  std::array<double, 3> values{};
  std::array<double, 3> principal{};
};

/// Cyclic Jacobi rotations on a symmetric 3x3 matrix `a` (row-major, both
/// triangles), accumulating the eigenvectors as the columns of `v`; on return
/// the diagonal of `a` holds the eigenvalues. Jacobi is accurate to a few ulps
/// of every eigenvalue (small ones included) and converges in a few sweeps.
DWSR_HOST_DEVICE inline void jacobi3(double a[3][3], double v[3][3]) {
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) v[r][c] = r == c;
  constexpr int pairs[3][2] = {{0, 1}, {0, 2}, {1, 2}};
  for (int sweep = 0; sweep < 64; ++sweep) {
    if (a[0][1] == 0 && a[0][2] == 0 && a[1][2] == 0) return;
    for (const auto& pq : pairs) {
      const int p = pq[0], q = pq[1], r = 3 - p - q;
      const double apq = a[p][q];
      if (apq == 0) continue;
      const double app = a[p][p], aqq = a[q][q], g = 100 * std::abs(apq);
      // An off-diagonal below the diagonal's precision is dropped.
      if (std::abs(app) + g == std::abs(app) && std::abs(aqq) + g == std::abs(aqq)) {
        a[p][q] = a[q][p] = 0;
        continue;
      }
      const double h = aqq - app;
      double t;  // tan of the rotation angle, the smaller root
      if (std::abs(h) + g == std::abs(h)) {
        t = apq / h;
      } else {
        const double theta = 0.5 * h / apq;
        t = 1 / (std::abs(theta) + std::sqrt(1 + theta * theta));
        if (theta < 0) t = -t;
      }
      const double c = 1 / std::sqrt(1 + t * t), s = t * c, tau = s / (1 + c);
      a[p][p] = app - t * apq;
      a[q][q] = aqq + t * apq;
      a[p][q] = a[q][p] = 0;
      const double arp = a[r][p], arq = a[r][q];
      a[r][p] = a[p][r] = arp - s * (arq + arp * tau);
      a[r][q] = a[q][r] = arq + s * (arp - arq * tau);
      for (int k = 0; k < 3; ++k) {
        const double vkp = v[k][p], vkq = v[k][q];
        v[k][p] = vkp - s * (vkq + vkp * tau);
        v[k][q] = vkq + s * (vkp - vkq * tau);
      }
    }
  }
}

/// The characteristic cubic of a symmetric 3x3 matrix A in normalised form: A
/// = q I + p B with q = trace / 3 and p = sqrt(trace(B'B) / 6), so that B's
/// eigenvalues beta solve beta^3 - 3 beta - 2 r = 0, r = det(B) / 2 in [-1, 1],
/// and lie in [-2, 2]. beta holds them descending.
struct normalised_cubic {
  double q = 0, p = 0;
  std::array<double, 3> beta{};
};

/// The roots of the cubic of the matrix with diagonal d and off-diagonal
/// (a01, a02, a12), none of it zero-tested (p may be 0 or NaN: callers check).
/// beta_1 by Halley's iteration from 1 + 2 s / sqrt(3), s = sqrt((1 + r) / 2):
/// an upper bound of the root exact to first order where beta_1 nears the
/// double root 1 (r = -1), so four steps reach double precision for every r.
/// The other two roots come from the deflated quadratic beta^2 + beta_1 beta
/// + beta_1^2 - 3; where they nearly coincide (r near 1) each may move by
/// ~1e-8 p (their sum stays exact), below float32 resolution of the tensor.
DWSR_HOST_DEVICE inline normalised_cubic solve_cubic(const double d[3], double a01, double a02, double a12) {
  normalised_cubic out;
  const double off = a01 * a01 + a02 * a02 + a12 * a12;
  out.q = (d[0] + d[1] + d[2]) / 3;
  const double b00 = d[0] - out.q, b11 = d[1] - out.q, b22 = d[2] - out.q;
  out.p = std::sqrt((b00 * b00 + b11 * b11 + b22 * b22 + 2 * off) / 6);
  const double det = b00 * (b11 * b22 - a12 * a12) - a01 * (a01 * b22 - a12 * a02) + a02 * (a01 * a12 - b11 * a02);
  const double r = std::clamp(det / (2 * out.p * out.p * out.p), -1.0, 1.0);
  const double s = std::sqrt(0.5 * (1 + r));
  double beta = std::min(2.0, 1 + (2 / std::numbers::sqrt3) * s);
  for (int k = 0; k < 4; ++k) {
    const double f = (beta * beta - 3) * beta - 2 * r;
    const double df = 3 * (beta * beta - 1);
    const double denominator = 2 * df * df - 6 * beta * f;
    if (denominator > 0) beta -= 2 * f * df / denominator;
  }
  const double root = std::sqrt(std::max(0.0, 12 - 3 * beta * beta));
  out.beta = {beta, 0.5 * (root - beta), -0.5 * (root + beta)};
  return out;
}

/// Where the two largest normalised roots are closer than this (in units of p),
/// the principal vector is left to Jacobi: the cross products lose
/// ~eps / gap^2 of accuracy, 1e-10 at this gap.
inline constexpr double principal_gap = 1e-3;

/// Eigenvalues (ascending) and principal vector of a diagonal matrix: ties in
/// axis order, like LAPACK, and the last of equal maxima.
DWSR_HOST_DEVICE inline tensor_eigen diagonal_eigensystem(const double d[3]) {
  int order[3] = {0, 1, 2};
  for (int i = 1; i < 3; ++i)
    for (int k = i; k > 0 && d[order[k]] < d[order[k - 1]]; --k) std::swap(order[k], order[k - 1]);
  tensor_eigen out;
  for (int k = 0; k < 3; ++k) out.values[k] = d[order[k]];
  out.principal[order[2]] = 1;
  return out;
}

/// Eigenvalues and principal vector by Jacobi rotations (any symmetric matrix).
DWSR_HOST_DEVICE inline tensor_eigen jacobi_eigensystem(const double d[3], double a01, double a02, double a12) {
  double a[3][3] = {{d[0], a01, a02}, {a01, d[1], a12}, {a02, a12, d[2]}};
  double v[3][3];
  jacobi3(a, v);
  int order[3] = {0, 1, 2};
  for (int i = 1; i < 3; ++i)
    for (int k = i; k > 0 && a[order[k]][order[k]] < a[order[k - 1]][order[k - 1]]; --k)
      std::swap(order[k], order[k - 1]);
  tensor_eigen out;
  for (int k = 0; k < 3; ++k) out.values[k] = a[order[k]][order[k]];
  for (int k = 0; k < 3; ++k) out.principal[k] = v[k][order[2]];
  return out;
}

/// Eigenvalues (ascending, ties in axis order, like LAPACK on a diagonal
/// matrix) and the unit eigenvector of the largest (the last of equal maxima:
/// the zero tensor of a flat region gives the time axis (0, 0, 1), as numpy's
/// eigh + argsort do) of the tensor [[gi2, gigj, gigk], [gigj, gj2, gjgk],
/// [gigk, gjgk, gk2]] given by its six components in the reference's order
/// (gi2, gj2, gk2, gigj, gigk, gjgk). Closed form (solve_cubic, then the
/// largest of the three cross products of rows of B - beta_1 I, whose norm is
/// |(beta_1 - beta_2)(beta_1 - beta_3)|); Jacobi where beta_1 - beta_2 <
/// principal_gap or the tensor is not finite. Eigenvalues: a few ulps of the
/// largest, as LAPACK's bound; principal vector: within 1e-10.
DWSR_HOST_DEVICE inline tensor_eigen tensor_eigensystem(const float* c) {
  const double d[3] = {c[0], c[1], c[2]};
  const double a01 = c[3], a02 = c[4], a12 = c[5];
  if (a01 == 0 && a02 == 0 && a12 == 0) return diagonal_eigensystem(d);
  const auto cubic = solve_cubic(d, a01, a02, a12);
  const auto& beta = cubic.beta;
  if (!(beta[0] - beta[1] >= principal_gap) || !std::isfinite(cubic.p)) return jacobi_eigensystem(d, a01, a02, a12);
  // Rows of B - beta_1 I; the eigenvector spans their orthogonal complement.
  const double inv = 1 / cubic.p;
  const double m00 = (d[0] - cubic.q) * inv - beta[0], m11 = (d[1] - cubic.q) * inv - beta[0],
               m22 = (d[2] - cubic.q) * inv - beta[0];
  const double m01 = a01 * inv, m02 = a02 * inv, m12 = a12 * inv;
  // Cross products row0 x row1, row0 x row2, row1 x row2.
  const double x[3][3] = {{m01 * m12 - m02 * m11, m02 * m01 - m00 * m12, m00 * m11 - m01 * m01},
                          {m01 * m22 - m02 * m12, m02 * m02 - m00 * m22, m00 * m12 - m01 * m02},
                          {m11 * m22 - m12 * m12, m12 * m02 - m01 * m22, m01 * m12 - m11 * m02}};
  double norms[3];
  for (int k = 0; k < 3; ++k) norms[k] = x[k][0] * x[k][0] + x[k][1] * x[k][1] + x[k][2] * x[k][2];
  const int best = norms[0] >= norms[1] ? (norms[0] >= norms[2] ? 0 : 2) : (norms[1] >= norms[2] ? 1 : 2);
  const double scale = 1 / std::sqrt(norms[best]);
  tensor_eigen out;
  for (int k = 0; k < 3; ++k) {
    out.values[k] = cubic.q + cubic.p * beta[2 - k];
    out.principal[k] = x[best][k] * scale;
  }
  return out;
}

/// Eigenvalues of the tensor, ascending (numpy.linalg.eigvalsh), in closed
/// form (solve_cubic). Absolute error: a few ulps of the largest eigenvalue, as
/// LAPACK's bound, except where two eigenvalues nearly coincide: there each of
/// the pair may move by ~1e-8 of the tensor's norm (their sum stays exact),
/// below float32 resolution.
DWSR_HOST_DEVICE inline std::array<double, 3> tensor_eigenvalues(const float* c) {
  const double d[3] = {c[0], c[1], c[2]};
  const double a01 = c[3], a02 = c[4], a12 = c[5];
  if (a01 == 0 && a02 == 0 && a12 == 0) {
    std::array<double, 3> sorted{d[0], d[1], d[2]};
    std::sort(sorted.begin(), sorted.end());
    return sorted;
  }
  const auto cubic = solve_cubic(d, a01, a02, a12);
  return {cubic.q + cubic.p * cubic.beta[2], cubic.q + cubic.p * cubic.beta[1], cubic.q + cubic.p * cubic.beta[0]};
}

/// Voxels per call of eigen_rows (its arrays live on the stack).
inline constexpr std::size_t eigen_batch = 64;

/// Eigenvalues (ascending) and, when Vectors, principal vectors of a batch of
/// voxels in structure-of-arrays form.
struct eigen_rows {
  double values[3][eigen_batch];
  double principal[3][eigen_batch];
  /// Voxel k as tensor_eigensystem returns it.
  tensor_eigen at(std::size_t k) const {
    return {{values[0][k], values[1][k], values[2][k]}, {principal[0][k], principal[1][k], principal[2][k]}};
  }
};

/// tensor_eigensystem (Vectors) or tensor_eigenvalues (values only) of the
/// voxels [t0, t0 + n) of the component rows c[0..5], n <= eigen_batch,
/// bitwise the per-voxel functions, in the lanes of Isa (the body of each
/// instruction set's clone). The closed form runs in stages, each a loop over
/// the batch without branches or dependences between voxels, so that its
/// divisions and square roots pipeline and vectorise (square roots by
/// sqrt_each) instead of waiting on one voxel's chain; diagonal, non-finite
/// and (Vectors) near-tied tensors are then redone one by one.
template <bool Vectors, simd_isa Isa>
void eigen_rows_in(const float* const* c, std::uint64_t t0, std::size_t n, eigen_rows& out) {
  double q[eigen_batch], p[eigen_batch], r[eigen_batch], beta[eigen_batch], root[eigen_batch];
  // Shift and scale (solve_cubic): q, p^2 and det(A - q I).
  for (std::size_t k = 0; k < n; ++k) {
    const std::uint64_t t = t0 + k;
    const double d0 = c[0][t], d1 = c[1][t], d2 = c[2][t], a01 = c[3][t], a02 = c[4][t], a12 = c[5][t];
    const double off = a01 * a01 + a02 * a02 + a12 * a12;
    q[k] = (d0 + d1 + d2) / 3;
    const double b00 = d0 - q[k], b11 = d1 - q[k], b22 = d2 - q[k];
    p[k] = (b00 * b00 + b11 * b11 + b22 * b22 + 2 * off) / 6;
    r[k] = b00 * (b11 * b22 - a12 * a12) - a01 * (a01 * b22 - a12 * a02) + a02 * (a01 * a12 - b11 * a02);
  }
  sqrt_each<Isa>(p, n);
  // Selections below pick between values already computed, by quiet
  // comparisons (std::isless, std::isgreater): under GCC's default trapping
  // math, an arithmetic operation or a signalling comparison inside a
  // conditional keeps the loop from vectorising.
  for (std::size_t k = 0; k < n; ++k) {
    const double x = r[k] / (2 * p[k] * p[k] * p[k]);
    const double above = std::isgreater(x, -1.0) ? x : -1.0;  // std::max(-1.0, x), NaN included
    r[k] = std::isless(above, 1.0) ? above : 1.0;             // std::min(1.0, above)
    beta[k] = 0.5 * (1 + r[k]);
  }
  sqrt_each<Isa>(beta, n);
  for (std::size_t k = 0; k < n; ++k) {
    const double start = 1 + (2 / std::numbers::sqrt3) * beta[k];
    beta[k] = std::isless(start, 2.0) ? start : 2.0;
  }
  // Halley's steps, each in two passes: every voxel's step, then b - step
  // where the denominator is positive (b - 0, which is b, elsewhere: the
  // scalar solve's skipped step). root's storage is free until the roots.
  double* denominator = root;
  double step[eigen_batch];
  for (int it = 0; it < 4; ++it) {
    for (std::size_t k = 0; k < n; ++k) {
      const double b = beta[k];
      const double f = (b * b - 3) * b - 2 * r[k];
      const double df = 3 * (b * b - 1);
      denominator[k] = 2 * df * df - 6 * b * f;
      step[k] = 2 * f * df / denominator[k];
    }
    for (std::size_t k = 0; k < n; ++k) beta[k] -= std::isgreater(denominator[k], 0.0) ? step[k] : 0.0;
  }
  for (std::size_t k = 0; k < n; ++k) {
    const double disc = 12 - 3 * beta[k] * beta[k];
    root[k] = std::isgreater(disc, 0.0) ? disc : 0.0;
  }
  sqrt_each<Isa>(root, n);
  for (std::size_t k = 0; k < n; ++k) {
    out.values[0][k] = q[k] + p[k] * (-0.5 * (root[k] + beta[k]));
    out.values[1][k] = q[k] + p[k] * (0.5 * (root[k] - beta[k]));
    out.values[2][k] = q[k] + p[k] * beta[k];
  }
  bool redo[eigen_batch];
  for (std::size_t k = 0; k < n; ++k) {
    const std::uint64_t t = t0 + k;
    const bool diagonal = c[3][t] == 0 && c[4][t] == 0 && c[5][t] == 0;
    const bool tied = !(beta[k] - 0.5 * (root[k] - beta[k]) >= principal_gap);
    redo[k] = diagonal || !(p[k] <= std::numeric_limits<double>::max()) || (Vectors && tied);
  }
  if constexpr (Vectors) {
    // The largest cross product of rows of B - beta_1 I, as tensor_eigensystem.
    double* norm = root;
    for (std::size_t k = 0; k < n; ++k) {
      const std::uint64_t t = t0 + k;
      const double inv = 1 / p[k], b = beta[k];
      const double m00 = (c[0][t] - q[k]) * inv - b, m11 = (c[1][t] - q[k]) * inv - b, m22 = (c[2][t] - q[k]) * inv - b;
      const double m01 = c[3][t] * inv, m02 = c[4][t] * inv, m12 = c[5][t] * inv;
      const double x0[3] = {m01 * m12 - m02 * m11, m02 * m01 - m00 * m12, m00 * m11 - m01 * m01};
      const double x1[3] = {m01 * m22 - m02 * m12, m02 * m02 - m00 * m22, m00 * m12 - m01 * m02};
      const double x2[3] = {m11 * m22 - m12 * m12, m12 * m02 - m01 * m22, m01 * m12 - m11 * m02};
      const double n0 = x0[0] * x0[0] + x0[1] * x0[1] + x0[2] * x0[2];
      const double n1 = x1[0] * x1[0] + x1[1] * x1[1] + x1[2] * x1[2];
      const double n2 = x2[0] * x2[0] + x2[1] * x2[1] + x2[2] * x2[2];
      const bool first = n0 >= n1 && n0 >= n2, second = !first && n1 >= n2;
      norm[k] = first ? n0 : second ? n1 : n2;
      for (int a = 0; a < 3; ++a) out.principal[a][k] = first ? x0[a] : second ? x1[a] : x2[a];
    }
    sqrt_each<Isa>(norm, n);
    for (std::size_t k = 0; k < n; ++k) {
      const double scale = 1 / norm[k];
      for (int a = 0; a < 3; ++a) out.principal[a][k] *= scale;
    }
  }
  for (std::size_t k = 0; k < n; ++k) {
    if (!redo[k]) continue;
    const std::uint64_t t = t0 + k;
    const float v[6] = {c[0][t], c[1][t], c[2][t], c[3][t], c[4][t], c[5][t]};
    if constexpr (Vectors) {
      const auto e = tensor_eigensystem(v);
      for (int a = 0; a < 3; ++a) out.values[a][k] = e.values[a], out.principal[a][k] = e.principal[a];
    } else {
      const auto e = tensor_eigenvalues(v);
      for (int a = 0; a < 3; ++a) out.values[a][k] = e[a];
    }
  }
}

/// eigen_rows_in with the lanes of `isa` (which the CPU must support; tests
/// compare the clones).
template <bool Vectors>
void eigen_rows_with(simd_isa isa, const float* const* c, std::uint64_t t0, std::size_t n, eigen_rows& out) {
  with_simd_isa(isa, [&](auto lanes) { eigen_rows_in<Vectors, lanes()>(c, t0, n, out); });
}

/// eigen_rows_in with the widest lanes in use (simd_isa_in_use): AVX-512 runs
/// the solve about 2x faster than the baseline's SSE2, the same bits.
template <bool Vectors>
void eigen_rows_of(const float* const* c, std::uint64_t t0, std::size_t n, eigen_rows& out) {
  eigen_rows_with<Vectors>(simd_isa_in_use(), c, t0, n, out);
}

}  // namespace dwsr::operators::detail
