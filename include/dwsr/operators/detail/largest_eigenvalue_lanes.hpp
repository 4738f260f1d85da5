#pragma once
/// \file The warm-started largest-eigenvalue method of largest_eigenvalue.hpp
/// on eight streams of matrices at once, one per lane: eig_complex follows
/// eight segments of a trace together, each warm-started from its own
/// previous sample. The scalar solver is bound by latency (chains of dependent
/// sums, one 9 x 9 problem at a time); here every lane takes the same steps
/// (power steps, then up to two symmetric inverse steps, each followed by
/// Temple's bound, else the Cholesky certificate) in loops over the lanes
/// without branches, which vectorise and overlap eight chains. A lane those
/// steps leave uncertified continues alone in the scalar solver from its
/// vector. A lane's result depends only on its own stream, never on its
/// neighbours or the instruction set: the steps are lane-wise IEEE operations
/// (no fused multiply-add, core/simd_isa.hpp), selections pick between
/// computed values by quiet comparisons.

#include <cmath>
#include <cstdint>
#include <limits>

#include "dwsr/core/simd_isa.hpp"
#include "dwsr/operators/detail/largest_eigenvalue.hpp"
#include "dwsr/operators/detail/sqrt_lanes.hpp"

namespace dwsr::operators::detail {

/// Largest eigenvalues of `lanes` streams of Order x Order symmetric PSD
/// matrices, warm-started per stream, certified as the scalar solver's.
template <std::uint64_t Order>
class largest_eigenvalue_lanes {
 public:
  static constexpr std::uint64_t lanes = 8;
  /// Inverse steps in the lanes before an uncertified lane continues alone.
  static constexpr int lane_steps = 2;
  using scalar_solver = basic_largest_eigenvalue_solver<Order>;
  /// Scratch doubles for the scalar solver the uncertified lanes continue in.
  static constexpr std::uint64_t scratch_size = scalar_solver::scratch_size(Order);

  explicit largest_eigenvalue_lanes(double* scratch) : scalar_(Order, scratch) {}

  /// Forgets every lane's warm start.
  void reset() { warm_ = false; }

  /// rho[l] = lambda_max of lane l's matrix, c[(p * Order + q) * lanes + l]
  /// (both triangles), whose trace is trace[l] > 0: within
  /// scalar_solver::tolerance * trace[l] below the exact value. In the lanes
  /// of Isa (call it inside with_simd_isa).
  template <simd_isa Isa>
  void solve(const double* c, const double* trace, double* rho) {
    constexpr auto n = Order;
    if (!warm_) {
      for (std::uint64_t k = 0; k < n; ++k)
        for (std::uint64_t l = 0; l < lanes; ++l) v_[k][l] = 1.0 / std::sqrt(double(n));
      for (int k = 0; k < 8; ++k) {
        multiply(c, v_, w_);
        keep_normalised<Isa>(w_, nullptr);
      }
      warm_ = true;
    }
    // C^3 v, normalised once (scalar_solver::warm_power_steps).
    multiply(c, v_, w_);
    multiply(c, w_, u_);
    multiply(c, u_, w_);
    keep_normalised<Isa>(w_, nullptr);
    // Up to two inverse steps in every lane not yet certified (the others keep
    // their vector and rho), each followed by the certificates; each step is
    // shifted by the Rayleigh quotients the previous certificate computed.
    bool done[lanes] = {};
    double quotient[lanes];
    rayleigh(c, quotient);
    for (int step = 0; step < lane_steps; ++step) {
      symmetric_inverse_step<Isa>(c, quotient, done);
      rayleigh(c, quotient);
      if (temple_certified(trace, quotient, rho, done)) return;
      if (cholesky_certified<Isa>(c, trace, rho, done)) return;
    }
    for (std::uint64_t l = 0; l < lanes; ++l) {
      if (done[l]) continue;
      double matrix[n * n], vector[n];
      for (std::uint64_t k = 0; k < n * n; ++k) matrix[k] = c[k * lanes + l];
      for (std::uint64_t k = 0; k < n; ++k) vector[k] = v_[k][l];
      rho[l] = scalar_(matrix, trace[l], vector);
      for (std::uint64_t k = 0; k < n; ++k) v_[k][l] = vector[k];
    }
  }

