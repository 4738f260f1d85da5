#pragma once
/// \file Runs a graph on one block in one context: nodes in topological order,
/// each node's outputs allocated just before it runs and freed right after
/// their last consumer, graph outputs handed over as soon as they exist. The
/// real and the meta context walk this same schedule, so a block's events are
/// identical in both. Event nodes: 0 is the graph's input, k + 1 is node k.

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <type_traits>
#include <vector>

#include "dwsr/core/fixed_list.hpp"
#include "dwsr/graph/graph.hpp"
#include "dwsr/ops/operator.hpp"

namespace dwsr {

/// Event node id of graph node k (0 is the input).
constexpr node_id event_node(std::size_t k) { return static_cast<node_id>(k + 1); }

/// Cube-wide reductions per node (empty optional: the node has none, or runs
/// on a whole cube and reduces its own input).
using node_reductions = std::vector<std::optional<reduction>>;

/// Receives the rows of a graph's tables: (index into graph::tables(), rows,
/// count), with positions in the block's indices (see table_spec).
using table_rows = std::function<void(std::size_t table, const void* rows, std::uint64_t count)>;

/// Sets found[n] for the nodes n whose outputs node k reads, directly or
/// through other nodes (not k itself); `found` has a flag per node of `g`,
/// all false. Nodes read only earlier nodes (topological order), so one sweep
/// back from k finds them all.
template <class Flags>
void mark_ancestors(const graph& g, std::size_t k, Flags& found) {
  const auto& ns = g.nodes();
  auto mark_inputs = [&](std::size_t n) {
    for (const auto& r : ns[n].inputs)
      if (r.node != cube_ref::input) found[r.node] = true;
  };
  mark_inputs(k);
  for (std::size_t n = k; n-- > 0;)
    if (found[n]) mark_inputs(n);
}

/// The nodes whose outputs node k reads, directly or through other nodes (not k itself).
inline std::vector<bool> ancestors(const graph& g, std::size_t k) {
  std::vector<bool> found(g.nodes().size(), false);
  mark_ancestors(g, k, found);
  return found;
}

namespace detail {
/// Hands a node's tables to the graph's receiver under their graph indices.
struct node_tables final : table_writer {
  explicit node_tables(const table_rows& receiver) : to(&receiver) {}
  void write(std::size_t table, const void* rows, std::uint64_t count) override {
    if (*to) (*to)(first + table, rows, count);
  }
  const table_rows* to;
  std::size_t first = 0;  ///< graph index of the node's first table
};
}  // namespace detail

/// Runs `g` on `input` (a block, already allocated by the caller) and calls
/// consume(output index into g.outputs(), array_ref) for each graph output
/// (real contexts only) before freeing it. A consume that takes
/// (index, buffer<float, Ctx>&) instead is called in every context and may
/// move the buffer out: the caller then owns the output and its free event
/// (graph/in_place.hpp). Nodes [0, stop) only, when `stop`
/// is given (used by reduction passes); then `inspect(k, views)` is called with
/// the inputs of node `stop` before anything is freed. Table rows go to
/// `tables` (computing contexts only; dropped when it is empty).
template <ExecutionContext Ctx, class Consume, class Inspect>
void run_graph_block(Ctx& ctx, const graph& g, cube_view<const float> input, const node_reductions& reductions,
                     Consume&& consume, std::optional<std::size_t> stop, Inspect&& inspect,
                     const table_rows& tables = {}) {
  const auto& ns = g.nodes();
  const std::size_t end = stop.value_or(ns.size());
  // Which nodes must run: all, or the ancestors of `stop`.
  fixed_list<std::uint8_t, 16> needed(stop ? ns.size() : 0);  // flags (vector<bool> has no data())
  if (stop) mark_ancestors(g, *stop, needed);
  // One slot per node output, in node then output order (allocation order;
  // node::first_slot). data keeps a handed-over buffer's storage readable by
  // later nodes. Small graphs keep all of it on the stack (fixed_list).
  using buf = buffer<float, Ctx>;
  const std::size_t slots = g.slots();
  fixed_list<buf, 16> live(slots);
  fixed_list<std::byte*, 16> data(slots);
  const auto shape = input.shape();
  detail::node_tables to_graph(tables);
  auto view_of = [&](const cube_ref& r) {
    return r.node == cube_ref::input
               ? input
               : cube_view<const float>(reinterpret_cast<const float*>(data[ns[r.node].first_slot + r.output]), shape);
  };
  fixed_list<array_ref, 8> refs(g.most_outputs());
  fixed_list<cube_view<const float>, 8> ins(g.most_inputs());
  for (std::size_t k = 0; k < end; ++k) {
    if (k > 0) to_graph.first += ns[k - 1].tables.size();
    if (stop && !needed[k]) continue;
    const auto& n = ns[k];
    ctx.set_node(event_node(k));
    for (std::size_t o = 0; o < n.outputs.size(); ++o) {
      const bool is_output = n.graph_output[o] != graph::no_output;
      // Storage in floats; complex64 and int64 take two per voxel.
      const auto floats = shape.voxels() * (size_of(n.outputs[o].type) / sizeof(float));
      auto& b = live[n.first_slot + o];
      b = ctx.template allocate<float>(floats, is_output ? buffer_role::output : buffer_role::temporary);
      data[n.first_slot + o] = reinterpret_cast<std::byte*>(b.data());
      refs[o] = {n.outputs[o].type, b.data(), shape};
    }
    for (std::size_t i = 0; i < n.inputs.size(); ++i) ins[i] = view_of(n.inputs[i]);
    const auto& red = reductions.size() > k ? reductions[k] : std::optional<reduction>{};
    n.op->run(ctx, ins.first(n.inputs.size()), refs.first(n.outputs.size()), red ? &*red : nullptr, &to_graph);
    // Hand over graph outputs, then free whatever nobody reads any more.
    for (std::size_t o = 0; o < n.outputs.size(); ++o) {
      const auto index = n.graph_output[o];
      if (index == graph::no_output || stop) continue;
      if constexpr (std::is_invocable_v<Consume&, std::size_t, buf&>)
        consume(index, live[n.first_slot + o]);
      else if constexpr (Ctx::computes)
        consume(index, refs[o]);
    }
    for (const auto& r : n.inputs)
      if (r.node != cube_ref::input && ns[r.node].last_reader[r.output] == k)
        live[ns[r.node].first_slot + r.output].reset();
    for (std::size_t o = n.outputs.size(); o-- > 0;)  // unread outputs, in reverse order of allocation
      if (n.last_reader[o] == k) live[n.first_slot + o].reset();
  }
  if (stop) {
    const auto& inputs = ns[*stop].inputs;
    for (std::size_t i = 0; i < inputs.size(); ++i) ins[i] = view_of(inputs[i]);
    ctx.set_node(event_node(*stop));
    inspect(*stop, ins.first(inputs.size()));
  }
  // Remaining buffers are freed in reverse order of allocation.
  for (std::size_t i = slots; i-- > 0;) live[i].reset();
  ctx.set_node(0);
}

/// Runs all of `g` on `input`, handing graph outputs to consume(index, array_ref)
/// and table rows to `tables`.
template <ExecutionContext Ctx, class Consume>
void run_graph_block(Ctx& ctx, const graph& g, cube_view<const float> input, const node_reductions& reductions,
                     Consume&& consume, const table_rows& tables = {}) {
  run_graph_block(
      ctx, g, input, reductions, consume, std::nullopt, [](std::size_t, std::span<const cube_view<const float>>) {},
      tables);
}

}  // namespace dwsr
