#pragma once
/// \file The header dictionary of a .npy file: the subset of Python literal
/// syntax NumPy writes ({'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }).

#include <cctype>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dwsr/core/quote.hpp"

namespace dwsr::io::detail {

/// The three entries of a .npy header; parse() fills them or names what is wrong.
struct npy_dict {
  std::string descr;
  bool fortran_order = false;
  std::vector<std::uint64_t> shape;

  /// Parses `text`; returns an empty string on success, else why it is malformed.
  std::string parse(std::string_view text) {
    text_ = text;
    pos_ = 0;
    bool have_descr = false, have_order = false, have_shape = false;
    skip_space();
    if (!eat('{')) return "expected '{' at the start";
    while (true) {
      skip_space();
      if (eat('}')) break;
      auto key = string_literal();
      if (!key) return "expected a quoted key at offset " + std::to_string(pos_);
      skip_space();
      if (!eat(':')) return "expected ':' after key " + quote(*key);
      skip_space();
      if (*key == "descr") {
        auto value = string_literal();
        if (!value) return "'descr' is not a simple type string (structured dtypes are not supported)";
        descr = *value;
        have_descr = true;
      } else if (*key == "fortran_order") {
        if (word("True"))
          fortran_order = true;
        else if (word("False"))
          fortran_order = false;
        else
          return "'fortran_order' is not True or False";
        have_order = true;
      } else if (*key == "shape") {
        if (!tuple()) return "'shape' is not a tuple of non-negative integers";
        have_shape = true;
      } else {
        return "unexpected key " + quote(*key);
      }
      skip_space();
      if (eat(',')) continue;
      skip_space();
      if (eat('}')) break;
      return "expected ',' or '}' after the value of " + quote(*key);
    }
    skip_space();
    if (pos_ != text_.size()) return "unexpected characters after '}'";
    if (!have_descr) return "missing key 'descr'";
    if (!have_order) return "missing key 'fortran_order'";
    if (!have_shape) return "missing key 'shape'";
    return {};
  }

 private:
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool eat(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) return ++pos_, true;
    return false;
  }
  bool word(std::string_view w) {
    if (text_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }
  std::optional<std::string> string_literal() {
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) return std::nullopt;
    const char quote = text_[pos_];
    const auto end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) return std::nullopt;
    std::string s(text_.substr(pos_ + 1, end - pos_ - 1));
    if (s.find('\\') != std::string::npos) return std::nullopt;  // NumPy never escapes in these keys
    pos_ = end + 1;
    return s;
  }
  bool tuple() {
    shape.clear();
    if (!eat('(')) return false;
    while (true) {
      skip_space();
      if (eat(')')) return true;
      std::uint64_t v = 0;
      const char* first = text_.data() + pos_;
      auto [next, ec] = std::from_chars(first, text_.data() + text_.size(), v);
      if (ec != std::errc{} || next == first) return false;
      pos_ += static_cast<std::size_t>(next - first);
      eat('L');  // Python 2 longs, in files written by old NumPy
      shape.push_back(v);
      skip_space();
      if (eat(')')) return true;
      if (!eat(',')) return false;
    }
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace dwsr::io::detail
