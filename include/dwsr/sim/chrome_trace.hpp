#pragma once
/// \file Timelines for people: replay results written in the Chrome trace
/// event format, which Perfetto's UI (ui.perfetto.dev) and chrome://tracing
/// open. One process per device ("host", "cuda"); per model two counter tracks,
/// "<model> allocated" and "<model> reserved" (bytes), and instant events for
/// the reserved peak and for an OOM. Time is the event number: event N is at
/// N microseconds. Counter values are written only when they change.

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <ostream>
#include <span>
#include <string>
#include <string_view>

#include "dwsr/core/atomic_file.hpp"
#include "dwsr/memory/event.hpp"
#include "dwsr/sim/replay.hpp"

namespace dwsr::sim {

namespace detail {
/// A JSON string literal.
inline std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else
      out += c;
  }
  return out + "\"";
}
}  // namespace detail

/// Writes replay results (with timelines) as a Chrome trace JSON document.
inline void write_chrome_trace(std::ostream& out, std::span<const model_result> results) {
  out << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  bool first = true;
  auto emit = [&](const std::string& json) {
    out << (first ? "" : ",\n") << json;
    first = false;
  };
  for (auto d : {device::host, device::cuda}) {
    const auto pid = std::to_string(static_cast<int>(d));
    emit("{\"ph\":\"M\",\"pid\":" + pid + ",\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":\"" +
         std::string(name_of(d)) + "\"}}");
  }
  for (const auto& m : results) {
    for (const auto& r : m.devices) {
      const auto pid = std::to_string(static_cast<int>(r.dev));
      const auto allocated = detail::json_quote(m.spec + " allocated");
      const auto reserved = detail::json_quote(m.spec + " reserved");
      auto counter = [&](const std::string& name, std::uint64_t ts, std::uint64_t bytes) {
        emit("{\"ph\":\"C\",\"pid\":" + pid + ",\"tid\":0,\"ts\":" + std::to_string(ts) + ",\"name\":" + name +
             ",\"args\":{\"bytes\":" + std::to_string(bytes) + "}}");
      };
      std::uint64_t last_a = ~0ull, last_r = ~0ull;
      for (const auto& p : r.timeline) {
        if (p.allocated != last_a) counter(allocated, p.event, last_a = p.allocated);
        if (p.reserved != last_r) counter(reserved, p.event, last_r = p.reserved);
      }
      if (r.stats.peak_reserved > 0)
        emit("{\"ph\":\"i\",\"s\":\"p\",\"pid\":" + pid + ",\"tid\":0,\"ts\":" + std::to_string(r.peak_reserved_event) +
             ",\"name\":" + detail::json_quote("peak " + m.spec) + ",\"args\":{\"reserved\":" +
             std::to_string(r.stats.peak_reserved) + ",\"allocated\":" + std::to_string(r.at_peak.allocated) + "}}");
      if (r.oom_event)
        emit("{\"ph\":\"i\",\"s\":\"p\",\"pid\":" + pid + ",\"tid\":0,\"ts\":" + std::to_string(*r.oom_event) +
             ",\"name\":" + detail::json_quote("OOM " + m.spec) + ",\"args\":{\"requested\":" +
             std::to_string(r.stats.oom_bytes) + ",\"allocated\":" + std::to_string(r.stats.allocated) +
             ",\"reserved\":" + std::to_string(r.stats.reserved) + "}}");
    }
  }
  out << "\n]}\n";
}

/// Writes the trace file atomically (io_error on failure; nothing is left behind).
inline void write_chrome_trace(const std::filesystem::path& path, std::span<const model_result> results) {
  dwsr::detail::write_atomically(path, [&](std::ostream& out) { write_chrome_trace(out, results); });
}

}  // namespace dwsr::sim
