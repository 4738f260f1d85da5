#pragma once
/// \file ChunkSchedule's real mode: the chunk a policy picks first on a test
/// task executed for real (env/real_check.hpp: the dwsr tool in a fresh
/// process, its peak RSS against the simulated host_pages peaks), which ties
/// the environment's rewards to a measurement. The advisor's chunk runs
/// beside it, so that the choice is judged against the advisor on real runs:
/// out of memory (a worker's measured peak above the task's budget), the
/// run's seconds, and the memory left idle (1 - the process's RSS increase
/// over W budgets).
///
/// Only tasks whose simulated peak does not depend on the hidden density
/// are run: no event_picks node and peak(0) == peak(1) for every candidate
/// (the synthetic cube's picks would be some density, not the episode's),
/// and whose cube is small (at most max_cube_bytes of float32, 64 MiB by
/// default), so that a run takes seconds. For those, the environment's
/// per-block peak of the candidate (the worst block class at any density)
/// must be the simulator's largest worker peak for the whole cube in that
/// chunk, W workers of T threads: check_chunk_real throws an internal error
/// otherwise, since the rewards would then rest on other numbers than the
/// ones real mode validates.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "dwsr/env/chunk_tasks.hpp"
#include "dwsr/env/real_check.hpp"
#include "dwsr/error.hpp"
#include "dwsr/graph/graph.hpp"

namespace dwsr::env {

/// Whether task `t` can be run for real (see the file comment).
inline bool chunk_real_eligible(const chunk_task& t, std::uint64_t max_cube_bytes = real_max_cube_bytes) {
  if (!t.test || t.picks || t.cube.voxels() * sizeof(float) > max_cube_bytes) return false;
  for (const auto& c : t.candidates)
    if (c.peak0 != c.peak1) return false;
  return true;
}

/// The first `n` eligible test tasks of the pool, by index (fewer when the
/// pool has fewer).
inline std::vector<std::uint64_t> chunk_real_tasks(const chunk_tasks& tasks, std::uint64_t n,
                                                   std::uint64_t max_cube_bytes = real_max_cube_bytes) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t i = 0; i < tasks.size() && out.size() < n; ++i)
    if (chunk_real_eligible(tasks.tasks[i], max_cube_bytes)) out.push_back(i);
  return out;
}

/// The configuration of task `t` with candidate `action`: its graph over
/// `operators`, its cube (synthetic, seeded with `cube_seed`), the
/// candidate's chunk, W workers and T threads.
inline real_job chunk_real_job(const registry& operators, const chunk_task& t, std::size_t action,
                               std::uint64_t cube_seed) {
  if (action >= chunk_candidates)
    throw invalid_input("candidate " + std::to_string(action) + "; expected 0 to " +
                        std::to_string(chunk_candidates - 1));
  return {graph::from_specs(operators, t.specs),
          t.cube,
          {.chunk = t.candidates[action].chunk, .workers = t.workers, .threads = t.threads},
          cube_seed};
}

/// One row of real.csv.
struct chunk_real_row {
  std::uint64_t task = 0;
  std::string chooser;  ///< who picked the chunk: the policy's name, or "advisor"
  std::size_t action = 0;
  shape3 chunk{};
  std::size_t workers = 1, threads = 1;
  std::uint64_t budget = 0;  ///< bytes per worker
  real_measurement m;
  double ratio() const noexcept { return m.ratio(); }
  /// A worker's measured peak above its budget: the run would have failed.
  bool out_of_memory() const noexcept { return m.event_peak > budget; }
  /// The share of the W workers' budgets the process did not hold at its peak (0 when out of memory).
  double idle_share() const noexcept {
    const double all = double(budget) * double(workers);
    return out_of_memory() || all <= 0 ? 0.0 : std::max(0.0, 1 - double(m.rss_increase) / all);
  }
};

/// Throws dwsr::error (an internal error) when the environment's per-block
/// peak of candidate `action` of `t` is not the simulator's `m.simulated_peak`.
inline void check_chunk_real(const chunk_task& t, std::size_t action, std::uint64_t task, const real_measurement& m) {
  const auto& c = t.candidates[action];
  if (c.peak(0) != double(m.simulated_peak) || c.peak(1) != double(m.simulated_peak))
    throw error("internal error: ChunkSchedule's peak of task " + std::to_string(task) + " candidate " +
                std::to_string(action) + " is " + std::to_string(c.peak(0)) + " bytes at d = 0 and " +
                std::to_string(c.peak(1)) + " at d = 1, the simulator's " + std::to_string(m.simulated_peak) +
                "; expected them equal (the rewards would rest on other numbers than real mode validates)");
}

/// Runs candidate `action` of task `task`, picked by `chooser`, for real
/// with the tool at `tool` in `scratch` (an existing directory) and checks
/// it (check_chunk_real).
inline chunk_real_row run_chunk_real(const registry& operators, const chunk_tasks& tasks, std::uint64_t task,
                                     std::size_t action, const std::string& chooser, const std::filesystem::path& tool,
                                     const std::filesystem::path& scratch) {
  const auto& t = tasks.tasks.at(task);
  const auto job = chunk_real_job(operators, t, action, task);
  chunk_real_row row{task,      chooser,   action,   job.options.chunk,
                     t.workers, t.threads, t.budget, measure_real(tool, job, scratch)};
  check_chunk_real(t, action, task, row.m);
  return row;
}

/// real.csv: `task,chooser,chunk,workers,threads,budget_bytes,
/// simulated_peak_bytes,simulated_pages_bytes,event_peak_bytes,
/// rss_increase_bytes,ratio,out_of_memory,idle_share,seconds`, one row per run.
inline std::string chunk_real_csv(const std::vector<chunk_real_row>& rows) {
  std::string out =
      "task,chooser,chunk,workers,threads,budget_bytes,simulated_peak_bytes,simulated_pages_bytes,event_peak_bytes,"
      "rss_increase_bytes,ratio,out_of_memory,idle_share,seconds\n";
  for (const auto& r : rows) {
    char cells[128];
    std::snprintf(cells, sizeof cells, "%.6f,%d,%.6f,%.3f", r.ratio(), int(r.out_of_memory()), r.idle_share(),
                  r.m.seconds);
    out += std::to_string(r.task) + ',' + r.chooser + ',' + dwsr::to_string(r.chunk) + ',' + std::to_string(r.workers) +
           ',' + std::to_string(r.threads) + ',' + std::to_string(r.budget) + ',' + std::to_string(r.m.simulated_peak) +
           ',' + std::to_string(r.m.simulated_pages) + ',' + std::to_string(r.m.event_peak) + ',' +
           std::to_string(r.m.rss_increase) + ',' + cells + '\n';
  }
  return out;
}

/// How one chooser's real runs went: what chunk choosing is judged on.
struct chunk_real_choices {
  std::size_t runs = 0, out_of_memory = 0;
  double seconds = 0;     ///< summed over the runs
  double idle_share = 0;  ///< mean over the runs
};

/// The runs of `rows` picked by `chooser`, summed up.
inline chunk_real_choices chunk_real_summary(const std::vector<chunk_real_row>& rows, const std::string& chooser) {
  chunk_real_choices c;
  for (const auto& r : rows) {
    if (r.chooser != chooser) continue;
    ++c.runs;
    c.out_of_memory += r.out_of_memory();
    c.seconds += r.m.seconds;
    c.idle_share += r.idle_share();
  }
  if (c.runs) c.idle_share /= double(c.runs);
  return c;
}

}  // namespace dwsr::env
