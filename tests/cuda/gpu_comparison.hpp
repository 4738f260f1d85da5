#pragma once
// A CUDA operator's output against the CPU operator's, for the cuda tests and
// bench/cuda_table: the largest difference over well-conditioned voxels and
// the tolerance of the reference tests (1e-4 max(1, max |cpu|)).
//
// The attributes built on the analytic signal's phase or on ratios to its
// envelope are ill-conditioned where the envelope is small: an angle moves
// by |da| / |a| there, a ratio by its denominator's relative error, and
// numpy.unwrap's steps near +-pi may go either way. Each first derivative
// (the reference's FirstDerivative) spreads that over the 3 x 3 x 3 voxels
// around. Voxels within that reach of an envelope below 2 % of the cube's
// largest (on a sparse reflectivity cube, most of them) may differ beyond
// the tolerance, but only a few do (`outside`); the rest are held to it.
// quality_factor (pi f / rac) is also ill-conditioned where the relative
// amplitude change crosses zero (|rac| < 1e-3, the reference test's bound).
//
// The lobe responses spread one value over each envelope lobe (troughs start
// lobes; the value is taken at the lobe's peak). A lobe is ill-conditioned
// where an envelope difference of 1e-5 of the largest could move a trough or
// the peak (the two sides' envelopes differ by ~3e-7 of it), and, for the
// phase and the frequency, where the value at its peak is.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "dwsr/core/cube_view.hpp"
#include "dwsr/core/shape.hpp"
#include "dwsr/exec/contexts.hpp"
#include "dwsr/memory/event_bus.hpp"
#include "dwsr/operators/catalogue.hpp"

