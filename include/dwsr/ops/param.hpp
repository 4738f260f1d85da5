#pragma once
/// \file Operator parameters: declared specs with defaults, bound from text
/// ("sigmas=3,3,3") with errors that name the operator, parameter and value.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "dwsr/core/quote.hpp"
#include "dwsr/error.hpp"

namespace dwsr {

/// How a parameter's value is written and checked.
enum class param_kind : std::uint8_t {
  real,     ///< one number
  integer,  ///< one whole number
  reals,    ///< a comma-separated list of numbers (of `count` entries)
  text,     ///< one of `choices`
};

/// A parameter's value: a number, a list of numbers, or a word.
using param_value = std::variant<double, std::vector<double>, std::string>;

/// One declared parameter of an operator.
struct param_spec {
  std::string name;
  param_kind kind = param_kind::real;
  param_value default_value = 0.0;
  std::string doc;
  std::size_t count = 0;             ///< list length for `reals` (0: any length >= 1)
  std::vector<std::string> choices;  ///< allowed words for `text`
};

/// A parameter's value as text, the notation `--param` accepts.
inline std::string format_value(const param_value& v) {
  auto number = [](double x) {
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, x);
    return ec == std::errc{} ? std::string(buf, end) : std::to_string(x);
  };
  if (auto* d = std::get_if<double>(&v)) return number(*d);
  if (auto* s = std::get_if<std::string>(&v)) return *s;
  std::string out;
  for (double x : std::get<std::vector<double>>(v)) {
    if (!out.empty()) out += ',';
    out += number(x);
  }
  return out;
}

/// Parameter overrides by name, as declared values or as `--param` text.
class param_overrides {
 public:
  param_overrides() = default;
  param_overrides(std::initializer_list<std::pair<const std::string, param_value>> values) : values_(values) {}
  param_overrides(std::map<std::string, param_value> values) : values_(std::move(values)) {}  // NOLINT: implicit
  param_overrides(const std::map<std::string, std::string>& text) : values_(text.begin(), text.end()) {}  // NOLINT
  const std::map<std::string, param_value>& values() const noexcept { return values_; }
  bool empty() const noexcept { return values_.empty(); }
  param_value& operator[](const std::string& name) { return values_[name]; }

 private:
  std::map<std::string, param_value> values_;
};

/// Bound parameter values of one operator: every declared parameter has one.
class param_values {
 public:
  param_values() = default;

  double real(const std::string& name) const { return std::get<double>(at(name)); }
  std::int64_t integer(const std::string& name) const { return static_cast<std::int64_t>(real(name)); }
  const std::vector<double>& reals(const std::string& name) const { return std::get<std::vector<double>>(at(name)); }
  const std::string& text(const std::string& name) const { return std::get<std::string>(at(name)); }
  const std::map<std::string, param_value>& all() const noexcept { return values_; }

  /// Binds overrides over the specs' defaults: values as declared (a number,
  /// a list of numbers, a word) or text in the `--param` notation ("3,3,3").
  static param_values bind(std::string_view op, const std::vector<param_spec>& specs,
                           const param_overrides& overrides = {}) {
    param_values out;
    for (const auto& s : specs) out.values_[s.name] = s.default_value;
    for (const auto& [name, value] : overrides.values()) {
      const param_spec* spec = nullptr;
      for (const auto& s : specs)
        if (s.name == name) spec = &s;
      if (!spec) {
        std::string known;
        for (const auto& s : specs) known += (known.empty() ? "" : ", ") + s.name;
        throw invalid_input("operator '" + std::string(op) + "' has no parameter " + quote(name) + "; " +
                            (known.empty() ? "it takes no parameters" : "its parameters are: " + known));
      }
      const auto* text = std::get_if<std::string>(&value);
      out.values_[name] = text && spec->kind != param_kind::text ? parse(op, *spec, *text) : check(op, *spec, value);
    }
    return out;
  }

 private:
  const param_value& at(const std::string& name) const {
    auto it = values_.find(name);
    if (it == values_.end()) throw invalid_input("parameter '" + name + "' is not declared");
    return it->second;
  }

  /// Checks a value given as declared (not as text) against its spec.
  static param_value check(std::string_view op, const param_spec& spec, const param_value& value) {
    auto fail = [&](const std::string& expected) -> param_value {
      throw invalid_input("parameter '" + spec.name + "' of '" + std::string(op) +
                          "': " + printable(format_value(value), 200) + " is not " + expected);
    };
    const auto* x = std::get_if<double>(&value);
    const auto* xs = std::get_if<std::vector<double>>(&value);
    switch (spec.kind) {
      case param_kind::real: return x && std::isfinite(*x) ? value : fail("a number");
      case param_kind::integer: return x && std::isfinite(*x) && *x == std::floor(*x) ? value : fail("a whole number");
      case param_kind::reals: {
        const auto list = x ? std::vector<double>{*x} : xs ? *xs : std::vector<double>{};
        const bool finite = std::all_of(list.begin(), list.end(), [](double v) { return std::isfinite(v); });
        if (list.empty() || !finite || (spec.count && list.size() != spec.count))
          return fail(spec.count ? "a list of " + std::to_string(spec.count) + " numbers"
                                 : std::string("a list of numbers"));
        return list;
      }
      case param_kind::text:
        return parse(op, spec, std::get_if<std::string>(&value) ? std::get<std::string>(value) : format_value(value));
    }
    return fail("valid");
  }

  static param_value parse(std::string_view op, const param_spec& spec, const std::string& text) {
    auto fail = [&](const std::string& expected) -> param_value {
      throw invalid_input("parameter '" + spec.name + "' of '" + std::string(op) + "': " + quote(text) + " is not " +
                          expected);
    };
    auto number = [&](std::string_view s, double& x) {
      const char* b = s.data();
      const char* e = s.data() + s.size();
      if (b != e && *b == '+') ++b;
      auto [p, ec] = std::from_chars(b, e, x);
      return ec == std::errc{} && p == e && std::isfinite(x);
    };
    switch (spec.kind) {
      case param_kind::real: {
        double x;
        return number(text, x) ? param_value{x} : fail("a number");
      }
      case param_kind::integer: {
        double x;
        return number(text, x) && x == std::floor(x) ? param_value{x} : fail("a whole number");
      }
      case param_kind::reals: {
        std::vector<double> xs;
        std::string_view rest = text;
        while (true) {
          const auto comma = rest.find(',');
          double x;
          if (!number(rest.substr(0, comma), x))
            xs.clear(), rest = {};
          else
            xs.push_back(x);
          if (comma == std::string_view::npos || rest.empty()) break;
          rest.remove_prefix(comma + 1);
        }
        const auto expected = spec.count ? "a list of " + std::to_string(spec.count) + " comma-separated numbers"
                                         : std::string("a comma-separated list of numbers");
        if (xs.empty() || (spec.count && xs.size() != spec.count)) return fail(expected);
        return xs;
      }
      case param_kind::text: {
        for (const auto& c : spec.choices)
          if (c == text) return text;
        std::string allowed;
        for (const auto& c : spec.choices) allowed += (allowed.empty() ? "" : ", ") + c;
        return fail("one of: " + allowed);
      }
    }
    return fail("valid");
  }

  std::map<std::string, param_value> values_;
};

}  // namespace dwsr
