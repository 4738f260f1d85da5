#pragma once
// `dwsr replay`: a recorded trace (dwsr CSV or a PyTorch memory snapshot)
// through one or several allocator models at once.

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

}  // namespace detail

inline void add_replay_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "replay", "replay a recorded trace through allocator models: what a device or the OS would really hold");
  static std::string file, capacity_text, timeline_path;
  static std::vector<std::string> models;
  static bool json = false;
  static std::optional<std::size_t> gpu;
  static std::size_t top = 10;
  cmd->add_option("trace", file,
                  "trace file: a dwsr trace (CSV, from `dwsr run --trace` or `dwsr plan --trace`) or the JSON "
                  "export of a PyTorch memory snapshot (docs/trace-format.md)")
      ->required();
  cmd->add_option("-a,--allocator", models,
                  "allocator model NAME[:SETTINGS] (repeatable; default exact): " + model_names() +
                      "; settings as in PYTORCH_CUDA_ALLOC_CONF, e.g. "
                      "torch_cuda_caching:max_split_size_mb:128,expandable_segments:True");
  cmd->add_option("-c,--capacity", capacity_text,
                  "memory per device that allocations may take, e.g. 80GiB, 512MiB, 1000 (default: unlimited)");
  cmd->add_flag("--json", json, "print a JSON document instead of a report");
  cmd->add_option("--timeline", timeline_path,
                  "write allocated and reserved per event as a Chrome trace (open in ui.perfetto.dev or "
                  "chrome://tracing)");
  cmd->add_option("--gpu", gpu, "which GPU of a PyTorch snapshot to replay (default: the only one with entries)");
  cmd->add_option("--top", top, "how many of the buffers alive at the peak or OOM to list")->capture_default_str();
  cmd->callback([] {
    if (models.empty()) models = {"exact"};
    sim::replay_options options;
    if (!capacity_text.empty()) options.capacity = parse_bytes(capacity_text);
    options.timeline = !timeline_path.empty();
    sim::replay replay(models, options);

    const auto read = sim::read_trace(file, replay, gpu);
    nlohmann::json trace_info{{"file", file}, {"format", read.format}};
    const auto& snapshot = read.snapshot;
    if (snapshot) {
      trace_info["gpu"] = snapshot->gpu;
      trace_info["recorded_peak_reserved"] = snapshot->recorded_peak_reserved;
      trace_info["recorded_reserved_complete"] = snapshot->recorded_reserved_complete;
      trace_info["recorded_oom_event"] =
          snapshot->recorded_oom_event ? nlohmann::json(*snapshot->recorded_oom_event) : nlohmann::json();
    }
    trace_info["events"] = replay.events();
    const auto results = replay.results();
    if (options.timeline) {
      remove_stale_partials_of(timeline_path);
      sim::write_chrome_trace(std::filesystem::path(timeline_path), results);
    }

    if (json) {
      nlohmann::json out{{"trace", trace_info},
                         {"capacity", options.capacity ? nlohmann::json(*options.capacity) : nlohmann::json()}};
      auto& list = out["models"] = nlohmann::json::array();
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
               {"oom", d.oom_event ? nlohmann::json{{"event", *d.oom_event}, {"requested", d.stats.oom_bytes}}
                                   : nlohmann::json()},
               {"alive_at", d.focus_event()},
               {"alive", alive}});
        }
        list.push_back(jm);
      }
      if (options.timeline) out["timeline"] = timeline_path;
      return print_json(out);
    }

    std::printf("trace %s: %s, %llu events\n", file.c_str(),
                snapshot ? ("PyTorch snapshot, GPU " + std::to_string(snapshot->gpu)).c_str() : "dwsr trace",
                static_cast<unsigned long long>(replay.events()));
    if (snapshot && snapshot->recorded_peak_reserved)
      std::printf("  PyTorch's own peak reserved (segment events): %s%s\n",
                  detail::with_bytes(snapshot->recorded_peak_reserved).c_str(),
                  snapshot->recorded_reserved_complete ? "" : " (incomplete: the trace starts mid-run)");
    if (snapshot && snapshot->recorded_oom_event)
      std::printf("  PyTorch raised OOM after event %llu\n",
                  static_cast<unsigned long long>(*snapshot->recorded_oom_event));
    std::printf("capacity: %s\n", options.capacity ? detail::with_bytes(*options.capacity).c_str() : "unlimited");
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
    if (options.timeline) std::printf("\ntimeline written to %s\n", timeline_path.c_str());
  });
}

}  // namespace dwsr::cli
