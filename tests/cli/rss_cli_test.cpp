// The plan against the operating system: `dwsr run` as a child process, its
// peak resident memory read from the kernel (wait4's ru_maxrss), above the
// same command's on a one-trace cube (the idle baseline: code, libraries,
// threads, FFTW's plans), compared with what the plan says the process holds:
// every worker's live buffers in whole pages (host_pages), summed over the
// workers, which run blocks of one shape at the same time. And the same check
// as `dwsr train --env chunk_schedule --real` and `--env peak_predict --real`
// run it (env/chunk_real.hpp, env/peak_real.hpp), with each child's own
// VmHWM.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_runner.hpp"
#include "dwsr/memory/child_peak.hpp"

namespace {

/// What one child run reported and what the kernel measured of it.
struct child_run {
  std::uint64_t max_rss = 0;        ///< bytes, from the kernel
  std::uint64_t planned_pages = 0;  ///< bytes, the plan's host_pages sum over workers
  std::uint64_t measured_peak = 0;  ///< bytes, the largest worker's events peak
};

/// Runs `dwsr run ... --json` with `args` as a child; its stdout goes to a file.
child_run run_dwsr_child(const std::vector<std::string>& args, const std::filesystem::path& out) {
  std::vector<std::string> words = {std::string(DWSR_BINARY_DIR) + "/apps/dwsr/dwsr", "run"};
  words.insert(words.end(), args.begin(), args.end());
  words.push_back("--json");
  const auto e = dwsr::run_child(words, out);
  REQUIRE(e.ok());
  std::ifstream in(out);
  const auto doc = nlohmann::json::parse(in);
  return {e.max_rss, doc["planned_pages_sum_bytes"].get<std::uint64_t>(),
          doc["measured_peak_bytes"].get<std::uint64_t>()};
}

std::string file_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("a chunked run's peak RSS is what the plan says the process holds") {
  dwsr::test::temp_dir dir;
  const auto cube = (dir / "cube.npy").string(), trace = (dir / "trace.npy").string();
  REQUIRE(dwsr::test::run_dwsr("generate --shape 96x80x512 --seed 7 --output " + cube).status == 0);
  REQUIRE(dwsr::test::run_dwsr("generate --shape 1x1x512 --seed 7 --output " + trace).status == 0);
  struct job {
    std::string op, chunk, workers, threads, input, idle;
  };
  const job jobs[] = {
      {"gst_3d_dip", "96x80x512", "1", "1", cube, trace},
      {"gst_3d_dip", "48x40x512", "1", "1", cube, trace},
      {"gst_3d_dip", "24x20x512", "1", "1", cube, trace},
      {"gst_3d_dip", "48x40x512", "1", "1", "synthetic:96x80x512:7", "synthetic:1x1x512:7"},
      {"envelope", "24x20x512", "1", "1", cube, trace},
      {"sweetness", "24x24x512", "3", "2", cube, trace},
  };
  // The kernel's counters are synced lazily per thread (up to 64 pages each),
  // and library memory differs a little between a one-trace and a real run.
  const std::uint64_t constant = 2u << 20;
  for (const auto& j : jobs) {
    const std::vector<std::string> common = {j.op, "--chunk", j.chunk, "-w", j.workers, "-t", j.threads};
    auto with = [&](const std::string& input, const std::string& name) {
      auto args = common;
      for (const auto& a : {std::string("--input"), input, std::string("--output"), (dir / name).string()})
        args.push_back(a);
      return args;
    };
    const auto idle = run_dwsr_child(with(j.idle, "idle"), dir / "idle.json");
    const auto run = run_dwsr_child(with(j.input, "out"), dir / "run.json");
    const auto held = run.planned_pages - idle.planned_pages;
    const auto increase = run.max_rss > idle.max_rss ? run.max_rss - idle.max_rss : 0;
    INFO(j.op << " chunk " << j.chunk << " on " << j.input << ", " << j.workers << "x" << j.threads << ": RSS increase "
              << increase << " bytes, planned " << held << " (events peak " << run.measured_peak << ")");
    CHECK(double(increase) <= 1.02 * double(held) + double(constant));
    CHECK(double(increase) + double(constant) >= 0.98 * double(held));
  }
}

namespace {

/// real.csv of `dwsr train ARGS --real 2`: its header and each row's cells.
struct real_csv {
  std::string header;
  std::vector<std::vector<std::string>> rows;
};

/// Runs `dwsr train ARGS --real 2 -o DIR/out` and reads its real.csv; checks
/// what every real mode promises: a summary line, the scratch directory
/// gone, and a later run without --real into the same directory removing
/// real.csv (it would not belong to that policy).
real_csv train_real(const std::string& args, const std::filesystem::path& dir) {
  const auto out = (dir / "out").string();
  const auto r = dwsr::test::run_dwsr("train " + args + " --eval-episodes 100 --real 2 -o " + out);
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("real: ") != std::string::npos);
  CHECK(!std::filesystem::exists(dir / "out" / ".dwsr-train-real"));
  real_csv csv;
  std::istringstream in(file_text(dir / "out" / "real.csv"));
  std::getline(in, csv.header);
  for (std::string line; std::getline(in, line);) {
    std::istringstream cells(line);
    auto& row = csv.rows.emplace_back();
    for (std::string c; std::getline(cells, c, ',');) row.push_back(c);
  }
  std::filesystem::copy_file(dir / "out" / "policy.json", dir / "policy.json");
  REQUIRE(dwsr::test::run_dwsr("train " + args + " --eval-episodes 10 -o " + out).status == 0);
  CHECK(!std::filesystem::exists(dir / "out" / "real.csv"));
  CHECK(!nlohmann::json::parse(file_text(dir / "out" / "policy.json")).contains("real"));
  return csv;
}

}  // namespace

