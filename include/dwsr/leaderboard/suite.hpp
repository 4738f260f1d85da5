#pragma once
/// \file The leaderboard's suites: lists of jobs (a graph, a synthetic cube, a
/// chunking, W workers x T threads) drawn from a seed, each job from its own
/// stream, so that a seed names the same list on every platform and a job's
/// draw does not depend on the suite's length.
///
/// A job's graph has 1 to `max_nodes` nodes; node k reads the input or an
/// earlier node, with even odds, and runs one of suite_operators(): operators
/// whose peak does not depend on the data (a data-dependent peak is a bound,
/// not a label) and fast enough that the full suite runs in minutes. Its
/// cube is one of four "large": 4 to 8 times the suite's base volume
/// (log-uniform), otherwise 1/4 to 1 times it (the smallest runs hold
/// megabytes: the RSS probe's baseline varies by some 0.5 MB between runs); samples 128, 256 or 512 (the
/// most that leave a square of at least 8 x 8 traces), the rest a square. Its
/// chunking is one of three: the whole cube, inline halves, or inline and
/// crossline halves. W and T are uniform in 1..max.
///
/// Every job is in the train or the test part of each of three splits:
/// - random: test with odds 1/4 (a draw of its own);
/// - family: test when any of its nodes belongs to one of two operator
///   families held out, drawn from the seed;
/// - extrapolation: test when the cube is large. The learned estimators fit on
///   volumes up to the base and are tested on 4 to 8 times larger ones: the
///   regime where the thesis's trees predicted 5.4 GB for a 16.4 GB run.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "dwsr/core/quote.hpp"
#include "dwsr/core/random.hpp"
#include "dwsr/error.hpp"
#include "dwsr/estimators/estimate.hpp"
#include "dwsr/graph/graph.hpp"

namespace dwsr::leaderboard {

/// The three splits of a suite.
enum class split { random, family, extrapolation };
inline constexpr std::array<split, 3> all_splits{split::random, split::family, split::extrapolation};

inline std::string_view name_of(split s) noexcept {
  switch (s) {
    case split::random: return "random";
    case split::family: return "family";
    case split::extrapolation: return "extrapolation";
  }
  return "?";
}

/// The sizes of a suite.
struct suite_spec {
  std::string name;
  std::size_t jobs = 0;
  std::size_t max_nodes = 1, max_workers = 1, max_threads = 1;
  std::uint64_t base_voxels = 0;  ///< the extrapolation split's train volumes are at most this
};

/// `quick` (24 jobs of 1-2 nodes, W and T up to 2, base 128^3 voxels:
/// seconds; the README's test command runs it) and `full` (216 jobs of 1-4 nodes, W
/// up to 4, T up to 2, base 200^3 voxels, so cubes up to 256 MB).
inline const std::vector<suite_spec>& suites() {
  static const std::vector<suite_spec> s{{"quick", 24, 2, 2, 2, 128 * 128 * 128},
                                         {"full", 216, 4, 4, 2, 200 * 200 * 200}};
  return s;
}

/// The suite named `name`; throws invalid_input naming the known ones.
inline const suite_spec& suite_named(std::string_view name) {
  for (const auto& s : suites())
    if (s.name == name) return s;
  throw invalid_input("suite " + quote(name) + ": expected quick or full");
}

/// The operators suite graphs draw from (see the file comment), with their
/// families.
inline const std::vector<std::string>& suite_operators() {
  static const std::vector<std::string> ops{"envelope",
                                            "instantaneous_phase",
                                            "instantaneous_frequency",
                                            "sweetness",
                                            "first_derivative",
                                            "second_derivative",
                                            "rms",
                                            "trace_agc",
                                            "lowpass_filter",
                                            "gaussian",
                                            "median",
                                            "convolution",
                                            "gradient_dips",
                                            "gst_3d_dip",
                                            "chaos"};
  return ops;
}

/// One job of a suite.
struct suite_job {
  std::uint64_t id = 0;
  std::shared_ptr<const graph> g;
  std::vector<node_spec> specs;  ///< what the graph was built from
  std::string operators;         ///< node operators joined by '+'
  std::set<std::string> families;
  shape3 cube{};
  shape3 chunk{};
  std::size_t workers = 1, threads = 1;
  std::uint64_t cube_seed = 0;  ///< the synthetic cube synthetic:IxXxT:SEED
  bool large = false;
  std::array<bool, 3> test{};  ///< per split (all_splits' order): in the test part

