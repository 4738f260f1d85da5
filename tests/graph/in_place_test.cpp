// In-place runs (the Python package's path): the caller's cube read where it
// lies, outputs handed over, the plan equal to the events, the outputs equal
// to a chunked run's; and cancellation through context_options::cancel.

#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>

#include "dwsr/graph/chunked.hpp"
#include "dwsr/graph/graph_json.hpp"
#include "dwsr/graph/in_place.hpp"
#include "dwsr/memory/recorder.hpp"
#include "graph/test_graphs.hpp"
#include "operators/operator_test_support.hpp"

using namespace dwsr;

using test::ramp_cube;
using test::sweetness_graph;

TEST_CASE("an in-place run reads the caller's cube, hands its outputs over, and its plan equals its events") {
  const shape3 shape{6, 5, 64};
  const auto cube = ramp_cube(shape);
  const auto g = sweetness_graph();
  for (std::size_t threads : {1, 2}) {
    recorder planned, measured;
    const auto plan = plan_in_place(g, shape, threads, planned);
    peak_counter counter;
    fan_out sinks{counter, measured};
    event_bus bus(sinks);
    host_context ctx(bus, {.threads = threads});
    auto outputs = run_in_place(ctx, g, cube_view<const float>(cube.data(), shape));
    CHECK(counter.peak() == plan.peak);
    CHECK(bus.events() == plan.events);
    for (const auto& e : measured.events()) CHECK(e.role != buffer_role::input);
    // The kept envelope and the unread sweetness, still alive.
    REQUIRE(outputs.size() == g.outputs().size());
    REQUIRE(outputs.size() == 2);
    CHECK(counter.live() == 2 * shape.voxels() * sizeof(float));
    // The same values as the chunked execution of the same graph.
    std::vector<std::vector<float>> expected(2, std::vector<float>(shape.voxels()));
    memory_block_sink sink({{dtype::float32, expected[0].data(), shape}, {dtype::float32, expected[1].data(), shape}});
    memory_block_source source(cube_view<const float>(cube.data(), shape));
    run_chunked(g, source, &sink, {.chunk = {3, 5, 64}, .threads = threads});
    for (std::size_t k = 0; k < 2; ++k)
      CHECK(std::memcmp(outputs[k].data(), expected[k].data(), shape.voxels() * sizeof(float)) == 0);
    outputs.clear();  // the caller lets them go: their free events now
    CHECK(counter.live() == 0);
    CHECK(measured.events() == planned.events());  // the plan's outputs were let go when it returned
  }
}

TEST_CASE("a cancelled run stops with dwsr::cancelled and frees everything it allocated") {
  const shape3 shape{8, 8, 128};
  const auto cube = ramp_cube(shape);
  const auto g = graph::single(operators::catalogue(), "gaussian");
  for (std::size_t threads : {1, 2}) {
    std::atomic<bool> cancel{true};
    peak_counter counter;
    event_bus bus(counter);
    host_context ctx(bus, {.threads = threads, .cancel = &cancel});
    CHECK_THROWS_AS(run_in_place(ctx, g, cube_view<const float>(cube.data(), shape)), cancelled);
    CHECK(counter.live() == 0);
    CHECK(counter.allocs() == 0);  // refused at the first allocation
  }
  // Cancelled inside a loop: the parallel pieces check the flag too.
  std::atomic<bool> cancel{false};
  peak_counter counter;
  event_bus bus(counter);
  host_context ctx(bus, {.threads = 1, .cancel = &cancel});
  std::uint64_t pieces = 0;
  CHECK_THROWS_WITH(ctx.parallel_for(1000,
                                     [&](std::uint64_t, std::uint64_t, std::size_t) {
                                       if (++pieces == 3) cancel = true;
                                     }),
                    Catch::Contains("cancelled: worker 0: stopped at the caller's request"));
  CHECK(pieces == 3);
}
