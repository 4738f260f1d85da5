#pragma once
/// \file An environment's `real` mode: the configuration a policy chose (a
/// graph, a cube, a chunk, W workers x T threads) executed for real by the
/// `dwsr` tool in a fresh process, and measured by the kernel: that
/// process's peak resident memory (its VmHWM, which the run reads from
/// /proc/self/status when it ends and prints as vm_hwm_bytes), above the same
/// command's on a one-trace cube (code, libraries, threads, FFTW's plans).
/// Not wait4's ru_maxrss (memory/child_peak.hpp): the kernel floors that at
/// the parent's own peak when the child execs, and a trainer holding a pool
/// of 20,000 jobs is larger than a one-trace run, which would hide the
/// baseline (measured: RSS increases 11-31 % low).
/// That increase is compared with what the simulator said the process holds:
/// every worker's live buffers in whole pages (the host_pages model), summed
/// over the workers, which run blocks of one shape at the same time
/// (graph/measure.hpp's planned_pages_sum).
///
/// The environments' rewards rest on those simulated peaks; this is how they
/// are validated. Each check runs the tool twice, so it costs the run itself
/// plus a second or so: meant for a handful of jobs, not for training.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dwsr/core/quote.hpp"
#include "dwsr/error.hpp"
#include "dwsr/graph/chunked.hpp"
#include "dwsr/graph/graph_json.hpp"
#include "dwsr/graph/model_plan.hpp"
#include "dwsr/memory/child_peak.hpp"
#include "dwsr/sim/host_pages.hpp"

namespace dwsr::env {

/// Real mode's default cube limit: 64 MiB of float32, so that a run takes seconds.
inline constexpr std::uint64_t real_max_cube_bytes = std::uint64_t{64} << 20;

/// One configuration to execute for real.
struct real_job {
  graph g;
  shape3 cube{};
  chunked_options options{};    ///< chunk, W, T (the budget is not enforced: the run measures)
  std::uint64_t cube_seed = 0;  ///< the synthetic cube synthetic:IxXxT:SEED
};

/// What the simulator said of a real_job and what the kernel measured.
struct real_measurement {
  std::uint64_t simulated_peak = 0;   ///< bytes: the largest worker's peak, exact requested bytes
  std::uint64_t simulated_pages = 0;  ///< bytes: the workers' host_pages peaks, summed
  std::uint64_t rss_increase = 0;     ///< bytes: the run's peak RSS above the one-trace run's
  std::uint64_t run_rss = 0;          ///< bytes: the run's peak RSS (VmHWM)
  std::uint64_t idle_rss = 0;         ///< bytes: the one-trace run's peak RSS (VmHWM)
  std::uint64_t event_peak = 0;       ///< bytes: the largest worker's peak of the run's own events (its --json)
  /// bytes: the run's VmHWM when its first blocks (one per worker) had
  /// finished, above the one-trace run's peak: what an online estimator sees early
  std::uint64_t first_blocks_rss_increase = 0;
  double seconds = 0;           ///< wall time of the run (not the one-trace run)
  bool data_dependent = false;  ///< the simulated peaks are bounds (event::bound events)

