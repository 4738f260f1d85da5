// The closed-form 3x3 symmetric eigensolver of the structure-tensor family
// against cyclic Jacobi: eigenvalues, an orthonormal principal vector, and the
// tie rules numpy's eigh + argsort give on diagonal tensors.

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "dwsr/core/simd_isa.hpp"
#include "dwsr/operators/detail/symmetric_eigen.hpp"
#include "operator_test_support.hpp"

using namespace dwsr;
using dwsr::operators::detail::jacobi_eigensystem;
using dwsr::operators::detail::tensor_eigen;
using dwsr::operators::detail::tensor_eigensystem;
using dwsr::operators::detail::tensor_eigenvalues;

namespace {

using components = std::array<float, 6>;  // gi2, gj2, gk2, gigj, gigk, gjgk

tensor_eigen by_jacobi(const components& c) {
  const double d[3] = {c[0], c[1], c[2]};
  return jacobi_eigensystem(d, c[3], c[4], c[5]);
}

double norm(const std::array<double, 3>& v) { return std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]); }

// |A v - lambda v| / max |lambda| for the tensor of c.
double residual(const components& c, const std::array<double, 3>& v, double lambda, double scale) {
  const double a[3][3] = {{c[0], c[3], c[4]}, {c[3], c[1], c[5]}, {c[4], c[5], c[2]}};
  std::array<double, 3> r{};
  for (int i = 0; i < 3; ++i) r[i] = a[i][0] * v[0] + a[i][1] * v[1] + a[i][2] * v[2] - lambda * v[i];
  return norm(r) / scale;
}

// The tensor Q diag(l) Q^T for the rotation Q of the unit quaternion (w, x, y, z) / |.|.
components rotated(std::array<double, 3> l, double w, double x, double y, double z) {
  const double n = std::sqrt(w * w + x * x + y * y + z * z);
  w /= n, x /= n, y /= n, z /= n;
  const double q[3][3] = {{1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)},
                          {2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)},
                          {2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)}};
  auto a = [&](int r, int c) {
    double s = 0;
    for (int k = 0; k < 3; ++k) s += q[r][k] * l[k] * q[c][k];
    return static_cast<float>(s);
  };
  return {a(0, 0), a(1, 1), a(2, 2), a(0, 1), a(0, 2), a(1, 2)};
}

// Checks the closed form against Jacobi: eigenvalues within `tolerance` of the
// largest magnitude, a unit principal vector that is an eigenvector of the
// largest (residual), and the same direction where the top two are apart.
void check_against_jacobi(const components& c, double tolerance = 1e-12) {
  const auto e = tensor_eigensystem(c.data());
  const auto j = by_jacobi(c);
  const double scale = std::max({std::abs(j.values[0]), std::abs(j.values[2]), 1e-300});
  INFO("tensor " << c[0] << " " << c[1] << " " << c[2] << " " << c[3] << " " << c[4] << " " << c[5]);
  for (int k = 0; k < 3; ++k) CHECK(std::abs(e.values[k] - j.values[k]) <= tolerance * scale);
  CHECK(e.values[0] <= e.values[1]);
  CHECK(e.values[1] <= e.values[2]);
  CHECK(std::abs(norm(e.principal) - 1) <= 1e-14);
  CHECK(residual(c, e.principal, j.values[2], scale) <= 1e-10);
  if (j.values[2] - j.values[1] > 1e-3 * scale) {
    const double dot =
        e.principal[0] * j.principal[0] + e.principal[1] * j.principal[1] + e.principal[2] * j.principal[2];
    CHECK(std::abs(dot) >= 1 - 1e-13);
  }
  const auto values = tensor_eigenvalues(c.data());
  for (int k = 0; k < 3; ++k) CHECK(values[k] == e.values[k]);
}

}  // namespace

TEST_CASE("closed-form eigensystem matches Jacobi on random symmetric tensors") {
  const auto x = test::noise({4000, 1, 6}, 7);
  for (std::size_t m = 0; m < 4000; ++m) {
    components c;
    std::copy(x.begin() + static_cast<std::ptrdiff_t>(6 * m), x.begin() + static_cast<std::ptrdiff_t>(6 * m + 6),
              c.begin());
    // Indefinite tensors, and positive semi-definite ones g g^T + h h^T / 4 as
    // a gradient structure tensor is (two smallest eigenvalues far below the largest).
    check_against_jacobi(c, 1e-9);
    const double g[3] = {c[0], c[1], c[2]}, h[3] = {c[3], c[4], c[5]};
    auto outer = [&](int r, int s) { return static_cast<float>(g[r] * g[s] + 0.25 * h[r] * h[s]); };
    check_against_jacobi({outer(0, 0), outer(1, 1), outer(2, 2), outer(0, 1), outer(0, 2), outer(1, 2)}, 1e-9);
  }
}

TEST_CASE("closed-form eigensystem keeps its accuracy at huge and tiny scales") {
  const auto x = test::noise({200, 1, 4}, 3);
  for (const double scale : {1e-30, 1e-12, 1.0, 1e12, 1e30}) {
    for (std::size_t m = 0; m < 200; ++m) {
      const auto c = rotated({3 * scale, 2 * scale, 0.5 * scale}, x[4 * m], x[4 * m + 1], x[4 * m + 2], x[4 * m + 3]);
      INFO("scale " << scale);
      check_against_jacobi(c);
    }
  }
}

