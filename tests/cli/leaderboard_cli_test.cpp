// `dwsr leaderboard`: the RSS probe against a program that holds a known
// amount; the quick suite run for real (the README's test command runs it),
// whose plan agrees with the kernel within rss_cli_test's tolerance; `score`
// reproduces the board from the submission files it wrote, and refuses
// malformed predictions in one line.

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "cli/cli_runner.hpp"
#include "dwsr/leaderboard/board.hpp"
#include "dwsr/memory/child_peak.hpp"
#include "dwsr/operators/catalogue.hpp"

using namespace dwsr::test;

namespace {

std::string text_of(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// How far a run's measured RSS increase may stand from `bytes` held (as
/// rss_cli_test measures it): the kernel's lazily synced counters, library memory.
double agreement_tolerance(double bytes) { return 0.02 * bytes + double(2u << 20); }

void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}

}  // namespace

TEST_CASE("the RSS probe reads a program's known allocation within its resolution") {
  // The kernel records, at exec, the high-water mark of the memory the child
  // was spawned from (this test process's, with posix_spawn's vfork): a
  // child's figure is never below it. The baseline therefore holds more than
  // this process does (32 MiB), and the probe reads the increments above it.
  // Each of the two readings lags the pages touched by less than
  // rss_reading_lag (the kernel folds per-CPU counts in batches), so their
  // difference is known to twice that. Measured alone: 2 to 11 pages above
  // the pages touched; once, under ctest -j2, 68 pages below.
  const std::string prog = std::string(DWSR_BINARY_DIR) + "/tests/touch_bytes";
  const std::uint64_t base = std::uint64_t{32} << 20;
  const auto idle = dwsr::run_child({prog, std::to_string(base)});
  REQUIRE(idle.ok());
  for (std::uint64_t n : {std::uint64_t{8} << 20, std::uint64_t{64} << 20, (std::uint64_t{100} << 20) + 12345}) {
    const auto e = dwsr::run_child({prog, std::to_string(base + n)});
    REQUIRE(e.ok());
    const double pages = double((base + n + 4095) / 4096 * 4096) - double(base);
    INFO(n << " bytes above the baseline: RSS " << e.max_rss << ", baseline " << idle.max_rss);
    CHECK(std::abs(double(e.max_rss) - double(idle.max_rss) - pages) < 2 * dwsr::rss_reading_lag());
  }
}

TEST_CASE("one RSS reading's lag follows the kernel's per-CPU batches") {
  CHECK(dwsr::rss_reading_lag(1) == 32 * 4096);
  CHECK(dwsr::rss_reading_lag(2) == 64 * 4096);
  CHECK(dwsr::rss_reading_lag(16) == 16 * 32 * 4096);
  CHECK(dwsr::rss_reading_lag(64) == 64 * 128 * 4096);
  CHECK(dwsr::rss_reading_lag(0) == 32 * 4096);  // an unknown count reads as one CPU
}