TEST_CASE("dwsr train --env chunk_schedule --real runs the chosen chunks and the kernel agrees with the simulator") {
  // The first two small test tasks of the default pool without event_picks
  // (tasks 24 and 29: 433x434x82, W5 x T3, and 102x328x273, W1 x T2), each at
  // the advisor's chunk: about 2 s each.
  dwsr::test::temp_dir dir;
  const auto csv = train_real("--env chunk_schedule --policy advisor", dir.path());
  CHECK(csv.header ==
        "task,chooser,chunk,workers,threads,budget_bytes,simulated_peak_bytes,simulated_pages_bytes,event_peak_bytes,"
        "rss_increase_bytes,ratio,out_of_memory,idle_share,seconds");
  std::vector<std::string> tasks;
  for (const auto& cells : csv.rows) {
    REQUIRE(cells.size() == 14);
    tasks.push_back(cells[0]);
    CHECK(cells[1] == "advisor");  // the policy is the advisor: one run per task
    const double budget = std::stod(cells[5]), peak = std::stod(cells[6]), pages = std::stod(cells[7]);
    const double increase = std::stod(cells[9]), workers = std::stod(cells[3]);
    INFO("task " << cells[0]);
    CHECK(peak > 0);
    CHECK(std::stod(cells[8]) == peak);  // the run's events peak where the plan does
    // rss_cli_test's tolerance: the kernel's lazily synced counters, library memory.
    CHECK(std::abs(increase - pages) <= 0.02 * pages + double(2u << 20));
    // The advisor fits the budget; what the W budgets leave idle, by the probe.
    CHECK(cells[11] == "0");
    CHECK(peak <= budget);
    CHECK(std::stod(cells[12]) == Approx(std::max(0.0, 1 - increase / (budget * workers))).margin(1e-6));
  }
  CHECK(tasks == std::vector<std::string>{"24", "29"});
  const auto real = nlohmann::json::parse(file_text(dir / "policy.json"))["real"];
  CHECK(real["tasks"] == nlohmann::json::array({24, 29}));
  CHECK(real["chosen"]["runs"] == 2);
  CHECK(real["chosen"]["out_of_memory"] == 0);
  CHECK(real["chosen"] == real["advisor"]);
}

TEST_CASE("dwsr train --env peak_predict --real runs test jobs and scores the prediction against the measured peak") {
  // The first two eligible test jobs of the default pool (1937 and 1941:
  // amplitude_acceleration on 413x28x557 in 3 blocks, W2 x T1), about 1 s each.
  dwsr::test::temp_dir dir;
  const auto csv = train_real("--env peak_predict --steps 2000", dir.path());
  CHECK(csv.header ==
        "job,operators,cube,chunk,workers,threads,true_peak_bytes,predicted_bytes,simulated_pages_bytes,"
        "rss_increase_bytes,ratio,simulated_reward,real_reward,seconds");
  std::vector<std::string> jobs;
  for (const auto& cells : csv.rows) {
    REQUIRE(cells.size() == 14);
    INFO("job " << cells[0]);
    jobs.push_back(cells[0]);
    const double truth = std::stod(cells[6]), predicted = std::stod(cells[7]);
    const double pages = std::stod(cells[8]), increase = std::stod(cells[9]);
    // The process holds at least its largest worker's peak and at most every worker's at once (the
    // kernel's lazily synced counters and library memory: rss_cli_test's slack).
    CHECK(increase >= truth - double(2u << 20));
    CHECK(increase <= 1.02 * pages + double(2u << 20));
    // Both rewards as PeakPredict computes them, against the label and against the label scaled by the measurement.
    const double real_peak = truth * increase / pages;
    CHECK(std::stod(cells[11]) == Approx(predicted < truth ? -10.0 : -(predicted - truth) / truth).epsilon(1e-5));
    CHECK(std::stod(cells[12]) ==
          Approx(predicted < real_peak ? -10.0 : -(predicted - real_peak) / real_peak).epsilon(1e-5));
  }
  CHECK(jobs == std::vector<std::string>{"1937", "1941"});
  const auto doc = nlohmann::json::parse(file_text(dir / "policy.json"));
  CHECK(doc["real"]["jobs"] == nlohmann::json::array({1937, 1941}));
  CHECK(doc["real"].contains("mean_abs_reward_difference"));
}

TEST_CASE("dwsr train --env chunk_schedule --real runs the advisor's chunk beside the policy's and sums both up") {
  dwsr::test::temp_dir dir;
  const auto csv = train_real("--env chunk_schedule --policy random --seed 3", dir.path());
  REQUIRE(csv.rows.size() == 4);  // two tasks, each the random policy's chunk, then the advisor's
  for (std::size_t k = 0; k < 4; ++k) {
    INFO("row " << k);
    REQUIRE(csv.rows[k].size() == 14);
    CHECK(csv.rows[k][0] == csv.rows[k - k % 2][0]);
    CHECK(csv.rows[k][1] == (k % 2 ? "advisor" : "random"));
  }
  const auto real = nlohmann::json::parse(file_text(dir / "policy.json"))["real"];
  for (const char* who : {"chosen", "advisor"}) {
    INFO(who);
    CHECK(real[who]["runs"] == 2);
    CHECK(real[who]["seconds"].get<double>() > 0);
    CHECK(real[who]["mean_idle_share"].get<double>() >= 0);
    CHECK(real[who]["mean_idle_share"].get<double>() < 1);
  }
  CHECK(real["advisor"]["out_of_memory"] == 0);  // the advisor fits the budget
}