TEST_CASE("diagonal tensors: eigenvalues in axis order on ties, principal axis the last of equal maxima") {
  auto principal = [](components c) { return tensor_eigensystem(c.data()).principal; };
  // The zero tensor of a flat region: the time axis, as numpy's eigh + argsort give.
  CHECK(principal({0, 0, 0, 0, 0, 0}) == std::array<double, 3>{0, 0, 1});
  CHECK(principal({5, 5, 1, 0, 0, 0}) == std::array<double, 3>{0, 1, 0});
  CHECK(principal({5, 1, 5, 0, 0, 0}) == std::array<double, 3>{0, 0, 1});
  CHECK(principal({7, 1, 5, 0, 0, 0}) == std::array<double, 3>{1, 0, 0});
  CHECK(principal({-1, -3, -2, 0, 0, 0}) == std::array<double, 3>{1, 0, 0});
  const components d{4, -2, 1, 0, 0, 0};
  CHECK(tensor_eigensystem(d.data()).values == std::array<double, 3>{-2, 1, 4});
  CHECK(tensor_eigenvalues(d.data()) == std::array<double, 3>{-2, 1, 4});
}

TEST_CASE("repeated eigenvalues: exact values, and a unit principal vector in the top eigenspace") {
  const auto x = test::noise({100, 1, 4}, 5);
  for (std::size_t m = 0; m < 100; ++m) {
    const double w = x[4 * m], a = x[4 * m + 1], b = x[4 * m + 2], z = x[4 * m + 3];
    // A double largest eigenvalue (the principal vector is any unit vector of
    // its plane: Jacobi's), a double smallest one, and a triple one.
    for (const std::array<double, 3>& l : {std::array<double, 3>{3, 3, 1}, std::array<double, 3>{1, 1, 3},
                                           std::array<double, 3>{2, 2, 2}, std::array<double, 3>{0, 0, 1}}) {
      const auto c = rotated(l, w, a, b, z);
      const auto e = tensor_eigensystem(c.data());
      const auto j = by_jacobi(c);
      INFO("eigenvalues " << l[0] << " " << l[1] << " " << l[2]);
      for (int k = 0; k < 3; ++k) CHECK(std::abs(e.values[k] - j.values[k]) <= 1e-7 * 3);
      CHECK(std::abs(norm(e.principal) - 1) <= 1e-14);
      CHECK(residual(c, e.principal, j.values[2], 3) <= 1e-6);
    }
  }
}

TEST_CASE(
    "batched eigen rows, in every instruction set the CPU runs, are bitwise the per-voxel solvers, "
    "diagonal, tied and non-finite tensors included") {
  const std::size_t n = 1003;
  const auto x = test::noise({n, 1, 6}, 11);
  std::array<std::vector<float>, 6> rows;
  for (auto& r : rows) r.resize(n);
  for (std::size_t t = 0; t < n; ++t) {
    components c;
    for (std::size_t k = 0; k < 6; ++k) c[k] = x[6 * t + k];
    if (t % 7 == 0) c[3] = c[4] = c[5] = 0;                        // diagonal
    if (t % 11 == 0) c = rotated({2, 2, 1}, c[0], c[1], c[2], 1);  // tied top pair
    if (t % 13 == 0) c = {0, 0, 0, 0, 0, 0};
    if (t % 17 == 0) c[4] = std::numeric_limits<float>::quiet_NaN();
    if (t % 19 == 0) c[0] = std::numeric_limits<float>::infinity();
    for (std::size_t k = 0; k < 6; ++k) rows[k][t] = c[k];
  }
  const float* c[6];
  for (std::size_t k = 0; k < 6; ++k) c[k] = rows[k].data();
  dwsr::operators::detail::eigen_rows system, values;
  using dwsr::operators::detail::eigen_batch;
  // The last batch (n % eigen_batch = 43 voxels) leaves a tail after every width's lanes.
  for (const auto isa : {simd_isa::baseline, simd_isa::avx2, simd_isa::avx512}) {
    if (isa > cpu_simd_isa()) continue;
    INFO("instruction set " << name(isa));
    for (std::uint64_t t0 = 0; t0 < n; t0 += eigen_batch) {
      const auto count = std::min<std::uint64_t>(eigen_batch, n - t0);
      dwsr::operators::detail::eigen_rows_with<true>(isa, c, t0, count, system);
      dwsr::operators::detail::eigen_rows_with<false>(isa, c, t0, count, values);
      for (std::size_t k = 0; k < count; ++k) {
        const float v[6] = {c[0][t0 + k], c[1][t0 + k], c[2][t0 + k], c[3][t0 + k], c[4][t0 + k], c[5][t0 + k]};
        const auto e = tensor_eigensystem(v);
        INFO("voxel " << t0 + k);
        // Bits, not values: NaN results must match too.
        const auto bits = [](const std::array<double, 3>& a) { return std::bit_cast<std::array<std::uint64_t, 3>>(a); };
        CHECK(bits(system.at(k).values) == bits(e.values));
        CHECK(bits(system.at(k).principal) == bits(e.principal));
        const std::array<double, 3> only{values.values[0][k], values.values[1][k], values.values[2][k]};
        CHECK(bits(only) == bits(tensor_eigenvalues(v)));
      }
    }
  }
}
