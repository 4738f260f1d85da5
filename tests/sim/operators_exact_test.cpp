// Requirement: the exact model agrees with the foundation's peak counter on
// every operator's trace (meta execution; real and meta emit the same events).
#include <catch2/catch.hpp>

#include "dwsr/exec/meta_context.hpp"
#include "dwsr/memory/fan_out.hpp"
#include "dwsr/memory/peak_counter.hpp"
#include "dwsr/memory/recorder.hpp"
#include "dwsr/operators/catalogue.hpp"
#include "dwsr/sim/exact.hpp"
#include "dwsr/sim/replay.hpp"

using namespace dwsr;
using namespace dwsr::sim;

TEST_CASE("exact agrees with the peak counter on every operator's trace") {
  const auto& entries = operators::catalogue().entries();
  REQUIRE(entries.size() > 5);
  const std::vector<std::string> specs{"exact"};
  for (const auto& entry : entries) {
    for (const auto shape : {shape3{9, 11, 64}, shape3{16, 8, 100}}) {
      for (std::size_t threads : {1u, 3u}) {
        INFO(entry.name << " on " << to_string(shape) << ", " << threads << " threads");
        const auto op = entry.configure();
        peak_counter counter;
        exact_model live;
        recorder rec;
        fan_out sinks{counter, live, rec};
        event_bus bus(sinks);
        meta_context ctx(bus, {.threads = threads});
        {
          // Inputs (one per cube the operator reads) and outputs, as a graph node gets them.
          std::vector<buffer<float, meta_context>> inputs;
          std::vector<cube_view<const float>> views;
          for (std::size_t i = 0; i < op->arity(); ++i) {
            inputs.push_back(ctx.allocate<float>(shape.voxels(), buffer_role::input));
            views.emplace_back(nullptr, shape);
          }
          std::vector<buffer<std::byte, meta_context>> outputs;
          std::vector<array_ref> refs;
          for (const auto& s : op->outputs()) {
            outputs.push_back(ctx.allocate<std::byte>(shape.voxels() * size_of(s.type), buffer_role::output));
            refs.push_back({s.type, nullptr, shape});
          }
          op->run(ctx, std::span<const cube_view<const float>>(views), refs, nullptr);
        }
        REQUIRE(counter.peak() > 0);
        CHECK(live.stats().peak_allocated == counter.peak());
        const auto replayed = replay_events(rec.events(), specs);
        REQUIRE(replayed[0].devices.size() == 1);
        CHECK(replayed[0].devices[0].stats.peak_allocated == counter.peak());
        CHECK(replayed[0].devices[0].stats.allocated == 0);
      }
    }
  }
}
