#pragma once
// `dwsr replay`: a recorded trace (dwsr CSV or a PyTorch memory snapshot)
// through one or several allocator models at once, or a snapshot under other
// allocator settings (--what-if).

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <optional>
#include <tuple>

#include "cli_common.hpp"
#include "dwsr/core/bytes.hpp"
#include "dwsr/report/replay_report.hpp"
#include "dwsr/sim/any_model.hpp"

namespace dwsr::cli {

namespace detail {

inline std::string with_bytes(std::uint64_t b) { return human_bytes(b) + " (" + std::to_string(b) + " B)"; }

inline void print_results(const std::vector<sim::model_result>& results, std::size_t top) {
  for (const auto& m : results) {
    for (const auto& d : m.devices) {
      std::printf("\n%s on %s (%llu events)\n", m.spec.c_str(), std::string(name_of(d.dev)).c_str(),
                  static_cast<unsigned long long>(d.events));
      std::printf("  peak allocated   %-32s at event %llu\n", detail::with_bytes(d.stats.peak_allocated).c_str(),
                  static_cast<unsigned long long>(d.peak_allocated_event));
      std::printf("  peak reserved    %-32s at event %llu\n", detail::with_bytes(d.stats.peak_reserved).c_str(),
                  static_cast<unsigned long long>(d.peak_reserved_event));
      std::printf("  at that peak     %llu segments, largest free block %s, fragmentation %.3f\n",
                  static_cast<unsigned long long>(d.at_peak.segments), human_bytes(d.at_peak.largest_free).c_str(),
                  d.at_peak.fragmentation());
      std::printf("  %-16s allocated %s, reserved %s, %llu segments, largest free block %s, fragmentation %.3f\n",
                  d.oom_event ? "at the OOM" : "at the end", human_bytes(d.stats.allocated).c_str(),
                  human_bytes(d.stats.reserved).c_str(), static_cast<unsigned long long>(d.stats.segments),
                  human_bytes(d.stats.largest_free).c_str(), d.stats.fragmentation());
      if (d.oom_event)
        std::printf("  OUT OF MEMORY    at event %llu: %s requested\n", static_cast<unsigned long long>(*d.oom_event),
                    detail::with_bytes(d.stats.oom_bytes).c_str());
      else
        std::printf("  OOM              none\n");
      if (d.alive.empty()) continue;
      std::uint64_t total = 0;
      std::map<std::pair<node_id, int>, std::pair<std::uint64_t, std::uint64_t>>
          groups;  // (node, role) -> count, bytes
      for (const auto& b : d.alive) {
        total += b.bytes;
        auto& g = groups[{b.node, static_cast<int>(b.role)}];
        ++g.first;
        g.second += b.bytes;
      }
      std::printf("  alive at event %llu (%s): %zu buffers, %s requested\n",
                  static_cast<unsigned long long>(d.focus_event()), d.oom_event ? "the OOM" : "the reserved peak",
                  d.alive.size(), human_bytes(total).c_str());
      std::printf("    %6s  %-10s %8s %14s\n", "node", "role", "buffers", "bytes");
      for (const auto& [key, g] : groups)
        std::printf("    %6u  %-10s %8llu %14s\n", key.first,
                    std::string(name_of(static_cast<buffer_role>(key.second))).c_str(),
                    static_cast<unsigned long long>(g.first), human_bytes(g.second).c_str());
      std::printf("    largest: ");
      for (std::size_t i = 0; i < d.alive.size() && i < top; ++i)
        std::printf("%sbuffer %llu (node %u, %s, %s)", i ? "; " : "", static_cast<unsigned long long>(d.alive[i].id),
                    d.alive[i].node, std::string(name_of(d.alive[i].role)).c_str(),
                    human_bytes(d.alive[i].bytes).c_str());
      std::printf("%s\n", d.alive.size() > top ? "; ..." : "");
    }
  }
}

inline void print_snapshot(const sim::torch_trace& t) {
  std::printf("  recorded settings: %s\n",
              t.recorded_settings.empty() ? "PyTorch's defaults" : t.recorded_settings.c_str());
  if (t.start_events > 0 || (t.start && !t.start->segments.empty())) {
    if (t.start)
      std::printf(
          "  recording began mid-run: start state rebuilt from the snapshot's segments: %zu segments (%s), "
          "%zu blocks live (%s), allocated by events 0..%llu\n",
          t.start->segments.size(), human_bytes(t.start->reserved()).c_str(), t.start->blocks(),
          human_bytes(t.start->allocated()).c_str(),
          static_cast<unsigned long long>(t.start_events ? t.start_events - 1 : 0));
    else
      std::printf("  recording began mid-run: %llu blocks live at its start, allocated by events 0..%llu\n",
                  static_cast<unsigned long long>(t.start_events), static_cast<unsigned long long>(t.start_events - 1));
  }
  if (t.recorded_peak_reserved)
    std::printf("  PyTorch's own peak reserved (segment events): %s%s\n", with_bytes(t.recorded_peak_reserved).c_str(),
                t.recorded_reserved_complete ? "" : " (incomplete: the start's segments are not in the snapshot)");
  if (t.recorded_oom_event)
    std::printf("  PyTorch raised OutOfMemoryError at event %llu (%s)\n",
                static_cast<unsigned long long>(*t.recorded_oom_event), with_bytes(t.recorded_oom_bytes).c_str());
  for (const auto& n : t.notes)
    std::printf("  not modelled: %llu %s\n", static_cast<unsigned long long>(n.count), n.what.c_str());
}

inline void print_what_if(const sim::torch_trace& t, const sim::what_if_result& w) {
  std::printf("\nwhat-if: the recorded allocations under other settings of PyTorch's caching allocator\n");
  std::printf("  the recorded settings need %s to finish the recorded allocations; saved is measured from that\n",
              with_bytes(w.recorded_need).c_str());
  std::printf("  %-64s %14s %14s %9s  %s\n", "settings", "peak reserved", "saved", "frag@peak", "capacity");
  for (std::size_t i = 0; i < w.rows.size(); ++i) {
    const auto& r = w.rows[i];
    std::string label = r.settings.empty() ? "defaults" : r.settings;
    if (r.recorded) label = "recorded: " + label;
    const auto peak = r.result.stats.peak_reserved;
    const auto d = w.saved(i);
    std::string saved = "-";
    if (!r.recorded && !r.result.oom_event)
      saved = d >= 0 ? human_bytes(static_cast<std::uint64_t>(d)) : "-" + human_bytes(static_cast<std::uint64_t>(-d));
    std::string fits = "unknown";
    if (r.result.oom_event)
      fits = "OOM at event " + std::to_string(*r.result.oom_event);
    else if (w.capacity)
      fits = "fits";
    std::printf("%s %-64s %14s %14s %9.3f  %s\n", i == w.best ? "*" : " ", label.c_str(), human_bytes(peak).c_str(),
                saved.c_str(), r.result.at_peak.fragmentation(), fits.c_str());
  }
  std::printf("  (* lowest peak reserved without running out of memory; capacity %s)\n",
              w.capacity ? (with_bytes(*w.capacity) + (t.recorded_capacity && *w.capacity == *t.recorded_capacity
                                                           ? ", from the OOM entry: reserved + device_free"
                                                           : ""))
                               .c_str()
                         : "unknown: no --capacity and no OOM in the trace");
}

}  // namespace detail

inline void add_replay_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "replay", "replay a recorded trace through allocator models: what a device or the OS would really hold");
  static std::string file, capacity_text, timeline_path;
  static std::vector<std::string> models;
  static bool json = false, what_if = false;
  static std::optional<std::size_t> gpu;
  static std::size_t top = 10;
  cmd->add_option("trace", file,
                  "trace file: a dwsr trace (CSV, from `dwsr run --trace` or `dwsr plan --trace`) or a PyTorch "
                  "memory snapshot (the pickle of torch.cuda.memory._dump_snapshot, or its JSON export; "
                  "docs/torch-snapshots.md)")
      ->required();
  cmd->add_option("-a,--allocator", models,
                  "allocator model NAME[:SETTINGS] (repeatable; default exact, or for a PyTorch snapshot "
                  "torch_cuda_caching with the recorded settings): " +
                      model_names() +
                      "; settings as in PYTORCH_CUDA_ALLOC_CONF, e.g. "
                      "torch_cuda_caching:max_split_size_mb:128,expandable_segments:True");
  cmd->add_option("-c,--capacity", capacity_text,
                  "memory per device that allocations may take, e.g. 80GiB, 512MiB, 1000 (default: unlimited; for a "
                  "snapshot with an OOM entry, the reserved memory there plus its device_free)");
  cmd->add_flag("--what-if", what_if,
                "PyTorch snapshots: replay under the recorded settings and alternatives (expandable_segments, "
                "max_split_size_mb, roundup_power2_divisions, garbage_collection_threshold) and print, per setting, "
                "peak reserved, the memory saved, fragmentation at the peak and whether it runs out of memory");
  cmd->add_flag("--json", json, "print a JSON document instead of a report");
  cmd->add_option("--timeline", timeline_path,
                  "write allocated and reserved per event as a Chrome trace (open in ui.perfetto.dev or "
                  "chrome://tracing); with --what-if, the recorded settings and the best alternative side by side");
  cmd->add_option("--gpu", gpu, "which GPU of a PyTorch snapshot to replay (default: the only one with entries)");
  cmd->add_option("--top", top, "how many of the buffers alive at the peak or OOM to list")->capture_default_str();
  cmd->callback([] {
    report::replay_request request{file, models, {}, gpu, what_if, timeline_path};
    if (!capacity_text.empty()) request.capacity = parse_bytes(capacity_text);
    if (!timeline_path.empty()) remove_stale_partials_of(timeline_path);
    const auto out = report::replay_report(request);
    if (json) return print_json(out.document);
    if (!out.snapshot) {
      std::printf("trace %s: dwsr trace, %llu events\n", file.c_str(),
                  static_cast<unsigned long long>(out.document["trace"]["events"].get<std::uint64_t>()));
    } else {
      std::printf("trace %s: PyTorch snapshot, GPU %zu, %zu events\n", file.c_str(), out.snapshot->gpu,
                  out.snapshot->events.size());
      detail::print_snapshot(*out.snapshot);
    }
    if (out.what_if) {
      detail::print_what_if(*out.snapshot, *out.what_if);
    } else {
      std::printf("capacity: %s\n", out.capacity ? detail::with_bytes(*out.capacity).c_str() : "unlimited");
      detail::print_results(out.results, top);
    }
    if (!timeline_path.empty()) std::printf("\ntimeline written to %s\n", timeline_path.c_str());
  });
}

}  // namespace dwsr::cli
