#pragma once
// `dwsr leaderboard`: estimators scored against real runs (leaderboard/*.hpp;
// docs/leaderboard.md). `run` executes a suite's jobs for real, each in a
// fresh process of this very tool, and scores the built-in estimators;
// `score` scores an external estimator's predictions against stored runs.

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "cli_common.hpp"
#include "dwsr/core/atomic_file.hpp"
#include "dwsr/graph/graph_json.hpp"
#include "dwsr/leaderboard/board.hpp"
#include "dwsr/leaderboard/predictions_csv.hpp"
#include "dwsr/operators/catalogue.hpp"

namespace dwsr::cli {

namespace detail {

/// Predictions as a submission file (predictions_csv.hpp's format): the
/// jobs of `s` that `keep` accepts.
template <class Keep>
std::string predictions_text(const leaderboard::suite& s, const std::vector<double>& held, Keep&& keep) {
  std::string out = "job,predicted_bytes\n";
  for (std::size_t k = 0; k < s.jobs.size(); ++k)
    if (keep(s.jobs[k])) out += std::to_string(s.jobs[k].id) + "," + std::to_string(std::llround(held[k])) + "\n";
  return out;
}

/// A split named on the command line, or all of them for "all".
inline std::vector<leaderboard::split> splits_named(const std::string& name) {
  if (name == "all") return {leaderboard::all_splits.begin(), leaderboard::all_splits.end()};
  for (auto s : leaderboard::all_splits)
    if (leaderboard::name_of(s) == name) return {s};
  throw invalid_input("--split " + quote(name) + ": expected random, family, extrapolation or all");
}

/// The board's rows as JSON (board.json, --json).
inline nlohmann::json rows_json(const std::vector<leaderboard::board_row>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rows)
    out.push_back({{"estimator", r.estimator},
                   {"split", leaderboard::name_of(r.part)},
                   {"train_runs", r.train_runs},
                   {"test_runs", r.metrics.runs},
                   {"median_rel_error", r.metrics.median_rel_error},
                   {"p95_rel_error", r.metrics.p95_rel_error},
                   {"under_rate", r.metrics.under_rate},
                   {"idle_when_over", r.metrics.idle_when_over},
                   {"safe_failure", r.metrics.safe_failure},
                   {"safe_failure_upper", r.metrics.safe_failure_upper},
                   {"seconds_per_estimate", r.seconds_per_estimate}});
  return out;
}

/// Chunk choosing's rows as JSON (board.json, --json).
inline nlohmann::json choices_json(const std::vector<leaderboard::choice_row>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rows)
    out.push_back({{"estimator", r.estimator},
                   {"split", leaderboard::name_of(r.part)},
                   {"test_jobs", r.jobs},
                   {"refused", r.refused},
                   {"out_of_memory", r.out_of_memory},
                   {"as_advisor", r.as_advisor},
                   {"seconds", r.seconds},
                   {"advisor_seconds", r.advisor_seconds},
                   {"within_budget", r.within_budget},
                   {"idle_share", r.within_budget ? nlohmann::json(r.idle_share) : nlohmann::json()}});
  return out;
}

/// suite.json: the suite's name, seed, held-out families, probes and every job's graph.
inline nlohmann::json suite_document(const leaderboard::suite& s) {
  nlohmann::json jobs = nlohmann::json::array();
  for (const auto& j : s.jobs)
    jobs.push_back({{"job", j.id},
                    {"graph", graph_to_json(*j.g)},
                    {"cube", "synthetic:" + to_string(j.cube) + ":" + std::to_string(j.cube_seed)},
                    {"chunk", to_string(j.chunk)},
                    {"workers", j.workers},
                    {"threads", j.threads}});
  return {{"format", "dwsr leaderboard suite 1"},
          {"suite", s.spec.name},
          {"seed", s.seed},
          {"held_out_families", s.held_out},
          {"probes",
           {{"rss_increase_bytes",
             "the kernel's peak resident set of a fresh `dwsr run` process (its VmHWM, read as it ends) minus "
             "the same command's on a one-trace cube"},
            {"event_peak_bytes", "dwsr's own allocation events, the largest worker's peak (`dwsr run --json`)"},
            {"seconds", "wall time of the run"},
            {"first_blocks_rss_bytes",
             "the same process's VmHWM when its first blocks (one per worker) had finished, minus the same "
             "baseline"}}},
          {"jobs", std::move(jobs)}};
}

}  // namespace detail

