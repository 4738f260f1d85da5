#pragma once
/// \file The largest eigenvalue of a stream of small symmetric positive
/// semi-definite matrices that change little from one call to the next (the
/// covariances of windows sliding along a trace). Each call takes a few power
/// steps from the previous call's eigenvector, then Rayleigh-quotient
/// iteration (its first step by a symmetric factorisation without pivoting,
/// the rare others by Gaussian elimination with partial pivoting), and
/// certifies the Rayleigh quotient rho (which never exceeds the largest
/// eigenvalue) to rho <= lambda_max < rho + tolerance * trace(C):
/// by Temple's bound where it applies (rho holds more than half the trace: 19
/// voxels in 20 of the synthetic benchmark cube; free once C v is known), else by a Cholesky
/// factorisation of sigma I - C, which succeeds only if every eigenvalue of C
/// is below sigma = rho + tolerance * trace(C).
/// When the iteration settles on a smaller eigenvalue (the top two swap as the
/// window slides), it continues in that eigenvector's orthogonal complement;
/// the rare calls still uncertified (about 1e-4 on seismic data) fall back to
/// Eigen's full symmetric solver. The result depends only on the sequence of
/// matrices, never on threads. Scratch comes from the caller (the context);
/// the fallback's matrices live on the stack. An order known at compile time
/// (Order > 0) unrolls and vectorises the small loops, the same operations in
/// the same order, so the same bits.

#include <Eigen/Core>
#include <Eigen/Eigenvalues>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <type_traits>

namespace dwsr::operators::detail {

/// Largest eigenvalues of n x n symmetric PSD matrices (n <= max_size),
/// warm-started; n is Order when Order > 0.
template <std::uint64_t Order = 0>
class basic_largest_eigenvalue_solver {
 public:
  /// Largest supported matrix order (the fallback's stack matrices).
  static constexpr std::uint64_t max_size = 49;
  /// Relative accuracy certified for lambda_max / trace(C).
  static constexpr double tolerance = 1e-10;
  /// Power steps from the previous call's eigenvector before Rayleigh-quotient iteration.
  static constexpr int power_steps = 3;
  /// Scratch doubles one solver needs for order n.
  static constexpr std::uint64_t scratch_size(std::uint64_t n) { return n * n + 3 * n; }

  basic_largest_eigenvalue_solver(std::uint64_t n, double* scratch)
      : n_(n), m_(scratch), v_(scratch + n * n), w_(v_ + n), u_(w_ + n) {
    assert(Order == 0 || n == Order);
  }

  /// Forgets the warm start (next call starts from power iterations).
  void reset() { warm_ = false; }

  /// lambda_max of the symmetric matrix c (n x n, both triangles), whose trace
  /// is `trace` (> 0): within tolerance * trace below the exact value.
  double operator()(const double* c, double trace) {
    if (!warm_) {
      std::fill(v_, v_ + order(), 1.0 / std::sqrt(double(order())));
      for (int k = 0; k < 8; ++k) power_step(c);
    }
    warm_power_steps(c);
    bool deflated = false;
    double previous = -1;
    for (int it = 0; it < 12; ++it) {
      if (it > 0 || !symmetric_inverse_step(c)) inverse_step(c);
      if (deflated) project_out(u_, v_), normalise(v_);
      const double rho = rayleigh(c);
      if (temple_certified(rho, trace) || certified(c, rho + tolerance * trace)) {
        warm_ = true;
        return rho;
      }
      if (std::abs(rho - previous) <= 1e-12 * trace) {
        if (deflated) break;
        // Converged to an eigenvector u that is not the largest one: the
        // largest is orthogonal to u, so iterate in u's complement.
        deflated = true;
        std::copy(v_, v_ + order(), u_);
        std::fill(v_, v_ + order(), 1.0);
        for (int k = 0; k < 4; ++k) {
          project_out(u_, v_);
          power_step(c);
        }
        project_out(u_, v_);
        normalise(v_);
        previous = -1;
        continue;
      }
      previous = rho;
    }
    return fallback(c);
  }

  /// operator() warm-started from the unit vector v (from scratch where v is
  /// not finite), which receives the new estimate of the eigenvector.
  double operator()(const double* c, double trace, double* v) {
    warm_ = std::all_of(v, v + order(), [](double x) { return std::isfinite(x); });
    if (warm_) std::copy(v, v + order(), v_);
    const double rho = (*this)(c, trace);
    std::copy(v_, v_ + order(), v);
    return rho;
  }

 private:
  std::uint64_t order() const {
    if constexpr (Order > 0)
      return Order;
    else
      return n_;
  }

