// The complex-trace family against the DASF reference outputs, plan == run,
// and exact memory figures.

#include <catch2/catch.hpp>

#include <cstring>

#include "operator_test_support.hpp"

using namespace dwsr;
using namespace dwsr::test;

namespace {
const std::vector<std::string> complex_trace_ops = {
    "hilbert", "envelope", "instantaneous_phase", "cosine_instantaneous_phase", "relative_amplitude_change",
    "amplitude_acceleration", "instantaneous_frequency", "instantaneous_bandwidth", "dominant_frequency",
    "frequency_change", "sweetness", "quality_factor", "response_phase", "response_frequency",
    "response_amplitude", "apparent_polarity", "phase_rotation"};
}

// Tolerances: the manifest's, 1e-4 * max(1, max |ref|), for every output. The
// reference computes its FFTs with pocketfft and dwsr with FFTW, both in single
// precision: the analytic signals differ by ~2e-7 of their maximum. Two kinds of
// output amplify that at a few voxels, which are then held to a bound derived
// from their conditioning instead (and must be under 1% of the cube):
// - phases, where the envelope nearly vanishes (a phase error is the analytic
//   signal's error over |a|): voxels with envelope < 1e-3 x its maximum must
//   agree within 1 degree (0.02 for cosines);
// - quality_factor = pi IF / RAC, where RAC crosses zero: voxels with
//   |RAC| < 1e-3 must agree within 1% relative.
namespace {
std::function<double(double)> within(double bound) {
  return [bound](double) { return bound; };
}
}  // namespace

TEST_CASE("complex-trace attributes match the DASF reference") {
  const auto envelope = reference_values("envelope");
  const float max_envelope = *std::max_element(envelope.begin(), envelope.end());
  const auto phase_defined = [&](std::uint64_t i) { return envelope[i] >= 1e-3f * max_envelope; };
  SECTION("analytic signal and pointwise attributes") {
    check_against_reference({"hilbert", "hilbert"});
    check_against_reference({"envelope", "envelope"});
    check_against_reference({"instantaneous_phase", "instantaneous_phase", 1e-4, {}, 0, phase_defined, within(1.0)});
    check_against_reference({"cosine_instantaneous_phase", "cosine_instantaneous_phase", 1e-4, {}, 0, phase_defined, within(0.02)});
    check_against_reference({"phase_rotation", "phase_rotation"});
  }
  SECTION("derivative-based attributes") {
    check_against_reference({"relative_amplitude_change", "relative_amplitude_change"});
    check_against_reference({"amplitude_acceleration", "amplitude_acceleration"});
    check_against_reference({"instantaneous_frequency", "instantaneous_frequency"});
    check_against_reference({"instantaneous_bandwidth", "instantaneous_bandwidth"});
    check_against_reference({"dominant_frequency", "dominant_frequency"});
    check_against_reference({"frequency_change", "frequency_change"});
    check_against_reference({"sweetness", "sweetness"});
    const auto rac = reference_values("relative_amplitude_change");
    check_against_reference({"quality_factor", "quality_factor", 1e-4, {}, 0,
                             [&](std::uint64_t i) { return std::abs(rac[i]) >= 1e-3f; },
                             [](double ref) { return 0.01 * ref; }});
  }
  SECTION("lobe responses") {
    check_against_reference({"response_phase", "response_phase", 1e-4, {}, 0, phase_defined, within(1.0)});
    check_against_reference({"response_frequency", "response_frequency"});
    check_against_reference({"response_amplitude", "response_amplitude"});
    check_against_reference({"apparent_polarity", "apparent_polarity"});
  }
}

TEST_CASE("meta execution emits exactly the real execution's events for every complex-trace operator") {
  auto shapes = edge_shapes();
  std::uint64_t seed = 0x5eed;
  for (int i = 0; i < 6; ++i) {  // random shapes, fixed seed
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    shapes.push_back({1 + (seed >> 60), 1 + ((seed >> 50) & 7), 1 + ((seed >> 33) % 200)});
  }
  for (const auto& name : complex_trace_ops) {
    const auto op = operators::catalogue().find(name).configure();
    for (const auto& shape : shapes) {
      for (std::size_t threads : {1, 2, 3}) {
        INFO(name << " on " << to_string(shape) << " with " << threads << " threads");
        const auto run = run_real(*op, noise(shape, shape.voxels()), shape, threads);
        const auto planned = meta_events(*op, shape, threads);
        REQUIRE(run.events == planned);
        CHECK(run.peak == plan(*op, shape, threads).peak_bytes);
      }
    }
  }
}

