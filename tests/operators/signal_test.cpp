// The signal-processing family against the DASF reference outputs, plan ==
// run, exact memory figures, halos, reductions and parameter checks.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "window_test_support.hpp"

using namespace dwsr;
using namespace dwsr::test;

namespace {
const std::vector<std::string> signal_ops = {"first_derivative",
                                             "second_derivative",
                                             "histogram_equalization",
                                             "time_gain",
                                             "rescale_amplitude_range",
                                             "rms",
                                             "rms2",
                                             "trace_agc",
                                             "gradient_magnitude",
                                             "reflection_intensity"};

std::uint64_t padded(std::uint64_t n, std::uint64_t per_line) { return (n + per_line - 1) / per_line * per_line; }
// Bytes of one float panel per thread for a pass along `axis` with `taps` weights.
std::uint64_t panels(shape3 s, int axis, std::uint64_t taps, std::size_t threads) {
  return threads * padded(operators::detail::panel_floats(s, axis, taps), 16) * 4;
}
std::uint64_t max_panels(shape3 s, std::uint64_t taps, std::size_t threads) {
  return std::max({panels(s, 0, taps, threads), panels(s, 1, taps, threads), panels(s, 2, taps, threads)});
}

// What each operator holds beside its input and output, from its design:
// kernel weights (doubles), per-thread panels of lines and a few slices.
std::uint64_t scratch_bytes(const std::string& name, shape3 s, std::size_t t) {
  const std::uint64_t slice = s.crosslines * s.samples * 4;
  const shape3 one{1, s.crosslines, s.samples};
  if (name == "first_derivative") return 6 * 8 + max_panels(s, 3, t);
  if (name == "second_derivative") return 10 * 8 + max_panels(s, 5, t);
  if (name == "histogram_equalization")  // pass 0: range; pass 1: counts + edges; run: interp table + edges
    return std::max<std::uint64_t>({t * 64, t * padded(255, 8) * 8 + 256 * 4, 3 * 255 * 8 + 256 * 4});
  if (name == "time_gain") return s.samples * 4;
  if (name == "rescale_amplitude_range") return 0;
  if (name == "rms" || name == "rms2") return 11 * 8 + panels(s, 2, 9, t);
  if (name == "trace_agc")  // the reduction: kernel, per-thread trace panels and maxima
    return 9 * 8 + panels(one, 2, 9, t) + t * 64;
  if (name == "gradient_magnitude") return 6 * 9 * 8 + 2 * slice + std::max(panels(one, 1, 9, t), panels(one, 2, 9, t));
  if (name == "reflection_intensity") return 9 * 8 + panels(s, 2, 9, t);
  FAIL("no memory model for " << name);
  return 0;
}
}  // namespace

// Tolerance: the manifest's, 1e-4 * max(1, max |ref|), for every operator. The
// reference runs scipy.ndimage / numpy in float32 with float64 accumulation
// (correlate1d) or float32 sums (rms, trapz); dwsr accumulates in double and
// rounds once per pass, so differences stay at float32 rounding (~1e-7 of the
// range), far inside it. histogram_equalization reproduces numpy's edges,
// counts and interpolation exactly.
TEST_CASE("signal operators match the DASF reference") {
  check_against_references({"first_derivative", "second_derivative", "histogram_equalization", "time_gain",
                            "rescale_amplitude_range", "rms", "rms2", "trace_agc", "gradient_magnitude",
                            "reflection_intensity"});
  check_against_reference({"first_derivative", "first_derivative_axis0", 1e-4, {{"axis", "0"}}});
}

TEST_CASE("histogram_equalization reproduces numpy's bins and interpolation bit for bit") {
  const auto dir = reference_dir();
  const auto input = io::load_npy<float>(dir / "input.npy");
  const auto ref = io::load_npy<float>(dir / "histogram_equalization.npy");
  const auto run =
      run_real(*operators::catalogue().find("histogram_equalization").configure(), input.data, input.shape, 3);
  CHECK(std::memcmp(run.outputs[0].bytes.data(), ref.data.data(), ref.data.size() * 4) == 0);
}

TEST_CASE("meta execution emits exactly the real execution's events for every signal operator") {
  const std::vector<variant> variants = {{"first_derivative", {{"axis", "1"}}},
                                         {"rms", {{"kernel", "3,2,5"}}},
                                         {"gradient_magnitude", {{"sigmas", "0.5,2,1.5"}}}};
  for_each_configuration(signal_ops, variants, check_plan_equals_run);
}

TEST_CASE("signal operators give the same bytes with any thread count") {
  for_each_configuration(signal_ops, {{"rms", {{"kernel", "3,2,5"}}}}, [](const std::string& name, const param_map& p) {
    check_thread_invariance(name, {7, 9, 70}, p);
  });
}

TEST_CASE("signal peaks are input + output + kernels + per-thread panels + a few slices, exactly") {
  // The acceptance bound: input + output + under 2% (NumPy: 4-12x).
  check_window_peaks(signal_ops, scratch_bytes, 2.02);
}

