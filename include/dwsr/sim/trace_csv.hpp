#pragma once
/// \file dwsr's trace files: CSV with a header, one event per line (see
/// docs/trace-format.md).
///
///     action,id,bytes,device,node,role
///     alloc,1,4194304,host,0,input
///     alloc,2,65536,host,0,workspace
///     free,2,,host,0,workspace
///     free,1
///
/// The header names the columns in this order; the last three may be left out
/// of the header and of any line (an alloc then gets host, node 0, temporary;
/// a free gets the values of its alloc). `bytes` may be empty or absent on a
/// free. An optional seventh column, `bound`, holds 1 where the bytes are an
/// upper bound (event::bound: a meta execution of a data-dependent size) and
/// 0 or nothing where they are exact; dwsr writes it only for a trace that has
/// such an event, so other traces keep six columns. Blank lines and lines starting with '#' are skipped. Reading checks
/// every line: a malformed line, an unknown action, device or role, a negative
/// or non-numeric size, an id allocated twice, a free of an id that is not
/// allocated, or a free whose bytes, device, node or role differ from its
/// alloc's is an invalid_input naming the file and line.

#include <charconv>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <istream>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "dwsr/core/atomic_file.hpp"
#include "dwsr/error.hpp"
#include "dwsr/memory/event.hpp"
#include "dwsr/sim/detail/flat_id_map.hpp"

namespace dwsr::sim {

/// The header line dwsr writes.
inline constexpr std::string_view trace_csv_header = "action,id,bytes,device,node,role";
/// The optional last column: 1 where the bytes are an upper bound (event::bound).
inline constexpr std::string_view trace_csv_bound_column = "bound";

/// Reads a dwsr trace one event at a time, validating each line.
class trace_csv_reader {
 public:
  /// Reads from `in`; `name` (the file) is named in errors.
  trace_csv_reader(std::istream& in, std::string name) : in_(in), name_(std::move(name)) {}

  /// Reads the next event into e; false at the end of the trace.
  bool next(event& e) {
    std::string_view f[8];
    std::size_t n = 0;
    while (true) {
      if (!std::getline(in_, line_)) {
        if (in_.bad()) throw io_error("reading '" + name_ + "' failed at line " + std::to_string(line_no_ + 1));
        if (columns_ == 0)
          fail(line_no_, "the trace is empty; expected the header '" + std::string(trace_csv_header) + "'");
        return false;
      }
      ++line_no_;
      if (!line_.empty() && line_.back() == '\r') line_.pop_back();
      if (line_no_ == 1 && line_.rfind("\xEF\xBB\xBF", 0) == 0) line_.erase(0, 3);  // a UTF-8 byte order mark
      const auto text = trim(line_);
      if (text.empty() || text.front() == '#') continue;
      n = split(text, f);
      if (columns_ == 0) {
        read_header(text, f, n);
        continue;
      }
      break;
    }
    if (n > columns_ || n < 2)
      fail(line_no_, "expected 2 to " + std::to_string(columns_) + " comma-separated fields (" + header_names() +
                         "), got " + (n > 7 ? std::string("more") : std::to_string(n)));
    const auto act = parse_action(f[0]);
    if (!act) fail(line_no_, "unknown action '" + std::string(f[0]) + "'; expected alloc or free");
    const auto id = number(f[1], "id");
    if (id == 0) fail(line_no_, "id 0; buffer ids start at 1");
    const bool has_bytes = n > 2 && !f[2].empty();
    if (*act == action::alloc && !has_bytes) fail(line_no_, "an alloc needs its bytes");
    const auto bytes = has_bytes ? number(f[2], "bytes") : 0;
    std::optional<device> dev;
    std::optional<node_id> node;
    std::optional<buffer_role> role;
    std::optional<bool> bound;
    if (n > 3 && !f[3].empty()) {
      dev = parse_device(f[3]);
      if (!dev) fail(line_no_, "unknown device '" + std::string(f[3]) + "'; expected host or cuda");
    }
    if (n > 4 && !f[4].empty()) {
      const auto v = number(f[4], "node");
      if (v > 0xffffffffull) fail(line_no_, "node " + std::string(f[4]) + " is too large");
      node = static_cast<node_id>(v);
    }
    if (n > 5 && !f[5].empty()) {
      role = parse_role(f[5]);
      if (!role)
        fail(line_no_, "unknown role '" + std::string(f[5]) + "'; expected input, output, temporary or workspace");
    }
    if (n > 6 && !f[6].empty()) {
      if (f[6] != "0" && f[6] != "1") fail(line_no_, "bound '" + std::string(f[6]) + "'; expected 0 or 1");
      bound = f[6] == "1";
    }

    e = event{};
    e.seq = events_++;
    e.act = *act;
    e.buffer = id;
    if (*act == action::alloc) {
      if (const auto* known = ids_.find(id))
        fail(line_no_, "buffer " + std::to_string(id) + " was already allocated at line " +
                           std::to_string(buffers_[*known].line) + "; buffer ids are unique within a trace");
      e.bytes = bytes;
      e.dev = dev.value_or(device::host);
      e.node = node.value_or(0);
      e.role = role.value_or(buffer_role::temporary);
      e.bound = bound.value_or(false);
      ids_.insert(id, buffers_.size());
      buffers_.push_back({e.bytes, line_no_, 0, e.node, e.dev, e.role, e.bound});
      return true;
    }
    const auto* known = ids_.find(id);
    if (!known) fail(line_no_, "free of buffer " + std::to_string(id) + ", which was never allocated");
    auto& b = buffers_[*known];
    if (b.freed_line)
      fail(line_no_,
           "free of buffer " + std::to_string(id) + ", already freed at line " + std::to_string(b.freed_line));
    auto mismatch = [&](const std::string& what, const std::string& got, const std::string& want) {
      fail(line_no_, "free of buffer " + std::to_string(id) + " with " + what + " " + got +
                         ", but it was allocated with " + what + " " + want + " at line " + std::to_string(b.line));
    };
    if (has_bytes && bytes != b.bytes) mismatch("bytes", std::to_string(bytes), std::to_string(b.bytes));
    if (dev && *dev != b.dev) mismatch("device", std::string(name_of(*dev)), std::string(name_of(b.dev)));
    if (node && *node != b.node) mismatch("node", std::to_string(*node), std::to_string(b.node));
    if (role && *role != b.role) mismatch("role", std::string(name_of(*role)), std::string(name_of(b.role)));
    if (bound && *bound != b.bound) mismatch("bound", *bound ? "1" : "0", b.bound ? "1" : "0");
    b.freed_line = line_no_;
    e.bytes = b.bytes;
    e.dev = b.dev;
    e.node = b.node;
    e.role = b.role;
    e.bound = b.bound;
    return true;
  }

