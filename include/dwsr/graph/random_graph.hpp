#pragma once
/// \file Random graphs over a registry's operators, drawn from one seeded
/// stream (core/random.hpp), so that a seed names the same graph on every
/// platform: what the training-data generator (graph/dataset.hpp) and the
/// time-model table run on.
///
/// A graph of n nodes: node k reads the input or an earlier node's first
/// output, each with even odds; from the second node on, one node in four is
/// a two-input operator (sweetness_from, dominant_frequency_from when the
/// registry has them) reading two earlier cubes. Single-input nodes draw from
/// the "chainable" operators: one float32 input, a float32 first output, so
/// that any node can read any earlier one. Parameters keep their defaults.

#include <cstdint>
#include <string>
#include <vector>

#include "dwsr/core/random.hpp"
#include "dwsr/graph/graph.hpp"

namespace dwsr {

/// Operators of `r` with one input and a float32 first output, in
/// registration order (not event_picks: its only output is a table).
inline std::vector<std::string> chainable_operators(const registry& r) {
  std::vector<std::string> out;
  for (const auto& e : r.entries()) {
    const auto op = e.configure();
    if (op->arity() == 1 && !op->outputs().empty() && op->outputs().front().type == dtype::float32)
      out.push_back(e.name);
  }
  return out;
}

/// Draws graphs of operators of one registry (see the file comment).
class random_graphs {
 public:
  explicit random_graphs(const registry& r) : registry_(&r), chainable_(chainable_operators(r)) {
    for (const char* name : {"sweetness_from", "dominant_frequency_from"})
      if (r.contains(name)) combining_.emplace_back(name);
  }

  /// The node specs of a graph of `nodes` nodes (at least 1) drawn from `rng`.
  std::vector<node_spec> specs(xoshiro256ss& rng, std::size_t nodes) const {
    std::vector<node_spec> out;
    std::vector<std::string> cubes{std::string(graph_input)};
    for (std::size_t k = 0; k < nodes; ++k) {
      node_spec s;
      s.name = "n";
      s.name += std::to_string(k);
      if (k > 0 && !combining_.empty() && below(rng, 4) == 0) {
        s.op = combining_[below(rng, combining_.size())];
        s.inputs = {cubes[below(rng, cubes.size())], cubes[below(rng, cubes.size())]};
      } else {
        s.op = chainable_[below(rng, chainable_.size())];
        s.inputs = {k == 0 || below(rng, 2) == 0 ? cubes.front() : cubes[1 + below(rng, k)]};
      }
      cubes.push_back(s.name);
      out.push_back(std::move(s));
    }
    return out;
  }

  /// A built graph of `nodes` nodes drawn from `rng`.
  graph draw(xoshiro256ss& rng, std::size_t nodes) const { return graph::from_specs(*registry_, specs(rng, nodes)); }

  /// The operators single-input nodes draw from.
  const std::vector<std::string>& chainable() const noexcept { return chainable_; }

 private:
  static std::size_t below(xoshiro256ss& rng, std::size_t n) { return static_cast<std::size_t>(rng.next() % n); }

  const registry* registry_;
  std::vector<std::string> chainable_;
  std::vector<std::string> combining_;
};

}  // namespace dwsr
