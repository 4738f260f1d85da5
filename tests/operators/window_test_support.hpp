#pragma once
// Shared by the signal and noise-reduction tests: the checks every window
// operator must pass (plan == run, thread-count invariance, halo, reductions).

#include <catch2/catch.hpp>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "operator_test_support.hpp"

namespace dwsr::test {

/// An operator's parameters.
using param_map = std::map<std::string, std::string>;
/// An operator with parameters other than its defaults.
using variant = std::pair<std::string, param_map>;

/// check(name, params) for every operator of `ops` with its default
/// parameters, then for each of `variants`.
template <class Check>
void for_each_configuration(const std::vector<std::string>& ops, const std::vector<variant>& variants, Check&& check) {
  for (const auto& name : ops) check(name, param_map{});
  for (const auto& [name, params] : variants) check(name, params);
}

/// Meta execution emits the real execution's events, on the edge shapes and
/// random ones (fixed seed), with 1-3 threads.
inline void check_plan_equals_run(const std::string& name, const std::map<std::string, std::string>& params = {}) {
  check_plan_matches_run(*configured(name, params), test_shapes(0x5eed), false);
}

/// The output bytes do not depend on the thread count.
inline void check_thread_invariance(const std::string& name, shape3 shape,
                                    const std::map<std::string, std::string>& params = {}) {
  const auto op = configured(name, params);
  const auto cube = noise(shape, 7);
  const auto one = run_real(*op, cube, shape, 1);
  for (std::size_t threads : {2, 3}) {
    INFO(name << " with " << threads << " threads");
    CHECK(run_real(*op, cube, shape, threads).outputs[0].bytes == one.outputs[0].bytes);
  }
}

/// Peaks on 24 x 40 x 96 (planned and measured) and on the README's 128 x 128
/// x 512 (planned) with 2 threads: exactly input + output + scratch(name,
/// shape, threads), and on the large cube at most `bound` x the input.
inline void check_window_peaks(const std::vector<std::string>& ops,
                               const std::function<std::uint64_t(const std::string&, shape3, std::size_t)>& scratch,
                               double bound) {
  for (const shape3 shape : {shape3{24, 40, 96}, shape3{128, 128, 512}}) {
    const std::size_t threads = 2;
    const std::uint64_t in_bytes = shape.voxels() * 4;
    const bool small = shape.inlines < 100;
    const auto input = small ? noise(shape, 1) : std::vector<float>{};
    for (const auto& name : ops) {
      const auto op = configured(name);
      const auto expected = in_bytes + output_bytes(*op, shape) + scratch(name, shape, threads);
      const auto planned = plan(*op, shape, threads).peak_bytes;
      INFO(name << " on " << to_string(shape) << ": peak " << planned << " = " << double(planned) / double(in_bytes)
                << " x input");
      CHECK(planned == expected);
      if (small) CHECK(run_real(*op, input, shape, threads).peak == expected);
      if (!small) CHECK(double(planned) <= bound * double(in_bytes));
    }
  }
}

/// What chunked execution relies on: the block [5, 9) x [5, 8) x [16, 32) of a
/// 14 x 13 x 48 cube (whole traces when the operator says so), extended by the
/// declared halo and run with the whole cube's reduction, gives the whole-cube
/// output's bytes inside.
inline void check_halo(const std::string& name, const std::map<std::string, std::string>& params = {}) {
  const auto op = configured(name, params);
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
  const auto part = run_block(*op, sub_cube(cube, shape, elo, ehi), block, r);
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
  const auto op = configured(name, params);
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
        const auto data = sub_cube(cube, shape, {b[0], b[2], 0}, {b[1], b[3], shape.samples});
        op->reduce(ctx, cube_view<const float>(data.data(), {b[1] - b[0], b[3] - b[2], shape.samples}), pass, acc);
      }
    INFO(name << (reversed ? " (blocks reversed)" : ""));
    CHECK(acc == whole);
  }
}

}  // namespace dwsr::test
