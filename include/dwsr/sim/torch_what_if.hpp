#pragma once
/// \file What a PyTorch run's memory would have been under other allocator
/// settings, without rerunning it: a snapshot's trace (torch_snapshot.hpp) is
/// replayed through the caching allocator model under the recorded settings
/// and under alternatives (expandable segments, max_split_size_mb at a few
/// values, roundup_power2_divisions, garbage collection), each from the
/// recording's start state, with its recorded releases, against the device's
/// capacity. Each alternative is the recorded settings with one setting
/// changed.
///
/// Cost: one pass over the trace; every setting is a model fed each event.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dwsr/sim/any_model.hpp"
#include "dwsr/sim/replay.hpp"
#include "dwsr/sim/torch_cuda_caching.hpp"
#include "dwsr/sim/torch_snapshot.hpp"

namespace dwsr::sim {

/// Replays a snapshot's trace through the models named by `specs`: each
/// torch_cuda_caching model starts from the trace's start state, every model
/// gets the recorded releases (empty_cache) between events.
inline std::vector<model_result> replay_torch_trace(const torch_trace& t, std::span<const std::string> specs,
                                                    replay_options options = {}) {
  if (!options.make)
    options.make = [start = t.start](const std::string& spec, std::optional<std::uint64_t> capacity) {
      const auto colon = spec.find(':');
      if (spec.substr(0, colon) != torch_cuda_caching_model::name || !start) return make_model(spec, capacity);
      torch_cuda_caching_model m(
          colon == std::string::npos ? std::string_view{} : std::string_view(spec).substr(colon + 1), capacity);
      m.adopt(*start);
      return any_model(std::move(m), spec);
    };
  replay r(specs, options);
  std::size_t next = 0;
  for (const auto& e : t.events) {
    for (; next < t.releases.size() && t.releases[next] <= e.seq; ++next) r.release(device::cuda);
    r.on_event(e);
  }
  if (next < t.releases.size()) r.release(device::cuda);
  return r.results();
}

/// One setting of a what-if replay and how the run would have gone.
struct what_if_row {
  std::string settings;   ///< PYTORCH_CUDA_ALLOC_CONF text ("" for PyTorch's defaults)
  bool recorded = false;  ///< the settings of the recording
  device_result result;   ///< peaks, the state at the peak, the OOM
};

/// A what-if replay: one row per setting, the recorded one first.
struct what_if_result {
  std::optional<std::uint64_t> capacity;  ///< what the replay ran against
  std::vector<what_if_row> rows;
  std::size_t best = 0;  ///< the row with the lowest peak reserved among those that do not run out of memory
  /// Peak reserved under the recorded settings without a capacity: what the
  /// run needed to finish as recorded; savings are measured from it.
  std::uint64_t recorded_need = 0;

  /// Bytes row i needs less than the recorded settings (negative: more).
  std::int64_t saved(std::size_t i) const noexcept {
    return static_cast<std::int64_t>(recorded_need) - static_cast<std::int64_t>(rows[i].result.stats.peak_reserved);
  }
};

/// The settings a what-if replay compares: the recorded ones, then each
/// alternative that differs from them. Garbage collection acts only with a
/// memory fraction, so it comes with per_process_memory_fraction:1 and only
/// when a capacity is known.
inline std::vector<std::string> what_if_settings(std::string_view recorded, bool capacity_known) {
  std::vector<std::string> out{std::string(recorded)};
  const std::vector<std::pair<std::string_view, std::string>> alternatives{
      {"expandable_segments", "expandable_segments:True"},
      {"max_split_size_mb", "max_split_size_mb:64"},
      {"max_split_size_mb", "max_split_size_mb:256"},
      {"max_split_size_mb", "max_split_size_mb:1024"},
      {"roundup_power2_divisions", "roundup_power2_divisions:4"},
      {"roundup_power2_divisions", "roundup_power2_divisions:16"},
      {"garbage_collection_threshold", "garbage_collection_threshold:0.6,per_process_memory_fraction:1"},
  };
  // The recorded settings without the keys an alternative sets.
  std::vector<std::string> kept;
  for (const auto& s : detail::parse_settings(torch_cuda_caching_model::name, recorded)) {
    std::string text = s.key + ":";
    if (!s.is_list) {
      text += s.value;
    } else {
      text += "[";
      for (std::size_t i = 0; i < s.list.size(); ++i)
        text.append(i ? "," : "").append(s.list[i].first).append(":").append(s.list[i].second);
      text += "]";
    }
    kept.push_back(s.key);
    kept.push_back(std::move(text));
  }
  for (const auto& [key, change] : alternatives) {
    if (key == "garbage_collection_threshold" && !capacity_known) continue;
    std::string conf;
    for (std::size_t i = 0; i < kept.size(); i += 2) {
      const bool replaced =
          kept[i] == key || (key == "garbage_collection_threshold" && kept[i] == "per_process_memory_fraction");
      if (!replaced) conf.append(conf.empty() ? "" : ",").append(kept[i + 1]);
    }
    conf.append(conf.empty() ? "" : ",").append(change);
    if (detail::parse_torch_settings(conf) == detail::parse_torch_settings(recorded)) continue;
    out.push_back(std::move(conf));
  }
  return out;
}

/// Replays `t` under its recorded settings and the alternatives of
/// what_if_settings against `capacity` (default: the capacity the trace
/// gives at its OOM entry, else unlimited).
inline what_if_result what_if(const torch_trace& t, std::optional<std::uint64_t> capacity = {}, bool timeline = false) {
  what_if_result out;
  out.capacity = capacity ? capacity : t.recorded_capacity;
  const auto settings = what_if_settings(t.recorded_settings, out.capacity.has_value());
  std::vector<std::string> specs;
  for (const auto& s : settings)
    specs.push_back(std::string(torch_cuda_caching_model::name) + (s.empty() ? "" : ":") + s);
  replay_options options;
  options.capacity = out.capacity;
  options.timeline = timeline;
  options.attribution = false;
  const auto results = replay_torch_trace(t, specs, options);
  for (std::size_t i = 0; i < results.size(); ++i) {
    what_if_row row{settings[i], i == 0, {}};
    if (!results[i].devices.empty()) row.result = results[i].devices[0];
    out.rows.push_back(std::move(row));
  }
  out.recorded_need = out.rows[0].result.stats.peak_reserved;
  if (out.rows[0].result.oom_event) {
    options.capacity.reset();
    options.timeline = false;
    const auto uncapped = replay_torch_trace(t, std::span(specs).first(1), options);
    if (!uncapped[0].devices.empty()) out.recorded_need = uncapped[0].devices[0].stats.peak_reserved;
  }
  for (std::size_t i = 1; i < out.rows.size(); ++i) {
    const auto& a = out.rows[i].result;
    const auto& b = out.rows[out.best].result;
    if (a.oom_event.has_value() != b.oom_event.has_value() ? !a.oom_event
                                                           : a.stats.peak_reserved < b.stats.peak_reserved)
      out.best = i;
  }
  return out;
}

}  // namespace dwsr::sim
