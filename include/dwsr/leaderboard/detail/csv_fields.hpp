#pragma once
/// \file The leaderboard's two CSV readers' shared pieces (runs.hpp,
/// predictions_csv.hpp): splitting a line at commas, and reading a whole field
/// as a number.

#include <charconv>
#include <string_view>
#include <system_error>
#include <vector>

namespace dwsr::leaderboard::detail {

/// The comma-separated fields of `line` (no quoting: no field holds a comma).
inline std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  for (std::size_t start = 0;;) {
    const auto comma = line.find(',', start);
    fields.push_back(line.substr(start, comma - start));
    if (comma == std::string_view::npos) return fields;
    start = comma + 1;
  }
}

/// Reads all of `text` as a number into `value`; false when any of it is not.
template <class T>
bool parse_whole(std::string_view text, T& value) {
  const auto* end = text.data() + text.size();
  const auto r = std::from_chars(text.data(), end, value);
  return r.ec == std::errc{} && r.ptr == end;
}

}  // namespace dwsr::leaderboard::detail
