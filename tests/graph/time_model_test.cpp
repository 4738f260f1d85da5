// The time model: block counts, phases, workers and contention in the
// prediction, the profile's thread scaling and file format, and the advisor
// optimising time under the memory budget.

#include <catch2/catch.hpp>

#include <fstream>

#include "dwsr/core/simd_isa.hpp"
#include "dwsr/graph/advisor.hpp"
#include "dwsr/graph/calibrate.hpp"
#include "dwsr/graph/time_model.hpp"
#include "io/temp_dir.hpp"
#include "operators/operator_test_support.hpp"

using namespace dwsr;

namespace {

/// A profile where every operator costs `fixed` seconds per block and `per_voxel` per extended voxel at any T.
sim::time_profile flat_profile(double fixed, double per_voxel, std::size_t cores = 64) {
  sim::time_profile p;
  p.cpu = "test";
  p.cores = cores;
  p.created = "2026-11-23T00:00:00Z";
  p.trace_samples = 64;
  p.copy = {0, {{1, 0.0}}};
  for (const auto& e : operators::catalogue().entries()) p.operators[e.name] = {fixed, {{1, per_voxel}}};
  return p;
}

}  // namespace

TEST_CASE("the time model counts each worker's blocks, phases and idle workers") {
  const auto g = graph::single(operators::catalogue(), "envelope");
  const shape3 cube{8, 8, 64};
  const auto p = flat_profile(1.0, 0.0);
  auto predict = [&](shape3 chunk, std::size_t w, std::size_t t = 1) {
    return predict_time(chunked_schedule(g, cube, {.chunk = chunk, .workers = w, .threads = t}), p);
  };
  CHECK(predict({4, 4, 64}, 1).makespan == 4);  // 4 blocks, one after another
  CHECK(predict({4, 4, 64}, 2).makespan == 2);
  CHECK(predict({4, 4, 64}, 3).makespan == 2);  // 2 + 1 + 1
  const auto five = predict({4, 4, 64}, 5);
  CHECK(five.makespan == 1);
  CHECK(five.idle_workers == 1);
  CHECK(five.worker_seconds == std::vector<double>{1, 1, 1, 1, 0});
  // Per voxel: the extended window, halo included (envelope has none).
  CHECK(predict_time(chunked_schedule(g, cube, {}), flat_profile(0, 1e-3)).makespan ==
        Approx(double(cube.voxels()) * 1e-3));
  // A reduction runs its own pass over the blocks first: trace_agc reduces once, so two phases.
  const auto agc = graph::single(operators::catalogue(), "trace_agc");
  CHECK(predict_time(chunked_schedule(agc, cube, {.chunk = {4, 4, 64}}), p).makespan == 8);
  CHECK(predict_time(chunked_schedule(agc, cube, {}), p).makespan == 1);  // one block: no reduction pass
}

TEST_CASE("threads share the cores: more busy threads than cores slow every worker") {
  const auto g = graph::single(operators::catalogue(), "envelope");
  const shape3 cube{8, 8, 64};
  const auto p = flat_profile(1.0, 0.0, 2);
  const auto t = predict_time(chunked_schedule(g, cube, {.chunk = {4, 4, 64}, .workers = 2, .threads = 2}), p);
  CHECK(t.contention == 2);
  CHECK(t.makespan == 4);
  CHECK(predict_time(chunked_schedule(g, cube, {.chunk = {4, 4, 64}, .workers = 2}), p).contention == 1);
}

TEST_CASE("per-voxel costs scale ideally from the nearest thread count measured below") {
  const sim::step_cost c{0.5, {{1, 8.0}, {2, 5.0}}};
  CHECK(c.per_voxel(1) == 8.0);
  CHECK(c.per_voxel(2) == 5.0);
  CHECK(c.per_voxel(4) == Approx(2.5));
  CHECK(c.per_voxel(3) == Approx(10.0 / 3));
  CHECK(c.seconds(10, 2) == Approx(50.5));
  const sim::step_cost only_two{0, {{2, 4.0}}};
  CHECK(only_two.per_voxel(1) == 4.0);  // fewer threads than measured: the least measured
}

