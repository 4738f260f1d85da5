#pragma once
// `dwsr plan` and `dwsr advise`: the meta execution — per-worker peaks of a
// chunked run without computing — and the chunk-size advisor.

#include "cli_common.hpp"
#include "dwsr/graph/advisor.hpp"
#include "dwsr/io/source.hpp"
#include "dwsr/memory/recorder.hpp"
#include "dwsr/report/plan_report.hpp"
#include "dwsr/sim/trace_csv.hpp"

namespace dwsr::cli {

/// The rest of `dwsr plan --exec dask`'s table, from the plan's JSON document.
inline void print_dask(const nlohmann::json& j, std::uint64_t input_bytes) {
  const auto& d = j["dask"];
  const std::size_t slots = d["slots"];
  std::printf("  execution       dask, %s tasks, %zu single-threaded slot%s per worker (durations from %s)\n",
              d["tasks"].get<std::string>().c_str(), slots, slots == 1 ? "" : "s",
              d["durations"].get<std::string>().c_str());
  auto row = [&](const char* name, const char* key, const char* what) {
    const std::uint64_t bytes = d[key];
    std::printf("  %-15s %12s  %5.2f x input  (%llu bytes; %s)\n", name, human_bytes(bytes).c_str(),
                double(bytes) / double(input_bytes), static_cast<unsigned long long>(bytes), what);
  };
  row("schedule peak", "schedule_peak_bytes", "the model's order");
  row("upper bound", "bound_bytes", "any order, at most T blocks open");
  row("floor", "floor_bytes", "every order");
  if (j["peak_is_bound"].get<bool>())
    std::printf("  (sizes that depend on the data are planned at their bounds: each figure is an upper bound)\n");
  if (d.contains("limit_bytes"))
    std::printf(
        "  limit           %12s  schedule peak %.0f%% (%s), bound %.0f%% (%s); spill 60%%, pause 80%%, "
        "terminate 95%%\n",
        human_bytes(d["limit_bytes"].get<std::uint64_t>()).c_str(), 100 * d["schedule_peak_over_limit"].get<double>(),
        d["schedule_crosses"].get<std::string>().c_str(), 100 * d["bound_over_limit"].get<double>(),
        d["bound_crosses"].get<std::string>().c_str());
  std::printf("  planned in      %10.6f s\n", j["seconds"].get<double>());
}

/// --context-overhead: bytes a GPU worker holds beside its buffers.
inline void add_context_overhead(CLI::App& cmd, std::string& text) {
  cmd.add_option("--context-overhead", text,
                 "with --device cuda: device memory each worker holds beside its buffers (the CUDA context, "
                 "e.g. 500MiB; docs/cuda.md gives measured figures), added to every peak (default 0)");
}

/// `dwsr plan --device cuda`: each worker's device peak (exact, or under an
/// allocator model of the device stream), plus the context's overhead, against the budget.
inline void plan_on_device(const dwsr::graph& g, shape3 shape, const chunked_options& o, const graph_options& opts,
                           const std::string& allocator, std::uint64_t overhead, const std::string& trace) {
  const chunked_schedule s(g, shape, o);
  const auto plan = plan_chunked<cuda_meta_context>(s);
  std::vector<std::uint64_t> modelled;
  if (allocator != "exact") modelled = model_peaks<cuda_meta_context>(s, plan, allocator);
  std::uint64_t peak = 0;
  for (std::size_t w = 0; w < plan.workers.size(); ++w)
    peak = std::max(peak, modelled.empty() ? plan.workers[w].peak : modelled[w]);
  const auto needed = peak + overhead;
  const auto staging = planned_staging_peak(s);
  if (!trace.empty()) {
    remove_stale_partials_of(trace);
    recorder rec;
    worker_events<cuda_meta_context>(s, 0, rec);
    sim::write_trace_csv(trace, rec.events());
  }
  const auto input_bytes = shape.voxels() * sizeof(float);
  const bool fits = needed <= o.budget;
  if (opts.json) {
    nlohmann::json j{{"graph", opts.graph},
                     {"device", "cuda"},
                     {"shape", to_string(shape)},
                     {"chunk", to_string(plan.chunk)},
                     {"blocks", plan.blocks},
                     {"workers", o.workers},
                     {"input_bytes", input_bytes},
                     {"planned_workers", workers_json(plan.workers)},
                     {"planned_peak_bytes", plan.peak()},
                     {"allocator", allocator},
                     {"peak_bytes", peak},
                     {"context_overhead_bytes", overhead},
                     {"device_needed_bytes", needed},
                     {"host_staging_peak_bytes", staging}};
    if (!modelled.empty()) j["model_peak_bytes"] = modelled;
    if (!opts.memory.empty()) j["fits"] = fits;
    return print_json(j);
  }
  std::printf("%s on %s, chunk %s: %llu block%s on %zu worker%s, on a CUDA device (planned, nothing computed)\n",
              opts.graph.c_str(), to_string(shape).c_str(), to_string(plan.chunk).c_str(),
              static_cast<unsigned long long>(plan.blocks), plan.blocks == 1 ? "" : "s", o.workers,
              o.workers == 1 ? "" : "s");
  std::printf("  input           %12s\n", human_bytes(input_bytes).c_str());
  std::printf("  device peak     %12s  %5.2f x input  (%llu bytes requested, per worker)\n",
              human_bytes(plan.peak()).c_str(), double(plan.peak()) / double(input_bytes),
              static_cast<unsigned long long>(plan.peak()));
  if (!modelled.empty())
    std::printf("  %-15s %12s  reserved by the allocator model, per worker\n", allocator.c_str(),
                human_bytes(peak).c_str());
  if (overhead)
    std::printf("  with context    %12s  (+%s of CUDA context)\n", human_bytes(needed).c_str(),
                human_bytes(overhead).c_str());
  std::printf("  host staging    %12s  pinned, per worker (not in the device budget)\n", human_bytes(staging).c_str());
  std::printf("  events          %12llu  (worker 0)\n", static_cast<unsigned long long>(plan.workers[0].events));
  if (!opts.memory.empty())
    std::printf("  budget          %12s  %s\n", human_bytes(o.budget).c_str(), fits ? "fits" : "EXCEEDED");
}

inline void add_plan_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "plan", "predict each worker's peak memory for an operator or graph, without computing or touching the cube");
  static graph_options opts;
  static prediction_options predict;
  static std::string trace, exec = "dwsr", tasks;
  opts.add_to(*cmd);
  predict.add_to(*cmd);
  cmd->add_option("--exec", exec,
                  "dwsr: each worker runs one block at a time on T threads; dask: each worker runs up to T "
                  "single-threaded tasks at once and keeps results until their dependents ran")
      ->check(CLI::IsMember({"dwsr", "dask"}))
      ->capture_default_str();
  cmd->add_option("--tasks", tasks,
                  "with --exec dask: fused (one task per block, the default) or unfused (one task per node and block)")
      ->check(CLI::IsMember({"fused", "unfused"}));
  cmd->add_option("--trace", trace, "write worker 0's planned events as a dwsr trace (CSV)");
  static std::string overhead;
  add_context_overhead(*cmd, overhead);
  cmd->callback([] {
    const auto g = opts.build();
    const auto shape = predict.cube();
    const auto o = opts.options();
    const auto& allocator = predict.allocator;
    if (opts.on_cuda()) {
      if (exec != "dwsr" || !tasks.empty())
        throw invalid_input("--exec dask plans host workers; leave --exec and --tasks out with --device cuda");
      return plan_on_device(g, shape, o, opts, allocator, overhead.empty() ? 0 : parse_bytes(overhead), trace);
    }
    if (!overhead.empty()) throw invalid_input("--context-overhead is for --device cuda");
    chunk_evaluation e;
    const auto* profile = predict.time_profile();
    if (!tasks.empty() && exec != "dask")
      throw invalid_input("--tasks " + tasks + " needs --exec dask (dwsr's own execution does not cut tasks)");
    if (!trace.empty() && exec == "dask")
      throw invalid_input("--trace lists the events of dwsr's own execution; leave it out with --exec dask");
    std::optional<dask_split> dask;
    if (exec == "dask") dask = tasks == "unfused" ? dask_split::unfused : dask_split::fused;
    auto j = report::plan_report(g, {opts.graph, shape, o, allocator, profile, predict.cores, dask}, &e);
    if (!trace.empty()) {
      // The trace lists every event of worker 0, held in memory until written.
      constexpr std::uint64_t trace_limit = 1u << 22;
      if (e.plan.workers.at(0).events > trace_limit)
        throw invalid_input("--trace: worker 0 would emit " + std::to_string(e.plan.workers.at(0).events) +
                            " events, more than the " + std::to_string(trace_limit) +
                            " a trace holds; use a larger chunk, more workers or a smaller cube");
      remove_stale_partials_of(trace);
      recorder rec;
      worker_events(chunked_schedule(g, shape, o), 0, rec);
      sim::write_trace_csv(trace, rec.events());
    }
    if (opts.json) return print_json(j);
    const auto input_bytes = shape.voxels() * sizeof(float);
    const bool fits = e.peak <= o.budget;
    const double seconds = j["seconds"];
    std::printf("%s on %s, chunk %s: %llu block%s on %zu worker%s x %zu thread%s (planned, nothing computed)\n",
                opts.graph.c_str(), to_string(shape).c_str(), to_string(e.plan.chunk).c_str(),
                static_cast<unsigned long long>(e.plan.blocks), e.plan.blocks == 1 ? "" : "s", o.workers,
                o.workers == 1 ? "" : "s", o.threads, o.threads == 1 ? "" : "s");
    std::printf("  input           %12s\n", human_bytes(input_bytes).c_str());
    std::printf("  halo            %llux%llux%llu  (+%.1f%% voxels read)\n",
                static_cast<unsigned long long>(e.plan.halo[0]), static_cast<unsigned long long>(e.plan.halo[1]),
                static_cast<unsigned long long>(e.plan.halo[2]), 100 * e.plan.halo_overhead);
    if (dask) return print_dask(j, input_bytes);
    std::printf("  peak per worker %12s  %5.2f x input  (%llu bytes%s)%s\n", human_bytes(e.peak).c_str(),
                double(e.peak) / double(input_bytes), static_cast<unsigned long long>(e.peak),
                allocator == "exact" ? "" : (", " + allocator + " reserved").c_str(),
                j["peak_is_bound"].get<bool>() ? " (an upper bound: data-dependent sizes)" : "");
    std::printf("  events          %12llu  (worker 0)\n", static_cast<unsigned long long>(e.plan.workers[0].events));
    if (!opts.memory.empty())
      std::printf("  budget          %12s  %s\n", human_bytes(o.budget).c_str(), fits ? "fits" : "EXCEEDED");
    if (e.time)
      std::printf("  time            %10.4f s  predicted from the time profile (%zu idle worker%s)\n", e.time->makespan,
                  e.time->idle_workers, e.time->idle_workers == 1 ? "" : "s");
    std::printf("  planned in      %10.6f s\n", seconds);
  });
}

