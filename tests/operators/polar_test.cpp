// The vectorised modulus, angle and phase unwrapping behind the complex-trace
// family: what they promise against the C library and numpy.unwrap's formula.

#include <catch2/catch.hpp>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numbers>
#include <vector>

#include "dwsr/operators/detail/derivative_stream.hpp"
#include "dwsr/operators/detail/polar.hpp"

using namespace dwsr::operators::detail;

namespace {
// A fixed, portable sequence of floats in [-2, 2), some scaled down or zeroed
// so that every branch (steep, reduced, signed zeros) is taken.
std::vector<std::complex<float>> samples(std::size_t n) {
  std::vector<std::complex<float>> a(n);
  std::uint64_t state = 0x9e3779b97f4a7c15u;
  auto next = [&] {
    state = state * 6364136223846793005u + 1442695040888963407u;
    return static_cast<float>(static_cast<double>(state >> 40) / double(1u << 24) * 4 - 2);
  };
  for (std::size_t i = 0; i < n; ++i) {
    float x = next(), h = next();
    if (i % 5 == 1) h *= 1e-5f;
    if (i % 7 == 2) x = i % 2 ? 0.0f : -0.0f;
    if (i % 11 == 3) h = i % 2 ? 0.0f : -0.0f;
    a[i] = {x, h};
  }
  return a;
}
float ulp(float v) { return std::nextafter(std::fabs(v), std::numeric_limits<float>::infinity()) - std::fabs(v); }
}  // namespace

TEST_CASE("angle is atan2 within 3 ulp, with atan2's signed zeros, in the vector and the scalar path alike") {
  const auto a = samples(4099);  // not a multiple of four: the scalar tail runs too
  std::vector<float> y(a.size());
  angle(interleaved_samples{a.data()}, y.data(), a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const float x = a[i].real(), h = a[i].imag();
    INFO("atan2(" << h << ", " << x << ")");
    const double exact = std::atan2(double(h), double(x));
    CHECK(std::abs(y[i] - exact) <= 3 * ulp(static_cast<float>(exact)) + 1e-45);
    CHECK(std::signbit(y[i]) == std::signbit(exact));
    const float scalar = angle(h, x);
    CHECK(std::memcmp(&scalar, &y[i], sizeof(float)) == 0);
  }
  CHECK(angle(0.0f, -0.0f) == static_cast<float>(std::numbers::pi));
  CHECK(angle(-0.0f, -0.0f) == -static_cast<float>(std::numbers::pi));
  CHECK(std::signbit(angle(-0.0f, 0.0f)));
}

TEST_CASE("arccos is acos within 2 ulp on [-1, 1], NaN outside it and for NaN") {
  // Every float of [0, 1] at a stride, both signs, and the branch point 1/2 and the ends exactly.
  std::uint64_t checked = 0;
  float worst = 0;
  auto check = [&](float x) {
    const double exact = std::acos(double(x));
    const float r = arccos(x);
    const float err = static_cast<float>(std::abs(double(r) - exact) / ulp(static_cast<float>(exact)));
    worst = std::max(worst, err);
    ++checked;
  };
  for (std::uint32_t bits = 0; bits <= 0x3f800000u; bits += 97) {
    float x;
    std::memcpy(&x, &bits, sizeof x);
    check(x);
    check(-x);
  }
  for (float x : {0.0f, -0.0f, 0.5f, -0.5f, std::nextafter(0.5f, 1.0f), std::nextafter(0.5f, 0.0f), 1.0f, -1.0f})
    check(x);
  INFO(checked << " values, worst " << worst << " ulp");
  CHECK(worst <= 2);
  CHECK(arccos(1.0f) == 0.0f);
  CHECK(arccos(-1.0f) == static_cast<float>(std::numbers::pi));
  for (float x : {std::nextafter(1.0f, 2.0f), -std::nextafter(1.0f, 2.0f), 2.0f, std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN()})
    CHECK(std::isnan(arccos(x)));
}

TEST_CASE("modulus rounds the double-precision square root of the exact sum of squares, without overflow") {
  const auto a = samples(1027);
  std::vector<float> y(a.size()), c(a.size());
  modulus(interleaved_samples{a.data()}, y.data(), a.size());
  cosine(interleaved_samples{a.data()}, c.data(), a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = a[i].real(), h = a[i].imag();
    CHECK(y[i] == static_cast<float>(std::sqrt(x * x + h * h)));
    CHECK(c[i] == (y[i] > 0 ? a[i].real() / y[i] : 1.0f));
  }
  const float big = 3e38f;
  std::vector<float> xs{big, big, big, big}, out(4);
  modulus(split_samples{xs.data(), xs.data()}, out.data(), 4);
  CHECK(out[0] == std::numeric_limits<float>::infinity());  // sqrt(2) * 3e38 exceeds float, not the squares
  modulus(split_samples{xs.data(), xs.data()}, out.data(), 4, 0.0);
  CHECK(out[0] == big);
}

TEST_CASE(
    "the branch-free unwrapped steps, scalar and two lanes, are numpy.unwrap's step bit for bit on phase differences") {
  const auto a = samples(20000);
  std::vector<float> phases(a.size());
  angle(interleaved_samples{a.data()}, phases.data(), a.size());
  const float pi = static_cast<float>(std::numbers::pi);
  phases.insert(phases.end(), {pi, -pi, std::nextafter(pi, 0.0f), -std::nextafter(pi, 0.0f), 0.0f, -0.0f});
  for (std::size_t i = 0; i < phases.size(); ++i)
    for (std::size_t j : {i + 1, phases.size() - 1 - i % 6, i / 2}) {
      if (j >= phases.size()) continue;
      const double d = double(phases[i]) - double(phases[j]);
      const double expected = unwrapped_step(d), got = unwrapped_phase_step(d);
      // The derivative stream's two-lane form, in either lane.
      const double_lanes lanes = unwrapped_phase_steps(double_lanes{d, -d});
      const double lane0 = lanes[0], lane1 = lanes[1], negated = unwrapped_phase_step(-d);
      INFO("d = " << d);
      CHECK(std::memcmp(&expected, &got, sizeof(double)) == 0);
      CHECK(std::memcmp(&expected, &lane0, sizeof(double)) == 0);
      CHECK(std::memcmp(&negated, &lane1, sizeof(double)) == 0);
    }
}
