#pragma once
/// \file Untrusted text (file contents, names from a graph file, command-line
/// words) made safe to print in a one-line message: every byte outside
/// printable ASCII is escaped (\n, \r, \t, or \xNN), so that a message never
/// spans lines and never carries a terminal escape sequence, and long text is
/// shortened. Non-ASCII letters are escaped too: this is for error messages,
/// where an unambiguous byte-for-byte view matters more than looks.

#include <cstddef>
#include <string>
#include <string_view>

namespace dwsr {

namespace detail {
/// Appends `s` to `out` with every byte outside printable ASCII escaped; with
/// `quoted`, backslash is escaped as well, so that an escape in the output
/// always stands for one byte of the input.
inline void append_escaped(std::string& out, std::string_view s, bool quoted) {
  static constexpr char hex[] = "0123456789abcdef";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (c < 0x20 || c >= 0x7f) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 0xf];
    } else {
      if (quoted && c == '\\') out += '\\';
      out += ch;
    }
  }
}
}  // namespace detail

/// `text` on one line: bytes outside printable ASCII escaped, and cut after
/// `max_bytes` with "... (N bytes)" saying how long it was. Backslashes are
/// kept as they are (for whole messages, which may already hold escapes).
inline std::string printable(std::string_view text, std::size_t max_bytes = 2000) {
  std::string out;
  detail::append_escaped(out, text.substr(0, max_bytes), false);
  if (text.size() > max_bytes) {
    out += "... (";
    out += std::to_string(text.size());
    out += " bytes)";
  }
  return out;
}

/// `text` between quotes (`mark`: ' by default, " for JSON keys), escaped
/// (backslash included) and shortened to `max_bytes` of the original:
/// 'abc\x1b[2J...' (4096 bytes). Every message that shows text a user or a
/// file supplied goes through this.
inline std::string quote(std::string_view text, std::size_t max_bytes = 80, char mark = '\'') {
  std::string out(1, mark);
  detail::append_escaped(out, text.substr(0, max_bytes), true);
  if (text.size() > max_bytes) out += "...";
  out += mark;
  if (text.size() > max_bytes) {
    out += " (";
    out += std::to_string(text.size());
    out += " bytes)";
  }
  return out;
}

}  // namespace dwsr
