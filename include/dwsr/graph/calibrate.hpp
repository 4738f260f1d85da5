#pragma once
/// \file `dwsr calibrate`: measures each operator of a registry on this machine
/// and fits its time profile (sim/time_profile.hpp).
///
/// Each operator runs for real (one worker, T threads, cubes in memory) on
/// three configurations: a small cube as one block, a larger cube as one
/// block, and the larger cube in 4 x 4-trace blocks (when the operator may
/// split those axes). The best of a few repeats of each gives
/// (blocks, extended voxels, seconds), and a least-squares fit of
/// seconds = blocks x fixed + voxels x per_voxel gives the operator's costs,
/// less the cost of reading each block's window into its input buffer (the
/// "copy", measured the same way). Operators of several cubes read the cube
/// on every input.

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "dwsr/core/simd_isa.hpp"
#include "dwsr/graph/chunked.hpp"
#include "dwsr/sim/time_profile.hpp"

namespace dwsr {

/// What to measure.
struct calibrate_options {
  bool quick = false;                ///< smaller cubes and fewer repeats (about ten seconds for the catalogue)
  std::vector<std::string> ops;      ///< operators to measure (empty: every one of the registry)
  std::vector<std::size_t> threads;  ///< thread counts (empty: 1 and the machine's cores)
  /// Called after each operator: its name, how many are done, how many in all.
  std::function<void(const std::string&, std::size_t, std::size_t)> progress;
};

namespace detail {

/// One measured configuration.
struct timing_point {
  double blocks = 0, voxels = 0, seconds = 0;
};

/// Least-squares fit of seconds = blocks x fixed + voxels x per_voxel, both >= 0.
inline sim::step_cost fit_step(const std::vector<timing_point>& pts, std::size_t threads) {
  double bb = 0, bv = 0, vv = 0, bs = 0, vs = 0;
  for (const auto& p : pts) {
    bb += p.blocks * p.blocks, bv += p.blocks * p.voxels, vv += p.voxels * p.voxels;
    bs += p.blocks * p.seconds, vs += p.voxels * p.seconds;
  }
  const double det = bb * vv - bv * bv;
  double fixed = det > 0 ? (bs * vv - vs * bv) / det : 0;
  double per_voxel = det > 0 ? (vs * bb - bs * bv) / det : 0;
  if (fixed < 0 || det <= 0) fixed = 0, per_voxel = vs / vv;  // no measurable fixed cost: all per voxel
  if (per_voxel < 0) per_voxel = 0, fixed = bs / bb;
  return {fixed, {{threads, per_voxel}}};
}

inline std::string machine_cpu() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "unknown";
}

inline std::string utc_now() {
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

/// A deterministic cube of `shape` (values in [-1, 1)).
inline std::vector<float> calibration_cube(shape3 shape) {
  std::vector<float> cube(shape.voxels());
  std::uint32_t x = 12345;
  for (auto& v : cube) {
    x = x * 1664525u + 1013904223u;
    v = float(x >> 8) / float(1u << 23) - 1.0f;
  }
  return cube;
}

}  // namespace detail

/// Measures the operators of `ops` (see the file comment) and returns the profile.
inline sim::time_profile calibrate(const registry& ops, const calibrate_options& o) {
  const std::uint64_t samples = o.quick ? 256 : 512;
  const shape3 small{8, 8, samples}, large{o.quick ? 24u : 32u, o.quick ? 24u : 32u, samples};
  const int repeats = o.quick ? 2 : 3;
  auto threads = o.threads;
  const auto cores = std::max(1u, std::thread::hardware_concurrency());
  if (threads.empty()) threads = cores > 1 ? std::vector<std::size_t>{1, cores} : std::vector<std::size_t>{1};
  std::vector<std::string> names = o.ops;
  if (names.empty())
    for (const auto& e : ops.entries()) names.push_back(e.name);
  for (const auto& n : names) ops.find(n);  // an unknown name fails before anything runs

  sim::time_profile p;
  p.cpu = detail::machine_cpu();
  p.vector_instructions = std::string(name(simd_isa_in_use()));
  p.cores = cores;
  p.created = detail::utc_now();
  p.trace_samples = samples;
  p.quick = o.quick;
  const auto small_cube = detail::calibration_cube(small), large_cube = detail::calibration_cube(large);
  const memory_block_source small_in(cube_view<const float>(small_cube.data(), small));
  const memory_block_source large_in(cube_view<const float>(large_cube.data(), large));

  // The configurations of a graph: both cubes whole, and the larger in 4 x 4-trace blocks where allowed.
  auto schedules = [&](const graph& g, std::size_t t) {
    const auto whole = g.whole_axes();
    std::vector<std::pair<chunked_schedule, const block_source*>> out;
    out.emplace_back(chunked_schedule(g, small, {.threads = t}), &small_in);
    out.emplace_back(chunked_schedule(g, large, {.threads = t}), &large_in);
    if ((!whole[0] || !whole[1]) && !g.needs_reduction()) {  // reductions would add passes to the fit
      const shape3 chunk{whole[0] ? large.inlines : 4, whole[1] ? large.crosslines : 4, samples};
      out.emplace_back(chunked_schedule(g, large, {.chunk = chunk, .threads = t}), &large_in);
    }
    return out;
  };
  auto best_of = [&](auto&& run_once) {
    double best = 1e300;
    for (int r = 0; r < repeats; ++r) best = std::min(best, run_once());
    return best;
  };

  auto graph_of = [&](const std::string& name) {  // the operator reading the cube on each of its inputs
    graph g(ops);
    g.add(name, name, std::vector<std::string>(ops.find(name).configure()->arity(), "input"), {}, true);
    g.build();
    return g;
  };
  // The copy: an input buffer per block, filled from the cube.
  const auto copy_graph = graph_of(names.front());
  for (const auto t : threads) {
    std::vector<detail::timing_point> pts;
    for (const auto& [s, in] : schedules(copy_graph, t)) {
      const double sec = best_of([&, &s = s, in = in] {
        peak_counter counter;
        event_bus bus(counter);
        host_context ctx(bus, {.threads = t});
        const auto started = std::chrono::steady_clock::now();
        for (std::uint64_t b = 0; b < s.blocks().count(); ++b) {
          const auto blk = s.blocks().at(b);
          auto buf = ctx.allocate<float>(blk.extended().voxels(), buffer_role::input);
          in->read(blk, buf.data());
        }
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      });
      pts.push_back({double(s.blocks().count()), s.blocks().read_voxels(), sec});
    }
    const auto c = detail::fit_step(pts, t);
    p.copy.fixed_seconds = std::max(p.copy.fixed_seconds, c.fixed_seconds);
    p.copy.seconds_per_voxel[t] = c.seconds_per_voxel.at(t);
  }

  for (std::size_t k = 0; k < names.size(); ++k) {
    const auto& name = names[k];
    const auto g = graph_of(name);
    sim::step_cost cost;
    for (const auto t : threads) {
      std::vector<detail::timing_point> pts;
      for (const auto& [s, in] : schedules(g, t)) {
        run_chunked(s, *in, nullptr);  // warm: plans, code, pages
        const double sec = best_of([&, &s = s, in = in] { return run_chunked(s, *in, nullptr).seconds; });
        // The copy is part of every run; the operator's figures exclude it.
        const double blocks = double(s.blocks().count()), voxels = s.blocks().read_voxels();
        const double copy = blocks * p.copy.fixed_seconds + voxels * p.copy.per_voxel(t);
        pts.push_back({blocks, voxels, std::max(0.0, sec - copy)});
      }
      const auto c = detail::fit_step(pts, t);
      cost.fixed_seconds = std::max(cost.fixed_seconds, c.fixed_seconds);
      cost.seconds_per_voxel[t] = c.seconds_per_voxel.at(t);
    }
    p.operators[name] = cost;
    if (o.progress) o.progress(name, k + 1, names.size());
  }
  return p;
}

}  // namespace dwsr
