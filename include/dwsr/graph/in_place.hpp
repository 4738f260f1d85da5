#pragma once
/// \file A graph run on a whole cube the caller already holds in memory, as the
/// Python package runs it: the caller's cube is the input, read in place (no
/// input buffer, no input event: the memory is the caller's), and the graph's
/// outputs are handed to the caller as buffers it owns, so their free events
/// come when the caller lets them go. The meta execution walks the same code,
/// so the plan of an in-place run equals its events.

#include <cstdint>
#include <vector>

#include "dwsr/exec/meta_context.hpp"
#include "dwsr/graph/schedule.hpp"
#include "dwsr/memory/fan_out.hpp"
#include "dwsr/memory/peak_counter.hpp"

namespace dwsr {

/// Runs `g` on `cube` in `ctx` and returns its outputs (in the order of
/// g.outputs()); table rows go to `tables` (the cube is one block: positions
/// are the cube's). Nodes that reduce over the cube reduce their own input, as
/// on any whole cube.
template <ExecutionContext Ctx>
std::vector<buffer<float, Ctx>> run_in_place(Ctx& ctx, const graph& g, cube_view<const float> cube,
                                             const table_rows& tables = {}) {
  std::vector<buffer<float, Ctx>> outputs(g.outputs().size());
  run_graph_block(
      ctx, g, cube, {}, [&](std::size_t k, buffer<float, Ctx>& out) { outputs[k] = std::move(out); }, tables);
  return outputs;
}

/// Peak requested bytes and events of run_in_place(g) on a cube of `shape`
/// with `threads` threads, up to the return (the outputs still held); events
/// also go to `sink`.
struct in_place_plan {
  std::uint64_t peak = 0;
  std::uint64_t events = 0;
};

inline in_place_plan plan_in_place(const graph& g, shape3 shape, std::size_t threads, event_sink_ref sink = {}) {
  peak_counter counter;
  fan_out sinks{counter, sink};
  event_bus bus(sinks);
  meta_context ctx(bus, {.threads = threads});
  const auto outputs = run_in_place(ctx, g, cube_view<const float>(nullptr, shape));
  return {counter.peak(), bus.events()};
}

}  // namespace dwsr