TEST_CASE("signal operators declare their halos") {
  using H = halo;
  CHECK(operators::catalogue().find("first_derivative").configure()->halo() == H{.radius = {1, 1, 1}});
  CHECK(operators::catalogue().find("second_derivative").configure()->halo() == H{.radius = {2, 2, 2}});
  CHECK(operators::catalogue().find("histogram_equalization").configure()->halo() == H{.radius = {0, 0, 0}});
  CHECK(operators::catalogue().find("time_gain").configure()->halo() == H{.radius = {0, 0, 0}, .whole_traces = true});
  CHECK(operators::catalogue().find("rescale_amplitude_range").configure()->halo() == H{.radius = {0, 0, 0}});
  CHECK(operators::catalogue().find("rms").configure()->halo() == H{.radius = {0, 0, 4}});
  CHECK(operators::catalogue().find("rms").configure({{"kernel", "3,4,5"}})->halo() == H{.radius = {1, 2, 2}});
  CHECK(operators::catalogue().find("trace_agc").configure()->halo() == H{.radius = {0, 0, 4}, .whole_traces = true});
  CHECK(operators::catalogue().find("gradient_magnitude").configure()->halo() == H{.radius = {4, 4, 4}});
  CHECK(operators::catalogue().find("gradient_magnitude").configure({{"sigmas", "0.5,1,1.2"}})->halo() ==
        H{.radius = {2, 4, 5}});
  CHECK(operators::catalogue().find("reflection_intensity").configure()->halo() == H{.radius = {0, 0, 4}});
  // Cube-wide reductions (histogram_equalization's histogram, trace_agc's maximum RMS).
  for (const auto* name : {"histogram_equalization", "trace_agc"})
    CHECK(operators::catalogue().find(name).configure()->reduction_passes() > 0);
  CHECK(operators::catalogue().find("rms").configure()->reduction_passes() == 0);
}

TEST_CASE("a signal operator run on a block extended by its halo gives the whole-cube values inside") {
  const std::vector<variant> variants = {{"first_derivative", {{"axis", "0"}}},
                                         {"second_derivative", {{"axis", "1"}}},
                                         {"rms", {{"kernel", "3,4,5"}}},
                                         {"gradient_magnitude", {{"sigmas", "0.5,1,1.2"}}}};
  for_each_configuration(signal_ops, variants,
                         [](const std::string& name, const param_map& p) { check_halo(name, p); });
}

TEST_CASE("signal reductions fold blocks in any order to the whole cube's") {
  check_reduction_folds("histogram_equalization");
  check_reduction_folds("trace_agc");
  check_reduction_folds("trace_agc", {{"kernel", "1,1,4"}});
}

TEST_CASE("trace_agc's reduction is the largest value of the rms it divides") {
  // The streamed RMS of the reduction and the whole-cube RMS of run sum in the
  // same order, so the maximum voxel gets exactly 1.5 - 1 = 0.5 x its sample.
  const shape3 shape{6, 5, 50};
  const auto cube = noise(shape, 11);
  const auto r = reduce_real(*operators::catalogue().find("trace_agc").configure(), cube, shape);
  const auto rms = run_real(*operators::catalogue().find("rms").configure(), cube, shape, 2);
  const float* v = rms.outputs[0].as<float>();
  REQUIRE(r.values.size() == 1);
  CHECK(r.values[0] == double(*std::max_element(v, v + shape.voxels())));
}

