// dwsr's one random generator: reference vectors pin the streams, and the
// portable transforms agree with libm and with the normal distribution.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

#include "dwsr/core/random.hpp"

using namespace dwsr;

TEST_CASE("splitmix64 and xoshiro256** reproduce their reference vectors") {
  splitmix64 sm{1234567};
  CHECK(sm.next() == 6457827717110365317ULL);
  CHECK(sm.next() == 3203168211198807973ULL);
  CHECK(sm.next() == 9817491932198370423ULL);
  xoshiro256ss x(std::array<std::uint64_t, 4>{1, 2, 3, 4});
  CHECK(x.next() == 11520ULL);
  CHECK(x.next() == 0ULL);
  CHECK(x.next() == 1509978240ULL);
  CHECK(x.next() == 1215971899390074240ULL);
}

TEST_CASE("splitmix64::below is the remainder of the next word") {
  splitmix64 a{99}, b{99};
  for (std::uint64_t n : {1ull, 7ull, 100ull, 1ull << 40}) {
    const auto v = a.below(n);
    CHECK(v == b.next() % n);
    CHECK(v < n);
  }
}

TEST_CASE("portable log and exp agree with libm to a few ulp") {
  double worst_log = 0, worst_exp = 0;
  for (int i = 1; i <= 20000; ++i) {
    const double x = i * 1e-4 * 1.37;  // (0, 2.74]
    worst_log = std::max(worst_log, std::abs(portable_log(x) - std::log(x)) / std::max(1.0, std::abs(std::log(x))));
    const double y = -40.0 + i * 0.004;  // [-40, 40]
    worst_exp = std::max(worst_exp, std::abs(portable_exp(y) - std::exp(y)) / std::exp(y));
  }
  CHECK(portable_log(1e-300) == Approx(std::log(1e-300)).epsilon(1e-15));
  CHECK(worst_log < 1e-15);
  CHECK(worst_exp < 1e-15);
}

TEST_CASE("normals have mean 0, variance 1, and gaussian tails") {
  xoshiro256ss rng(42);
  normal_source normal;
  const int n = 400000;
  double s = 0, q = 0, q4 = 0;
  int within1 = 0;
  for (int i = 0; i < n; ++i) {
    const double z = normal(rng);
    s += z, q += z * z, q4 += z * z * z * z;
    within1 += std::abs(z) < 1.0;
  }
  CHECK(std::abs(s / n) < 0.01);  // 6 standard errors
  CHECK(q / n == Approx(1.0).epsilon(0.01));
  CHECK(q4 / n == Approx(3.0).epsilon(0.03));  // kurtosis of a normal
  CHECK(double(within1) / n == Approx(0.682689).epsilon(0.005));
}
