// Dask-style execution: with one slot the plan is the exact plan of one
// thread; with T slots a real run of T block tasks at once lies between the
// floor and the bound; the bound of a block is the worst state of every order;
// unfused tasks hold their results for their dependents; Dask's thresholds.

#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <vector>

#include "dwsr/core/random.hpp"
#include "dwsr/graph/dask_model.hpp"
#include "dwsr/graph/dask_run.hpp"
#include "dwsr/graph/dask_thresholds.hpp"
#include "dwsr/graph/graph_json.hpp"
#include "graph/test_graphs.hpp"
#include "operators/operator_test_support.hpp"

using namespace dwsr;

namespace {

using test::ramp_cube;
using test::sweetness_graph;

struct config {
  const char* name;
  graph g;
  shape3 cube, chunk;
};

std::vector<config> configs() {
  const auto& ops = operators::catalogue();
  return {{"envelope", graph::single(ops, "envelope"), {8, 6, 64}, {3, 4, 64}},
          {"gst_2d_dips", graph::single(ops, "gst_2d_dips"), {12, 10, 32}, {5, 4, 32}},
          {"trace_agc", graph::single(ops, "trace_agc"), {6, 6, 64}, {3, 2, 64}},
          {"sweetness graph", sweetness_graph(), {8, 6, 64}, {4, 3, 64}}};
}

/// The most a block holds over every order of its tasks on `slots` slots,
/// found by visiting every reachable (finished, running) state.
std::uint64_t worst_of_every_order(const dask_block& b, std::size_t slots) {
  const auto n = b.tasks.size();
  const auto readers = b.dependents();
  std::uint64_t most = 0;
  std::map<std::pair<unsigned, unsigned>, bool> seen;
  std::function<void(unsigned, unsigned)> visit = [&](unsigned done, unsigned running) {
    if (seen[{done, running}]) return;
    seen[{done, running}] = true;
    std::uint64_t live = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (running >> i & 1) live += b.tasks[i].running();
      if (!(done >> i & 1) || readers[i] == 0) continue;
      bool read_later = false;
      for (std::size_t j = 0; j < n; ++j)
        for (const auto d : b.tasks[j].deps) read_later |= d == i && !(done >> j & 1);
      if (read_later) live += b.tasks[i].results;
    }
    most = std::max(most, live);
    for (std::size_t i = 0; i < n; ++i) {
      if (running >> i & 1) visit(done | 1u << i, running & ~(1u << i));
      if ((done | running) >> i & 1 || std::size_t(__builtin_popcount(running)) >= slots) continue;
      bool ready = true;
      for (const auto d : b.tasks[i].deps) ready &= bool(done >> d & 1);
      if (ready) visit(done, running | 1u << i);
    }
  };
  visit(0, 0);
  return most;
}

}  // namespace

TEST_CASE("with one slot, fused Dask tasks are the exact plan of one thread, planned and measured") {
  for (const auto& c : configs())
    for (std::size_t workers : {1, 2}) {
      INFO(c.name << ", " << workers << " workers");
      const chunked_schedule s(c.g, c.cube, {.chunk = c.chunk, .workers = workers, .threads = 1});
      const auto exact = plan_chunked(s);
      const auto dask = plan_dask(s);
      const auto cube = ramp_cube(c.cube);
      const auto measured = run_dask_fused(s, memory_block_source(cube_view<const float>(cube.data(), c.cube)));
      for (std::size_t w = 0; w < workers; ++w) {
        CHECK(dask.workers[w].schedule_peak == exact.workers[w].peak);
        CHECK(dask.workers[w].bound == exact.workers[w].peak);
        CHECK(dask.workers[w].floor == exact.workers[w].peak);
        CHECK(measured.workers[w].peak == exact.workers[w].peak);
        CHECK(measured.workers[w].events == exact.workers[w].events);
      }
    }
}

TEST_CASE("T block tasks at once: the measured peak lies between the floor and the bound") {
  for (const auto& c : configs())
    for (std::size_t threads : {2, 4})
      for (std::size_t workers : {1, 2}) {
        INFO(c.name << ", " << workers << " workers x " << threads << " slots");
        const chunked_schedule s(c.g, c.cube, {.chunk = c.chunk, .workers = workers, .threads = threads});
        const auto dask = plan_dask(s);
        const auto cube = ramp_cube(c.cube);
        const auto measured = run_dask_fused(s, memory_block_source(cube_view<const float>(cube.data(), c.cube)));
        const auto one = plan_chunked(chunked_schedule(c.g, c.cube, {.chunk = c.chunk, .workers = workers}));
        for (std::size_t w = 0; w < workers; ++w) {
          const auto& d = dask.workers[w];
          CHECK(d.floor == one.workers[w].peak);  // the largest block alone
          CHECK(d.floor <= d.schedule_peak);
          CHECK(d.schedule_peak <= d.bound);
          CHECK(d.floor <= measured.workers[w].peak);
          CHECK(measured.workers[w].peak <= d.bound);
          CHECK(measured.workers[w].events == one.workers[w].events);
        }
      }
}