TEST_CASE("signal operators on analytic inputs") {
  SECTION("time_gain multiplies sample t by (t + 2)^gain_val") {
    const shape3 shape{2, 2, 30};
    const auto cube = noise(shape, 5);
    const auto run = run_real(*operators::catalogue().find("time_gain").configure({{"gain_val", "2"}}), cube, shape);
    for (std::uint64_t i = 0; i < shape.voxels(); ++i) {
      const auto t = double(i % shape.samples);
      CHECK(run.outputs[0].as<float>()[i] == Approx(cube[i] * (t + 2) * (t + 2)).epsilon(1e-6));
    }
  }
  SECTION("first_derivative of a ramp along each axis is its slope (times the smoothing's gain)") {
    const shape3 shape{8, 9, 10};
    const double gain = (0.178947 + 0.642105 + 0.178947) * (0.178947 + 0.642105 + 0.178947);
    for (int axis = 0; axis < 3; ++axis) {
      std::vector<float> ramp(shape.voxels());
      for (std::uint64_t i = 0; i < shape.voxels(); ++i) {
        const std::array<std::uint64_t, 3> at{i / (shape.crosslines * shape.samples),
                                              i / shape.samples % shape.crosslines, i % shape.samples};
        ramp[i] = 3.0f * float(at[std::size_t(axis)]);
      }
      const auto op = operators::catalogue().find("first_derivative").configure({{"axis", std::to_string(axis)}});
      const auto y = run_real(*op, ramp, shape).outputs[0];
      // interior along the axis (the reflect border halves the difference at the ends)
      const std::uint64_t probe = (4 * shape.crosslines + 4) * shape.samples + 5;
      CHECK(y.as<float>()[probe] == Approx(3.0 * gain).epsilon(1e-6));
    }
  }
  SECTION("gradient_magnitude of a constant cube is 0 and of a ramp its slope") {
    const shape3 shape{12, 12, 12};
    std::vector<float> ramp(shape.voxels());
    for (std::uint64_t i = 0; i < shape.voxels(); ++i) ramp[i] = 2.0f * float(i % shape.samples);
    const auto y = run_real(*operators::catalogue().find("gradient_magnitude").configure(), ramp, shape).outputs[0];
    const std::uint64_t centre = (6 * shape.crosslines + 6) * shape.samples + 6;
    // the truncated, normalised gaussian derivative of a ramp: slope * sum_x x^2 phi(x) / sigma^2 ~ slope
    CHECK(y.as<float>()[centre] == Approx(2.0).epsilon(1e-3));
    const auto flat = run_real(*operators::catalogue().find("gradient_magnitude").configure(),
                               std::vector<float>(shape.voxels(), 1.5f), shape)
                          .outputs[0];
    for (std::uint64_t i = 0; i < shape.voxels(); ++i) REQUIRE(std::abs(flat.as<float>()[i]) < 1e-6f);
  }
  SECTION("rms of a constant is its magnitude; reflection_intensity of a constant is (n - 1) x it") {
    const shape3 shape{2, 3, 20};
    const std::vector<float> c(shape.voxels(), -0.5f);
    const auto r = run_real(*operators::catalogue().find("rms").configure({{"kernel", "2,3,5"}}), c, shape).outputs[0];
    const auto ri = run_real(*operators::catalogue().find("reflection_intensity").configure(), c, shape).outputs[0];
    for (std::uint64_t i = 0; i < shape.voxels(); ++i) {
      REQUIRE(r.as<float>()[i] == Approx(0.5).epsilon(1e-6));
      REQUIRE(ri.as<float>()[i] == Approx(-4.0).epsilon(1e-6));
    }
  }
  SECTION("NaN: rms and gradient_magnitude write 0, rescale_amplitude_range keeps it") {
    const shape3 shape{3, 3, 12};
    auto cube = noise(shape, 9);
    cube[(1 * 3 + 1) * 12 + 6] = std::nanf("");
    for (const char* name : {"rms", "trace_agc", "gradient_magnitude", "reflection_intensity"}) {
      const auto y = run_real(*operators::catalogue().find(name).configure(), cube, shape).outputs[0];
      INFO(name);
      for (std::uint64_t i = 0; i < shape.voxels(); ++i) REQUIRE(!std::isnan(y.as<float>()[i]));
    }
    const auto clip = run_real(*operators::catalogue().find("rescale_amplitude_range").configure(), cube, shape);
    CHECK(std::isnan(clip.outputs[0].as<float>()[(1 * 3 + 1) * 12 + 6]));
  }
  SECTION("histogram_equalization maps the minimum to the first bin's CDF and the maximum to 1") {
    const shape3 shape{1, 1, 256};
    std::vector<float> ramp(256);
    for (int i = 0; i < 256; ++i) ramp[std::size_t(i)] = float(i);
    ramp[7] = std::nanf("");
    const auto y = run_real(*operators::catalogue().find("histogram_equalization").configure(), ramp, shape).outputs[0];
    CHECK(y.as<float>()[255] == 1.0f);
    CHECK(y.as<float>()[0] == Approx(1.0 / 255));  // below the first centre: the first bin's CDF
    CHECK(std::isnan(y.as<float>()[7]));           // NaN is left out and stays NaN
  }
}

TEST_CASE("signal operators reject invalid parameters with a message naming them") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(configured("first_derivative", "axis", "3"), Contains("'axis'") && Contains("from -3 to 2"));
  CHECK_THROWS_WITH(configured("second_derivative", "axis", "-4"), Contains("'axis'"));
  CHECK_THROWS_AS(configured("first_derivative", "axis", "0.5"), invalid_input);
  CHECK_THROWS_WITH(configured("rms", "kernel", "0,1,9"), Contains("'kernel'") && Contains("entry 0"));
  CHECK_THROWS_WITH(configured("rms2", "kernel", "1,1,2.5"), Contains("'kernel'") && Contains("entry 2"));
  CHECK_THROWS_WITH(configured("reflection_intensity", "kernel", "1,9"), Contains("'kernel'"));
  CHECK_THROWS_WITH(configured("trace_agc", "kernel", "3,3,9"), Contains("'kernel'") && Contains("1,1,n"));
  CHECK_THROWS_WITH(configured("gradient_magnitude", "sigmas", "0,1,1"), Contains("'sigmas'") && Contains("> 0"));
  CHECK_THROWS_WITH(
      operators::catalogue().find("rescale_amplitude_range").configure({{"min_val", "1"}, {"max_val", "0"}}),
      Contains("min_val <= max_val"));
  CHECK_THROWS_WITH(configured("time_gain", "gain", "2"), Contains("no parameter 'gain'"));
  CHECK_NOTHROW(configured("first_derivative", "axis", "-3"));
  CHECK_NOTHROW(configured("trace_agc", "kernel", "1,1,1"));
}
