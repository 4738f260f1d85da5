#pragma once
/// \file dwsr's one random generator, and transforms written out in full, so
/// that a seed gives the same numbers with every standard library and every
/// platform (std::*_distribution are not specified bit for bit): splitmix64
/// (seeding, and a light stream of its own), xoshiro256** (the main stream),
/// uniform doubles from the top 53 bits, normals by Marsaglia's polar method,
/// and log/exp from + - * / only (no libm, whose last bits vary between
/// implementations). The synthetic cubes (io/synthetic.hpp) and the random
/// event streams of the simulator (sim/random_stream.hpp) draw from it.

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>

namespace dwsr {

/// The splitmix64 output function: a bijection of 64-bit words with good avalanche.
constexpr std::uint64_t mix64(std::uint64_t z) noexcept {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// splitmix64 (Steele, Lea and Flood): expands a key into xoshiro's 256-bit
/// state, and is a small, fast stream of its own where 64 bits of state are
/// enough (the simulator's random event streams).
struct splitmix64 {
  std::uint64_t state;
  constexpr std::uint64_t next() noexcept { return mix64(state += 0x9e3779b97f4a7c15ULL); }
  /// In [0, n), n > 0, by the remainder: biased by less than n / 2^64, which
  /// does not matter for the sizes and lifetimes it draws.
  constexpr std::uint64_t below(std::uint64_t n) noexcept { return next() % n; }
};

/// xoshiro256** 1.0 (Blackman and Vigna): the main stream (the synthetic cubes'), 256 bits of state.
class xoshiro256ss {
 public:
  /// A stream seeded from `key` through splitmix64 (never the all-zero state).
  explicit constexpr xoshiro256ss(std::uint64_t key) noexcept {
    splitmix64 sm{key};
    for (auto& w : s_) w = sm.next();
  }
  /// A stream with this exact state (not all zero): for the reference test vectors.
  explicit constexpr xoshiro256ss(const std::array<std::uint64_t, 4>& state) noexcept : s_(state) {}
  constexpr std::uint64_t next() noexcept {
    const std::uint64_t result = std::rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = std::rotl(s_[3], 45);
    return result;
  }
  /// Uniform in [0, 1): the top 53 bits, exactly representable.
  constexpr double uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// Uniform in [lo, hi).
  constexpr double uniform(double lo, double hi) noexcept { return lo + (hi - lo) * uniform(); }

 private:
  std::array<std::uint64_t, 4> s_{};
};

/// The key of the independent stream `stream` of item `index` under `seed`:
/// distinct for every (index, stream) of one seed, unrelated across seeds.
constexpr std::uint64_t stream_key(std::uint64_t seed, std::uint64_t index, std::uint64_t stream) noexcept {
  return mix64(mix64(seed ^ 0x6a09e667f3bcc909ULL) + index * 4 + stream);
}

/// Natural logarithm of a positive finite x, accurate to a few ulp: x = m 2^e
/// with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s), s = (m - 1) / (m + 1).
constexpr double portable_log(double x) noexcept {
  int e = 0;
  while (x >= 2.0) x *= 0.5, ++e;  // exact scalings; at most ~1075 steps, a few for our inputs
  while (x < 1.0) x *= 2.0, --e;
  if (x >= 1.4142135623730951) x *= 0.5, ++e;
  const double s = (x - 1.0) / (x + 1.0);
  const double s2 = s * s;
  // 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + ...); |s| < 0.1716 so 12 terms reach 1e-19.
  double sum = 0.0;
  for (int k = 23; k >= 3; k -= 2) sum = (sum + 1.0 / k) * s2;
  const double log_m = 2.0 * s * (1.0 + sum);
  constexpr double ln2_hi = 0.693147180369123816490;  // ln 2 split so that e * ln2_hi is exact
  constexpr double ln2_lo = 1.90821492927058770002e-10;
  return e * ln2_hi + (e * ln2_lo + log_m);
}

/// e^x for |x| < 700, accurate to a few ulp: x = k ln2 + r with |r| <= ln2/2,
/// e^r by its Taylor series, then scaled by 2^k exactly.
constexpr double portable_exp(double x) noexcept {
  constexpr double ln2_hi = 0.693147180369123816490;
  constexpr double ln2_lo = 1.90821492927058770002e-10;
  const double kd = x * 1.4426950408889634 + (x >= 0 ? 0.5 : -0.5);
  const int k = static_cast<int>(kd);
  const double r = (x - k * ln2_hi) - k * ln2_lo;
  double sum = 1.0;
  for (int n = 20; n >= 1; --n) sum = 1.0 + sum * r / n;
  double scale = 1.0;
  for (int i = 0; i < k; ++i) scale *= 2.0;
  for (int i = 0; i > k; --i) scale *= 0.5;
  return sum * scale;
}

/// Standard normal numbers by Marsaglia's polar method; holds the spare of each pair.
class normal_source {
 public:
  double operator()(xoshiro256ss& rng) noexcept {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u = 0, v = 0, s = 0;
    do {
      u = 2.0 * rng.uniform() - 1.0;
      v = 2.0 * rng.uniform() - 1.0;
      s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    // sqrt is correctly rounded by IEEE 754, so the same everywhere.
    const double f = std::sqrt(-2.0 * portable_log(s) / s);
    spare_ = v * f;
    has_spare_ = true;
    return u * f;
  }

 private:
  double spare_ = 0;
  bool has_spare_ = false;
};

}  // namespace dwsr