 private:
  using vectors = double[Order][lanes];

  // y = C x lane by lane, each sum in the scalar solver's order (summed in a
  // local array, which the compiler knows c does not alias).
  static void multiply(const double* c, const vectors& x, vectors& y) {
    double sum[Order][lanes] = {};
    for (std::uint64_t k = 0; k < Order; ++k)
      for (std::uint64_t r = 0; r < Order; ++r)
        for (std::uint64_t l = 0; l < lanes; ++l) sum[r][l] += c[(k * Order + r) * lanes + l] * x[k][l];
    for (std::uint64_t r = 0; r < Order; ++r)
      for (std::uint64_t l = 0; l < lanes; ++l) y[r][l] = sum[r][l];
  }

  // v = x / |x| in the lanes where |x| is positive and finite (and ok[l],
  // when given); v unchanged elsewhere.
  template <simd_isa Isa>
  void keep_normalised(const vectors& x, const bool* ok) {
    double norm[lanes];
    for (std::uint64_t l = 0; l < lanes; ++l) {
      double s = 0;
      for (std::uint64_t k = 0; k < Order; ++k) s += x[k][l] * x[k][l];
      norm[l] = s;
    }
    sqrt_each<Isa>(norm, lanes);
    double scale[lanes];
    bool keep[lanes];
    for (std::uint64_t l = 0; l < lanes; ++l) {
      keep[l] = std::isgreater(norm[l], 0.0) && std::islessequal(norm[l], std::numeric_limits<double>::max()) &&
                (ok == nullptr || ok[l]);
      const double inverse = 1.0 / norm[l];
      scale[l] = keep[l] ? inverse : 0.0;
    }
    for (std::uint64_t k = 0; k < Order; ++k)
      for (std::uint64_t l = 0; l < lanes; ++l) v_[k][l] = keep[l] ? x[k][l] * scale[l] : v_[k][l];
  }

  // w = C v and r = v^T w, lane by lane.
  void rayleigh(const double* c, double* r) {
    multiply(c, v_, w_);
    for (std::uint64_t l = 0; l < lanes; ++l) {
      double sum = 0;
      for (std::uint64_t k = 0; k < Order; ++k) sum += v_[k][l] * w_[k][l];
      r[l] = sum;
    }
  }

  // In the lanes not done: rho = the Rayleigh quotient `quotient` of v (w = C
  // v, from rayleigh), and done where Temple's bound certifies it
  // (scalar_solver::temple_certified). Whether every lane is done.
  bool temple_certified(const double* trace, const double* quotient, double* rho, bool* done) {
    bool all = true;
    for (std::uint64_t l = 0; l < lanes; ++l) {
      const double r = quotient[l];
      double r2 = 0;
      for (std::uint64_t k = 0; k < Order; ++k) r2 += (w_[k][l] - r * v_[k][l]) * (w_[k][l] - r * v_[k][l]);
      const double margin = 2 * r - trace[l];
      const bool certified =
          std::isgreater(margin, 0.0) && std::islessequal(r2, scalar_solver::tolerance * trace[l] * margin);
      rho[l] = done[l] ? rho[l] : r;
      done[l] = done[l] || certified;
      all = all && done[l];
    }
    return all;
  }

