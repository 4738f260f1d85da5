#pragma once
/// \file Executes one operator on one whole cube in a context: a one-node graph
/// run as one block (graph/schedule.hpp), so node ids, buffers and events are
/// those of every other path (graphs, chunked runs, plans). plan() is the meta
/// execution; execute() is shared by every context.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "dwsr/exec/meta_context.hpp"
#include "dwsr/graph/schedule.hpp"
#include "dwsr/memory/fan_out.hpp"
#include "dwsr/memory/peak_counter.hpp"
#include "dwsr/ops/operator.hpp"

namespace dwsr {

/// What an execution or a plan measured from its events.
struct memory_report {
  std::uint64_t peak_bytes = 0;  ///< highest live requested bytes
  std::uint64_t events = 0;      ///< allocs + frees
  std::uint64_t input_bytes = 0;
  std::uint64_t output_bytes = 0;  ///< all outputs together
};

/// Runs `op` on a cube of `shape` in `ctx`: allocates the input (role input,
/// event node 0), calls load(float*) to fill it (computing contexts only), runs
/// the operator as graph node 1 (its outputs with role output), then calls
/// consume(std::span<const array_ref>) with the outputs (computing contexts
/// only) before everything is freed.
template <ExecutionContext Ctx, class Load, class Consume>
void execute(Ctx& ctx, const configured_operator& op, shape3 shape, Load&& load, Consume&& consume) {
  // The graph borrows `op` (an aliasing pointer that owns nothing).
  const auto g = graph::single(std::shared_ptr<const configured_operator>(std::shared_ptr<void>(), &op));
  ctx.set_node(0);
  auto input = ctx.template allocate<float>(shape.voxels(), buffer_role::input);
  if constexpr (Ctx::computes) load(input.data());
  std::vector<array_ref> outputs;
  run_graph_block(ctx, g, cube_view<const float>(input.data(), shape), {}, [&](std::size_t, const array_ref& out) {
    outputs.push_back(out);
    if (outputs.size() == g.outputs().size()) consume(std::span<const array_ref>(outputs));
  });
}

/// Bytes of all outputs of `op` on `shape`.
inline std::uint64_t output_bytes(const configured_operator& op, shape3 shape) {
  std::uint64_t total = 0;
  for (const auto& s : op.outputs()) total += shape.voxels() * size_of(s.type);
  return total;
}

/// The meta execution: peak and event count of `op` on `shape` with `threads`
/// threads, without computing or touching memory. Events also go to `sink`.
inline memory_report plan(const configured_operator& op, shape3 shape, std::size_t threads, event_sink_ref sink = {}) {
  peak_counter counter;
  fan_out sinks{counter, sink};
  event_bus bus(sinks);
  meta_context ctx(bus, {.threads = threads});
  execute(
      ctx, op, shape, [](float*) {}, [](std::span<const array_ref>) {});
  return {counter.peak(), bus.events(), shape.voxels() * sizeof(float), output_bytes(op, shape)};
}

}  // namespace dwsr