  // v = C v / |C v|.
  void power_step(const double* c) {
    multiply(c, v_, w_);
    if (normalise(w_)) std::copy(w_, w_ + order(), v_);
  }

  // v = C^k v / |C^k v| for k = power_steps, normalised once (v kept where
  // that vector is 0 or not finite): C's entries are sums of products of
  // float32 samples (below 1e80), so C^3 v cannot overflow.
  void warm_power_steps(const double* c) {
    double* x = v_;
    for (int k = 0; k < power_steps; ++k) {
      double* y = k % 2 == 0 ? w_ : u_;
      multiply(c, x, y);
      x = y;
    }
    if (normalise(x)) std::copy(x, x + order(), v_);
  }

  // v = (C - rho I)^-1 v / |...| by Gaussian elimination with partial pivoting
  // (v is kept when C - rho I is exactly singular or the solve overflows).
  void inverse_step(const double* c) {
    const double rho = rayleigh(c);
    const auto n = order();
    std::copy(c, c + n * n, m_);
    for (std::uint64_t k = 0; k < n; ++k) m_[k * n + k] -= rho;
    std::copy(v_, v_ + n, w_);
    for (std::uint64_t k = 0; k < n; ++k) {
      std::uint64_t p = k;
      for (std::uint64_t r = k + 1; r < n; ++r)
        if (std::abs(m_[r * n + k]) > std::abs(m_[p * n + k])) p = r;
      if (m_[p * n + k] == 0) return;
      if (p != k) {
        std::swap_ranges(m_ + k * n + k, m_ + k * n + n, m_ + p * n + k);
        std::swap(w_[k], w_[p]);
      }
      const double inverse = 1.0 / m_[k * n + k];  // the diagonal keeps the pivots' reciprocals
      m_[k * n + k] = inverse;
      for (std::uint64_t r = k + 1; r < n; ++r) {
        const double f = m_[r * n + k] * inverse;
        if (f == 0) continue;
        for (std::uint64_t col = k + 1; col < n; ++col) m_[r * n + col] -= f * m_[k * n + col];
        w_[r] -= f * w_[k];
      }
    }
    for (std::uint64_t k = n; k-- > 0;) {
      double sum = w_[k];
      for (std::uint64_t col = k + 1; col < n; ++col) sum -= m_[k * n + col] * w_[col];
      w_[k] = sum * m_[k * n + k];
    }
    if (normalise(w_)) std::copy(w_, w_ + n, v_);
  }

  // inverse_step's result (up to sign) by an LDL^T factorisation of rho I - C
  // without pivoting: half the arithmetic, no pivot search, and solves whose
  // inner loops are independent updates rather than chains of sums. Without
  // pivoting a tiny pivot can cost accuracy, never correctness (the result is
  // certified after the step); false, v untouched, where a pivot vanishes or
  // the result is not finite.
  bool symmetric_inverse_step(const double* c) {
    const double rho = rayleigh(c);
    const auto n = order();
    for (std::uint64_t r = 0; r < n; ++r)
      for (std::uint64_t col = 0; col <= r; ++col) m_[r * n + col] = (r == col ? rho : 0.0) - c[r * n + col];
    // Step k: the lower triangle's column k holds d_k l_rk (the Schur
    // complement's), then l_rk, as does row k of the upper triangle; the
    // diagonal keeps 1 / d_k.
    for (std::uint64_t k = 0; k < n; ++k) {
      const double d = m_[k * n + k];
      if (d == 0) return false;
      const double inverse = 1.0 / d;
      m_[k * n + k] = inverse;
      for (std::uint64_t r = k + 1; r < n; ++r) {
        const double l = m_[r * n + k] * inverse;
        m_[k * n + r] = l;
        for (std::uint64_t col = k + 1; col <= r; ++col) m_[r * n + col] -= l * m_[col * n + k];
      }
      for (std::uint64_t r = k + 1; r < n; ++r) m_[r * n + k] = m_[k * n + r];
    }
    // L y = v, D z = y, L^T x = z, each by columns.
    std::copy(v_, v_ + n, w_);
    for (std::uint64_t k = 0; k < n; ++k)
      for (std::uint64_t r = k + 1; r < n; ++r) w_[r] -= m_[k * n + r] * w_[k];
    for (std::uint64_t k = 0; k < n; ++k) w_[k] *= m_[k * n + k];
    for (std::uint64_t r = n; r-- > 1;)
      for (std::uint64_t k = 0; k < r; ++k) w_[k] -= m_[r * n + k] * w_[r];
    if (!normalise(w_)) return false;
    std::copy(w_, w_ + n, v_);
    return true;
  }