namespace dwsr::testing {

/// How far (voxels along each axis) an operator's values reach from an
/// ill-conditioned analytic signal: 1 for the phases themselves and one
/// first derivative, 2 for two; -1 where they are well-conditioned.
inline int conditioning_reach(const std::string& op) {
  for (const char* once :
       {"instantaneous_phase", "cosine_instantaneous_phase", "instantaneous_frequency", "sweetness",
        "relative_amplitude_change", "instantaneous_bandwidth", "dominant_frequency", "quality_factor"})
    if (op == once) return 1;
  if (op == "amplitude_acceleration" || op == "frequency_change") return 2;
  return -1;
}

/// The outcome of a comparison.
struct gpu_comparison {
  double max_abs_diff = 0;                  ///< over the compared voxels
  double tolerance = 0;                     ///< 1e-4 max(1, max |cpu|)
  std::uint64_t worst = 0;                  ///< index of the largest difference
  std::uint64_t finiteness_mismatches = 0;  ///< finite on one side only
  std::uint64_t ill_conditioned = 0;        ///< voxels not held to the tolerance
  std::uint64_t outside = 0;                ///< values beyond the tolerance, ill-conditioned or not
  bool ok() const { return finiteness_mismatches == 0 && max_abs_diff <= tolerance; }
};

/// Voxels of `shape` within `reach` voxels (along each axis) of an envelope
/// below `fraction` of the largest.
inline std::vector<bool> weak_envelope(const float* envelope, shape3 s, int reach = 1, double fraction = 0.02) {
  double largest = 0;
  for (std::uint64_t i = 0; i < s.voxels(); ++i) largest = std::max(largest, double(envelope[i]));
  const auto n = s.voxels();
  const std::int64_t r = reach;
  std::vector<bool> weak(n, false);
  for (std::uint64_t i = 0; i < n; ++i) {
    if (double(envelope[i]) >= fraction * largest) continue;
    const auto t = std::int64_t(i % s.samples), x = std::int64_t(i / s.samples % s.crosslines),
               il = std::int64_t(i / s.samples / s.crosslines);
    for (std::int64_t a = -r; a <= r; ++a)
      for (std::int64_t b = -r; b <= r; ++b)
        for (std::int64_t c = -r; c <= r; ++c) {
          const auto p = il + a, q = x + b, u = t + c;
          if (p < 0 || q < 0 || u < 0 || p >= std::int64_t(s.inlines) || q >= std::int64_t(s.crosslines) ||
              u >= std::int64_t(s.samples))
            continue;
          weak[std::uint64_t((p * std::int64_t(s.crosslines) + q) * std::int64_t(s.samples) + u)] = true;
        }
  }
  return weak;
}

/// Marks every voxel of the lobes (see the file comment) of `envelope` whose
/// troughs or peak a difference of `tie` x its largest value could move, or
/// whose peak is marked in `weak_peak` (may be empty).
inline void weak_lobes(const float* envelope, shape3 s, const std::vector<bool>& weak_peak, std::vector<bool>& weak,
                       double tie = 1e-5) {
  double largest = 0;
  for (std::uint64_t i = 0; i < s.voxels(); ++i) largest = std::max(largest, double(envelope[i]));
  const double eps = tie * largest;
  const auto n = std::int64_t(s.samples);
  std::vector<std::int64_t> lobe(s.samples);  // each sample's lobe
  std::vector<char> shaky;                    // per lobe: ill-conditioned
  for (std::uint64_t tr = 0; tr < s.traces(); ++tr) {
    const float* e = envelope + tr * s.samples;
    auto near = [&](std::int64_t a, std::int64_t b) { return std::abs(double(e[a]) - double(e[b])) < eps; };
    shaky.assign(1, 0);
    std::int64_t k = 0, start = 0;
    auto close_lobe = [&](std::int64_t end) {
      std::int64_t p = start;
      for (auto t = start + 1; t < end; ++t)
        if (e[t] > e[p]) p = t;
      for (auto t = start; t < end; ++t)
        if (t != p && near(t, p)) shaky[std::size_t(k)] = 1;  // another sample could be the peak
      if (!weak_peak.empty() && weak_peak[tr * s.samples + std::uint64_t(p)]) shaky[std::size_t(k)] = 1;
    };
    for (std::int64_t t = 0; t < n; ++t) {
      if (t >= 1 && t + 1 < n && e[t] < e[t - 1] && e[t] < e[t + 1]) {
        close_lobe(t);
        start = t;
        shaky.push_back(0);
        ++k;
      }
      lobe[std::size_t(t)] = k;
    }
    close_lobe(n);
    // A trough test that a small difference could flip: the lobes around it.
    for (std::int64_t t = 1; t + 1 < n; ++t)
      if (near(t, t - 1) || near(t, t + 1))
        for (auto u = t - 1; u <= t + 1; ++u) shaky[std::size_t(lobe[std::size_t(u)])] = 1;
    for (std::int64_t t = 0; t < n; ++t)
      if (shaky[std::size_t(lobe[std::size_t(t)])]) weak[tr * s.samples + std::uint64_t(t)] = true;
  }
}

/// The CPU operator `op`'s (float) output on `in`, at its defaults.
inline std::vector<float> cpu_output(const std::string& op, cube_view<const float> in) {
  const auto configured = operators::catalogue().find(op).configure({});
  std::vector<float> out(in.shape().voxels());
  const array_ref ref{dtype::float32, out.data(), in.shape()};
  event_bus bus;
  host_context ctx(bus);
  configured->run(ctx, in, std::span<const array_ref>(&ref, 1));
  return out;
}

/// The voxels where `op`'s values on `in` are ill-conditioned (see the file
/// comment); empty where none are.
inline std::vector<bool> ill_conditioned_voxels(const std::string& op, cube_view<const float> in) {
  const bool lobes =
      op == "response_phase" || op == "response_frequency" || op == "response_amplitude" || op == "apparent_polarity";
  if (lobes) {
    const auto env = cpu_output("envelope", in);
    std::vector<bool> weak_peak;  // the phase and the frequency at a lobe's peak
    if (op == "response_phase" || op == "response_frequency") weak_peak = weak_envelope(env.data(), in.shape(), 1);
    std::vector<bool> weak(in.shape().voxels(), false);
    weak_lobes(env.data(), in.shape(), weak_peak, weak);
    return weak;
  }
  const int reach = conditioning_reach(op);
  if (reach < 0) return {};
  auto weak = weak_envelope(cpu_output("envelope", in).data(), in.shape(), reach);
  if (op == "quality_factor") {
    const auto rac = cpu_output("relative_amplitude_change", in);
    for (std::size_t i = 0; i < rac.size(); ++i)
      if (std::abs(rac[i]) < 1e-3f) weak[i] = true;
  }
  return weak;
}

/// Compares n floats (complex values as pairs: `per_voxel` floats a voxel);
/// `weak` (or empty) marks voxels not held to the tolerance.
inline gpu_comparison compare_outputs(const float* gpu, const float* cpu, std::uint64_t n, std::uint64_t per_voxel,
                                      const std::vector<bool>& weak) {
  gpu_comparison c;
  double largest = 0;
  for (std::uint64_t i = 0; i < n; ++i)
    if (std::isfinite(cpu[i])) largest = std::max(largest, std::abs(double(cpu[i])));
  c.tolerance = 1e-4 * std::max(1.0, largest);
  for (std::uint64_t i = 0; i < n; ++i) {
    if (std::isfinite(gpu[i]) != std::isfinite(cpu[i])) {
      ++c.finiteness_mismatches;
      continue;
    }
    if (!std::isfinite(cpu[i])) continue;
    const double d = std::abs(double(gpu[i]) - double(cpu[i]));
    c.outside += d > c.tolerance;
    if (!weak.empty() && weak[i / per_voxel]) {
      c.ill_conditioned += (i % per_voxel == 0);
      continue;
    }
    if (d > c.max_abs_diff) c.max_abs_diff = d, c.worst = i;
  }
  return c;
}

}  // namespace dwsr::testing
