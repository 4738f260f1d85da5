#pragma once
/// \file Operators described as JSON documents (what `dwsr ops --json` prints
/// and other tools read): name, family, summary, parameters with defaults, the
/// halo with the axes a chunk may not split, reduction passes and outputs.

#include <nlohmann/json.hpp>

#include "dwsr/ops/registry.hpp"

namespace dwsr {

/// One registry entry as JSON, its operator configured with the defaults.
inline nlohmann::json describe(const operator_entry& e) {
  const auto op = e.configure();
  const auto h = op->halo();
  nlohmann::json params = nlohmann::json::array();
  for (const auto& p : e.params) {
    nlohmann::json j{{"name", p.name}, {"default", format_value(p.default_value)}, {"doc", p.doc}};
    if (!p.choices.empty()) j["choices"] = p.choices;
    params.push_back(j);
  }
  nlohmann::json outputs = nlohmann::json::array();
  for (const auto& o : op->outputs())
    outputs.push_back({{"name", e.name + (o.suffix.empty() ? "" : "_" + o.suffix) + ".npy"},
                       {"suffix", o.suffix},
                       {"dtype", name_of(o.type)}});
  nlohmann::json tables = nlohmann::json::array();
  for (const auto& t : op->tables()) {
    nlohmann::json columns = nlohmann::json::array();
    for (const auto& c : t.columns) columns.push_back({{"name", c.name}, {"dtype", numpy_descr(c.type)}});
    tables.push_back({{"name", e.name + "_" + t.suffix + ".npy"}, {"suffix", t.suffix}, {"columns", columns}});
  }
  return {{"name", e.name},
          {"family", e.family},
          {"summary", e.summary},
          {"parameters", params},
          {"inputs", op->arity()},
          {"fft_based", e.fft_based},
          {"halo",
           {{"radius", h.radius},
            {"whole_traces", h.whole_traces},
            {"whole_inlines", h.whole_inlines},
            {"whole_crosslines", h.whole_crosslines}}},
          {"reduction_passes", op->reduction_passes()},
          {"outputs", outputs},
          {"tables", tables}};
}

/// Every entry of a registry as a JSON array, in registration order.
inline nlohmann::json describe(const registry& r) {
  nlohmann::json all = nlohmann::json::array();
  for (const auto& e : r.entries()) all.push_back(describe(e));
  return all;
}

}  // namespace dwsr
