#pragma once
/// \file A DAG of operator nodes over one input cube. Nodes consume the graph's
/// input ("input") or other nodes' outputs ("node" for its main output,
/// "node.suffix" for another one); outputs are the nodes marked `keep`, or
/// every node nobody consumes. Tables (ops/protocol.hpp's table_spec) are
/// never read by other nodes: every node's tables are outputs of the graph.
/// Validation names the node and the problem.

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "dwsr/core/quote.hpp"
#include "dwsr/error.hpp"
#include "dwsr/ops/registry.hpp"

namespace dwsr {

/// The name by which nodes refer to the graph's input cube.
inline constexpr std::string_view graph_input = "input";

/// Longest node name: its outputs become file names (<node>[_<output>].npy),
/// which must stay well inside the 255 bytes a file name may have.
inline constexpr std::size_t max_node_name = 64;

/// Whether `name` is a plain node name: 1 to max_node_name letters, digits, '_'
/// and '-' (ASCII), not starting with '-', and not "input". So a node's output
/// file is always a plain file inside the output directory (no '/', no "..",
/// no hidden file), and "node.suffix" references stay unambiguous.
inline bool valid_node_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > max_node_name || name == graph_input || name.front() == '-') return false;
  for (const char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
      return false;
  return true;
}

/// One node as the user describes it.
struct node_spec {
  std::string name;                             ///< unique within the graph
  std::string op;                               ///< operator name in the graph's registry
  param_overrides params;                       ///< parameter overrides (values, or text to parse)
  std::vector<std::string> inputs = {"input"};  ///< "input", "node" or "node.suffix"
  bool keep = false;                            ///< an output of the graph even if consumed
};

/// A reference from a node to the cube it reads: the graph input or a node's output.
struct cube_ref {
  static constexpr std::size_t input = static_cast<std::size_t>(-1);
  std::size_t node = input;  ///< index into graph::nodes(), or `input`
  std::size_t output = 0;    ///< index into that node's outputs
  friend bool operator==(const cube_ref&, const cube_ref&) = default;
  friend auto operator<=>(const cube_ref&, const cube_ref&) = default;
};

/// A validated graph: nodes in a topological order, operators configured from
/// a registry (which must outlive the graph) or given already configured.
class graph {
 public:
  /// A graph whose operators are looked up in `operators`.
  explicit graph(const registry& operators) : registry_(&operators) {}
  /// A graph of operators given already configured only (add(name, op, ...)).
  graph() = default;

  /// A node after validation.
  struct node {
    node_spec spec;
    std::shared_ptr<const configured_operator> op;
    std::vector<cube_ref> inputs;
    std::vector<output_spec> outputs;
    std::vector<table_spec> tables;
    /// Per output: the last node that reads it (this node's index when none
    /// does), and its index into graph::outputs() (no_output when it is not
    /// one). Set by build(), so executions do not derive them per block.
    std::vector<std::size_t> last_reader, graph_output;
    /// Index of its first output among all nodes' outputs in node order (an
    /// execution keeps one slot per output); set by build().
    std::size_t first_slot = 0;
  };
  /// graph_output of a node output that is not an output of the graph.
  static constexpr std::size_t no_output = std::size_t(-1);

  /// A node's table: node index and index into its tables.
  struct table_ref {
    std::size_t node = 0;
    std::size_t table = 0;
    friend bool operator==(const table_ref&, const table_ref&) = default;
  };

  /// Builder: adds a node of a registered operator (validated when the graph is built).
  graph& add(std::string name, std::string op, std::vector<std::string> inputs = {"input"}, param_overrides params = {},
             bool keep = false) {
    specs_.push_back({std::move(name), std::move(op), std::move(params), std::move(inputs), keep});
    given_.emplace_back();
    built_ = false;
    return *this;
  }
  /// Builder: adds a node of an operator configured by the caller.
  graph& add(std::string name, std::shared_ptr<const configured_operator> op,
             std::vector<std::string> inputs = {"input"}, bool keep = false) {
    specs_.push_back({std::move(name), std::string(op->name()), {}, std::move(inputs), keep});
    given_.push_back(std::move(op));
    built_ = false;
    return *this;
  }
  /// A graph of one registered operator reading the input.
  static graph single(const registry& operators, const std::string& op, param_overrides params = {}) {
    graph g(operators);
    g.add(op, op, {"input"}, std::move(params), true);
    g.build();
    return g;
  }
  /// A graph of one configured operator reading the input.
  static graph single(std::shared_ptr<const configured_operator> op) {
    graph g;
    const std::string name(op->name());
    g.add(name, std::move(op), {"input"}, true);
    g.build();
    return g;
  }
  /// Adds user-described nodes (e.g. from JSON) and validates.
  static graph from_specs(const registry& operators, std::vector<node_spec> specs) {
    graph g(operators);
    g.given_.resize(specs.size());
    g.specs_ = std::move(specs);
    g.build();
    return g;
  }

