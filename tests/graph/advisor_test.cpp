// The chunk-size advisor: its choice runs under its budget, the next larger
// candidates are predicted over it, and Dask's default is reproduced.

#include <catch2/catch.hpp>

#include "dwsr/graph/advisor.hpp"
#include "operators/operator_test_support.hpp"

using namespace dwsr;
using namespace dwsr::test;

namespace {
graph graph_of(std::size_t nodes) {
  graph g(operators::catalogue());
  if (nodes == 1) {
    g.add("env", "envelope");
  } else if (nodes == 2) {
    g.add("smooth", "gaussian").add("env", "envelope", {"smooth"});
  } else {
    g.add("smooth", "gaussian")
        .add("env", "envelope", {"smooth"})
        .add("freq", "instantaneous_frequency", {"smooth"})
        .add("sweet", "sweetness_from", {"env", "freq"})
        .add("mean", "convolution", {"sweet"});
  }
  g.build();
  return g;
}
}  // namespace

TEST_CASE("the advised chunk runs under its budget and the next larger ones are predicted over it") {
  const shape3 cube{12, 14, 32};
  const auto data = noise(cube, 8);
  for (std::size_t nodes : {1, 2, 5}) {
    const auto g = graph_of(nodes);
    // Budgets between the smallest chunk's peak and the whole cube's.
    const auto whole = plan_chunked(g, cube, {.threads = 2}).peak();
    const auto least = plan_chunked(g, cube, {.chunk = {1, 1, cube.samples}, .threads = 2}).peak();
    for (double fraction : {0.1, 0.5, 0.9}) {
      const advice_options o{
          .budget = least + std::uint64_t(double(whole - least) * fraction), .workers = 2, .threads = 2};
      const auto a = advise(g, cube, o);
      INFO(nodes << " nodes, budget " << o.budget << ", advised " << to_string(a.chosen.plan.chunk));
      CHECK(a.chosen.peak <= o.budget);
      CHECK(a.chosen.plan.chunk.samples == cube.samples);
      REQUIRE(!a.next_larger.empty());
      for (const auto& n : a.next_larger) CHECK(n.peak > o.budget);
      // The advice runs to completion with the budget enforced, at the predicted peak.
      memory_block_source source(cube_view<const float>(data.data(), cube));
      const auto r =
          run_chunked(g, source, nullptr,
                      {.chunk = a.chosen.plan.chunk, .workers = o.workers, .threads = o.threads, .budget = o.budget});
      for (std::size_t w = 0; w < o.workers; ++w) CHECK(r.workers[w].peak == a.chosen.plan.workers[w].peak);
      // No candidate with a larger block fits.
      for (const auto ci : chunk_extents(cube.inlines))
        for (const auto cx : chunk_extents(cube.crosslines))
          if (ci * cx > a.chosen.plan.chunk.inlines * a.chosen.plan.chunk.crosslines)
            CHECK(plan_chunked(g, cube, {.chunk = {ci, cx, cube.samples}, .workers = 2, .threads = 2}).peak() >
                  o.budget);
    }
  }
}

TEST_CASE("a budget below the smallest chunk's peak is a clear error") {
  CHECK_THROWS_WITH(advise(graph_of(1), {8, 8, 64}, {.budget = 1000}), Catch::Contains("too small"));
  CHECK_THROWS_WITH(advise(graph_of(1), {8, 8, 64}, {.budget = 1 << 20, .allocator = "nope"}), Catch::Contains("nope"));
}

TEST_CASE("axes an operator reads whole stay whole in every candidate") {
  const auto a = advise(graph::single(operators::catalogue(), "lbp2d"), {6, 20, 40}, {.budget = 1 << 20});
  CHECK(a.chosen.plan.chunk.crosslines == 20);
  CHECK(a.chosen.plan.chunk.samples == 40);
}

TEST_CASE("candidate extents are those that change the block count") {
  CHECK(chunk_extents(1) == std::vector<std::uint64_t>{1});
  CHECK(chunk_extents(10) == std::vector<std::uint64_t>{1, 2, 3, 4, 5, 10});
  CHECK(chunk_extents(7) == std::vector<std::uint64_t>{1, 2, 3, 4, 7});
}

TEST_CASE("Dask's default chunks are roughly cubic, 128 MiB of float32") {
  const auto f3 = dask_default_chunk({651, 951, 462});
  CHECK(f3 == shape3{322, 322, 322});
  CHECK(f3.voxels() * 4 <= 128ull << 20);
  CHECK(dask_default_chunk({64, 64, 512}) == shape3{64, 64, 512});          // smaller than the limit: whole
  CHECK(dask_default_chunk({100, 10000, 10000}) == shape3{100, 579, 579});  // a short axis taken whole
}

TEST_CASE("an allocator model raises the advised peak to what the allocator holds") {
  const shape3 cube{16, 16, 128};
  const auto g = graph_of(2);
  const auto exact = evaluate_chunk(g, cube, {4, 4, 128}, {.workers = 2, .threads = 1});
  const auto caching =
      evaluate_chunk(g, cube, {4, 4, 128}, {.workers = 2, .threads = 1, .allocator = "torch_cuda_caching"});
  CHECK(exact.peak == exact.plan.peak());
  CHECK(caching.peak >= exact.peak);
  CHECK(caching.peak % (2u << 20) == 0);  // the caching allocator reserves whole segments
}