inline void add_advise_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "advise",
      "find the largest chunk whose predicted per-worker peak fits a memory budget, and compare with Dask's default");
  static graph_options opts;
  static prediction_options predict;
  opts.add_to(*cmd, false);
  predict.add_to(*cmd);
  cmd->get_option("--memory")->required()->description("memory budget per worker, e.g. 2GiB");
  static std::string objective;
  cmd->add_option("--objective", objective,
                  "time: the chunking with the smallest predicted makespan that fits (needs a time profile, "
                  "dwsr calibrate); largest: the largest chunk that fits (default: time when a profile exists)")
      ->check(CLI::IsMember({"time", "largest"}));
  static std::string overhead;
  add_context_overhead(*cmd, overhead);
  cmd->callback([] {
    const auto g = opts.build();
    const auto shape = predict.cube();
    const auto& graph_text = opts.graph;
    const auto& allocator = predict.allocator;
    const auto workers = opts.workers, threads = opts.threads;
    const bool json = opts.json;
    const auto* profile = predict.time_profile();
    if (opts.on_cuda() && objective == "time")
      throw invalid_input(
          "--objective time needs a time profile of the host; with --device cuda the advice is the "
          "largest chunk that fits");
    if (!overhead.empty() && !opts.on_cuda()) throw invalid_input("--context-overhead is for --device cuda");
    if (objective == "time" && !profile && !opts.on_cuda())
      throw io_error("--objective time needs a time profile: none at " +
                     quote(sim::default_time_profile_path().string(), 400) +
                     "; run `dwsr calibrate` (or pass --profile)");
    const auto goal =
        objective == "largest" || !profile || opts.on_cuda() ? advice_objective::largest : advice_objective::time;
    const advice_options o{.budget = opts.budget(),
                           .workers = workers,
                           .threads = threads,
                           .allocator = allocator,
                           .objective = goal,
                           .profile = opts.on_cuda() ? nullptr : profile,
                           .cores = predict.cores,
                           .overhead = overhead.empty() ? 0 : parse_bytes(overhead)};
    const auto a = opts.on_cuda() ? advise<cuda_meta_context>(g, shape, o) : advise(g, shape, o);
    const auto input_bytes = shape.voxels() * sizeof(float);
    if (json) return print_json(report::advice_report(a, graph_text, shape, o));
    std::printf("%s on %s (%s), %s per worker%s, %zu worker%s x %zu thread%s\n", graph_text.c_str(),
                to_string(shape).c_str(), human_bytes(input_bytes).c_str(), human_bytes(o.budget).c_str(),
                opts.on_cuda() ? " of device memory" : "", workers, workers == 1 ? "" : "s", threads,
                threads == 1 ? "" : "s");
    auto timed = [](const chunk_evaluation& e) {
      if (!e.time) return std::string();
      char buf[96];
      if (e.time->idle_workers)
        std::snprintf(buf, sizeof buf, ", %.3f s predicted, %zu worker(s) idle", e.time->makespan,
                      e.time->idle_workers);
      else
        std::snprintf(buf, sizeof buf, ", %.3f s predicted", e.time->makespan);
      return std::string(buf);
    };
    std::printf("  advised chunk   %s: %llu blocks, peak %s per worker, +%.1f%% halo%s (%s)\n",
                to_string(a.chosen.plan.chunk).c_str(), static_cast<unsigned long long>(a.chosen.plan.blocks),
                human_bytes(a.chosen.peak).c_str(), 100 * a.chosen.plan.halo_overhead, timed(a.chosen).c_str(),
                goal == advice_objective::time ? "the fastest that fits" : "the largest that fits");
    if (goal == advice_objective::time)
      std::printf("  largest chunk   %s: %llu blocks, peak %s per worker%s\n", to_string(a.largest.plan.chunk).c_str(),
                  static_cast<unsigned long long>(a.largest.plan.blocks), human_bytes(a.largest.peak).c_str(),
                  timed(a.largest).c_str());
    else if (!profile && objective.empty() && !opts.on_cuda())
      std::printf("  (no time profile at %s: run `dwsr calibrate` to advise for time)\n",
                  sim::default_time_profile_path().c_str());
    for (const auto& n : a.next_larger)
      std::printf("  next larger     %s would need %s\n", to_string(n.plan.chunk).c_str(), human_bytes(n.peak).c_str());
    std::printf("  Dask default    %s (128 MiB of input%s): %llu blocks, peak %s per worker: %s%s\n",
                to_string(a.dask_chunk).c_str(), a.dask.plan.chunk == a.dask_chunk ? "" : ", time kept whole",
                static_cast<unsigned long long>(a.dask.plan.blocks), human_bytes(a.dask.peak).c_str(),
                a.dask.peak <= o.budget ? "fits" : "EXCEEDS the budget", timed(a.dask).c_str());
    if (a.peak_is_bound)  // data-dependent operators plan bounds: the advice is safe, not exact
      std::printf("  (sizes that depend on the data are planned at their bounds: the peaks are upper bounds)\n");
    std::printf("  searched %llu chunkings in %.3f s\n", static_cast<unsigned long long>(a.candidates), a.seconds);
  });
}

}  // namespace dwsr::cli
