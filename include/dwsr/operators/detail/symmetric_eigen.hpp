#pragma once
/// \file Per-voxel symmetric eigen-solves in double precision (the reference
/// runs numpy.linalg.eigh / eigvalsh in float64) of the 3x3 gradient structure
/// tensor: eigenvectors by cyclic Jacobi, eigenvalues alone in closed form.
/// Every matrix lives on the stack, nothing is allocated.

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

/// Eigenvalues (ascending, ties in axis order, like LAPACK on a diagonal
/// matrix) and the unit eigenvector of the largest (the last of equal maxima:
/// the zero tensor of a flat region gives the time axis (0, 0, 1), as numpy's
/// eigh + argsort do) of the tensor [[gi2, gigj, gigk], [gigj, gj2, gjgk],
/// [gigk, gjgk, gk2]] given by its six components in the reference's order
/// (gi2, gj2, gk2, gigj, gigk, gjgk).
inline tensor_eigen tensor_eigensystem(const float* c) {
  double a[3][3] = {{c[0], c[3], c[4]}, {c[3], c[1], c[5]}, {c[4], c[5], c[2]}};
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

/// Eigenvalues of the tensor, ascending (numpy.linalg.eigvalsh), in closed
/// form (the trigonometric solution of the characteristic cubic). Absolute
/// error: a few ulps of the largest eigenvalue, as LAPACK's bound, except where
/// two eigenvalues nearly coincide: there each of the pair may move by ~1e-8
/// of the tensor's norm (their sum stays exact), below float32 resolution.
inline std::array<double, 3> tensor_eigenvalues(const float* c) {
  const double a00 = c[0], a11 = c[1], a22 = c[2], a01 = c[3], a02 = c[4], a12 = c[5];
  const double p1 = a01 * a01 + a02 * a02 + a12 * a12;
  if (p1 == 0) {
    std::array<double, 3> d{a00, a11, a22};
    std::sort(d.begin(), d.end());
    return d;
  }
  const double q = (a00 + a11 + a22) / 3;
  const double b00 = a00 - q, b11 = a11 - q, b22 = a22 - q;
  const double p = std::sqrt((b00 * b00 + b11 * b11 + b22 * b22 + 2 * p1) / 6);
  const double det = b00 * (b11 * b22 - a12 * a12) - a01 * (a01 * b22 - a12 * a02) + a02 * (a01 * a12 - b11 * a02);
  const double r = std::clamp(det / (2 * p * p * p), -1.0, 1.0);
  const double phi = std::acos(r) / 3;
  const double e1 = q + 2 * p * std::cos(phi);
  const double e3 = q + 2 * p * std::cos(phi + 2 * std::numbers::pi / 3);
  return {e3, 3 * q - e1 - e3, e1};
}

}  // namespace dwsr::operators::detail
