// The complex-trace family against the DASF reference outputs, plan == run,
// and exact memory figures.

#include <catch2/catch.hpp>

#include "operator_test_support.hpp"

using namespace dwsr;
using namespace dwsr::test;

namespace {
const std::vector<std::string> complex_trace_ops = {"hilbert",
                                                    "envelope",
                                                    "instantaneous_phase",
                                                    "cosine_instantaneous_phase",
                                                    "relative_amplitude_change",
                                                    "amplitude_acceleration",
                                                    "instantaneous_frequency",
                                                    "instantaneous_bandwidth",
                                                    "dominant_frequency",
                                                    "frequency_change",
                                                    "sweetness",
                                                    "quality_factor",
                                                    "response_phase",
                                                    "response_frequency",
                                                    "response_amplitude",
                                                    "apparent_polarity",
                                                    "phase_rotation"};
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
    check_against_references({"hilbert", "envelope", "phase_rotation"});
    check_against_reference({"instantaneous_phase", "instantaneous_phase", 1e-4, {}, 0, phase_defined, within(1.0)});
    check_against_reference(
        {"cosine_instantaneous_phase", "cosine_instantaneous_phase", 1e-4, {}, 0, phase_defined, within(0.02)});
  }
  SECTION("derivative-based attributes") {
    check_against_references({"relative_amplitude_change", "amplitude_acceleration", "instantaneous_frequency",
                              "instantaneous_bandwidth", "dominant_frequency", "frequency_change", "sweetness"});
    const auto rac = reference_values("relative_amplitude_change");
    check_against_reference({"quality_factor",
                             "quality_factor",
                             1e-4,
                             {},
                             0,
                             [&](std::uint64_t i) { return std::abs(rac[i]) >= 1e-3f; },
                             [](double ref) { return 0.01 * ref; }});
  }
  SECTION("lobe responses") {
    check_against_reference({"response_phase", "response_phase", 1e-4, {}, 0, phase_defined, within(1.0)});
    check_against_references({"response_frequency", "response_amplitude", "apparent_polarity"});
  }
}

TEST_CASE("meta execution emits exactly the real execution's events for every complex-trace operator") {
  for (const auto& name : complex_trace_ops) check_plan_matches_run(*configured(name), test_shapes(0x5eed), false);
}

TEST_CASE("complex-trace peaks are input + outputs + per-thread traces + a few slices, exactly") {
  // Scratch per thread: one real trace and one complex trace, each padded to a
  // 64-byte multiple. Derivative-based attributes add six inline slices per
  // derivative stage (dominant_frequency and quality_factor run two stages and
  // one slice to combine them).
  const std::map<std::string, std::uint64_t> slices = {{"relative_amplitude_change", 6},
                                                       {"amplitude_acceleration", 12},
                                                       {"instantaneous_frequency", 6},
                                                       {"instantaneous_bandwidth", 6},
                                                       {"dominant_frequency", 13},
                                                       {"frequency_change", 12},
                                                       {"sweetness", 6},
                                                       {"quality_factor", 13},
                                                       {"response_frequency", 6}};
  const shape3 shape{128, 128, 512};
  const std::size_t threads = 2;
  const std::uint64_t per_thread = (shape.samples + 15) / 16 * 16 * 4 + (shape.samples + 7) / 8 * 8 * 8;
  const std::uint64_t slice = shape.crosslines * shape.samples * 4;
  const auto scratch = [&](const std::string& name) {
    const auto it = slices.find(name);
    return threads * per_thread + (it == slices.end() ? 0 : it->second * slice);
  };
  // The acceptance bound: about 2x the input for float outputs (NumPy: 7-8x).
  check_measured_peaks(complex_trace_ops, noise(shape, 1), shape, threads, scratch, 1.11);
}

TEST_CASE("complex-trace operators declare their halos") {
  const std::map<std::string, std::uint64_t> radius = {{"relative_amplitude_change", 1},
                                                       {"amplitude_acceleration", 2},
                                                       {"instantaneous_frequency", 1},
                                                       {"instantaneous_bandwidth", 1},
                                                       {"dominant_frequency", 1},
                                                       {"frequency_change", 2},
                                                       {"sweetness", 1},
                                                       {"quality_factor", 1},
                                                       {"response_frequency", 1}};
  for (const auto& name : complex_trace_ops) {
    const auto h = operators::catalogue().find(name).configure()->halo();
    const auto it = radius.find(name);
    const std::uint64_t r = it == radius.end() ? 0 : it->second;
    INFO(name);
    CHECK(h == halo{.radius = {r, r, 0}, .whole_traces = true});
  }
}

TEST_CASE("an operator run on a block extended by its halo gives the whole-cube values inside") {
  // What chunked execution relies on: the declared inline/crossline radius is enough.
  for (const auto& name : complex_trace_ops) check_trace_block_halo(*configured(name), 1);
}
