// The noise-reduction family against the DASF reference outputs, plan == run,
// exact memory figures, halos and parameter checks.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "window_test_support.hpp"

using namespace dwsr;
using namespace dwsr::test;

namespace {
const std::vector<std::string> noise_reduction_ops = {"gaussian", "median", "convolution"};

std::uint64_t padded(std::uint64_t n, std::uint64_t per_line) { return (n + per_line - 1) / per_line * per_line; }
// One float panel per thread, for the widest of the three axes' passes.
std::uint64_t max_panels(shape3 s, std::uint64_t taps, std::size_t threads) {
  std::uint64_t most = 0;
  for (int axis = 0; axis < 3; ++axis) most = std::max(most, operators::detail::panel_floats(s, axis, taps));
  return threads * padded(most, 16) * 4;
}

// Beside input and output: kernel weights (doubles) and per-thread panels, or
// for median a trace's sorted 3x3 columns and its neighbour-trace pointers per thread.
std::uint64_t scratch_bytes(const std::string& name, shape3 s, std::size_t t) {
  if (name == "gaussian") return 3 * 9 * 8 + max_panels(s, 9, t);
  if (name == "convolution") return 3 * 3 * 8 + max_panels(s, 3, t);
  if (name == "median") return t * padded(s.samples * 9, 16) * 4 + t * padded(9, 8) * 8;  // sorted columns, traces
  FAIL("no memory model for " << name);
  return 0;
}
}  // namespace

// Tolerance: the manifest's, 1e-4 * max(1, max |ref|). gaussian and
// convolution accumulate in double and round once per pass like scipy
// (differences ~1e-7 of the range); median selects exactly, so it must be
// bit-identical to scipy's.
TEST_CASE("noise-reduction operators match the DASF reference") {
  check_against_references({"gaussian", "convolution"});
  check_against_reference({"gaussian", "gaussian_sigma3", 1e-4, {{"sigmas", "3,3,3"}}});
  check_against_reference({"median", "median", 0.0});
}

TEST_CASE("meta execution emits exactly the real execution's events for every noise-reduction operator") {
  const std::vector<variant> variants = {{"gaussian", {{"sigmas", "3,0,1.5"}, {"truncate", "2"}}},
                                         {"median", {{"kernel", "2,3,4"}}},
                                         {"convolution", {{"kernel", "1,4,5"}}}};
  for_each_configuration(noise_reduction_ops, variants, check_plan_equals_run);
}

TEST_CASE("noise-reduction operators give the same bytes with any thread count") {
  for_each_configuration(noise_reduction_ops, {{"median", {{"kernel", "2,3,4"}}}},
                         [](const std::string& name, const param_map& p) {
                           check_thread_invariance(name, {7, 9, 70}, p);
                         });
}

TEST_CASE("noise-reduction peaks are input + output + kernels + per-thread scratch, exactly") {
  check_window_peaks(noise_reduction_ops, scratch_bytes, 2.01);  // NumPy: 2.25x
}

TEST_CASE("noise-reduction operators declare their halos") {
  using H = halo;
  CHECK(operators::catalogue().find("gaussian").configure()->halo() == H{.radius = {4, 4, 4}});
  CHECK(operators::catalogue().find("gaussian").configure({{"sigmas", "3,0,1.5"}, {"truncate", "2"}})->halo() ==
        H{.radius = {6, 0, 3}});
  CHECK(operators::catalogue().find("median").configure()->halo() == H{.radius = {1, 1, 1}});
  CHECK(operators::catalogue().find("median").configure({{"kernel", "2,3,4"}})->halo() == H{.radius = {1, 1, 2}});
  CHECK(operators::catalogue().find("convolution").configure({{"kernel", "1,4,5"}})->halo() == H{.radius = {0, 2, 2}});
}

TEST_CASE("a noise-reduction operator run on a block extended by its halo gives the whole-cube values inside") {
  const std::vector<variant> variants = {{"gaussian", {{"sigmas", "1.2,0,0.7"}}},
                                         {"median", {{"kernel", "2,3,4"}}},
                                         {"convolution", {{"kernel", "1,4,5"}}}};
  for_each_configuration(noise_reduction_ops, variants,
                         [](const std::string& name, const param_map& p) { check_halo(name, p); });
}

