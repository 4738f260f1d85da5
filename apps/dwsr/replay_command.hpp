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
#include "dwsr/sim/any_model.hpp"
#include "dwsr/sim/chrome_trace.hpp"
#include "dwsr/sim/read_trace.hpp"
#include "dwsr/sim/replay.hpp"
#include "dwsr/sim/torch_what_if.hpp"

namespace dwsr::cli {

namespace detail {

inline nlohmann::json stats_json(const sim::model_stats& s) {
  return {{"requested", s.requested},
          {"allocated", s.allocated},
          {"reserved", s.reserved},
          {"peak_requested", s.peak_requested},
          {"peak_allocated", s.peak_allocated},
          {"peak_reserved", s.peak_reserved},
          {"segments", s.segments},
          {"largest_free", s.largest_free},
          {"total_free", s.total_free},
          {"fragmentation", s.fragmentation()},
          {"allocs", s.allocs},
          {"frees", s.frees},
          {"system_allocs", s.system_allocs},
          {"system_frees", s.system_frees},
          {"retries", s.retries}};
}

inline std::string with_bytes(std::uint64_t b) { return human_bytes(b) + " (" + std::to_string(b) + " B)"; }

inline nlohmann::json models_json(const std::vector<sim::model_result>& results) {
  nlohmann::json out;
  auto& list = out = nlohmann::json::array();
  for (const auto& m : results) {
    nlohmann::json jm{{"spec", m.spec}, {"devices", nlohmann::json::array()}};
    for (const auto& d : m.devices) {
      nlohmann::json alive = nlohmann::json::array();
      for (const auto& b : d.alive)
        alive.push_back({{"id", b.id},
                         {"bytes", b.bytes},
                         {"node", b.node},
                         {"role", name_of(b.role)},
                         {"allocated_at", b.allocated_at}});
      jm["devices"].push_back(
          {{"device", name_of(d.dev)},
           {"events", d.events},
           {"peak_allocated", d.stats.peak_allocated},
           {"peak_allocated_event", d.peak_allocated_event},
           {"peak_reserved", d.stats.peak_reserved},
           {"peak_reserved_event", d.peak_reserved_event},
           {"at_peak", detail::stats_json(d.at_peak)},
           {"end", detail::stats_json(d.stats)},
           {"oom",
            d.oom_event ? nlohmann::json{{"event", *d.oom_event}, {"requested", d.stats.oom_bytes}} : nlohmann::json()},
           {"alive_at", d.focus_event()},
           {"alive", alive}});
    }
    list.push_back(jm);
  }
  return out;
}

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

// What a snapshot held besides its events: the start state, releases, the OOM, what is not modelled.
inline nlohmann::json snapshot_json(const sim::torch_trace& t) {
  nlohmann::json notes = nlohmann::json::array();
  for (const auto& n : t.notes) notes.push_back({{"what", n.what}, {"count", n.count}});
  nlohmann::json j{
      {"gpu", t.gpu},
      {"entries", t.entries},
      {"recorded_settings", t.recorded_settings},
      {"recorded_peak_reserved", t.recorded_peak_reserved},
      {"recorded_reserved_complete", t.recorded_reserved_complete},
      {"recorded_oom_event", t.recorded_oom_event ? nlohmann::json(*t.recorded_oom_event) : nlohmann::json()},
      {"recorded_capacity", t.recorded_capacity ? nlohmann::json(*t.recorded_capacity) : nlohmann::json()},
      {"start_events", t.start_events},
      {"releases", t.releases},
      {"not_modelled", notes}};
  if (t.start)
    j["start"] = {{"segments", t.start->segments.size()},
                  {"reserved", t.start->reserved()},
                  {"blocks", t.start->blocks()},
                  {"allocated", t.start->allocated()}};
  return j;
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

inline nlohmann::json what_if_json(const sim::what_if_result& w) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : w.rows)
    rows.push_back({{"settings", r.settings},
                    {"recorded", r.recorded},
                    {"peak_reserved", r.result.stats.peak_reserved},
                    {"peak_reserved_event", r.result.peak_reserved_event},
                    {"peak_allocated", r.result.stats.peak_allocated},
                    {"fragmentation_at_peak", r.result.at_peak.fragmentation()},
                    {"saved", w.saved(static_cast<std::size_t>(&r - w.rows.data()))},
                    {"oom_event", r.result.oom_event ? nlohmann::json(*r.result.oom_event) : nlohmann::json()}});
  return {{"capacity", w.capacity ? nlohmann::json(*w.capacity) : nlohmann::json()},
          {"recorded_need", w.recorded_need},
          {"best", w.best},
          {"rows", rows}};
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
    sim::replay_options options;
    if (!capacity_text.empty()) options.capacity = parse_bytes(capacity_text);
    options.timeline = !timeline_path.empty();
    if (options.timeline) remove_stale_partials_of(timeline_path);
    if (!sim::is_snapshot_file(file)) {
      if (what_if) throw invalid_input("--what-if needs a PyTorch memory snapshot; '" + file + "' is a dwsr CSV trace");
      if (models.empty()) models = {"exact"};
      sim::replay replay(models, options);
      const auto read = sim::read_trace(file, replay, gpu);
      const auto results = replay.results();
      if (options.timeline) sim::write_chrome_trace(std::filesystem::path(timeline_path), results);
      if (json) {
        nlohmann::json out{{"trace", {{"file", file}, {"format", read.format}, {"events", replay.events()}}},
                           {"capacity", options.capacity ? nlohmann::json(*options.capacity) : nlohmann::json()},
                           {"models", detail::models_json(results)}};
        if (options.timeline) out["timeline"] = timeline_path;
        return print_json(out);
      }
      std::printf("trace %s: dwsr trace, %llu events\n", file.c_str(),
                  static_cast<unsigned long long>(replay.events()));
      std::printf("capacity: %s\n", options.capacity ? detail::with_bytes(*options.capacity).c_str() : "unlimited");
      detail::print_results(results, top);
      if (options.timeline) std::printf("\ntimeline written to %s\n", timeline_path.c_str());
      return;
    }