  // Temple's bound for the Rayleigh quotient rho of the unit vector v (w = C v):
  // when every other eigenvalue is at most a < rho, lambda_max <= rho + |C v -
  // rho v|^2 / (rho - a). C is positive semi-definite, so the second eigenvalue
  // is at most trace - lambda_max <= trace - rho = a: certified when rho holds
  // more than half the trace and the residual is small enough.
  bool temple_certified(double rho, double trace) const {
    const double margin = 2 * rho - trace;
    if (!(margin > 0)) return false;
    double r2 = 0;
    for (std::uint64_t k = 0; k < order(); ++k) r2 += (w_[k] - rho * v_[k]) * (w_[k] - rho * v_[k]);
    return r2 <= tolerance * trace * margin;
  }

  // Whether sigma I - C is positive definite (Cholesky succeeds).
  bool certified(const double* c, double sigma) {
    const auto n = order();
    for (std::uint64_t r = 0; r < n; ++r)
      for (std::uint64_t col = 0; col <= r; ++col) m_[r * n + col] = (r == col ? sigma : 0.0) - c[r * n + col];
    for (std::uint64_t k = 0; k < n; ++k) {
      double d = m_[k * n + k];
      for (std::uint64_t j = 0; j < k; ++j) d -= m_[k * n + j] * m_[k * n + j];
      if (!(d > 0)) return false;
      const double l = std::sqrt(d);
      m_[k * n + k] = l;
      for (std::uint64_t r = k + 1; r < n; ++r) {
        double s = m_[r * n + k];
        for (std::uint64_t j = 0; j < k; ++j) s -= m_[r * n + j] * m_[k * n + j];
        m_[r * n + k] = s / l;
      }
    }
    return true;
  }

  // Eigen's full solve; keeps its top eigenvector as the next warm start.
  double fallback(const double* c) {
    using bounded = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor, max_size, max_size>;
    const auto size = static_cast<Eigen::Index>(order());
    const bounded a = Eigen::Map<const Eigen::MatrixXd>(c, size, size);
    const Eigen::SelfAdjointEigenSolver<bounded> es(a, Eigen::ComputeEigenvectors);
    for (std::uint64_t k = 0; k < order(); ++k) v_[k] = es.eigenvectors()(static_cast<Eigen::Index>(k), size - 1);
    warm_ = true;
    return es.eigenvalues()[size - 1];
  }

  // x -= (u . x) u for a unit vector u.
  void project_out(const double* u, double* x) const {
    double d = 0;
    for (std::uint64_t k = 0; k < order(); ++k) d += u[k] * x[k];
    for (std::uint64_t k = 0; k < order(); ++k) x[k] -= d * u[k];
  }

  double rayleigh(const double* c) {
    multiply(c, v_, w_);
    double rho = 0;
    for (std::uint64_t k = 0; k < order(); ++k) rho += v_[k] * w_[k];
    return rho;
  }
  // y = C x. C is symmetric (both triangles stored), so row k is column k:
  // adding x[k] times row k to every y[r], k ascending, sums each y[r] in the
  // order of a row-by-row product (the same bits), vectorised over r.
  void multiply(const double* c, const double* x, double* y) const {
    const auto n = order();
    double sum[Order > 0 ? Order : max_size] = {};
    for (std::uint64_t k = 0; k < n; ++k) {
      const double xk = x[k];
      const double* row = c + k * n;
      for (std::uint64_t r = 0; r < n; ++r) sum[r] += row[r] * xk;
    }
    std::copy(sum, sum + n, y);
  }
  // Scales x to unit length; false (x untouched) when its norm is 0 or not finite.
  bool normalise(double* x) const {
    double s = 0;
    for (std::uint64_t k = 0; k < order(); ++k) s += x[k] * x[k];
    const double norm = std::sqrt(s);
    if (!(norm > 0 && std::isfinite(norm))) return false;
    const double inverse = 1.0 / norm;
    for (std::uint64_t k = 0; k < order(); ++k) x[k] *= inverse;
    return true;
  }

  // The order is stored only when it is not known at compile time.
  struct compile_time_order {
    explicit compile_time_order(std::uint64_t) {}
  };
  [[no_unique_address]] std::conditional_t<Order == 0, std::uint64_t, compile_time_order> n_;
  double* m_;
  double* v_;
  double* w_;
  double* u_;
  bool warm_ = false;
};

using largest_eigenvalue_solver = basic_largest_eigenvalue_solver<>;

}  // namespace dwsr::operators::detail
