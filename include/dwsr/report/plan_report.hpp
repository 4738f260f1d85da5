#pragma once
/// \file The JSON documents of a plan and of an advice: what `dwsr plan --json`
/// and `dwsr advise --json` print and what the Python package returns, built
/// in one place so both always carry the same numbers.

#include <chrono>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "dwsr/graph/advisor.hpp"
#include "dwsr/graph/dask_model.hpp"
#include "dwsr/graph/dask_thresholds.hpp"

namespace dwsr::report {

/// Per-worker figures (peak bytes, blocks, events) as a JSON array.
inline nlohmann::json workers_json(const std::vector<worker_memory>& ws) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& w : ws) out.push_back({{"peak_bytes", w.peak}, {"blocks", w.blocks}, {"events", w.events}});
  return out;
}

/// One evaluated chunking (with its predicted time when it has one).
inline nlohmann::json evaluation_json(const chunk_evaluation& e, std::uint64_t input_bytes) {
  nlohmann::json j{{"chunk", to_string(e.plan.chunk)},
                   {"blocks", e.plan.blocks},
                   {"halo", e.plan.halo},
                   {"halo_overhead", e.plan.halo_overhead},
                   {"peak_bytes", e.peak},
                   {"peak_over_cube", double(e.peak) / double(input_bytes)}};
  if (e.time) {
    j["predicted_seconds"] = e.time->makespan;
    j["idle_workers"] = e.time->idle_workers;
    j["worker_seconds"] = e.time->worker_seconds;
  }
  return j;
}

/// "largest" or "time".
inline const char* name_of(advice_objective o) noexcept { return o == advice_objective::time ? "time" : "largest"; }

/// What a plan is asked for, beside the graph and the cube.
struct plan_request {
  std::string graph;                           ///< as the user named it: an operator or a graph file
  shape3 cube;                                 ///< the cube's shape
  chunked_options options;                     ///< chunk (empty: whole cube), W, T, budget
  std::string allocator = "exact";             ///< allocator model applied to each worker's events
  const sim::time_profile* profile = nullptr;  ///< when set, the plan predicts the run's time too
  std::size_t cores = 0;                       ///< cores the workers share (0: the profile's)
  /// When set, the plan is of a Dask-style execution with tasks cut this way
  /// (graph/dask_model.hpp), reported under "dask"; else of dwsr's own.
  std::optional<dask_split> dask;
  /// Whether options.budget was given (then the document says whether the peak fits it).
  bool has_budget() const noexcept { return options.budget != std::numeric_limits<std::uint64_t>::max(); }
};

/// The "dask" object of a plan: the figures of `p` (T slots per worker) and,
/// when the worker has a memory limit, the highest of Dask's thresholds that
/// the schedule's peak and the bound exceed.
inline nlohmann::json dask_json(const dask_plan& p, std::size_t slots, const plan_request& r) {
  nlohmann::json workers = nlohmann::json::array();
  for (const auto& w : p.workers)
    workers.push_back({{"schedule_peak_bytes", w.schedule_peak},
                       {"bound_bytes", w.bound},
                       {"floor_bytes", w.floor},
                       {"tasks", w.tasks}});
  nlohmann::json j{{"tasks", name_of(p.split)},
                   {"slots", slots},
                   {"durations", r.profile ? "time profile" : "voxels"},
                   {"schedule_peak_bytes", p.schedule_peak()},
                   {"bound_bytes", p.bound()},
                   {"floor_bytes", p.floor()},
                   {"workers", workers}};
  if (r.has_budget()) {
    const dask_thresholds t;
    const auto limit = r.options.budget;
    j["limit_bytes"] = limit;
    j["thresholds"] = {{"spill", t.spill}, {"pause", t.pause}, {"terminate", t.terminate}};
    j["schedule_peak_over_limit"] = double(p.schedule_peak()) / double(limit);
    j["bound_over_limit"] = double(p.bound()) / double(limit);
    j["schedule_crosses"] = name_of(crossed(p.schedule_peak(), limit, t));
    j["bound_crosses"] = name_of(crossed(p.bound(), limit, t));
  }
  return j;
}

/// Evaluates the chunking of `r` for `g` and returns `dwsr plan --json`'s document;
/// `out`, when given, receives the evaluation.
inline nlohmann::json plan_report(const graph& g, const plan_request& r, chunk_evaluation* out = nullptr) {
  const auto& o = r.options;
  if (r.dask && r.allocator != "exact")
    throw invalid_input("allocator model '" + r.allocator +
                        "' with --exec dask: a Dask-style plan counts requested bytes; use the exact model");
  const auto started = std::chrono::steady_clock::now();
  auto e = evaluate_chunk(
      g, r.cube, o.chunk,
      {.workers = o.workers, .threads = o.threads, .allocator = r.allocator, .profile = r.profile, .cores = r.cores});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const auto input_bytes = r.cube.voxels() * sizeof(float);
  auto j = evaluation_json(e, input_bytes);
  j["graph"] = r.graph;
  j["shape"] = to_string(r.cube);
  j["workers"] = o.workers;
  j["threads"] = o.threads;
  j["allocator"] = r.allocator;
  j["input_bytes"] = input_bytes;
  j["planned_workers"] = workers_json(e.plan.workers);
  j["events"] = e.plan.workers.at(0).events;
  j["seconds"] = seconds;
  if (r.has_budget()) j["fits"] = e.peak <= o.budget, j["budget_bytes"] = o.budget;
  // Data-dependent operators (geobodies) plan with bounds: the peak is then
  // an upper bound of the run's, not its value.
  j["peak_is_bound"] = plan_is_bound(chunked_schedule(g, r.cube, o));
  if (r.dask) {
    // The time figures above are of dwsr's execution; the profile times the tasks here.
    for (const auto* key : {"predicted_seconds", "idle_workers", "worker_seconds"}) j.erase(key);
    const chunked_schedule s(g, r.cube, o);
    j["exec"] = "dask";
    j["dask"] = dask_json(plan_dask(s, {.split = *r.dask, .profile = r.profile}), o.threads, r);
    j["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }
  if (out) *out = std::move(e);
  return j;
}

/// `dwsr advise --json`'s document for advice `a` on `g` (named `graph`) over `cube` with options `o`.
inline nlohmann::json advice_report(const advice& a, const std::string& graph, shape3 cube, const advice_options& o) {
  const auto input_bytes = cube.voxels() * sizeof(float);
  nlohmann::json next = nlohmann::json::array();
  for (const auto& n : a.next_larger) next.push_back(evaluation_json(n, input_bytes));
  return {{"graph", graph},
          {"shape", to_string(cube)},
          {"budget_bytes", o.budget},
          {"workers", o.workers},
          {"threads", o.threads},
          {"allocator", o.allocator},
          {"objective", name_of(a.objective)},
          {"advice", evaluation_json(a.chosen, input_bytes)},
          {"largest", evaluation_json(a.largest, input_bytes)},
          {"next_larger", next},
          {"dask_default", evaluation_json(a.dask, input_bytes)},
          {"candidates", a.candidates},
          {"peak_is_bound", a.peak_is_bound},
          {"seconds", a.seconds}};
}

}  // namespace dwsr::report
