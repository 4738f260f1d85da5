#pragma once
/// \file Operators by name: what `dwsr ops` lists and what graphs, `dwsr run`
/// and `dwsr plan` look up. A registry is a value: the catalogue
/// (dwsr/operators/catalogue.hpp) is one, and a program may copy it and add
/// operators of its own.

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dwsr/core/quote.hpp"
#include "dwsr/error.hpp"
#include "dwsr/ops/operator.hpp"

namespace dwsr {

/// A registry entry: how to describe and build one operator.
struct operator_entry {
  std::string name;
  std::string family;
  std::string summary;
  std::vector<param_spec> params;
  bool fft_based = false;  ///< its cost and scratch follow FFT sizes (Op::fft_based, when declared)
  std::function<std::unique_ptr<configured_operator>(const param_values&)> make;

  /// Builds the operator with its parameters' defaults and `overrides`.
  std::unique_ptr<configured_operator> configure(const param_overrides& overrides = {}) const {
    return make(param_values::bind(name, params, overrides));
  }
};

/// Operators by name, in registration order.
class registry {
 public:
  /// Registers operator type Op, runnable in the contexts of List; a name
  /// already registered is an error.
  template <Operator Op, class List = execution_contexts>
  registry& add() {
    if (contains(Op::name)) throw invalid_input("operator '" + std::string(Op::name) + "' is registered twice");
    bool fft = false;
    if constexpr (requires { Op::fft_based; }) fft = Op::fft_based;
    entries_.push_back({std::string(Op::name), std::string(Op::family), std::string(Op::summary), Op::params(), fft,
                        [](const param_values& p) { return make_configured<Op, List>(Op(p)); }});
    return *this;
  }
  const std::vector<operator_entry>& entries() const noexcept { return entries_; }

  /// Whether an operator of that name is registered.
  bool contains(std::string_view name) const noexcept {
    for (const auto& e : entries_)
      if (e.name == name) return true;
    return false;
  }
  /// The entry named `name`, or invalid_input listing the known names.
  const operator_entry& find(std::string_view name) const {
    for (const auto& e : entries_)
      if (e.name == name) return e;
    std::string known;
    for (const auto& e : entries_) known += (known.empty() ? "" : ", ") + e.name;
    throw invalid_input("unknown operator " + quote(name) + "; known operators: " + known);
  }

 private:
  std::vector<operator_entry> entries_;
};

}  // namespace dwsr
