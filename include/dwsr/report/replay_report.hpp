#pragma once
/// \file The JSON document of a replay: a recorded trace (a dwsr CSV trace or a
/// PyTorch memory snapshot) through allocator models, or a snapshot under other
/// allocator settings. What `dwsr replay --json` prints and what the Python
/// package returns, built in one place.

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "dwsr/error.hpp"
#include "dwsr/sim/chrome_trace.hpp"
#include "dwsr/sim/read_trace.hpp"
#include "dwsr/sim/replay.hpp"
#include "dwsr/sim/torch_what_if.hpp"

namespace dwsr::report {

/// One model's statistics (at a peak, or at the end).
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

/// Every model's results per device, with the buffers alive at its peak or OOM.
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
           {"at_peak", stats_json(d.at_peak)},
           {"end", stats_json(d.stats)},
           {"oom",
            d.oom_event ? nlohmann::json{{"event", *d.oom_event}, {"requested", d.stats.oom_bytes}} : nlohmann::json()},
           {"alive_at", d.focus_event()},
           {"alive", alive}});
    }
    list.push_back(jm);
  }
  return out;
}

/// What a snapshot held besides its events: the start state, releases, the OOM, what is not modelled.
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

/// The rows of a what-if replay.
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

/// What to replay and how.
struct replay_request {
  std::filesystem::path trace;            ///< a dwsr CSV trace or a PyTorch snapshot (pickle or JSON)
  std::vector<std::string> models;        ///< NAME[:SETTINGS]; empty: exact, or the snapshot's recorded torch settings
  std::optional<std::uint64_t> capacity;  ///< per device; none: unlimited (a snapshot's OOM entry gives one)
  std::optional<std::size_t> gpu;         ///< which GPU of a snapshot
  bool what_if = false;                   ///< a snapshot under alternative allocator settings
  std::filesystem::path timeline;         ///< when not empty, a Chrome trace of the replay is written there
};

/// What a replay found: the document, and the results it was built from.
struct replay_outcome {
  nlohmann::json document;
  std::vector<std::string> models;  ///< the model specs replayed (defaults filled in)
  std::vector<sim::model_result> results;
  std::optional<sim::torch_trace> snapshot;
  std::optional<sim::what_if_result> what_if;
  std::optional<std::uint64_t> capacity;  ///< the capacity used (a snapshot's when none was given)
};

/// Replays `r` and builds `dwsr replay --json`'s document.
inline replay_outcome replay_report(const replay_request& r) {
  replay_outcome out;
  sim::replay_options options;
  options.capacity = r.capacity;
  options.timeline = !r.timeline.empty();
  const auto file = r.trace.string();
  out.models = r.models;
  if (!sim::is_snapshot_file(r.trace)) {
    if (r.what_if) throw invalid_input("--what-if needs a PyTorch memory snapshot; '" + file + "' is a dwsr CSV trace");
    if (out.models.empty()) out.models = {"exact"};
    sim::replay replay(out.models, options);
    const auto read = sim::read_trace(r.trace, replay, r.gpu);
    out.results = replay.results();
    if (options.timeline) sim::write_chrome_trace(r.timeline, out.results);
    out.document = {{"trace", {{"file", file}, {"format", read.format}, {"events", replay.events()}}},
                    {"capacity", options.capacity ? nlohmann::json(*options.capacity) : nlohmann::json()},
                    {"models", models_json(out.results)}};
  } else {
    auto& t = out.snapshot.emplace(sim::read_torch_snapshot(r.trace, r.gpu));
    if (!options.capacity) options.capacity = t.recorded_capacity;
    nlohmann::json trace_info{{"file", file}, {"format", "torch_snapshot"}, {"events", t.events.size()}};
    trace_info.update(snapshot_json(t));
    if (r.what_if) {
      const auto& w = out.what_if.emplace(sim::what_if(t, options.capacity, options.timeline));
      if (options.timeline && !w.rows.empty()) {
        std::vector<sim::model_result> side{{"recorded: " + w.rows[0].settings, {w.rows[0].result}}};
        if (w.best != 0) side.push_back({"best: " + w.rows[w.best].settings, {w.rows[w.best].result}});
        sim::write_chrome_trace(r.timeline, side);
      }
      out.document = {{"trace", trace_info}, {"what_if", what_if_json(w)}};
    } else {
      if (out.models.empty())
        out.models = {std::string(sim::torch_cuda_caching_model::name) +
                      (t.recorded_settings.empty() ? "" : ":" + t.recorded_settings)};
      out.results = sim::replay_torch_trace(t, out.models, options);
      if (options.timeline) sim::write_chrome_trace(r.timeline, out.results);
      out.document = {{"trace", trace_info},
                      {"capacity", options.capacity ? nlohmann::json(*options.capacity) : nlohmann::json()},
                      {"models", models_json(out.results)}};
    }
  }
  if (options.timeline) out.document["timeline"] = r.timeline.string();
  out.capacity = options.capacity;
  return out;
}

}  // namespace dwsr::report