TEST_CASE("dwsr leaderboard runs the quick suite for real and score reproduces its board") {
  temp_dir dir;
  const auto out = (dir / "lb").string();
  const auto r = run_dwsr("leaderboard run --suite quick --json -o " + out);
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  const auto board = nlohmann::json::parse(r.out);
  CHECK(board["runs"] == 24);
  // Seven estimators where the tool links XGBoost (volume_xgboost, features_gbt after the other five), else five.
#ifdef DWSR_WITH_XGBOOST
  REQUIRE(board["rows"].size() == 21);
  for (const char* f : {"predictions/volume_xgboost-random.csv", "predictions/volume_xgboost-extrapolation.csv",
                        "predictions/features_gbt-family.csv"})
    CHECK(std::filesystem::exists(dir / "lb" / f));
#else
  REQUIRE(board["rows"].size() == 15);
#endif
  for (const char* f : {"runs.csv", "suite.json", "table.md", "predictions/plan.csv",
                        "predictions/volume_linear-random.csv", "predictions/volume_linear-family.csv",
                        "predictions/volume_linear-extrapolation.csv", "predictions/online_volume_linear-random.csv",
                        "predictions/linucb-family.csv", "predictions/reinforce-extrapolation.csv"})
    CHECK(std::filesystem::exists(dir / "lb" / f));
  CHECK(!std::filesystem::exists(dir / "lb" / ".dwsr-leaderboard-runs"));
  const auto table = text_of(dir / "lb" / "table.md");
  for (const char* s : {"Split: random", "Split: family", "Split: extrapolation"})
    CHECK(table.find(s) != std::string::npos);
  const auto suite = nlohmann::json::parse(text_of(dir / "lb" / "suite.json"));
  CHECK(suite["jobs"].size() == 24);
  CHECK(suite["probes"].contains("rss_increase_bytes"));

  // The kernel never sees more than the plan (rss_cli_test's tolerance), and
  // agrees with it on every single-worker run; dwsr's own event peak is never
  // above what the plan held. With several workers the plan holds their peaks
  // together, and a loaded machine can keep them apart (measured: 36 % under
  // the plan for 2 workers while other tests ran), so there it is a bound.
  const auto runs = dwsr::leaderboard::read_runs(dir / "lb" / "runs.csv");
  std::map<std::uint64_t, double> plan;
  std::istringstream pred(text_of(dir / "lb" / "predictions" / "plan.csv"));
  std::string line;
  std::getline(pred, line);
  CHECK(line == "job,predicted_bytes");
  while (std::getline(pred, line)) plan[std::stoull(line)] = std::stod(line.substr(line.find(',') + 1));
  REQUIRE(plan.size() == 24);
  for (const auto& run : runs) {
    INFO("job " << run.job << " " << run.operators << " " << run.workers << "x" << run.threads << ": RSS increase "
                << run.rss_increase << ", plan " << plan[run.job]);
    CHECK(double(run.rss_increase) <= plan[run.job] + agreement_tolerance(plan[run.job]));
    if (run.workers == 1)
      CHECK(std::abs(double(run.rss_increase) - plan[run.job]) <= agreement_tolerance(plan[run.job]));
    CHECK(double(run.event_peak) <= plan[run.job]);
  }

  // Chunk choosing: every estimator on every split, the picks run on one worker;
  // the advisor (plan) refuses none.
  CHECK(board["chunk_choice"].size() == board["rows"].size());
  for (const auto& row : board["chunk_choice"]) {
    INFO(row.dump());
    if (row["estimator"] != "plan") continue;
    CHECK(row["refused"] == 0);
    CHECK(row["as_advisor"] == row["test_jobs"]);
  }
  const auto picked = dwsr::leaderboard::read_runs(dir / "lb" / "chunk_runs.csv");
  CHECK(picked.size() == board["chunk_runs"].get<std::size_t>());
  for (const auto& run : picked) CHECK(run.workers == 1);
  // Each advisor pick fits its budget by the plan, and the kernel agrees with
  // the plan within the tolerance above, so its run stays within the budget
  // plus that tolerance. Not the board's out-of-memory count, which allows
  // only the probe's resolution (256 KiB on two CPUs): a one-trace baseline
  // alone varies by up to 1.2 MiB between runs of the same job (measured on a
  // quiet machine), and the suite's smallest jobs leave about 1 MiB of their
  // budgets, so under load one of them can pass its budget there (seen once
  // in a parallel ctest).
  const auto s =
      dwsr::leaderboard::make_suite(dwsr::operators::catalogue(), "quick", suite["seed"].get<std::uint64_t>());
  std::size_t advisor_picks = 0;
  for (const auto& j : s.jobs) {
    if (!j.test[0] && !j.test[1] && !j.test[2]) continue;
    const double budget = dwsr::leaderboard::choice_budget(j);
    dwsr::estimators::plan advisor;
    const auto pick = dwsr::leaderboard::choose_chunk(advisor, j, budget);
    REQUIRE(pick);
    const auto chunk = dwsr::leaderboard::candidate_chunks(j.cube)[*pick];
    const auto run =
        std::find_if(picked.begin(), picked.end(), [&](const auto& p) { return p.job == j.id && p.chunk == chunk; });
    REQUIRE(run != picked.end());
    INFO("job " << j.id << " " << j.operators << " chunk " << dwsr::to_string(chunk) << ": RSS increase "
                << run->rss_increase << ", budget " << budget);
    CHECK(double(run->rss_increase) <= budget + agreement_tolerance(budget));
    ++advisor_picks;
  }
  // Every job that is a test job of some split (runs.csv's flags) was checked.
  CHECK(advisor_picks == std::size_t(std::count_if(runs.begin(), runs.end(),
                                                   [](const auto& t) { return t.test[0] || t.test[1] || t.test[2]; })));
  CHECK(table.find("Chunk choosing: family") != std::string::npos);

  // score: the submission files give the board's rows back.
  const auto again = run_dwsr("leaderboard score " + (dir / "lb" / "predictions" / "plan.csv").string() + " --runs " +
                              out + " --name plan --json");
  REQUIRE(again.status == 0);
  const auto rows = nlohmann::json::parse(again.out)["rows"];
  REQUIRE(rows.size() == 3);
  for (std::size_t k = 0; k < 3; ++k) {
    CHECK(rows[k]["split"] == board["rows"][k]["split"]);
    CHECK(rows[k]["test_runs"] == board["rows"][k]["test_runs"]);
    // Predictions are written in whole bytes.
    CHECK(rows[k]["median_rel_error"].get<double>() ==
          Approx(board["rows"][k]["median_rel_error"].get<double>()).margin(1e-6));
    CHECK(rows[k]["under_rate"] == board["rows"][k]["under_rate"]);
  }
  const auto family =
      run_dwsr("leaderboard score " + (dir / "lb" / "predictions" / "volume_linear-family.csv").string() + " --runs " +
               out + " --split family --json");
  REQUIRE(family.status == 0);
  const auto frows = nlohmann::json::parse(family.out)["rows"];
  REQUIRE(frows.size() == 1);
  CHECK(frows[0]["median_rel_error"].get<double>() ==
        Approx(board["rows"][4]["median_rel_error"].get<double>()).margin(1e-6));  // volume_linear, family
#ifdef DWSR_WITH_XGBOOST
  const auto gbt = run_dwsr("leaderboard score " + (dir / "lb" / "predictions" / "features_gbt-family.csv").string() +
                            " --runs " + out + " --split family --json");
  REQUIRE(gbt.status == 0);
  CHECK(nlohmann::json::parse(gbt.out)["rows"][0]["median_rel_error"].get<double>() ==
        Approx(board["rows"][19]["median_rel_error"].get<double>()).margin(1e-6));  // features_gbt, family
#endif

  // Malformed predictions, an unknown split, a directory without runs: one line, exit 2 or 3.
  write_text(dir / "short.csv", "job,predicted_bytes\n0,100\n");
  expect_user_error(run_dwsr("leaderboard score " + (dir / "short.csv").string() + " --runs " + out),
                    "no prediction for job 1");
  write_text(dir / "bad.csv", "job,predicted_bytes\n0,-3\n");
  expect_user_error(run_dwsr("leaderboard score " + (dir / "bad.csv").string() + " --runs " + out),
                    "predicted_bytes '-3'");
  write_text(dir / "extra.csv", text_of(dir / "lb" / "predictions" / "plan.csv") + "999,5\n");
  expect_user_error(run_dwsr("leaderboard score " + (dir / "extra.csv").string() + " --runs " + out),
                    "job 999 is not in the suite's runs");
  expect_user_error(run_dwsr("leaderboard score " + (dir / "short.csv").string() + " --runs " + out + " --split x"),
                    "--split 'x': expected random, family, extrapolation or all");
  const auto missing =
      run_dwsr("leaderboard score " + (dir / "short.csv").string() + " --runs " + (dir / "none").string());
  CHECK(missing.status != 0);
  CHECK(missing.err.find("runs.csv") != std::string::npos);
  expect_user_error(run_dwsr("leaderboard run --suite medium -o " + (dir / "m").string()),
                    "suite 'medium': expected quick or full");
  CHECK(!std::filesystem::exists(dir / "m"));
}
