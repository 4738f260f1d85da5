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
#include <numbers>
#include <utility>

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
inline void jacobi3(double a[3][3], double v[3][3]) {
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
inline normalised_cubic solve_cubic(const double d[3], double a01, double a02, double a12) {
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
inline tensor_eigen diagonal_eigensystem(const double d[3]) {
  int order[3] = {0, 1, 2};
  for (int i = 1; i < 3; ++i)
    for (int k = i; k > 0 && d[order[k]] < d[order[k - 1]]; --k) std::swap(order[k], order[k - 1]);
  tensor_eigen out;
  for (int k = 0; k < 3; ++k) out.values[k] = d[order[k]];
  out.principal[order[2]] = 1;
  return out;
}

/// Eigenvalues and principal vector by Jacobi rotations (any symmetric matrix).
inline tensor_eigen jacobi_eigensystem(const double d[3], double a01, double a02, double a12) {
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
inline tensor_eigen tensor_eigensystem(const float* c) {
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
inline std::array<double, 3> tensor_eigenvalues(const float* c) {
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

}  // namespace dwsr::operators::detail