  // scalar_solver::symmetric_inverse_step in every lane: v = (rho I - C)^-1 v
  // / |...| by LDL^T without pivoting, rho the lane's Rayleigh quotient; v
  // kept in the lanes done and those whose pivot vanishes.
  template <simd_isa Isa>
  void symmetric_inverse_step(const double* c, const double* rho, const bool* done) {
    constexpr auto n = Order;
    for (std::uint64_t r = 0; r < n; ++r)
      for (std::uint64_t col = 0; col <= r; ++col)
        for (std::uint64_t l = 0; l < lanes; ++l)
          m_[r * n + col][l] = (r == col ? rho[l] : 0.0) - c[(r * n + col) * lanes + l];
    bool ok[lanes];
    for (std::uint64_t l = 0; l < lanes; ++l) ok[l] = !done[l];
    for (std::uint64_t k = 0; k < n; ++k) {
      for (std::uint64_t l = 0; l < lanes; ++l) {
        const double d = m_[k * n + k][l];
        ok[l] = ok[l] && d != 0;
        m_[k * n + k][l] = 1.0 / d;
      }
      for (std::uint64_t r = k + 1; r < n; ++r)
        for (std::uint64_t l = 0; l < lanes; ++l) m_[k * n + r][l] = m_[r * n + k][l] * m_[k * n + k][l];
      for (std::uint64_t r = k + 1; r < n; ++r)
        for (std::uint64_t col = k + 1; col <= r; ++col)
          for (std::uint64_t l = 0; l < lanes; ++l) m_[r * n + col][l] -= m_[k * n + r][l] * m_[col * n + k][l];
    }
    // L y = v, D z = y, L^T x = z; l_rk is row k of the upper triangle.
    for (std::uint64_t k = 0; k < n; ++k)
      for (std::uint64_t l = 0; l < lanes; ++l) u_[k][l] = v_[k][l];
    for (std::uint64_t k = 0; k < n; ++k)
      for (std::uint64_t r = k + 1; r < n; ++r)
        for (std::uint64_t l = 0; l < lanes; ++l) u_[r][l] -= m_[k * n + r][l] * u_[k][l];
    for (std::uint64_t k = 0; k < n; ++k)
      for (std::uint64_t l = 0; l < lanes; ++l) u_[k][l] *= m_[k * n + k][l];
    for (std::uint64_t r = n; r-- > 1;)
      for (std::uint64_t k = 0; k < r; ++k)
        for (std::uint64_t l = 0; l < lanes; ++l) u_[k][l] -= m_[k * n + r][l] * u_[r][l];
    keep_normalised<Isa>(u_, ok);
  }

  // done[l] |= sigma I - C is positive definite (Cholesky succeeds) for sigma =
  // rho + tolerance * trace (scalar_solver::certified), in every lane. Whether
  // every lane is done.
  template <simd_isa Isa>
  bool cholesky_certified(const double* c, const double* trace, const double* rho, bool* done) {
    constexpr auto n = Order;
    bool ok[lanes];
    double sigma[lanes];
    for (std::uint64_t l = 0; l < lanes; ++l) ok[l] = true, sigma[l] = rho[l] + scalar_solver::tolerance * trace[l];
    for (std::uint64_t r = 0; r < n; ++r)
      for (std::uint64_t col = 0; col <= r; ++col)
        for (std::uint64_t l = 0; l < lanes; ++l)
          m_[r * n + col][l] = (r == col ? sigma[l] : 0.0) - c[(r * n + col) * lanes + l];
    for (std::uint64_t k = 0; k < n; ++k) {
      double root[lanes];
      for (std::uint64_t l = 0; l < lanes; ++l) root[l] = m_[k * n + k][l];
      for (std::uint64_t j = 0; j < k; ++j)
        for (std::uint64_t l = 0; l < lanes; ++l) root[l] -= m_[k * n + j][l] * m_[k * n + j][l];
      for (std::uint64_t l = 0; l < lanes; ++l) ok[l] = ok[l] && std::isgreater(root[l], 0.0);
      sqrt_each<Isa>(root, lanes);
      for (std::uint64_t r = k + 1; r < n; ++r) {
        double sum[lanes];
        for (std::uint64_t l = 0; l < lanes; ++l) sum[l] = m_[r * n + k][l];
        for (std::uint64_t j = 0; j < k; ++j)
          for (std::uint64_t l = 0; l < lanes; ++l) sum[l] -= m_[r * n + j][l] * m_[k * n + j][l];
        for (std::uint64_t l = 0; l < lanes; ++l) m_[r * n + k][l] = sum[l] / root[l];
      }
    }
    bool all = true;
    for (std::uint64_t l = 0; l < lanes; ++l) done[l] = done[l] || ok[l], all = all && done[l];
    return all;
  }

  vectors v_{};
  vectors w_{};
  vectors u_{};
  double m_[Order * Order][lanes]{};
  bool warm_ = false;
  scalar_solver scalar_;
};

}  // namespace dwsr::operators::detail
