// A context added in one header (tests/exec/counting_context.hpp) runs every
// operator of the catalogue through the tests the meta context passes: the
// same events as the real run and the plan, and the same outputs, bit for bit.

#include <catch2/catch.hpp>

#include "exec/counting_context.hpp"
#include "operators/operator_test_support.hpp"

using namespace dwsr;
using namespace dwsr::test;

TEST_CASE("a context of one header runs the whole catalogue, event for event and bit for bit") {
  const auto counting = operators::catalogue_for<context_list<counting_context>>();
  const auto& reference = operators::catalogue();
  REQUIRE(counting.entries().size() == reference.entries().size());
  std::uint64_t ran = 0;
  for (const auto& entry : counting.entries()) {
    const auto op = entry.configure();
    if (op->arity() != 1) continue;
    const auto host_op = reference.find(entry.name).configure();
    for (const shape3 shape : {shape3{1, 1, 1}, shape3{3, 4, 31}, shape3{5, 3, 64}})
      for (std::size_t threads : {1, 2}) {
        INFO(entry.name << " on " << to_string(shape) << " with " << threads << " threads");
        const auto input = noise(shape, 11);
        const auto counted = run_real<counting_context>(*op, input, shape, threads);
        const auto real = run_real(*host_op, input, shape, threads);
        CHECK(counted.events == real.events);
        CHECK(realises(counted.events, meta_events(*host_op, shape, threads)));
        REQUIRE(counted.outputs.size() == real.outputs.size());
        for (std::size_t o = 0; o < real.outputs.size(); ++o) CHECK(counted.outputs[o].bytes == real.outputs[o].bytes);
        ++ran;
      }
  }
  CHECK(ran == 6 * (reference.entries().size() - 2));  // all but the two operators of two inputs
}

TEST_CASE("operators hand their work to the context they run in") {
  event_bus bus;
  counting_context ctx(bus, {.threads = 2});
  const auto op = operators::catalogue_for<context_list<counting_context>>().find("envelope").configure();
  const shape3 shape{2, 3, 16};
  const auto input = noise(shape, 3);
  execute(
      ctx, *op, shape, [&](float* dst) { std::copy(input.begin(), input.end(), dst); },
      [](std::span<const array_ref>) {});
  CHECK(ctx.loops + ctx.serial > 0);
}

TEST_CASE("an operator not compiled for a context says so") {
  event_bus bus;
  counting_context ctx(bus);
  const auto op = operators::catalogue().find("envelope").configure();
  std::vector<float> cube(16), out(16);
  const array_ref refs[] = {{dtype::float32, out.data(), {1, 1, 16}}};
  CHECK_THROWS_WITH(op->run(ctx, cube_view<const float>(cube.data(), {1, 1, 16}), refs),
                    Catch::Contains("was not compiled for execution context"));
}
