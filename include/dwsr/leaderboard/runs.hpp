#pragma once
/// \file The referee: every job of a suite executed for real by the `dwsr`
/// tool in a fresh process (env/real_check.hpp), and what was measured, with
/// the probe that measured it:
/// - `rss_increase_bytes`: the kernel's peak resident set of the process
///   (its high-water mark VmHWM, which the run reads when it ends), above the
///   same command's on a one-trace cube. This is what estimates are scored on;
/// - `event_peak_bytes`: dwsr's own accounting, the largest worker's peak of
///   the run's allocation events (`dwsr run --json`);
/// - `seconds`: the run's wall time;
/// - `first_blocks_rss_bytes`: the process's VmHWM when its first blocks (one
///   per worker) had finished, above the same baseline: what an online
///   estimator sees of the run early.
///
/// runs.csv holds one row per job, the job's configuration and parts beside
/// the measurements, so that `dwsr leaderboard score` can score predictions
/// from it alone. read_runs reads it back (and runs.csv files written before
/// the last column existed) and refuses what it did not write.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "dwsr/core/quote.hpp"
#include "dwsr/env/real_check.hpp"
#include "dwsr/error.hpp"
#include "dwsr/leaderboard/detail/csv_fields.hpp"
#include "dwsr/leaderboard/suite.hpp"

namespace dwsr::leaderboard {

/// One job's real execution.
struct run_record {
  std::uint64_t job = 0;
  std::string operators;
  shape3 cube{}, chunk{};
  std::size_t workers = 1, threads = 1;
  std::array<bool, 3> test{};      ///< per split (all_splits' order)
  std::uint64_t rss_increase = 0;  ///< bytes, probe: VmHWM of the run minus the one-trace run's
  std::uint64_t run_rss = 0;       ///< bytes, probe: VmHWM of the run
  std::uint64_t idle_rss = 0;      ///< bytes, probe: VmHWM of the one-trace run
  std::uint64_t event_peak = 0;    ///< bytes, dwsr's own events, the largest worker
  double seconds = 0;              ///< wall time of the run
  /// bytes, probe: VmHWM when the first blocks had finished minus the
  /// one-trace run's; 0: not measured
  std::uint64_t first_blocks_rss_increase = 0;
};

/// Runs every job of `jobs` with the tool at `tool` (see the file comment),
/// writing into the existing directory `scratch`; `progress(done, total)`
/// after each. Throws what measure_real throws, naming the failing command.
inline std::vector<run_record> run_jobs(const std::vector<suite_job>& jobs, const std::filesystem::path& tool,
                                        const std::filesystem::path& scratch,
                                        const std::function<void(std::size_t, std::size_t)>& progress = {}) {
  std::vector<run_record> out;
  for (const auto& j : jobs) {
    env::real_job job{*j.g, j.cube, {.chunk = j.chunk, .workers = j.workers, .threads = j.threads}, j.cube_seed};
    const auto m = env::measure_real(tool, job, scratch);
    out.push_back({j.id, j.operators, j.cube, j.chunk, j.workers, j.threads, j.test, m.rss_increase, m.run_rss,
                   m.idle_rss, m.event_peak, m.seconds, m.first_blocks_rss_increase});
    if (progress) progress(out.size(), jobs.size());
  }
  return out;
}

/// runs.csv's header.
inline constexpr std::string_view runs_header =
    "job,operators,cube,chunk,workers,threads,test_random,test_family,test_extrapolation,rss_increase_bytes,"
    "run_rss_bytes,idle_rss_bytes,event_peak_bytes,seconds,first_blocks_rss_bytes";

/// runs.csv's header before the first blocks were measured: still read.
inline constexpr std::string_view runs_header_without_first_blocks = runs_header.substr(0, runs_header.rfind(','));

/// runs.csv's text for `runs`.
inline std::string runs_csv(const std::vector<run_record>& runs) {
  std::ostringstream out;
  out.precision(6);
  out << runs_header << '\n';
  for (const auto& r : runs)
    out << r.job << ',' << r.operators << ',' << to_string(r.cube) << ',' << to_string(r.chunk) << ',' << r.workers
        << ',' << r.threads << ',' << r.test[0] << ',' << r.test[1] << ',' << r.test[2] << ',' << r.rss_increase << ','
        << r.run_rss << ',' << r.idle_rss << ',' << r.event_peak << ',' << std::fixed << r.seconds << std::defaultfloat
        << ',' << r.first_blocks_rss_increase << '\n';
  return out.str();
}

/// The runs of a runs.csv that runs_csv wrote. Throws io_error when the file
/// cannot be read, invalid_input naming the file, line and field otherwise.
inline std::vector<run_record> read_runs(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw io_error("cannot read " + quote(file.string(), 400) + "; expected a runs.csv of `dwsr leaderboard run`");
  const auto where = quote(file.string(), 400);
  std::string line;
  if (std::getline(in, line) && !line.empty() && line.back() == '\r') line.pop_back();
  const bool first_blocks = line == runs_header;
  if (!first_blocks && line != runs_header_without_first_blocks)
    throw invalid_input(where + " line 1: expected the header " + quote(runs_header, 400) +
                        " (a runs.csv of `dwsr leaderboard run`)");
  const std::size_t fields = first_blocks ? 15 : 14;
  std::vector<run_record> out;
  for (std::size_t n = 2; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const auto f = detail::split_fields(line);
    auto bad = [&](std::size_t k, const char* expected) {
      return invalid_input(where + " line " + std::to_string(n) + ": field " + std::to_string(k + 1) + " " +
                           quote(k < f.size() ? f[k] : std::string_view{}) + "; expected " + expected);
    };
    if (f.size() != fields)
      throw invalid_input(where + " line " + std::to_string(n) + ": " + std::to_string(f.size()) +
                          " fields; expected " + std::to_string(fields));
    run_record r;
    r.operators = std::string(f[1]);
    if (!detail::parse_whole(f[0], r.job)) throw bad(0, "a job id");
    auto shape_at = [&](std::size_t k, const char* expected) {
      try {
        return parse_shape(f[k]);
      } catch (const invalid_input&) {
        throw bad(k, expected);
      }
    };
    r.cube = shape_at(2, "a cube IxXxT");
    r.chunk = shape_at(3, "a chunk IxXxT");
    if (!detail::parse_whole(f[4], r.workers)) throw bad(4, "a worker count");
    if (!detail::parse_whole(f[5], r.threads)) throw bad(5, "a thread count");
    for (std::size_t k = 0; k < 3; ++k) {
      if (f[6 + k] != "0" && f[6 + k] != "1") throw bad(6 + k, "0 or 1");
      r.test[k] = f[6 + k] == "1";
    }
    if (!detail::parse_whole(f[9], r.rss_increase)) throw bad(9, "bytes");
    if (!detail::parse_whole(f[10], r.run_rss)) throw bad(10, "bytes");
    if (!detail::parse_whole(f[11], r.idle_rss)) throw bad(11, "bytes");
    if (!detail::parse_whole(f[12], r.event_peak)) throw bad(12, "bytes");
    if (!detail::parse_whole(f[13], r.seconds)) throw bad(13, "seconds");
    if (first_blocks && !detail::parse_whole(f[14], r.first_blocks_rss_increase)) throw bad(14, "bytes");
    out.push_back(std::move(r));
  }
  if (out.empty()) throw invalid_input(where + " holds no runs; expected one row per job");
  return out;
}

}  // namespace dwsr::leaderboard
