// The warm-started largest-eigenvalue solvers of eig_complex against Eigen's
// full symmetric solve: within their certified tolerance on slowly changing
// covariances, where the top two eigenvalues cross, where the first
// factorisation's pivot vanishes; the same bits whether the order is known at
// compile time or not; in lanes, each stream's answer independent of its
// neighbours and of the instruction set.

#include <catch2/catch.hpp>

#include <Eigen/Eigenvalues>

#include <cmath>
#include <cstdint>
#include <vector>

#include "dwsr/core/random.hpp"
#include "dwsr/core/simd_isa.hpp"
#include "dwsr/operators/detail/largest_eigenvalue.hpp"
#include "dwsr/operators/detail/largest_eigenvalue_lanes.hpp"

using dwsr::operators::detail::basic_largest_eigenvalue_solver;
using dwsr::operators::detail::largest_eigenvalue_lanes;
using dwsr::operators::detail::largest_eigenvalue_solver;

namespace {

double exact_largest(const std::vector<double>& c, std::uint64_t n) {
  const Eigen::MatrixXd a = Eigen::Map<const Eigen::MatrixXd>(c.data(), Eigen::Index(n), Eigen::Index(n));
  return Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(a, Eigen::EigenvaluesOnly).eigenvalues().maxCoeff();
}

double trace_of(const std::vector<double>& c, std::uint64_t n) {
  double t = 0;
  for (std::uint64_t k = 0; k < n; ++k) t += c[k * n + k];
  return t;
}

// Covariances of n traces over a window of `window` samples sliding along
// random traces that share a common signal (as neighbouring seismic traces
// do), one matrix per sample.
std::vector<std::vector<double>> sliding_covariances(std::uint64_t n, std::uint64_t samples, std::uint64_t seed) {
  const std::uint64_t window = 9;
  dwsr::xoshiro256ss rng(seed);
  std::vector<double> common(samples + window);
  for (auto& x : common) x = rng.uniform(-1, 1);
  std::vector<std::vector<double>> traces(n, std::vector<double>(samples + window));
  for (auto& trace : traces)
    for (std::uint64_t s = 0; s < trace.size(); ++s) trace[s] = common[s] + 0.4 * rng.uniform(-1, 1);
  std::vector<std::vector<double>> out;
  for (std::uint64_t t = 0; t < samples; ++t) {
    std::vector<double> c(n * n, 0.0);
    for (std::uint64_t p = 0; p < n; ++p)
      for (std::uint64_t q = 0; q < n; ++q)
        for (std::uint64_t s = t; s < t + window; ++s) c[p * n + q] += traces[p][s] * traces[q][s];
    out.push_back(std::move(c));
  }
  return out;
}

// The solver's answer lies in [lambda - tolerance * trace, lambda], up to
// Eigen's own rounding.
void check_within_tolerance(double got, const std::vector<double>& c, std::uint64_t n) {
  const double lambda = exact_largest(c, n), trace = trace_of(c, n);
  INFO("lambda_max " << lambda << ", solver " << got << ", trace " << trace);
  CHECK(got <= lambda + 1e-13 * trace);
  CHECK(got >= lambda - largest_eigenvalue_solver::tolerance * trace - 1e-13 * trace);
}

}  // namespace

TEST_CASE("the largest eigenvalue of sliding covariances is within the certified tolerance") {
  for (const std::uint64_t n : {9u, 6u, 2u}) {
    INFO("order " << n);
    std::vector<double> scratch(largest_eigenvalue_solver::scratch_size(n));
    largest_eigenvalue_solver solve(n, scratch.data());
    for (const auto& c : sliding_covariances(n, 300, n)) check_within_tolerance(solve(c.data(), trace_of(c, n)), c, n);
  }
}

TEST_CASE("the largest eigenvalue is found where the top two cross as the window slides") {
  // diag(a(t), b(t), 1, ...) rotated by a fixed orthogonal matrix: a falls
  // from 10 to 2 while b rises from 2 to 10, so the warm start follows the
  // wrong eigenvector past the crossing.
  const std::uint64_t n = 5;
  dwsr::xoshiro256ss rng(3);
  Eigen::MatrixXd q(5, 5);
  for (auto& x : q.reshaped()) x = rng.uniform(-1, 1);
  q = Eigen::HouseholderQR<Eigen::MatrixXd>(q).householderQ();
  std::vector<double> scratch(largest_eigenvalue_solver::scratch_size(n));
  largest_eigenvalue_solver solve(n, scratch.data());
  for (int t = 0; t <= 80; ++t) {
    Eigen::VectorXd d = Eigen::VectorXd::Ones(5);
    d[0] = 10 - 0.1 * t;
    d[1] = 2 + 0.1 * t;
    const Eigen::MatrixXd a = q * d.asDiagonal() * q.transpose();
    const std::vector<double> c(a.data(), a.data() + 25);
    INFO("step " << t);
    check_within_tolerance(solve(c.data(), trace_of(c, n)), c, n);
  }
}