  bool in_test(split s) const noexcept { return test[std::size_t(s)]; }
  /// The job as estimators see it.
  estimate_job view() const {
    return {.id = id,
            .g = g.get(),
            .operators = operators,
            .cube = cube,
            .chunk = chunk,
            .workers = workers,
            .threads = threads};
  }
};

/// A drawn suite: its jobs and the families its family split holds out.
struct suite {
  suite_spec spec;
  std::uint64_t seed = 0;
  std::vector<std::string> held_out;  ///< the family split's test families
  std::vector<suite_job> jobs;
};

namespace detail {

/// Uniform in 0..n-1.
inline std::size_t below(xoshiro256ss& rng, std::size_t n) { return std::size_t(rng.next() % n); }

/// Log-uniform in [lo, hi) from portable arithmetic (the same on every platform).
inline double log_uniform_real(xoshiro256ss& rng, double lo, double hi) {
  return portable_exp(portable_log(lo) + (portable_log(hi) - portable_log(lo)) * rng.uniform());
}

/// Node k's name, "nk" (built by appending: GCC 12 warns on "n" + string).
inline std::string node_name(std::size_t k) {
  std::string name(1, 'n');
  name += std::to_string(k);
  return name;
}

}  // namespace detail

/// A suite's three chunkings of `cube`, fewest blocks first: the whole cube,
/// inline halves, inline and crossline halves.
inline std::array<shape3, 3> candidate_chunks(shape3 cube) {
  const shape3 half{(cube.inlines + 1) / 2, cube.crosslines, cube.samples};
  return {cube, half, {half.inlines, (cube.crosslines + 1) / 2, cube.samples}};
}

/// Draws suite `name` from `seed` over registry `r` (see the file comment).
/// Throws invalid_input for an unknown suite or a registry without the
/// suite's operators.
inline suite make_suite(const registry& r, std::string_view name, std::uint64_t seed) {
  suite s{suite_named(name), seed, {}, {}};
  const auto& ops = suite_operators();
  std::vector<std::string> families;
  for (const auto& op : ops) {
    if (!r.contains(op)) throw invalid_input("the suite's operator " + quote(op) + " is not in the registry");
    const auto& f = r.find(op).family;
    if (std::find(families.begin(), families.end(), f) == families.end()) families.push_back(f);
  }
  xoshiro256ss pick(stream_key(seed, 0, 3));
  while (s.held_out.size() < 2) {
    const auto& f = families[detail::below(pick, families.size())];
    if (std::find(s.held_out.begin(), s.held_out.end(), f) == s.held_out.end()) s.held_out.push_back(f);
  }
  std::sort(s.held_out.begin(), s.held_out.end());
  for (std::size_t id = 0; id < s.spec.jobs; ++id) {
    xoshiro256ss rng(stream_key(seed, id, 1));
    suite_job j;
    j.id = id;
    const auto nodes = 1 + detail::below(rng, s.spec.max_nodes);
    for (std::size_t k = 0; k < nodes; ++k) {
      node_spec n;
      n.name = detail::node_name(k);
      n.op = ops[detail::below(rng, ops.size())];
      n.inputs = {k == 0 || detail::below(rng, 2) == 0 ? std::string(graph_input)
                                                       : detail::node_name(detail::below(rng, k))};
      j.operators += (k ? "+" : "") + n.op;
      j.families.insert(r.find(n.op).family);
      j.specs.push_back(std::move(n));
    }
    j.g = std::make_shared<const graph>(graph::from_specs(r, j.specs));
    j.large = detail::below(rng, 4) == 0;
    const double base = double(s.spec.base_voxels);
    const double voxels =
        j.large ? base * detail::log_uniform_real(rng, 4, 8) : base * detail::log_uniform_real(rng, 0.25, 1);
    std::uint64_t samples = 512;
    while (samples > 128 && voxels / double(samples) < 64) samples /= 2;
    const auto side = std::max<std::uint64_t>(8, std::uint64_t(std::sqrt(voxels / double(samples))));
    j.cube = {side, side, samples};
    j.chunk = candidate_chunks(j.cube)[detail::below(rng, 3)];
    const auto blocks =
        ((side + j.chunk.inlines - 1) / j.chunk.inlines) * ((side + j.chunk.crosslines - 1) / j.chunk.crosslines);
    j.workers = std::min<std::size_t>(1 + detail::below(rng, s.spec.max_workers), blocks);
    j.threads = 1 + detail::below(rng, s.spec.max_threads);
    j.cube_seed = id + 1;
    j.test[std::size_t(split::random)] = detail::below(rng, 4) == 0;
    j.test[std::size_t(split::family)] = std::any_of(s.held_out.begin(), s.held_out.end(),
                                                     [&](const std::string& f) { return j.families.count(f) > 0; });
    j.test[std::size_t(split::extrapolation)] = j.large;
    s.jobs.push_back(std::move(j));
  }
  return s;
}

}  // namespace dwsr::leaderboard
