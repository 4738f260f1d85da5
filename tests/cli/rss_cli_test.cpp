// The plan against the operating system: `dwsr run` as a child process, its
// peak resident memory read from the kernel (wait4's ru_maxrss), above the
// same command's on a one-trace cube (the idle baseline: code, libraries,
// threads, FFTW's plans), compared with what the plan says the process holds:
// every worker's live buffers in whole pages (host_pages), summed over the
// workers, which run blocks of one shape at the same time. And the same check
// as `dwsr train --env chunk_schedule --real` runs it (env/chunk_real.hpp).

#include <catch2/catch.hpp>

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

TEST_CASE("dwsr train --env chunk_schedule --real runs the chosen chunks and the kernel agrees with the simulator") {
  // The first two small test tasks of the default pool without event_picks
  // (tasks 24 and 29: 433x434x82, W5 x T3, and 102x328x273, W1 x T2), each at
  // the advisor's chunk: about 2 s each.
  dwsr::test::temp_dir dir;
  const auto r = dwsr::test::run_dwsr("train --env chunk_schedule --policy advisor --eval-episodes 100 --real 2 -o " +
                                      (dir / "out").string());
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("real: 2 runs") != std::string::npos);
  std::istringstream csv(file_text(dir / "out" / "real.csv"));
  std::string line;
  std::getline(csv, line);
  CHECK(line ==
        "task,chunk,workers,threads,simulated_peak_bytes,simulated_pages_bytes,rss_increase_bytes,ratio,seconds");
  std::vector<std::string> tasks;
  while (std::getline(csv, line)) {
    std::vector<std::string> cells;
    std::istringstream in(line);
    for (std::string c; std::getline(in, c, ',');) cells.push_back(c);
    REQUIRE(cells.size() == 9);
    tasks.push_back(cells[0]);
    const double pages = std::stod(cells[5]), increase = std::stod(cells[6]);
    INFO(line);
    CHECK(std::stod(cells[4]) > 0);
    // rss_cli_test's tolerance: the kernel's lazily synced counters, library memory.
    CHECK(std::abs(increase - pages) <= 0.02 * pages + double(2u << 20));
  }
  CHECK(tasks == std::vector<std::string>{"24", "29"});
  const auto doc = nlohmann::json::parse(file_text(dir / "out" / "policy.json"));
  CHECK(doc["real"]["tasks"] == nlohmann::json::array({24, 29}));
  CHECK(!std::filesystem::exists(dir / "out" / ".dwsr-train-real"));  // the scratch directory is gone
  // A run without --real into the same directory: the earlier real.csv goes.
  REQUIRE(dwsr::test::run_dwsr("train --env chunk_schedule --policy advisor --eval-episodes 10 -o " +
                               (dir / "out").string())
              .status == 0);
  CHECK(!std::filesystem::exists(dir / "out" / "real.csv"));
  CHECK(!nlohmann::json::parse(file_text(dir / "out" / "policy.json")).contains("real"));
}