TEST_CASE("noise-reduction operators on analytic inputs") {
  const shape3 shape{5, 6, 17};
  const auto cube = noise(shape, 21);
  SECTION("gaussian with all sigmas 0 copies its input, as scipy") {
    const auto y = run_real(*operators::catalogue().find("gaussian").configure({{"sigmas", "0,0,0"}}), cube, shape);
    CHECK(std::memcmp(y.outputs[0].bytes.data(), cube.data(), cube.size() * 4) == 0);
  }
  SECTION("median and convolution of a 1x1x1 window copy their input") {
    for (const char* name : {"median", "convolution"}) {
      const auto y = run_real(*operators::catalogue().find(name).configure({{"kernel", "1,1,1"}}), cube, shape);
      INFO(name);
      CHECK(std::memcmp(y.outputs[0].bytes.data(), cube.data(), cube.size() * 4) == 0);
    }
  }
  SECTION("median is the window's middle value (upper for even sizes), reflect borders: a direct sort") {
    // 3x3x3 and 2x3x4 take the sorted-columns path, 1x2x11 the selection path
    for (const std::array<std::int64_t, 3> k : {std::array<std::int64_t, 3>{3, 3, 3}, {2, 3, 4}, {1, 2, 11}}) {
      const auto text = std::to_string(k[0]) + "," + std::to_string(k[1]) + "," + std::to_string(k[2]);
      const auto y = run_real(*operators::catalogue().find("median").configure({{"kernel", text}}), cube, shape, 2);
      auto at = [&](std::int64_t i, std::int64_t x, std::int64_t t) {
        return cube[(operators::detail::reflect_index(i, shape.inlines) * shape.crosslines +
                     operators::detail::reflect_index(x, shape.crosslines)) *
                        shape.samples +
                    operators::detail::reflect_index(t, shape.samples)];
      };
      for (std::int64_t i = 0; i < 5; ++i)
        for (std::int64_t x = 0; x < 6; ++x)
          for (std::int64_t t = 0; t < 17; ++t) {
            std::vector<float> w;
            for (std::int64_t a = 0; a < k[0]; ++a)
              for (std::int64_t b = 0; b < k[1]; ++b)
                for (std::int64_t c = 0; c < k[2]; ++c)
                  w.push_back(at(i + a - k[0] / 2, x + b - k[1] / 2, t + c - k[2] / 2));
            std::sort(w.begin(), w.end());
            INFO("kernel " << text << " at " << i << "," << x << "," << t);
            REQUIRE(y.outputs[0].as<float>()[std::uint64_t((i * 6 + x) * 17 + t)] == w[w.size() / 2]);
          }
    }
  }
  SECTION("convolution of a constant is the constant; gaussian of a ramp along time is the ramp inside") {
    const auto c = run_real(*operators::catalogue().find("convolution").configure(),
                            std::vector<float>(shape.voxels(), 0.25f), shape)
                       .outputs[0];
    for (std::uint64_t i = 0; i < shape.voxels(); ++i) REQUIRE(c.as<float>()[i] == Approx(0.25).epsilon(1e-6));
    std::vector<float> ramp(shape.voxels());
    for (std::uint64_t i = 0; i < shape.voxels(); ++i) ramp[i] = float(i % shape.samples);
    const auto g = run_real(*operators::catalogue().find("gaussian").configure(), ramp, shape).outputs[0];
    CHECK(g.as<float>()[8] == Approx(8.0).epsilon(1e-6));  // symmetric kernel: a ramp is unchanged away from borders
  }
  SECTION("NaN becomes 0") {
    auto with_nan = cube;
    with_nan[40] = std::nanf("");
    for (const auto& name : noise_reduction_ops) {
      const auto y = run_real(*operators::catalogue().find(name).configure(), with_nan, shape).outputs[0];
      INFO(name);
      for (std::uint64_t i = 0; i < shape.voxels(); ++i) REQUIRE(!std::isnan(y.as<float>()[i]));
    }
  }
}

TEST_CASE("noise-reduction operators reject invalid parameters with a message naming them") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(configured("gaussian", "sigmas", "-1,1,1"), Contains("'sigmas'") && Contains(">= 0"));
  CHECK_THROWS_WITH(configured("gaussian", "truncate", "0"), Contains("'truncate'"));
  CHECK_THROWS_WITH(configured("median", "kernel", "3,3"), Contains("'kernel'"));
  CHECK_THROWS_WITH(configured("median", "kernel", "3,0,3"), Contains("'kernel'") && Contains("entry 1"));
  CHECK_THROWS_WITH(configured("convolution", "kernel", "3,3,1.5"), Contains("'kernel'") && Contains("entry 2"));
  CHECK_NOTHROW(configured("gaussian", "sigmas", "0,2,0"));
}