  /// Validates and orders the nodes; throws invalid_input naming the problem.
  void build() {
    if (specs_.empty()) throw invalid_input("graph has no nodes; expected at least one operator node");
    std::map<std::string, std::size_t> index;
    for (std::size_t i = 0; i < specs_.size(); ++i) {
      const auto& s = specs_[i];
      if (!valid_node_name(s.name))
        throw invalid_input("graph node name " + quote(s.name) + ": expected 1 to " + std::to_string(max_node_name) +
                            " letters, digits, '_' or '-' (not starting with '-'), other than 'input'");
      if (!index.emplace(s.name, i).second) throw invalid_input("graph node '" + s.name + "' is defined twice");
    }
    // Configure operators (unknown operators and parameters fail here).
    std::vector<node> unordered;
    for (std::size_t i = 0; i < specs_.size(); ++i) {
      const auto& s = specs_[i];
      if (!given_[i] && !registry_)
        throw invalid_input(
            "graph node '" + s.name + "': operator " + quote(s.op) +
            " cannot be looked up in a graph built without a registry; construct it as graph(registry)");
      node n{
          s,
          given_[i] ? given_[i] : std::shared_ptr<const configured_operator>(registry_->find(s.op).configure(s.params)),
          {},
          {},
          {}};
      n.outputs = n.op->outputs();
      n.tables = n.op->tables();
      if (s.inputs.size() != n.op->arity())
        throw invalid_input("graph node '" + s.name + "': operator '" + s.op + "' takes " +
                            std::to_string(n.op->arity()) + " input" + (n.op->arity() == 1 ? "" : "s") + ", got " +
                            std::to_string(s.inputs.size()));
      unordered.push_back(std::move(n));
    }
    // Resolve references by name (before ordering, indices are spec indices).
    std::vector<std::vector<cube_ref>> refs(specs_.size());
    for (std::size_t i = 0; i < specs_.size(); ++i)
      for (const auto& text : specs_[i].inputs) refs[i].push_back(resolve(text, specs_[i].name, index, unordered));
    // Kahn's algorithm; ties in declaration order, so the schedule is deterministic.
    std::vector<std::size_t> order, pending(specs_.size(), 0);
    for (std::size_t i = 0; i < specs_.size(); ++i)
      for (const auto& r : refs[i]) pending[i] += r.node != cube_ref::input;
    std::vector<bool> done(specs_.size(), false);
    while (order.size() < specs_.size()) {
      std::size_t next = specs_.size();
      for (std::size_t i = 0; i < specs_.size() && next == specs_.size(); ++i)
        if (!done[i] && pending[i] == 0) next = i;
      if (next == specs_.size()) {
        std::string cycle;
        for (std::size_t i = 0; i < specs_.size(); ++i)
          if (!done[i]) cycle += (cycle.empty() ? "" : ", ") + specs_[i].name;
        throw invalid_input("graph has a cycle through nodes: " + cycle);
      }
      done[next] = true;
      order.push_back(next);
      for (std::size_t i = 0; i < specs_.size(); ++i)
        for (const auto& r : refs[i]) pending[i] -= r.node == next;
    }
    std::vector<std::size_t> position(specs_.size());
    for (std::size_t k = 0; k < order.size(); ++k) position[order[k]] = k;
    nodes_.clear();
    for (auto i : order) {
      nodes_.push_back(std::move(unordered[i]));
      for (auto r : refs[i]) {
        if (r.node != cube_ref::input) r.node = position[r.node];
        nodes_.back().inputs.push_back(r);
      }
    }
    compute_outputs();
    compute_derived();
    built_ = true;
  }

  /// Nodes in execution order.
  const std::vector<node>& nodes() const { return checked().nodes_; }
  /// The graph's outputs: kept nodes' outputs, and every output nobody reads.
  const std::vector<cube_ref>& outputs() const { return checked().outputs_; }
  /// Every node's tables, in node order: all of them are outputs of the graph.
  const std::vector<table_ref>& tables() const { return checked().tables_; }
  /// File-style name of a table: "<node>_<suffix>".
  std::string table_name(const table_ref& r) const {
    const auto& n = nodes().at(r.node);
    return n.spec.name + "_" + n.tables.at(r.table).suffix;
  }
  /// File-style name of an output: "<node>[_<suffix>]".
  std::string output_name(const cube_ref& r) const {
    const auto& n = nodes().at(r.node);
    const auto& suffix = n.outputs.at(r.output).suffix;
    return n.spec.name + (suffix.empty() ? "" : "_" + suffix);
  }

  /// Samples of input each block needs beyond its interior, per axis: along
  /// every path the radii of the operators add up (a window over a window).
  std::array<std::uint64_t, 3> input_halo() const { return checked().input_halo_; }
  /// Axes no block may split, because some node reads them whole.
  std::array<bool, 3> whole_axes() const { return checked().whole_axes_; }
  /// Outputs of all nodes (node::first_slot).
  std::size_t slots() const { return checked().slots_; }
  /// Most inputs, and most outputs, of one node.
  std::size_t most_inputs() const { return checked().most_inputs_; }
  std::size_t most_outputs() const { return checked().most_outputs_; }
  /// Whether any node needs whole traces (time may not be split).
  bool needs_whole_traces() const { return whole_axes()[2]; }
  /// The registry the graph looks operators up in (null when built without one).
  const registry* operators() const noexcept { return registry_; }
  /// Whether any node needs a cube-wide reduction before it runs.
  bool needs_reduction() const {
    return std::any_of(nodes().begin(), nodes().end(), [](const node& n) { return n.op->reduction_passes() > 0; });
  }
  /// The nodes' specs in execution order (for writing the graph back).
  std::vector<node_spec> specs() const {
    std::vector<node_spec> out;
    for (const auto& n : nodes()) out.push_back(n.spec);
    return out;
  }