  /// rss_increase / simulated_pages: 1 when the simulator is right.
  double ratio() const noexcept { return simulated_pages ? double(rss_increase) / double(simulated_pages) : 0.0; }
};

/// Executes `job` with the `dwsr` tool at `tool` (a path) in a fresh process
/// and compares (see the file comment). `scratch` is an existing directory
/// the runs write their outputs into (removed before returning). Throws dwsr::error
/// naming the command when a run fails.
inline real_measurement measure_real(const std::filesystem::path& tool, const real_job& job,
                                     const std::filesystem::path& scratch) {
  const chunked_schedule s(job.g, job.cube, job.options);
  real_measurement m;
  const auto plan = plan_chunked(s);
  for (const auto& w : plan.workers) m.simulated_peak = std::max(m.simulated_peak, w.peak);
  for (auto p : model_peaks(s, plan, std::string(sim::host_pages_model::name))) m.simulated_pages += p;
  m.data_dependent = plan_is_bound(s);

  const auto graph_file = scratch / "graph.json";
  {
    std::ofstream out(graph_file);
    out << graph_to_json(job.g).dump();
    if (!out) throw io_error("cannot write " + quote(graph_file.string(), 400));
  }
  const auto seed = std::to_string(job.cube_seed);
  auto command = [&](shape3 cube, const char* out) {
    return std::vector<std::string>{tool.string(),
                                    "run",
                                    graph_file.string(),
                                    "--input",
                                    "synthetic:" + dwsr::to_string(cube) + ":" + seed,
                                    "--output",
                                    (scratch / out).string(),
                                    "--chunk",
                                    dwsr::to_string(job.options.chunk),
                                    "--workers",
                                    std::to_string(job.options.workers),
                                    "--threads",
                                    std::to_string(job.options.threads),
                                    "--json"};
  };
  // A byte count of a run's --json document, by its dotted name.
  auto bytes_at = [](const nlohmann::json& doc, const std::string& name) {
    std::string pointer = "/" + name;
    std::replace(pointer.begin(), pointer.end(), '.', '/');
    const nlohmann::json::json_pointer at(pointer);
    if (doc.is_discarded() || !doc.contains(at) || !doc[at].is_number_unsigned())
      throw error("the real run's --json output has no " + name);
    return doc[at].get<std::uint64_t>();
  };
  const char* const counts[] = {"measured_peak_bytes", "vm_hwm_bytes", "first_blocks.vm_hwm_bytes"};
  // Runs a command and returns its --json document, every count of it checked.
  auto run = [&](const std::vector<std::string>& argv) {
    const auto e = run_child(argv, scratch / "stdout.json", scratch / "stderr.txt");
    if (!e.ok()) {
      std::ifstream err(scratch / "stderr.txt");
      std::string line;
      std::getline(err, line);
      std::string words;
      for (const auto& w : argv) words += (words.empty() ? "" : " ") + w;
      throw error("the real run " + quote(words, 400) + " failed (exit " + std::to_string(e.status) + ", signal " +
                  std::to_string(e.signal) + "): " + line);
    }
    std::ifstream in(scratch / "stdout.json");
    auto doc = nlohmann::json::parse(in, nullptr, false);
    for (const char* name : counts) bytes_at(doc, name);
    return doc;
  };
  const auto idle = run(command({1, 1, job.cube.samples}, "idle"));
  const auto t0 = std::chrono::steady_clock::now();
  const auto real = run(command(job.cube, "run"));
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  m.idle_rss = bytes_at(idle, "vm_hwm_bytes");
  m.run_rss = bytes_at(real, "vm_hwm_bytes");
  m.event_peak = bytes_at(real, "measured_peak_bytes");
  auto above_idle = [&](std::uint64_t rss) { return rss > m.idle_rss ? rss - m.idle_rss : 0; };
  m.rss_increase = above_idle(m.run_rss);
  m.first_blocks_rss_increase = above_idle(bytes_at(real, "first_blocks.vm_hwm_bytes"));
  std::error_code ignored;
  for (const char* p : {"idle", "run", "graph.json", "stderr.txt", "stdout.json"})
    std::filesystem::remove_all(scratch / p, ignored);
  return m;
}

/// The agreement of real runs: mean and worst |ratio - 1| of RSS increase
/// over simulated pages.
struct real_agreement {
  double mean = 0, worst = 0;
};

/// The agreement of `rows`, each with a ratio() (real_measurement's).
template <class Rows>
real_agreement agree(const Rows& rows) {
  real_agreement a;
  for (const auto& r : rows) {
    const double e = std::fabs(r.ratio() - 1);
    a.mean += e;
    a.worst = std::max(a.worst, e);
  }
  if (!std::empty(rows)) a.mean /= double(std::size(rows));
  return a;
}

}  // namespace dwsr::env
