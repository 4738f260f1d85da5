#pragma once
/// \file Model settings in the syntax of PYTORCH_CUDA_ALLOC_CONF, shared by all
/// models: "key:value,key:value", where a value may be a bracketed list of
/// "k:v" pairs ("roundup_power2_divisions:[256:1,512:2,>:8]"). Spaces are
/// ignored. Errors name the model, the setting and what was expected.

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "dwsr/core/bytes.hpp"
#include "dwsr/error.hpp"

namespace dwsr::sim::detail {

/// One parsed setting: a key with a word value or a list of pairs.
struct setting {
  std::string key;
  std::string value;                                      ///< the word after ':' (empty for a list)
  std::vector<std::pair<std::string, std::string>> list;  ///< the pairs of a bracketed value
  bool is_list = false;
};

/// Throws invalid_input about a setting of a model.
[[noreturn]] inline void bad_setting(std::string_view model, std::string_view what) {
  throw invalid_input(std::string(model) + " setting " + std::string(what));
}

/// Splits "key:value,key:[a:b]" into settings.
inline std::vector<setting> parse_settings(std::string_view model, std::string_view text) {
  std::vector<std::string> tokens;  // words and the separators , : [ ]
  std::string word;
  auto flush = [&] {
    if (!word.empty()) tokens.push_back(std::move(word)), word.clear();
  };
  for (char c : text) {
    if (c == ',' || c == ':' || c == '[' || c == ']') {
      flush();
      tokens.emplace_back(1, c);
    } else if (c != ' ' && c != '\t') {
      word += c;
    }
  }
  flush();
  auto is_sep = [](const std::string& t) { return t == "," || t == ":" || t == "[" || t == "]"; };
  std::vector<setting> out;
  std::size_t i = 0;
  const std::string whole(text);
  auto expect = [&](std::string_view what) -> void {
    bad_setting(model, "'" + whole + "': expected " + std::string(what) +
                           (i < tokens.size() ? " at '" + tokens[i] + "'" : " at the end") +
                           "; settings are written key:value,key:value");
  };
  while (i < tokens.size()) {
    if (is_sep(tokens[i])) expect("a setting name");
    setting s;
    s.key = tokens[i++];
    if (i >= tokens.size() || tokens[i] != ":") expect("':' after '" + s.key + "'");
    ++i;
    if (i < tokens.size() && tokens[i] == "[") {
      s.is_list = true;
      ++i;
      while (i < tokens.size() && tokens[i] != "]") {
        if (is_sep(tokens[i])) expect("an entry of the list of '" + s.key + "'");
        std::string k = tokens[i++];
        if (i >= tokens.size() || tokens[i] != ":") expect("':' in the list of '" + s.key + "'");
        ++i;
        if (i >= tokens.size() || is_sep(tokens[i])) expect("a value in the list of '" + s.key + "'");
        s.list.emplace_back(std::move(k), tokens[i++]);
        if (i < tokens.size() && tokens[i] == ",") ++i;
      }
      if (i >= tokens.size()) expect("']' closing the list of '" + s.key + "'");
      ++i;
    } else {
      if (i >= tokens.size() || is_sep(tokens[i])) expect("a value for '" + s.key + "'");
      s.value = tokens[i++];
    }
    if (i < tokens.size()) {
      if (tokens[i] != ",") expect("',' between settings");
      ++i;
    }
    out.push_back(std::move(s));
  }
  return out;
}

/// The value of setting `s` read as a T by std::from_chars; `expected` ("a
/// number") names what it must be.
template <class T>
T setting_number(std::string_view model, const setting& s, std::string_view expected) {
  T v{};
  const auto* b = s.value.data();
  const auto* e = b + s.value.size();
  auto [p, ec] = std::from_chars(b, e, v);
  if (s.is_list || ec != std::errc{} || p != e)
    bad_setting(model, "'" + s.key + "': '" + s.value + "' is not " + std::string(expected));
  return v;
}

/// A whole number (no unit) for setting `key`.
inline std::uint64_t setting_uint(std::string_view model, const setting& s) {
  return setting_number<std::uint64_t>(model, s, "a whole number");
}

/// A number for setting `key`.
inline double setting_real(std::string_view model, const setting& s) {
  return setting_number<double>(model, s, "a number");
}

/// A byte size ("512MiB") for setting `key`.
inline std::uint64_t setting_bytes(std::string_view model, const setting& s) {
  if (s.is_list) bad_setting(model, "'" + s.key + "': expected a byte size, not a list");
  try {
    return parse_bytes(s.value);
  } catch (const invalid_input& e) {
    bad_setting(model, "'" + s.key + "': " + e.what());
  }
}

/// True or False, spelled as PyTorch requires.
inline bool setting_bool(std::string_view model, const setting& s) {
  if (!s.is_list && s.value == "True") return true;
  if (!s.is_list && s.value == "False") return false;
  bad_setting(model, "'" + s.key + "': expected True or False, got '" + s.value + "'");
}

/// The error for a key a model does not know, listing those it does.
[[noreturn]] inline void unknown_setting(std::string_view model, const setting& s, std::string_view known) {
  bad_setting(model, "'" + s.key + "' is unknown; known settings: " + std::string(known));
}

}  // namespace dwsr::sim::detail