  /// The number of the line read last (from 1).
  std::uint64_t line() const noexcept { return line_no_; }

 private:
  struct buffer_state {
    std::uint64_t bytes, line, freed_line;
    node_id node;
    device dev;
    buffer_role role;
    bool bound;
  };

  [[noreturn]] void fail(std::uint64_t line, const std::string& why) const {
    throw invalid_input(name_ + ":" + std::to_string(line) + ": " + why);
  }
  static std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
  }
  static std::size_t split(std::string_view text, std::string_view (&f)[8]) {
    std::size_t n = 0;
    while (true) {
      const auto comma = text.find(',');
      if (n < 8) f[n] = trim(text.substr(0, comma));
      ++n;
      if (comma == std::string_view::npos) return n;
      text.remove_prefix(comma + 1);
    }
  }
  /// The names of the header's columns, comma-separated.
  std::string header_names() const {
    std::size_t len = 0, cols = 0;
    while (cols < columns_ && len < trace_csv_header.size()) {
      len = trace_csv_header.find(',', len + 1);
      if (len == std::string_view::npos) len = trace_csv_header.size();
      ++cols;
    }
    std::string names(trace_csv_header.substr(0, len));
    if (columns_ == 7) names.append(",").append(trace_csv_bound_column);
    return names;
  }
  void read_header(std::string_view text, const std::string_view (&f)[8], std::size_t n) {
    static constexpr std::string_view names[7] = {"action", "id", "bytes", "device", "node", "role", "bound"};
    bool ok = n >= 3 && n <= 7;
    for (std::size_t i = 0; ok && i < n; ++i) ok = f[i] == names[i];
    if (!ok)
      fail(line_no_, "expected the header '" + std::string(trace_csv_header) +
                         "' (the last three columns may be left out, a last 'bound' column added), got '" +
                         std::string(text) + "'");
    columns_ = n;
  }
  std::uint64_t number(std::string_view text, const char* what) const {
    std::uint64_t v = 0;
    if (!text.empty() && text.front() == '-')
      fail(line_no_, std::string(what) + " '" + std::string(text) + "' is negative");
    const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec == std::errc::result_out_of_range)
      fail(line_no_, std::string(what) + " '" + std::string(text) + "' is too large");
    if (text.empty() || ec != std::errc{} || p != text.data() + text.size())
      fail(line_no_, std::string(what) + " '" + std::string(text) + "' is not a whole number");
    return v;
  }

  std::istream& in_;
  std::string name_;
  std::string line_;
  std::uint64_t line_no_ = 0;
  std::size_t columns_ = 0;
  std::uint64_t events_ = 0;
  detail::flat_id_map<std::uint64_t> ids_;
  std::vector<buffer_state> buffers_;
};

/// Reads a whole trace from a stream; `name` is named in errors.
inline std::vector<event> read_trace_csv(std::istream& in, const std::string& name = "<trace>") {
  trace_csv_reader reader(in, name);
  std::vector<event> events;
  event e;
  while (reader.next(e)) events.push_back(e);
  return events;
}

/// Reads a whole trace file (io_error when it cannot be opened).
inline std::vector<event> read_trace_csv(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw io_error("cannot open trace '" + path.string() + "'");
  return read_trace_csv(in, path.string());
}

/// Writes events as a dwsr trace (header, then one full line per event; the
/// `bound` column only when some event is a bound).
inline void write_trace_csv(std::ostream& out, std::span<const event> events) {
  bool bounds = false;
  for (const auto& e : events) bounds = bounds || e.bound;
  out << trace_csv_header;
  if (bounds) out << ',' << trace_csv_bound_column;
  out << '\n';
  std::string line;
  auto num = [&](std::uint64_t v) {
    char digits[24];
    const auto r = std::to_chars(digits, digits + sizeof digits, v);
    line.append(digits, r.ptr);
  };
  for (const auto& e : events) {
    line.clear();
    line += name_of(e.act);
    line += ',';
    num(e.buffer);
    line += ',';
    num(e.bytes);
    line += ',';
    line += name_of(e.dev);
    line += ',';
    num(e.node);
    line += ',';
    line += name_of(e.role);
    if (bounds) line += e.bound ? ",1" : ",0";
    line += '\n';
    out.write(line.data(), static_cast<std::streamsize>(line.size()));
  }
}

/// Writes a trace file atomically (io_error on failure; nothing is left behind).
inline void write_trace_csv(const std::filesystem::path& path, std::span<const event> events) {
  dwsr::detail::write_atomically(path, [&](std::ostream& out) { write_trace_csv(out, events); });
}

}  // namespace dwsr::sim