inline void add_leaderboard_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "leaderboard", "memory estimators scored against real runs: run a suite, or score your own predictions");
  cmd->require_subcommand(1);

  auto* run = cmd->add_subcommand(
      "run", "execute a suite's jobs for real (a fresh process each) and score the built-in estimators on them");
  static std::string suite = "quick", out;
  static std::uint64_t seed = 0;
  static bool json = false;
  run->add_option("--suite", suite, "quick (24 jobs, seconds) or full (216 jobs, cubes up to 256 MB)")
      ->capture_default_str();
  run->add_option("--seed", seed, "the suite's seed (same seed, same jobs)")->capture_default_str();
  run->add_option("-o,--out", out,
                  "directory for runs.csv, chunk_runs.csv, suite.json, board.json, table.md and predictions/")
      ->required();
  run->add_flag("--json", json, "print the scores as JSON instead of the table");
  run->callback([] {
    const auto s = leaderboard::make_suite(operators::catalogue(), suite, seed);
    const std::filesystem::path dir(out);
    const bool existed = std::filesystem::exists(dir);
    std::filesystem::create_directories(dir);
    const auto scratch = dir / ".dwsr-leaderboard-runs";
    std::filesystem::create_directories(scratch);
    const bool tty = ::isatty(STDERR_FILENO) != 0;
    const auto tool = std::filesystem::read_symlink("/proc/self/exe");
    auto progress = [&](const char* what) {
      return [&, what](std::size_t done, std::size_t total) {
        if (tty) std::fprintf(stderr, "\r\033[Kleaderboard: %s %zu/%zu", what, done, total);
      };
    };
    std::vector<leaderboard::run_record> runs, chunk_runs;
    leaderboard::board b;
    leaderboard::choice_runs picked;
    try {
      runs = leaderboard::run_jobs(s.jobs, tool, scratch, progress("run"));
      b = leaderboard::score_board(s, runs, seed);
      // Chunk choosing: every pick of every estimator, run once.
      const auto wanted = leaderboard::picked_runs(b);
      std::vector<leaderboard::suite_job> jobs;
      for (auto [k, c] : wanted)
        jobs.push_back(leaderboard::with_chunk(s.jobs[k], leaderboard::candidate_chunks(s.jobs[k].cube)[c]));
      chunk_runs = leaderboard::run_jobs(jobs, tool, scratch, progress("chunk choice run"));
      for (std::size_t n = 0; n < wanted.size(); ++n)
        picked[{s.jobs[wanted[n].first].id, wanted[n].second}] = chunk_runs[n];
    } catch (...) {
      if (tty) std::fprintf(stderr, "\r\033[K");
      std::error_code ignored;
      std::filesystem::remove_all(scratch, ignored);
      if (!existed) std::filesystem::remove(dir, ignored);  // only when empty
      throw;
    }
    if (tty) std::fprintf(stderr, "\r\033[K");
    std::error_code ignored;
    std::filesystem::remove_all(scratch, ignored);
    const auto choices = leaderboard::choice_board(s, b, picked);
    auto table = leaderboard::board_markdown(b.rows);
    const auto unresolved =
        std::count_if(runs.begin(), runs.end(), [](const auto& r) { return !leaderboard::resolved(r); });
    if (unresolved > 0)
      table += "\n" + std::to_string(unresolved) + " run(s) below the probe's resolution (" +
               std::to_string(std::llround(leaderboard::probe_resolution)) + " bytes) left out of fits and scores.\n";

    dwsr::detail::commit_group files;
    files.write(dir / "runs.csv", [&](std::ostream& o) { o << leaderboard::runs_csv(runs); });
    files.write(dir / "chunk_runs.csv", [&](std::ostream& o) { o << leaderboard::runs_csv(chunk_runs); });
    files.write(dir / "suite.json", [&](std::ostream& o) { o << detail::suite_document(s).dump(1) << '\n'; });
    files.write(dir / "board.json", [&](std::ostream& o) {
      o << nlohmann::json{{"suite", s.spec.name},
                          {"seed", s.seed},
                          {"rows", detail::rows_json(b.rows)},
                          {"chunk_choice", detail::choices_json(choices)}}
               .dump(1)
        << '\n';
    });
    files.write(dir / "table.md", [&](std::ostream& o) {
      o << "# dwsr leaderboard: suite " << s.spec.name << ", seed " << s.seed << "\n\nHeld bytes predicted against "
        << "the peak RSS increase of each job's real run (runs.csv). Family split holds out: ";
      for (std::size_t k = 0; k < s.held_out.size(); ++k) o << (k ? ", " : "") << s.held_out[k];
      o << ".\n" << table << leaderboard::choices_markdown(choices);
    });
    // Submission files of the built-in estimators: what `score` reads back.
    std::filesystem::create_directories(dir / "predictions");
    for (const auto& p : b.predictions) {
      if (!p.learns) {  // one prediction per job, whatever the split
        files.write(dir / "predictions" / (p.estimator + ".csv"), [&](std::ostream& o) {
          o << detail::predictions_text(s, p.held[0], [](const leaderboard::suite_job&) { return true; });
        });
        continue;
      }
      for (auto part : leaderboard::all_splits)  // fitted on the split's train part: its test jobs only
        files.write(dir / "predictions" / (p.estimator + "-" + std::string(leaderboard::name_of(part)) + ".csv"),
                    [&](std::ostream& o) {
                      o << detail::predictions_text(s, p.held[std::size_t(part)],
                                                    [&](const leaderboard::suite_job& j) { return j.in_test(part); });
                    });
    }
    files.commit();
    if (json) {
      return print_json({{"suite", s.spec.name},
                         {"seed", s.seed},
                         {"runs", runs.size()},
                         {"chunk_runs", chunk_runs.size()},
                         {"rows", detail::rows_json(b.rows)},
                         {"chunk_choice", detail::choices_json(choices)},
                         {"out", out}});
    }
    std::printf(
        "suite %s, seed %llu: %zu real runs, %zu more for chunk choosing\n%s%s\nwrote %s/runs.csv, chunk_runs.csv, "
        "suite.json, board.json, table.md, predictions/\n",
        s.spec.name.c_str(), static_cast<unsigned long long>(s.seed), runs.size(), chunk_runs.size(), table.c_str(),
        leaderboard::choices_markdown(choices).c_str(), out.c_str());
  });

  auto* score = cmd->add_subcommand(
      "score", "score an external estimator's predictions (CSV: job,predicted_bytes) against stored real runs");
  static std::string predictions, runs_dir, name = "submitted", split = "all";
  score->add_option("predictions", predictions, "the predictions file: header job,predicted_bytes, one row per job")
      ->required();
  score->add_option("--runs", runs_dir, "the directory `dwsr leaderboard run` wrote (its runs.csv)")->required();
  score
      ->add_option("--split", split,
                   "the split scored: random, family or extrapolation (the file predicts that split's test jobs), "
                   "or all (the file predicts every job, scored on each split's test jobs)")
      ->capture_default_str();
  score->add_option("--name", name, "the estimator's name in the table")->capture_default_str();
  score->add_flag("--json", json, "print the scores as JSON instead of the table");
  score->callback([] {
    const auto parts = detail::splits_named(split);
    const auto runs = leaderboard::read_runs(std::filesystem::path(runs_dir) / "runs.csv");
    const auto p = leaderboard::read_predictions(predictions);
    std::vector<std::uint64_t> ids;
    for (const auto& r : runs)
      if (parts.size() > 1 || r.test[std::size_t(parts.front())]) ids.push_back(r.job);
    leaderboard::check_covers(p, ids, quote(predictions, 400));
    std::map<std::uint64_t, double> by_job;
    for (const auto& q : p) by_job[q.job] = q.predicted;
    std::vector<double> held(runs.size(), 0.0);  // runs outside the scored parts are not read
    for (std::size_t k = 0; k < runs.size(); ++k)
      if (const auto it = by_job.find(runs[k].job); it != by_job.end()) held[k] = it->second;
    const auto rows = leaderboard::score_external(name, runs, held, parts);
    if (json) return print_json({{"rows", detail::rows_json(rows)}});
    std::printf("%s\n", leaderboard::board_markdown(rows).c_str());
  });
}

}  // namespace dwsr::cli