TEST_CASE("blocks of one shape: T slots hold T blocks at their peak, and no more than the blocks there are") {
  const auto g = graph::single(operators::catalogue(), "envelope");
  const shape3 cube{8, 8, 64};
  const auto block = plan_chunked(g, cube, {.chunk = {4, 4, 64}}).peak();
  for (std::size_t t : {1, 2, 3, 4, 6}) {
    const auto d = plan_dask(chunked_schedule(g, cube, {.chunk = {4, 4, 64}, .threads = t}));
    CHECK(d.floor() == block);
    CHECK(d.schedule_peak() == std::min<std::size_t>(t, 4) * block);
    CHECK(d.bound() == std::min<std::size_t>(t, 4) * block);
    CHECK(d.workers[0].tasks == 4);
  }
  const auto unfused =
      plan_dask(chunked_schedule(g, cube, {.chunk = {4, 4, 64}, .threads = 2}), {.split = dask_split::unfused});
  CHECK(unfused.workers[0].tasks == 8);  // an input task and an envelope task per block
}

TEST_CASE("a block's bound is the worst state over every order of its tasks") {
  xoshiro256ss rng(20261123);
  for (int round = 0; round < 200; ++round) {
    INFO("round " << round);
    dask_block b;
    const auto n = 1 + rng.next() % 7;
    for (std::size_t i = 0; i < n; ++i) {
      dask_task t;
      for (std::size_t d = 0; d < i; ++d)
        if (rng.next() % 3 == 0) t.deps.push_back(d);
      t.results = rng.next() % 100;
      t.scratch = rng.next() % 100;
      t.seconds = double(1 + rng.next() % 4);
      b.tasks.push_back(t);
    }
    for (std::size_t slots : {1, 2, 3}) {
      CHECK(detail::block_bound(b, slots) == worst_of_every_order(b, slots));
      const auto peak = detail::schedule_peak(0, 1, slots, [&](std::uint64_t) -> const dask_block& { return b; });
      CHECK(peak <= detail::block_bound(b, slots));
      CHECK(peak >= b.floor());
    }
  }
}

TEST_CASE("unfused tasks hold a node's results until its last dependent on the block has run") {
  const auto g = sweetness_graph();
  const shape3 cube{8, 6, 64};
  const chunked_schedule s(g, cube, {.chunk = {4, 3, 64}, .threads = 2});
  const auto b = make_dask_block(s, s.phases().back(), s.blocks().at(0), dask_split::unfused, nullptr);
  // input, env, freq, sweet
  REQUIRE(b.tasks.size() == 4);
  const auto bytes = s.blocks().at(0).extended().voxels() * sizeof(float);
  CHECK(b.tasks[0].results == bytes);
  CHECK(b.tasks[1].results == bytes);
  CHECK(b.tasks[2].results == bytes);
  CHECK(b.tasks[3].deps == std::vector<std::size_t>{1, 2});
  CHECK(b.dependents() == std::vector<std::size_t>{2, 1, 1, 0});
  // Sweetness runs with both its inputs held, and its own output.
  CHECK(b.floor() >= 3 * bytes);
  // Two slots may run envelope and frequency of one block at once, with the input held for both.
  CHECK(detail::block_bound(b, 2) >= 3 * bytes + b.tasks[1].scratch + b.tasks[2].scratch);
  const auto fused = plan_dask(s), unfused = plan_dask(s, {.split = dask_split::unfused});
  CHECK(unfused.floor() <= fused.floor());  // no task holds more than the fused block at its peak
  CHECK(unfused.schedule_peak() <= unfused.bound());
  CHECK(unfused.floor() <= unfused.schedule_peak());
}

TEST_CASE("Dask's thresholds: spill above 60 %, pause above 80 %, terminate above 95 % of the limit") {
  CHECK(crossed(60, 100) == dask_level::none);
  CHECK(crossed(61, 100) == dask_level::spill);
  CHECK(crossed(80, 100) == dask_level::spill);
  CHECK(crossed(81, 100) == dask_level::pause);
  CHECK(crossed(95, 100) == dask_level::pause);
  CHECK(crossed(96, 100) == dask_level::terminate);
  CHECK(crossed(200, 100) == dask_level::terminate);
  CHECK(name_of(dask_level::pause) == "pause");
}
