// `dwsr plan --exec dask`: the Dask-style figures in the table and the JSON,
// Dask's thresholds against --memory, `--exec dwsr` unchanged, and the errors
// of options that do not go together (exit 2, one line).

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "cli/cli_runner.hpp"

using namespace dwsr::test;

namespace {

nlohmann::json plan_json(const std::string& args) {
  const auto r = run_dwsr("plan " + args + " --json");
  REQUIRE(r.status == 0);
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST_CASE("dwsr plan --exec dask reports the schedule's peak, the bound and Dask's thresholds") {
  const std::string cube = "envelope --shape 8x8x64 --chunk 4x4x64";
  const std::uint64_t one = plan_json(cube + " --threads 1")["peak_bytes"];
  // One slot: the exact plan of one thread.
  const auto single = plan_json(cube + " --threads 1 --exec dask");
  CHECK(single["exec"] == "dask");
  CHECK(single["dask"]["tasks"] == "fused");
  CHECK(single["dask"]["schedule_peak_bytes"] == one);
  CHECK(single["dask"]["bound_bytes"] == one);
  // Two slots: two blocks of one shape at once.
  const auto two = plan_json(cube + " --threads 2 --exec dask --memory " + std::to_string(one * 2 * 10 / 9));
  CHECK(two["dask"]["schedule_peak_bytes"] == 2 * one);
  CHECK(two["dask"]["bound_bytes"] == 2 * one);
  CHECK(two["dask"]["floor_bytes"] == one);
  CHECK(two["dask"]["schedule_crosses"] == "pause");  // 90 % of the limit
  CHECK(two["dask"]["bound_crosses"] == "pause");
  CHECK(two["dask"]["workers"].size() == 1);
  CHECK(plan_json(cube + " --threads 2 --exec dask --tasks unfused")["dask"]["workers"][0]["tasks"] == 8);
  const auto text = run_dwsr("plan " + cube + " --threads 2 --exec dask --memory 1MiB");
  REQUIRE(text.status == 0);
  CHECK(text.out.find("schedule peak") != std::string::npos);
  CHECK(text.out.find("upper bound") != std::string::npos);
  CHECK(text.out.find("(none), bound") != std::string::npos);
}

TEST_CASE("dwsr plan --exec dwsr is today's plan") {
  auto a = plan_json("envelope --shape 8x8x64 --chunk 4x4x64 --threads 2 --exec dwsr");
  auto b = plan_json("envelope --shape 8x8x64 --chunk 4x4x64 --threads 2");
  CHECK(!a.contains("exec"));
  a.erase("seconds"), b.erase("seconds");
  CHECK(a == b);
}

TEST_CASE("dwsr plan: --tasks without --exec dask, and other mismatches, exit 2 with one line") {
  for (const auto* args : {"--tasks unfused", "--exec dwsr --tasks fused", "--exec dask --tasks both", "--exec spark",
                           "--exec dask --allocator host_malloc", "--exec dask --trace t.csv"}) {
    INFO(args);
    const auto r = run_dwsr(std::string("plan envelope --shape 8x8x64 ") + args);
    CHECK(r.status == 2);
    CHECK(r.error_lines() == 1);
    CHECK(r.out.empty());
  }
  CHECK(run_dwsr("plan envelope --shape 8x8x64 --tasks unfused").err.find("needs --exec dask") != std::string::npos);
}
