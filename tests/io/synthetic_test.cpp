#include "dwsr/io/synthetic.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

using dwsr::shape3;
using dwsr::io::generate_synthetic;
using dwsr::io::ricker_wavelet;
namespace detail = dwsr::io::detail;

namespace {

std::vector<float> generate(shape3 s, std::uint64_t seed, std::size_t threads = 1) {
  std::vector<float> v(s.voxels(), -999.0f);
  generate_synthetic(s, seed, v.data(), threads);
  return v;
}

bool same_bytes(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// FNV-1a over the bytes: pins the generator's output across versions.
std::uint64_t fnv1a(const std::vector<float>& v) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  const auto* p = reinterpret_cast<const unsigned char*>(v.data());
  for (std::size_t i = 0; i < v.size() * sizeof(float); ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

/// The clean (noise-free) cube: reflectivity convolved with the wavelet, per trace.
std::vector<float> clean(shape3 s, std::uint64_t seed) {
  std::vector<float> v(s.voxels());
  for (std::uint64_t i = 0; i < s.traces(); ++i) {
    std::span<float> tr(v.data() + i * s.samples, s.samples);
    detail::draw_reflectivity(seed, i, tr);
    detail::convolve_ricker_in_place(tr);
  }
  return v;
}

}  // namespace

TEST_CASE("synthetic: the wavelet is the 25 Hz Ricker and a single spike reproduces it", "[io][synthetic]") {
  const auto& w = ricker_wavelet();
  REQUIRE(w.size() == 51);
  CHECK(w[25] == 1.0);
  for (std::size_t k = 0; k < 51; ++k) {
    CHECK(w[k] == w[50 - k]);
    const double t = (static_cast<double>(k) - 25) * 0.004;
    const double a = std::pow(3.141592653589793 * 25 * t, 2);
    CHECK(w[k] == Approx((1 - 2 * a) * std::exp(-a)).margin(1e-15));
  }
  CHECK(w[27] > 0);  // zero crossing at t = 1/(pi f sqrt 2) = 9.0 ms, between 8 and 12 ms
  CHECK(w[28] < 0);

  SECTION("a spike in the middle") {
    std::vector<float> tr(100, 0.0f);
    tr[40] = -0.75f;
    detail::convolve_ricker_in_place(tr);
    for (int p = 0; p < 100; ++p) {
      const int k = p - 40 + 25;
      const float expected = k >= 0 && k < 51 ? static_cast<float>(-0.75 * w[static_cast<std::size_t>(k)]) : 0.0f;
      CHECK(tr[static_cast<std::size_t>(p)] == expected);
    }
  }
  SECTION("spikes near both ends are cut off, never wrapped") {
    std::vector<float> tr(60, 0.0f);
    tr[3] = 1.0f;
    tr[58] = 0.5f;
    detail::convolve_ricker_in_place(tr);
    for (int p = 0; p < 60; ++p) {
      double expected = 0;
      if (p - 3 + 25 < 51) expected += w[static_cast<std::size_t>(p - 3 + 25)];
      if (p - 58 + 25 >= 0) expected += 0.5 * w[static_cast<std::size_t>(p - 58 + 25)];
      CHECK(tr[static_cast<std::size_t>(p)] == Approx(expected).margin(1e-7));
    }
  }
  SECTION("a trace shorter than the wavelet") {
    std::vector<float> tr{0.0f, 2.0f, 0.0f};
    detail::convolve_ricker_in_place(tr);
    CHECK(tr[0] == static_cast<float>(2 * w[24]));
    CHECK(tr[1] == 2.0f);
    CHECK(tr[2] == static_cast<float>(2 * w[26]));
  }
}

TEST_CASE("synthetic: reflectivity has 5% spikes with U(-1, 1) amplitudes", "[io][synthetic]") {
  const std::size_t n = 1000, traces = 1000;  // 10^6 samples: the density's standard error is 2.2e-4
  std::vector<float> r(n);
  std::uint64_t spikes = 0;
  double sum = 0, sum_sq = 0;
  float lo = 1, hi = -1;
  for (std::uint64_t i = 0; i < traces; ++i) {
    detail::draw_reflectivity(11, i, r);
    for (float x : r)
      if (x != 0.0f) ++spikes, sum += x, sum_sq += double(x) * x, lo = std::min(lo, x), hi = std::max(hi, x);
  }
  const double density = double(spikes) / double(n * traces);
  CHECK(density == Approx(0.05).margin(0.002));
  CHECK(std::abs(sum / double(spikes)) < 0.02);
  CHECK(sum_sq / double(spikes) == Approx(1.0 / 3).epsilon(0.02));  // variance of U(-1, 1)
  CHECK(lo >= -1.0f);
  CHECK(hi < 1.0f);
  CHECK(lo < -0.99f);
  CHECK(hi > 0.99f);
}

TEST_CASE("synthetic: same seed same bytes on any thread count, seeds differ", "[io][synthetic]") {
  for (const shape3 s : {shape3{8, 9, 100}, shape3{1, 1, 1}, shape3{3, 1, 7}, shape3{1, 300, 5}, shape3{17, 19, 33}}) {
    INFO(dwsr::to_string(s));
    const auto one = generate(s, 5, 1);
    CHECK(same_bytes(one, generate(s, 5, 1)));
    for (std::size_t threads : {2, 3, 4, 8}) CHECK(same_bytes(one, generate(s, 5, threads)));
  }
  const shape3 s{8, 9, 100};
  const auto a = generate(s, 1), b = generate(s, 2);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < a.size(); ++i) differ += a[i] != b[i];
  CHECK(differ > a.size() * 99 / 100);
}

TEST_CASE("synthetic: the bytes of a fixed shape and seed never change", "[io][synthetic]") {
  // datasets/tiny.sgy and users' experiments depend on these exact bytes; a
  // change here is a reviewed, documented change of every synthetic dataset.
  CHECK(fnv1a(generate({4, 5, 64}, 7)) == 0x72522c1e448343e5ULL);
  CHECK(fnv1a(generate({16, 24, 128}, 1)) == 0x05d5d8fc092281c1ULL);
}

TEST_CASE("synthetic: clean part and noise follow the recipe", "[io][synthetic]") {
  const shape3 s{32, 32, 256};
  const auto cube = generate(s, 3, 2);
  // clean() regenerates each trace from its own streams alone: that the
  // difference is pure noise also shows any subset of traces can be made alone.
  const auto c = clean(s, 3);
  double cs = 0, cq = 0, ns = 0, nq = 0, n4 = 0;
  std::size_t within1 = 0;
  for (std::size_t i = 0; i < cube.size(); ++i) cs += c[i], cq += double(c[i]) * c[i];
  const double count = double(cube.size());
  const double clean_std = std::sqrt(cq / count - (cs / count) * (cs / count));
  for (std::size_t i = 0; i < cube.size(); ++i) {
    const double noise = double(cube[i]) - c[i];
    ns += noise, nq += noise * noise, n4 += noise * noise * noise * noise;
    within1 += std::abs(noise) < 0.05 * clean_std;
  }
  const double noise_std = std::sqrt(nq / count);
  CHECK(noise_std / clean_std == Approx(0.05).epsilon(0.01));  // std error ~0.14%
  CHECK(std::abs(ns / count) < 4 * noise_std / std::sqrt(count));
  CHECK(n4 / count / (noise_std * noise_std * noise_std * noise_std) == Approx(3.0).epsilon(0.05));
  CHECK(double(within1) / count == Approx(0.682689).epsilon(0.01));
  CHECK(clean_std > 0.1);
}

TEST_CASE("synthetic: edge shapes and argument errors", "[io][synthetic]") {
  SECTION("one sample per trace: the wavelet's centre tap is 1, so clean = reflectivity") {
    const shape3 s{10, 10, 1};
    const auto cube = generate(s, 9);
    std::vector<float> r(1);
    std::size_t spikes = 0;
    for (std::uint64_t i = 0; i < s.traces(); ++i) {
      detail::draw_reflectivity(9, i, r);
      spikes += r[0] != 0.0f;
      CHECK(std::abs(cube[i] - r[0]) < 0.06f * 6);  // noise is 0.05 std(clean), std(clean) <= 1
    }
    CHECK(spikes > 0);
  }
  SECTION("a cube with no spike has no noise either") {
    // seed 1's single sample draws no spike (checked), so std(clean) = 0.
    std::vector<float> r(1);
    detail::draw_reflectivity(1, 0, r);
    REQUIRE(r[0] == 0.0f);
    CHECK(generate({1, 1, 1}, 1)[0] == 0.0f);
  }
  SECTION("all values finite for odd shapes") {
    for (const shape3 s : {shape3{1, 1, 2}, shape3{1, 1, 51}, shape3{1, 1, 52}, shape3{2, 3, 77}, shape3{300, 1, 3}}) {
      const auto v = generate(s, 123, 3);
      CHECK(std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x) && x != -999.0f; }));
    }
  }
  SECTION("errors") {
    std::vector<float> v(8);
    CHECK_THROWS_AS(generate_synthetic({2, 2, 2}, 1, v.data(), 0), dwsr::invalid_input);
    CHECK_THROWS_AS(generate_synthetic({2, 2, 2}, 1, nullptr), dwsr::invalid_input);
  }
}
