#pragma once
// Graphs and output buffers shared by the graph benchmarks (graph_bench,
// f3_table).

#include <cstddef>
#include <vector>

#include "dwsr/graph/graph.hpp"
#include "dwsr/operators/catalogue.hpp"

namespace dwsr::bench {

/// Adds envelope -> sweetness_from <- instantaneous_frequency of the input
/// (nodes env, freq, sweet) to `g`.
inline graph& add_sweetness(graph& g) {
  return g.add("env", "envelope")
      .add("freq", "instantaneous_frequency")
      .add("sweet", "sweetness_from", {"env", "freq"});
}

/// envelope -> sweetness_from <- instantaneous_frequency, built.
inline graph sweetness_graph() {
  graph g(operators::catalogue());
  add_sweetness(g);
  g.build();
  return g;
}

/// Whole cubes of `shape` for every output of a graph, owned here, and the
/// references a sink writes them through.
struct output_cubes {
  output_cubes(const graph& g, shape3 cube) : shape(cube) {
    for (const auto& r : g.outputs()) add(g.nodes()[r.node].outputs[r.output].type);
  }
  /// Adds one cube of `type`.
  void add(dtype type) {
    bytes.emplace_back(shape.voxels() * size_of(type));
    refs.push_back({type, bytes.back().data(), shape});
  }

  shape3 shape;
  std::vector<std::vector<std::byte>> bytes;
  std::vector<array_ref> refs;
};

}  // namespace dwsr::bench