TEST_CASE("a vanishing pivot of the symmetric step falls back to elimination with pivoting") {
  // diag(5, 1, 1): the warm start e_0 is exact, so rho I - C has a zero first
  // pivot; the answer is 5 exactly.
  const std::uint64_t n = 3;
  const std::vector<double> c = {5, 0, 0, 0, 1, 0, 0, 0, 1};
  std::vector<double> scratch(largest_eigenvalue_solver::scratch_size(n));
  largest_eigenvalue_solver solve(n, scratch.data());
  for (int k = 0; k < 3; ++k) CHECK(solve(c.data(), 7.0) == 5.0);
}

TEST_CASE("the solver of compile-time order 9 gives the bits of the general one") {
  const std::uint64_t n = 9;
  std::vector<double> a(largest_eigenvalue_solver::scratch_size(n)), b(a.size());
  largest_eigenvalue_solver general(n, a.data());
  basic_largest_eigenvalue_solver<9> fixed(n, b.data());
  for (const auto& c : sliding_covariances(n, 200, 7)) {
    const double trace = trace_of(c, n);
    CHECK(general(c.data(), trace) == fixed(c.data(), trace));
  }
}

TEST_CASE("in lanes, each stream's largest eigenvalue is certified and independent of its neighbours and the ISA") {
  using lanes_solver = largest_eigenvalue_lanes<9>;
  constexpr std::uint64_t n = 9, lanes = lanes_solver::lanes, samples = 120;
  // Eight streams: sliding covariances, and in stream 3 diagonal matrices
  // whose top two eigenvalues cross (the warm start then follows the wrong
  // one, which only the scalar solver's deflation recovers).
  std::vector<std::vector<std::vector<double>>> streams;
  for (std::uint64_t s = 0; s < lanes; ++s) streams.push_back(sliding_covariances(n, samples, 100 + s));
  for (std::uint64_t t = 0; t < samples; ++t) {
    std::vector<double> c(n * n, 0.0);
    for (std::uint64_t k = 0; k < n; ++k)
      c[k * n + k] = 1 + double(k == 0) * (10 - 0.1 * double(t)) + double(k == 1) * 0.1 * double(t);
    streams[3][t] = c;
  }
  // rho of every stream and sample with stream order[l] in lane l.
  auto run = [&](const std::vector<std::uint64_t>& order, dwsr::simd_isa isa) {
    std::vector<double> scratch(lanes_solver::scratch_size);
    lanes_solver solver(scratch.data());
    std::vector<std::vector<double>> out(lanes, std::vector<double>(samples));
    std::vector<double> c(n * n * lanes);
    for (std::uint64_t t = 0; t < samples; ++t) {
      double trace[lanes], rho[lanes];
      for (std::uint64_t l = 0; l < lanes; ++l) {
        const auto& m = streams[order[l]][t];
        for (std::uint64_t k = 0; k < n * n; ++k) c[k * lanes + l] = m[k];
        trace[l] = trace_of(m, n);
      }
      dwsr::with_simd_isa(isa, [&](auto lanes_isa) { solver.solve<lanes_isa()>(c.data(), trace, rho); });
      for (std::uint64_t l = 0; l < lanes; ++l) out[order[l]][t] = rho[l];
    }
    return out;
  };
  const auto straight = run({0, 1, 2, 3, 4, 5, 6, 7}, dwsr::simd_isa::baseline);
  for (std::uint64_t s = 0; s < lanes; ++s)
    for (std::uint64_t t = 0; t < samples; ++t) {
      INFO("stream " << s << ", sample " << t);
      check_within_tolerance(straight[s][t], streams[s][t], n);
    }
  CHECK(run({7, 6, 5, 4, 3, 2, 1, 0}, dwsr::simd_isa::baseline) == straight);
  for (const auto isa : {dwsr::simd_isa::avx2, dwsr::simd_isa::avx512})
    if (dwsr::cpu_simd_isa() >= isa) {
      INFO(dwsr::name(isa));
      CHECK(run({0, 1, 2, 3, 4, 5, 6, 7}, isa) == straight);
    }
}
