#pragma once
/// \file PeakPredict's real mode: test jobs of the pool executed for real
/// (env/real_check.hpp: the dwsr tool in a fresh process, its peak RSS
/// against the simulated host_pages peaks), and the reward of a policy's
/// prediction against the simulated peak beside its reward against the
/// measured one. This ties the environment's rewards to a measurement.
///
/// The pool's label must be peak_requested, the exact plan's largest worker
/// peak: what the simulator computes for the run (run_peak_real checks it,
/// an internal error otherwise). The kernel measures the whole process, all
/// workers in whole pages, so a job's real peak is its label times the
/// measured ratio (RSS increase / simulated pages): a simulator 3 % low
/// moves the reward as a true peak 3 % higher would.
///
/// Eligible jobs: in the test part, with a known graph (env/peak_jobs.hpp),
/// in dwsr's own execution (a Dask-style row's label is the Dask model's
/// schedule, which `dwsr run` does not follow), a cube of at most
/// max_cube_bytes of float32, at most `cores` workers (the simulated pages
/// add every worker's peak, as if all peaked at once; workers time-sliced
/// on fewer cores rarely do), a peak that does not depend on the data (the
/// synthetic cube's data is not the pool's), and simulated pages of at least
/// real_min_pages_bytes, well above the probe's resolution (the kernel syncs
/// RSS counters in batches of pages; a few MiB of RSS would say nothing).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "dwsr/env/peak_jobs.hpp"
#include "dwsr/env/peak_predict.hpp"
#include "dwsr/env/real_check.hpp"
#include "dwsr/error.hpp"
#include "dwsr/graph/graph_json.hpp"
#include "dwsr/ops/registry.hpp"

