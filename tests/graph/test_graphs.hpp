#pragma once
// Inputs shared by the graph tests: a deterministic cube and the sweetness
// graph (envelope kept, instantaneous frequency, sweetness from both).

#include <vector>

#include <nlohmann/json.hpp>

#include "dwsr/graph/graph_json.hpp"
#include "operators/operator_test_support.hpp"

namespace dwsr::test {

/// A cube of values in [-1, 1) that vary from voxel to voxel, the same every run.
inline std::vector<float> ramp_cube(shape3 s) {
  std::vector<float> cube(s.voxels());
  for (std::size_t i = 0; i < cube.size(); ++i) cube[i] = float((i * 7919) % 1000) / 500.0f - 1.0f;
  return cube;
}

/// envelope (kept) and instantaneous_frequency into sweetness_from.
inline graph sweetness_graph() {
  return graph_from_json(nlohmann::json::parse(R"({"nodes": [
      {"name": "env", "op": "envelope", "keep": true}, {"name": "freq", "op": "instantaneous_frequency"},
      {"name": "sweet", "op": "sweetness_from", "inputs": ["env", "freq"]}]})"),
                         operators::catalogue());
}

}  // namespace dwsr::test
