#pragma once
// `dwsr colocate`: several jobs on one GPU or MIG slice (sim/colocate.hpp),
// each a chunked run's event stream timed by the time model
// (graph/colocated_job.hpp): the device's peak and the first job to run out.

#include <charconv>

#include "cli_common.hpp"
#include "dwsr/graph/colocated_job.hpp"
#include "dwsr/sim/colocate.hpp"

namespace dwsr::cli {

/// A job as --job gives it: GRAPH@IxXxT[@CHUNK[@T[@START[@ALLOCATOR]]]].
struct job_text {
  std::string graph;
  shape3 cube;
  shape3 chunk;  // zero extents: whole
  std::size_t threads = 1;
  double start = 0;
  std::string allocator;  // empty: --allocator's
};

/// Parses one --job; errors name the job and the field.
inline job_text parse_job(const std::string& text, std::size_t index) {
  std::vector<std::string> fields;
  std::size_t from = 0;
  while (fields.size() < 5) {
    const auto at = text.find('@', from);
    if (at == std::string::npos) break;
    fields.push_back(text.substr(from, at - from));
    from = at + 1;
  }
  fields.push_back(text.substr(from));  // the allocator, last, may hold any character
  const auto who = "--job " + std::to_string(index + 1) + " " + quote(text, 200);
  if (fields.size() < 2 || fields[0].empty())
    throw invalid_input(who + ": expected GRAPH@IxXxT[@CHUNK[@T[@START[@ALLOCATOR]]]]");
  job_text j;
  j.graph = fields[0];
  j.cube = parse_shape(fields[1]);
  if (fields.size() > 2 && !fields[2].empty()) j.chunk = parse_shape(fields[2]);
  if (fields.size() > 3 && !fields[3].empty()) {
    const auto& t = fields[3];
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), j.threads);
    if (ec != std::errc{} || end != t.data() + t.size() || j.threads == 0 || j.threads > max_threads)
      throw invalid_input(who + ": threads " + quote(t) + "; expected 1 to " + std::to_string(max_threads));
  }
  if (fields.size() > 4 && !fields[4].empty()) {
    const auto& s = fields[4];
    char* end = nullptr;
    j.start = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size() || !std::isfinite(j.start) || j.start < 0)
      throw invalid_input(who + ": start " + quote(s) + "; expected seconds >= 0");
  }
  if (fields.size() > 5) j.allocator = fields[5];
  return j;
}

inline void add_colocate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "colocate", "replay several jobs on one GPU or MIG slice: the device's peak and the first job to run out");
  static std::string device = "h100-80gb", allocator = "torch_cuda_caching", overhead, capacity, profile;
  static std::vector<std::string> jobs;
  static bool json = false;
  cmd->add_option("-d,--device", device, "the device: " + sim::known_devices())->capture_default_str();
  cmd->add_option("--job", jobs,
                  "a job, repeatable: GRAPH@IxXxT[@CHUNK[@T[@START[@ALLOCATOR]]]] (an operator or a graph file, "
                  "the cube, the block shape (default: whole), threads, start in seconds, allocator model)")
      ->required();
  cmd->add_option("-a,--allocator", allocator, "allocator model of the jobs that name none: " + model_names())
      ->capture_default_str();
  cmd->add_option("--overhead", overhead, "each process's memory before its first allocation (default: 512MiB)");
  cmd->add_option("--capacity", capacity, "the device's memory instead of the table's, e.g. 24GiB");
  cmd->add_option("--profile", profile,
                  "time profile from `dwsr calibrate` to time the jobs (default: the usual one when it exists; "
                  "without one, a placeholder rate per voxel)");
  cmd->add_flag("--json", json, "print a JSON document instead of a table");
  cmd->callback([] {
    const auto dev = sim::device_named(device);
    sim::colocate_options o;
    if (!capacity.empty()) o.capacity = parse_bytes(capacity);
    const auto process = overhead.empty() ? sim::default_process_overhead : parse_bytes(overhead);
    const auto loaded = sim::find_time_profile(profile);
    const auto* p = loaded ? &*loaded : nullptr;
    // Every job's whole stream is held; bound what that costs.
    constexpr std::uint64_t event_limit = 1u << 24;
    std::uint64_t events = 0;
    std::vector<sim::job> js;
    for (std::size_t k = 0; k < jobs.size(); ++k) {
      const auto t = parse_job(jobs[k], k);
      const auto g = resolve_graph(t.graph, operators::catalogue());
      const chunked_schedule s(g, t.cube, {.chunk = t.chunk, .threads = t.threads});
      if ((events += plan_chunked(s).workers.at(0).events) > event_limit)
        throw invalid_input("--job " + std::to_string(k + 1) + " takes the jobs past the " +
                            std::to_string(event_limit) + " events a replay holds; use larger chunks or smaller cubes");
      js.push_back(colocated_job(s, {.profile = p,
                                     .allocator = t.allocator.empty() ? allocator : t.allocator,
                                     .overhead = process,
                                     .start = t.start,
                                     .name = t.graph + " " + to_string(t.cube)}));
    }
    const auto r = sim::colocate(dev, js, o);
    if (json) {
      nlohmann::json out{{"device", dev.name},         {"capacity_bytes", r.capacity},
                         {"peak_bytes", r.peak},       {"peak_time", r.peak_time},
                         {"at_peak_bytes", r.at_peak}, {"timing", p ? "time profile" : "placeholder"}};
      nlohmann::json jobs_json = nlohmann::json::array();
      for (std::size_t k = 0; k < r.jobs.size(); ++k) {
        const auto& j = r.jobs[k];
        jobs_json.push_back({{"name", j.name},
                             {"allocator", js[k].allocator},
                             {"start", j.start},
                             {"end", j.end},
                             {"failed", j.failed},
                             {"peak_bytes", j.peak},
                             {"events", j.events}});
      }
      out["jobs"] = jobs_json;
      nlohmann::json ooms = nlohmann::json::array();
      for (const auto& e : r.ooms)
        ooms.push_back({{"time", e.time},
                        {"job", e.job},
                        {"requested_bytes", e.requested},
                        {"usage_bytes", e.usage},
                        {"context", !e.event.has_value()}});
      out["ooms"] = ooms;
      return print_json(out);
    }
    std::printf("%zu job%s on %s (%s)%s\n", js.size(), js.size() == 1 ? "" : "s", dev.name.c_str(),
                human_bytes(r.capacity).c_str(), p ? "" : ", timed by a placeholder rate (no time profile)");
    for (std::size_t k = 0; k < r.jobs.size(); ++k) {
      const auto& j = r.jobs[k];
      std::printf("  %zu  %-36s %-20s %8.3f s .. %8.3f s  peak %10s  %s\n", k, j.name.c_str(), js[k].allocator.c_str(),
                  j.start, j.end, human_bytes(j.peak).c_str(), j.failed ? "OUT OF MEMORY" : "done");
    }
    std::printf("  device peak %s (%.1f%% of the device) at %.3f s\n", human_bytes(r.peak).c_str(),
                100.0 * double(r.peak) / double(r.capacity), r.peak_time);
    if (const auto first = r.first_oom())
      std::printf("  first OOM   job %zu at %.3f s: %s requested with %s in use\n", first->job, first->time,
                  human_bytes(first->requested).c_str(), human_bytes(first->usage).c_str());
    else
      std::printf("  no job ran out of memory\n");
  });
}

}  // namespace dwsr::cli
