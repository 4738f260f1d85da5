#pragma once
// Shared by the signal and noise-reduction tests: the checks every window
// operator must pass (plan == run, thread-count invariance, halo, reductions).

#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "operator_test_support.hpp"

namespace dwsr::test {

/// Random shapes (fixed seed) beside the edge cases.
inline std::vector<shape3> window_test_shapes() {
  auto shapes = edge_shapes();
  std::uint64_t seed = 0x5eed;
  for (int i = 0; i < 6; ++i) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    shapes.push_back({1 + (seed >> 60), 1 + ((seed >> 50) & 7), 1 + ((seed >> 33) % 200)});
  }
  return shapes;
}

/// Meta execution emits the real execution's events, on every shape and 1-3 threads.
inline void check_plan_equals_run(const std::string& name, const std::map<std::string, std::string>& params = {}) {
  const auto op = operators::catalogue().find(name).configure(params);
  for (const auto& shape : window_test_shapes())
    for (std::size_t threads : {1, 2, 3}) {
      INFO(name << " on " << to_string(shape) << " with " << threads << " threads");
      const auto run = run_real(*op, noise(shape, shape.voxels()), shape, threads);
      REQUIRE(run.events == meta_events(*op, shape, threads));
      CHECK(run.peak == plan(*op, shape, threads).peak_bytes);
    }
}

/// The output bytes do not depend on the thread count.
inline void check_thread_invariance(const std::string& name, shape3 shape,
                                    const std::map<std::string, std::string>& params = {}) {
  const auto op = operators::catalogue().find(name).configure(params);
  const auto cube = noise(shape, 7);
  const auto one = run_real(*op, cube, shape, 1);
  for (std::size_t threads : {2, 3}) {
    INFO(name << " with " << threads << " threads");
    CHECK(run_real(*op, cube, shape, threads).outputs[0].bytes == one.outputs[0].bytes);
  }
}

/// The block [lo, hi) of a cube, per axis.
inline std::vector<float> sub_block(const std::vector<float>& cube, shape3 s, std::array<std::uint64_t, 3> lo,
                                    std::array<std::uint64_t, 3> hi) {
  std::vector<float> out;
  for (auto i = lo[0]; i < hi[0]; ++i)
    for (auto x = lo[1]; x < hi[1]; ++x) {
      const auto* trace = cube.data() + (i * s.crosslines + x) * s.samples;
      out.insert(out.end(), trace + lo[2], trace + hi[2]);
    }
  return out;
}

/// What chunked execution relies on: the block [5, 9) x [5, 8) x [16, 32) of a
/// 14 x 13 x 48 cube (whole traces when the operator says so), extended by the
/// declared halo and run with the whole cube's reduction, gives the whole-cube
/// output's bytes inside.
inline void check_halo(const std::string& name, const std::map<std::string, std::string>& params = {}) {
  const auto op = operators::catalogue().find(name).configure(params);
  const shape3 shape{14, 13, 48};
  const auto cube = noise(shape, 42);
  const auto h = op->halo();
  const std::array<std::uint64_t, 3> lo{5, 5, h.whole_traces ? 0u : 16u}, hi{9, 8, h.whole_traces ? 48u : 32u};
  std::array<std::uint64_t, 3> elo{}, ehi{};
  for (std::size_t a = 0; a < 3; ++a) {
    const auto r = (a == 2 && h.whole_traces) ? 0 : h.radius[a];  // whole traces: time is never split
    REQUIRE(r <= lo[a]);
    REQUIRE(hi[a] + r <= shape[a]);
    elo[a] = lo[a] - r, ehi[a] = hi[a] + r;
  }
  const shape3 block{ehi[0] - elo[0], ehi[1] - elo[1], ehi[2] - elo[2]};
  const auto r = reduce_real(*op, cube, shape);
  const auto whole = run_block(*op, cube, shape, r);
  const auto part = run_block(*op, sub_block(cube, shape, elo, ehi), block, r);
  for (std::size_t o = 0; o < whole.size(); ++o) {
    const auto elem = size_of(whole[o].type);
    for (auto i = lo[0]; i < hi[0]; ++i)
      for (auto x = lo[1]; x < hi[1]; ++x) {
        const auto* w = whole[o].bytes.data() + ((i * shape.crosslines + x) * shape.samples + lo[2]) * elem;
        const auto* p = part[o].bytes.data() +
                        (((i - elo[0]) * block.crosslines + (x - elo[1])) * block.samples + (lo[2] - elo[2])) * elem;
        INFO(name << " output " << o << " trace " << i << "," << x);
        REQUIRE(std::memcmp(w, p, (hi[2] - lo[2]) * elem) == 0);
      }
  }
}

/// A reduction folded block by block (whole traces, blocks in two orders)
/// equals the whole cube's, bit for bit.
inline void check_reduction_folds(const std::string& name, const std::map<std::string, std::string>& params = {}) {
  const auto op = operators::catalogue().find(name).configure(params);
  REQUIRE(op->reduction_passes() > 0);
  const shape3 shape{9, 7, 40};
  const auto cube = noise(shape, 3);
  const auto whole = reduce_real(*op, cube, shape);
  const std::vector<std::array<std::uint64_t, 4>> blocks = {{0, 4, 0, 3}, {0, 4, 3, 7}, {4, 9, 0, 3}, {4, 9, 3, 7}};
  for (bool reversed : {false, true}) {
    event_bus bus;
    host_context ctx(bus, {.threads = 2});
    reduction acc;
    for (std::size_t pass = 0; pass < op->reduction_passes(); ++pass)
      for (std::size_t n = 0; n < blocks.size(); ++n) {
        const auto& b = blocks[reversed ? blocks.size() - 1 - n : n];
        const auto data = sub_block(cube, shape, {b[0], b[2], 0}, {b[1], b[3], shape.samples});
        op->reduce(ctx, cube_view<const float>(data.data(), {b[1] - b[0], b[3] - b[2], shape.samples}), pass, acc);
      }
    INFO(name << (reversed ? " (blocks reversed)" : ""));
    CHECK(acc == whole);
  }
}

}  // namespace dwsr::test