TEST_CASE("complex-trace peaks are input + outputs + per-thread traces + a few slices, exactly") {
  // Scratch per thread: one real trace and one complex trace, each padded to a
  // 64-byte multiple. Derivative-based attributes add six inline slices per
  // derivative stage (dominant_frequency and quality_factor run two stages and
  // one slice to combine them).
  const std::map<std::string, std::uint64_t> slices = {
      {"relative_amplitude_change", 6}, {"amplitude_acceleration", 12}, {"instantaneous_frequency", 6},
      {"instantaneous_bandwidth", 6},   {"dominant_frequency", 13},     {"frequency_change", 12},
      {"sweetness", 6},                 {"quality_factor", 13},         {"response_frequency", 6}};
  const shape3 shape{128, 128, 512};
  const std::size_t threads = 2;
  const auto input = noise(shape, 1);
  const std::uint64_t in_bytes = shape.voxels() * 4;
  const std::uint64_t per_thread = (shape.samples + 15) / 16 * 16 * 4 + (shape.samples + 7) / 8 * 8 * 8;
  const std::uint64_t slice = shape.crosslines * shape.samples * 4;
  for (const auto& name : complex_trace_ops) {
    const auto op = operators::catalogue().find(name).configure();
    const auto it = slices.find(name);
    const std::uint64_t expected =
        in_bytes + output_bytes(*op, shape) + threads * per_thread + (it == slices.end() ? 0 : it->second * slice);
    const auto run = run_real(*op, input, shape, threads);
    INFO(name << ": peak " << run.peak << " = " << double(run.peak) / double(in_bytes) << " x input");
    CHECK(run.peak == expected);
    // The acceptance bound: about 2x the input for float outputs (NumPy: 7-8x).
    CHECK(double(run.peak) <= double(in_bytes + output_bytes(*op, shape)) * 1.11);
  }
}

TEST_CASE("complex-trace operators declare their halos") {
  const std::map<std::string, std::uint64_t> radius = {
      {"relative_amplitude_change", 1}, {"amplitude_acceleration", 2}, {"instantaneous_frequency", 1},
      {"instantaneous_bandwidth", 1},   {"dominant_frequency", 1},     {"frequency_change", 2},
      {"sweetness", 1},                 {"quality_factor", 1},         {"response_frequency", 1}};
  for (const auto& name : complex_trace_ops) {
    const auto h = operators::catalogue().find(name).configure()->halo();
    const auto it = radius.find(name);
    const std::uint64_t r = it == radius.end() ? 0 : it->second;
    INFO(name);
    CHECK(h == halo{.radius = {r, r, 0}, .whole_traces = true});
  }
}

TEST_CASE("an operator run on a block extended by its halo gives the whole-cube values inside") {
  // What chunked execution relies on: the declared inline/crossline radius is
  // enough. Block [2, 6) x [2, 5) of a 8x7x40 cube, extended by the radius.
  const shape3 shape{8, 7, 40};
  const auto cube = noise(shape, 42);
  for (const auto& name : complex_trace_ops) {
    const auto op = operators::catalogue().find(name).configure();
    const auto r = op->halo().radius;
    const std::uint64_t i0 = 2 - r[0], i1 = 6 + r[0], x0 = 2 - r[1], x1 = 5 + r[1];
    const shape3 block{i1 - i0, x1 - x0, shape.samples};
    std::vector<float> sub;
    for (auto i = i0; i < i1; ++i)
      for (auto x = x0; x < x1; ++x)
        sub.insert(sub.end(), cube.begin() + std::ptrdiff_t((i * shape.crosslines + x) * shape.samples),
                   cube.begin() + std::ptrdiff_t((i * shape.crosslines + x + 1) * shape.samples));
    const auto whole = run_real(*op, cube, shape);
    const auto part = run_real(*op, sub, block);
    const auto elem = size_of(whole.outputs[0].type) * shape.samples;
    for (std::uint64_t i = 2; i < 6; ++i)
      for (std::uint64_t x = 2; x < 5; ++x) {
        const auto* w = whole.outputs[0].bytes.data() + (i * shape.crosslines + x) * elem;
        const auto* p = part.outputs[0].bytes.data() + ((i - i0) * block.crosslines + (x - x0)) * elem;
        INFO(name << " trace " << i << "," << x);
        REQUIRE(std::memcmp(w, p, elem) == 0);
      }
  }
}