namespace dwsr::env {

/// The least simulated host_pages peak (all workers) of a job run for real: 32 MiB.
inline constexpr std::uint64_t real_min_pages_bytes = std::uint64_t{32} << 20;

namespace detail {
/// Feature `name` of job `j` of `p`. Throws invalid_input for a pool without it.
inline float job_feature(const peak_jobs& p, std::uint64_t j, const char* name) {
  return p.x[j * p.dim() + index_named(p.features, name, "feature", "the pool")];
}
}  // namespace detail

/// Job `j` of pool `p` as a configuration to run: its graph over
/// `operators`, its cube (synthetic, seeded with `cube_seed`), chunk, W and
/// T, read from its features. Throws invalid_input for a job without a graph
/// or a pool without the execution features.
inline real_job peak_real_job(const registry& operators, const peak_jobs& p, std::uint64_t j, std::uint64_t cube_seed) {
  if (j >= p.size())
    throw invalid_input("job " + std::to_string(j) + " of a pool of " + std::to_string(p.size()) + " jobs");
  if (p.graph.size() != p.size() || p.graph[j] < 0)
    throw invalid_input("job " + std::to_string(j) +
                        " has no graph (a dataset directory without graphs.npy); real mode needs one");
  auto value = [&](const char* name) { return std::uint64_t(detail::job_feature(p, j, name)); };
  return {
      graph_from_json(p.graphs[std::size_t(p.graph[j])], operators, "the pool's graph " + std::to_string(p.graph[j])),
      {value("inlines"), value("crosslines"), value("samples")},
      {.chunk = {value("chunk_inlines"), value("chunk_crosslines"), value("chunk_samples")},
       .workers = std::size_t(value("workers")),
       .threads = std::size_t(value("threads"))},
      cube_seed};
}

/// Which jobs real mode runs (see the file comment).
struct peak_real_limits {
  std::uint64_t max_cube_bytes = real_max_cube_bytes;                     ///< float32 bytes
  std::size_t cores = std::max(1u, std::thread::hardware_concurrency());  ///< most workers
};

/// Whether job `j` of `p` can be run for real (see the file comment).
inline bool peak_real_eligible(const registry& operators, const peak_jobs& p, std::uint64_t j,
                               const peak_real_limits& l = {}) {
  if (!p.test[j] || p.graph.size() != p.size() || p.graph[j] < 0) return false;
  const auto at = [&](const char* name) { return detail::job_feature(p, j, name); };
  if (at("exec_dask") != 0 || double(at("input_bytes")) > double(l.max_cube_bytes) ||
      double(at("workers")) > double(l.cores))
    return false;
  const auto job = peak_real_job(operators, p, j, 0);
  const chunked_schedule s(job.g, job.cube, job.options);
  if (plan_is_bound(s)) return false;
  std::uint64_t pages = 0;
  for (auto w : model_peaks(s, plan_chunked(s), std::string(sim::host_pages_model::name))) pages += w;
  return pages >= real_min_pages_bytes;
}

/// The first `n` eligible test jobs of the pool, by index (fewer when the
/// pool has fewer). Throws invalid_input for a label other than
/// peak_requested.
inline std::vector<std::uint64_t> peak_real_jobs(const registry& operators, const peak_jobs& p, std::uint64_t n,
                                                 const peak_real_limits& l = {}) {
  if (n > 0 && p.label != "peak_requested")
    throw invalid_input("real mode of a pool labelled " + quote(p.label) +
                        "; expected peak_requested (the peak a real run's events give)");
  std::vector<std::uint64_t> out;
  for (std::uint64_t j = 0; j < p.size() && out.size() < n; ++j)
    if (peak_real_eligible(operators, p, j, l)) out.push_back(j);
  return out;
}

/// One row of real.csv: a job, the policy's prediction and both rewards.
struct peak_real_row {
  std::uint64_t job = 0;
  std::string operators;
  shape3 cube{}, chunk{};
  std::size_t workers = 1, threads = 1;
  double true_peak = 0;  ///< bytes: the pool's label
  double predicted = 0;  ///< bytes: the policy's prediction
  real_measurement m;
  double ratio() const noexcept { return m.ratio(); }
  /// The label scaled by what the kernel measured (see the file comment).
  double real_peak() const noexcept { return true_peak * ratio(); }
  /// PeakPredict's reward of the prediction against the label, and against the real peak.
  double simulated_reward(double oom_reward) const noexcept { return peak_reward(predicted, true_peak, oom_reward); }
  double real_reward(double oom_reward) const noexcept { return peak_reward(predicted, real_peak(), oom_reward); }
};

/// Runs job `j` of `p` for real with the tool at `tool` in `scratch` (an
/// existing directory), for a policy that predicted `predicted` bytes.
/// Throws an internal error when the pool's label is not the simulator's peak.
inline peak_real_row run_peak_real(const registry& operators, const peak_jobs& p, std::uint64_t j, double predicted,
                                   const std::filesystem::path& tool, const std::filesystem::path& scratch) {
  auto job = peak_real_job(operators, p, j, j);
  peak_real_row row{j,         {},        job.cube, job.options.chunk, job.options.workers, job.options.threads,
                    p.peak[j], predicted, {}};
  for (const auto& n : job.g.nodes()) row.operators += (row.operators.empty() ? "" : "+") + n.spec.op;
  row.m = measure_real(tool, job, scratch);
  if (double(row.m.simulated_peak) != p.peak[j])
    throw error("internal error: PeakPredict's peak of job " + std::to_string(j) + " is " + std::to_string(p.peak[j]) +
                " bytes, the simulator's " + std::to_string(row.m.simulated_peak) +
                "; expected them equal (the rewards would rest on other numbers than real mode validates)");
  return row;
}

/// How the rewards of real runs agree with the simulated ones.
struct peak_real_rewards {
  double mean_simulated = 0, mean_real = 0;
  double mean_abs_difference = 0;     ///< mean |real reward - simulated reward|
  std::size_t oom_disagreements = 0;  ///< runs where one says out of memory and the other not
};

inline peak_real_rewards peak_real_compare(const std::vector<peak_real_row>& rows, double oom_reward) {
  peak_real_rewards a;
  for (const auto& r : rows) {
    const double sim = r.simulated_reward(oom_reward), real = r.real_reward(oom_reward);
    a.mean_simulated += sim;
    a.mean_real += real;
    a.mean_abs_difference += std::fabs(real - sim);
    a.oom_disagreements += (r.predicted < r.true_peak) != (r.predicted < r.real_peak());
  }
  if (!rows.empty())
    for (double* v : {&a.mean_simulated, &a.mean_real, &a.mean_abs_difference}) *v /= double(rows.size());
  return a;
}

/// real.csv: `job,operators,cube,chunk,workers,threads,true_peak_bytes,
/// predicted_bytes,simulated_pages_bytes,rss_increase_bytes,ratio,
/// simulated_reward,real_reward,seconds`, one row per run.
inline std::string peak_real_csv(const std::vector<peak_real_row>& rows, double oom_reward) {
  std::string out =
      "job,operators,cube,chunk,workers,threads,true_peak_bytes,predicted_bytes,simulated_pages_bytes,"
      "rss_increase_bytes,ratio,simulated_reward,real_reward,seconds\n";
  for (const auto& r : rows) {
    char cells[256];
    std::snprintf(cells, sizeof cells, "%.0f,%.0f,%llu,%llu,%.6f,%.6f,%.6f,%.3f", r.true_peak, r.predicted,
                  static_cast<unsigned long long>(r.m.simulated_pages),
                  static_cast<unsigned long long>(r.m.rss_increase), r.ratio(), r.simulated_reward(oom_reward),
                  r.real_reward(oom_reward), r.m.seconds);
    out += std::to_string(r.job) + ',' + r.operators + ',' + dwsr::to_string(r.cube) + ',' + dwsr::to_string(r.chunk) +
           ',' + std::to_string(r.workers) + ',' + std::to_string(r.threads) + ',' + cells + '\n';
  }
  return out;
}

}  // namespace dwsr::env