TEST_CASE("a time profile survives its file, and a malformed one is refused by name") {
  test::temp_dir dir;
  auto p = flat_profile(1e-5, 2e-9);
  p.operators["envelope"].seconds_per_voxel[2] = 1e-9;
  p.vector_instructions = "avx2";
  const auto path = dir.path() / "sub" / "profile.json";
  sim::write_time_profile(path, p);
  const auto q = sim::read_time_profile(path);
  CHECK(sim::to_json(q) == sim::to_json(p));
  CHECK(q.of("envelope").per_voxel(2) == 1e-9);
  CHECK_THROWS_WITH(q.of("nope"), Catch::Contains("has no figures for operator 'nope'"));

  auto write = [&](const std::string& text) {
    std::ofstream(dir.path() / "bad.json") << text;
    return dir.path() / "bad.json";
  };
  CHECK_THROWS_WITH(sim::read_time_profile(write("{")), Catch::Contains("is not valid JSON"));
  CHECK_THROWS_WITH(sim::read_time_profile(write("{\"format\": \"other\"}")),
                    Catch::Contains("not a dwsr time profile"));
  auto doc = sim::to_json(p);
  doc["operators"]["envelope"]["seconds_per_voxel"] = {{"0", 1.0}};
  CHECK_THROWS_WITH(sim::read_time_profile(write(doc.dump())),
                    Catch::Contains("operator \"envelope\": seconds_per_voxel key \"0\" is not a thread count"));
  doc = sim::to_json(p);
  doc["version"] = 2;
  CHECK_THROWS_WITH(sim::read_time_profile(write(doc.dump())), Catch::Contains("this dwsr reads version 1"));
  CHECK_THROWS_AS(sim::read_time_profile(dir.path() / "missing.json"), io_error);
  // Profiles from before the instruction set was recorded still read.
  doc = sim::to_json(p);
  doc["machine"].erase("vector_instructions");
  CHECK(sim::read_time_profile(write(doc.dump())).vector_instructions.empty());
}

TEST_CASE("advising for time keeps every worker busy where the largest chunk would not") {
  const auto g = graph::single(operators::catalogue(), "envelope");
  const shape3 cube{64, 64, 128};
  const auto p = flat_profile(1e-4, 1e-8);
  advice_options o{.budget = 64ull << 20, .workers = 4, .threads = 1, .profile = &p};
  const auto largest = advise(g, cube, o);
  REQUIRE(largest.chosen.time);
  CHECK(largest.chosen.plan.blocks < 4);  // the whole cube fits: one block, three workers idle
  CHECK(largest.chosen.time->idle_workers == 4 - largest.chosen.plan.blocks);
  o.objective = advice_objective::time;
  const auto fastest = advise(g, cube, o);
  CHECK(fastest.objective == advice_objective::time);
  CHECK(fastest.largest.plan.chunk == largest.chosen.plan.chunk);
  CHECK(fastest.chosen.plan.blocks >= 4);
  CHECK(fastest.chosen.time->idle_workers == 0);
  CHECK(fastest.chosen.time->makespan < largest.chosen.time->makespan);
  CHECK(fastest.chosen.peak <= o.budget);
  o.profile = nullptr;
  CHECK_THROWS_WITH(advise(g, cube, o), Catch::Contains("needs a time profile"));
}

TEST_CASE("calibrate measures every operator asked for, at every thread count") {
  const auto p =
      calibrate(operators::catalogue(), {.quick = true, .ops = {"envelope", "sweetness_from"}, .threads = {1, 2}});
  CHECK(p.operators.size() == 2);
  CHECK(p.trace_samples == 256);
  for (const auto& [name, c] : p.operators) {
    CHECK(c.seconds_per_voxel.size() == 2);
    CHECK(c.per_voxel(1) > 0);  // an operator that computes costs time per voxel
  }
  CHECK(p.copy.per_voxel(1) > 0);
  CHECK(p.vector_instructions == name(simd_isa_in_use()));
  CHECK_THROWS_WITH(calibrate(operators::catalogue(), {.ops = {"nope"}}), Catch::Contains("unknown operator 'nope'"));
}