    const auto t = sim::read_torch_snapshot(std::filesystem::path(file), gpu);
    if (!options.capacity) options.capacity = t.recorded_capacity;
    nlohmann::json trace_info{{"file", file}, {"format", "torch_snapshot"}, {"events", t.events.size()}};
    trace_info.update(detail::snapshot_json(t));
    if (what_if) {
      const auto w = sim::what_if(t, options.capacity, options.timeline);
      if (options.timeline && !w.rows.empty()) {
        std::vector<sim::model_result> side{{"recorded: " + w.rows[0].settings, {w.rows[0].result}}};
        if (w.best != 0) side.push_back({"best: " + w.rows[w.best].settings, {w.rows[w.best].result}});
        sim::write_chrome_trace(std::filesystem::path(timeline_path), side);
      }
      if (json) {
        nlohmann::json out{{"trace", trace_info}, {"what_if", detail::what_if_json(w)}};
        if (options.timeline) out["timeline"] = timeline_path;
        return print_json(out);
      }
      std::printf("trace %s: PyTorch snapshot, GPU %zu, %zu events\n", file.c_str(), t.gpu, t.events.size());
      detail::print_snapshot(t);
      detail::print_what_if(t, w);
      if (options.timeline) std::printf("\ntimeline written to %s\n", timeline_path.c_str());
      return;
    }
    if (models.empty())
      models = {std::string(sim::torch_cuda_caching_model::name) +
                (t.recorded_settings.empty() ? "" : ":" + t.recorded_settings)};
    const auto results = sim::replay_torch_trace(t, models, options);
    if (options.timeline) sim::write_chrome_trace(std::filesystem::path(timeline_path), results);
    if (json) {
      nlohmann::json out{{"trace", trace_info},
                         {"capacity", options.capacity ? nlohmann::json(*options.capacity) : nlohmann::json()},
                         {"models", detail::models_json(results)}};
      if (options.timeline) out["timeline"] = timeline_path;
      return print_json(out);
    }
    std::printf("trace %s: PyTorch snapshot, GPU %zu, %zu events\n", file.c_str(), t.gpu, t.events.size());
    detail::print_snapshot(t);
    std::printf("capacity: %s\n", options.capacity ? detail::with_bytes(*options.capacity).c_str() : "unlimited");
    detail::print_results(results, top);
    if (options.timeline) std::printf("\ntimeline written to %s\n", timeline_path.c_str());
  });
}

}  // namespace dwsr::cli
