#pragma once
/// \file Graphs as JSON documents:
///
///     {"nodes": [
///       {"name": "env", "op": "envelope"},
///       {"name": "freq", "op": "instantaneous_frequency", "params": {"sample_rate": 2}},
///       {"name": "sweet", "op": "sweetness_from", "inputs": ["env", "freq"], "keep": true}
///     ]}
///
/// "inputs" defaults to ["input"] (the cube); "node.suffix" names a node's
/// other outputs; "params" values are numbers, strings or lists of numbers;
/// "keep" makes a consumed node an output too. Unknown keys are errors, so a
/// typo never passes silently.

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <variant>

#include "dwsr/core/json_document.hpp"
#include "dwsr/core/quote.hpp"
#include "dwsr/graph/graph.hpp"
#include "dwsr/ops/param.hpp"

namespace dwsr {

/// Parses a graph document whose operators are looked up in `operators`;
/// `where` names the document in errors.
inline graph graph_from_json(const nlohmann::json& doc, const registry& operators, const std::string& where = "graph") {
  auto fail = [&](const std::string& what) -> graph { throw invalid_input(where + ": " + what); };
  if (!doc.is_object() || !doc.contains("nodes") || !doc["nodes"].is_array())
    return fail("expected an object with a \"nodes\" array");
  for (const auto& [key, value] : doc.items())
    if (key != "nodes") return fail("unknown key " + quote(key, 80, '"') + "; expected only \"nodes\"");
  std::vector<node_spec> specs;
  for (const auto& n : doc["nodes"]) {
    const std::string at = "node " + std::to_string(specs.size());
    if (!n.is_object()) return fail(at + " is not an object");
    node_spec s;
    for (const auto& [key, value] : n.items()) {
      if (key == "name" && value.is_string())
        s.name = value;
      else if (key == "op" && value.is_string())
        s.op = value;
      else if (key == "keep" && value.is_boolean())
        s.keep = value;
      else if (key == "inputs" && value.is_array()) {
        s.inputs.clear();
        for (const auto& i : value) {
          if (!i.is_string()) return fail(at + ": \"inputs\" must be a list of names");
          s.inputs.push_back(i);
        }
      } else if (key == "params" && value.is_object()) {
        for (const auto& [p, v] : value.items()) {
          if (v.is_string())
            s.params[p] = v.get<std::string>();
          else if (v.is_number())
            s.params[p] = v.get<double>();
          else if (v.is_array()) {
            std::vector<double> xs;
            for (const auto& x : v) {
              if (!x.is_number())
                return fail(at + ": parameter " + quote(p, 80, '"') + " must be a number, a word or a list of numbers");
              xs.push_back(x.get<double>());
            }
            s.params[p] = std::move(xs);
          } else {
            return fail(at + ": parameter " + quote(p, 80, '"') + " must be a number, a word or a list of numbers");
          }
        }
      } else {
        return fail(at + ": unexpected key " + quote(key, 80, '"') +
                    " (or wrong type); expected name (string), op (string), " +
                    "inputs (list of names), params (object), keep (boolean)");
      }
    }
    if (s.name.empty()) return fail(at + " has no \"name\"");
    if (s.op.empty()) return fail(at + " (" + quote(s.name, 80, '"') + ") has no \"op\"");
    specs.push_back(std::move(s));
  }
  return graph::from_specs(operators, std::move(specs));
}

/// The graph document of `g` (what graph_from_json reads back): its nodes in
/// execution order, parameters as given.
inline nlohmann::json graph_to_json(const graph& g) {
  nlohmann::json nodes = nlohmann::json::array();
  // Built in place, member by member: datasets write one per pool graph, and
  // an initializer list would copy each value twice.
  for (const auto& n : g.nodes()) {
    auto& j = nodes.emplace_back(nlohmann::json::object());
    j["name"] = n.spec.name;
    j["op"] = n.spec.op;
    j["inputs"] = n.spec.inputs;
    if (!n.spec.params.empty()) {
      auto& params = j["params"] = nlohmann::json::object();
      for (const auto& [name, value] : n.spec.params.values())
        std::visit([&, &name = name](const auto& v) { params[name] = v; }, value);
    }
    if (n.spec.keep) j["keep"] = true;
  }
  nlohmann::json doc = nlohmann::json::object();
  doc["nodes"] = std::move(nodes);
  return doc;
}

/// Reads a graph file (errors name the file).
inline graph read_graph(const std::filesystem::path& path, const registry& operators) {
  std::ifstream in(path);
  const auto where = "graph file " + quote(path.string(), 400);
  if (!in) throw io_error("cannot read " + where);
  return graph_from_json(parse_json_document(in, where), operators, where);
}

/// A graph from the command line: a .json file, or the name of one operator.
inline graph resolve_graph(const std::string& text, const registry& operators, const param_overrides& params = {}) {
  if (text.ends_with(".json")) {
    if (!params.empty()) throw invalid_input("--param applies to a single operator; set parameters in the graph file");
    return read_graph(text, operators);
  }
  return graph::single(operators, text, params);
}

}  // namespace dwsr