 private:
  const graph& checked() const {
    if (!built_) throw error("graph used before build()");
    return *this;
  }

  static cube_ref resolve(const std::string& text, const std::string& consumer,
                          const std::map<std::string, std::size_t>& index, const std::vector<node>& nodes) {
    if (text == graph_input) return {};
    const auto dot = text.find('.');
    const std::string name = text.substr(0, dot);
    const auto it = index.find(name);
    if (it == index.end())
      throw invalid_input("graph node '" + consumer + "' reads " + quote(text) +
                          ", which is neither 'input' nor a node of the graph");
    const auto& outs = nodes[it->second].outputs;
    std::size_t output = 0;
    if (dot != std::string::npos) {
      const auto suffix = text.substr(dot + 1);
      output = outs.size();
      for (std::size_t o = 0; o < outs.size(); ++o)
        if (outs[o].suffix == suffix) output = o;
      if (output == outs.size()) {
        std::string known;
        for (const auto& o : outs) known += (known.empty() ? "" : ", ") + (o.suffix.empty() ? "(main)" : o.suffix);
        throw invalid_input("graph node '" + consumer + "' reads " + quote(text) + ": node '" + name +
                            "' has no output " + quote(suffix) + "; its outputs are: " + known);
      }
    }
    if (outs[output].type != dtype::float32)
      throw invalid_input("graph node '" + consumer + "' reads '" + text + "', which is " +
                          std::string(name_of(outs[output].type)) + "; operators read float32 cubes");
    return {it->second, output};
  }

  // Derived once per build: every block of every execution asks for them.
  void compute_derived() {
    input_halo_ = {};
    whole_axes_ = {};
    slots_ = most_inputs_ = most_outputs_ = 0;
    std::vector<std::array<std::uint64_t, 3>> need(nodes_.size());  // halo of the input each node's output needs
    for (std::size_t k = 0; k < nodes_.size(); ++k) {
      auto& n = nodes_[k];
      const auto h = n.op->halo();
      std::array<std::uint64_t, 3> upstream{};
      for (const auto& r : n.inputs)
        if (r.node != cube_ref::input)
          for (int a = 0; a < 3; ++a) upstream[a] = std::max(upstream[a], need[r.node][a]);
      for (int a = 0; a < 3; ++a) {
        need[k][a] = h.radius[a] + upstream[a];
        input_halo_[a] = std::max(input_halo_[a], need[k][a]);
        whole_axes_[a] = whole_axes_[a] || h.whole_axes()[a];
      }
      n.last_reader.assign(n.outputs.size(), k);
      n.graph_output.assign(n.outputs.size(), no_output);
      n.first_slot = slots_;
      slots_ += n.outputs.size();
      most_inputs_ = std::max(most_inputs_, n.inputs.size());
      most_outputs_ = std::max(most_outputs_, n.outputs.size());
    }
    for (std::size_t k = 0; k < nodes_.size(); ++k)
      for (const auto& r : nodes_[k].inputs)
        if (r.node != cube_ref::input) nodes_[r.node].last_reader[r.output] = k;
    for (std::size_t i = 0; i < outputs_.size(); ++i) nodes_[outputs_[i].node].graph_output[outputs_[i].output] = i;
  }

  void compute_outputs() {
    std::set<cube_ref> consumed;
    for (const auto& n : nodes_)
      for (const auto& r : n.inputs) consumed.insert(r);
    outputs_.clear();
    for (std::size_t k = 0; k < nodes_.size(); ++k)
      for (std::size_t o = 0; o < nodes_[k].outputs.size(); ++o)
        if (nodes_[k].spec.keep || !consumed.count({k, o})) outputs_.push_back({k, o});
    tables_.clear();
    for (std::size_t k = 0; k < nodes_.size(); ++k)
      for (std::size_t t = 0; t < nodes_[k].tables.size(); ++t) tables_.push_back({k, t});
  }

  const registry* registry_ = nullptr;
  std::vector<node_spec> specs_;
  std::vector<std::shared_ptr<const configured_operator>> given_;  ///< per spec: configured by the caller, or null
  std::vector<node> nodes_;
  std::vector<cube_ref> outputs_;
  std::vector<table_ref> tables_;
  std::array<std::uint64_t, 3> input_halo_{};
  std::array<bool, 3> whole_axes_{};
  std::size_t slots_ = 0, most_inputs_ = 0, most_outputs_ = 0;
  bool built_ = false;
};

}  // namespace dwsr
