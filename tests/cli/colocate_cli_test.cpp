// `dwsr colocate`: jobs on a GPU or MIG slice, the device's peak equal to the
// library's replay of the same jobs, the first OOM, and one-line errors.

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "cli/cli_runner.hpp"
#include "dwsr/graph/colocated_job.hpp"
#include "dwsr/operators/catalogue.hpp"
#include "dwsr/sim/colocate.hpp"

using namespace dwsr;
using namespace dwsr::test;

TEST_CASE("dwsr colocate replays the jobs on the device as the library does") {
  const auto r = run_dwsr(
      "colocate -d h100-80gb/1g.10gb --job envelope@64x64x256@32x32x256@2 "
      "--job 'gaussian@64x64x128@@1@0.0001@cupy_pool' --json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["device"] == "h100-80gb/1g.10gb");
  CHECK(j["jobs"].size() == 2);
  CHECK(j["jobs"][0]["allocator"] == "torch_cuda_caching");
  CHECK(j["jobs"][1]["allocator"] == "cupy_pool");
  CHECK(j["ooms"].empty());

  // The same jobs through the library (no time profile in tests: the placeholder rate).
  const auto env = graph::single(operators::catalogue(), "envelope");
  const auto gauss = graph::single(operators::catalogue(), "gaussian");
  const chunked_schedule a(env, {64, 64, 256}, {.chunk = {32, 32, 256}, .threads = 2});
  const chunked_schedule b(gauss, {64, 64, 128}, {});
  const std::vector<sim::job> jobs{colocated_job(a, {.allocator = "torch_cuda_caching"}),
                                   colocated_job(b, {.allocator = "cupy_pool", .start = 0.0001})};
  const auto expected = sim::colocate(sim::device_named("h100-80gb/1g.10gb"), jobs);
  CHECK(j["peak_bytes"] == expected.peak);
  CHECK(j["capacity_bytes"] == expected.capacity);
  CHECK(expected.peak >= 2 * sim::default_process_overhead);

  const auto text = run_dwsr("colocate -d h100-80gb/1g.10gb --job envelope@64x64x256 --job gaussian@64x64x128");
  REQUIRE(text.status == 0);
  CHECK(text.out.find("2 jobs on h100-80gb/1g.10gb") != std::string::npos);
  CHECK(text.out.find("no job ran out of memory") != std::string::npos);
}

TEST_CASE("dwsr colocate reports the first job to run out of the device's memory") {
  const auto r =
      run_dwsr("colocate --capacity 1060MiB --job envelope@64x64x256 --job envelope@128x128x512@@1@0.00001 --json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(!j["ooms"].empty());
  CHECK(j["ooms"][0]["job"] == 1);
  CHECK(j["jobs"][1]["failed"] == true);
  CHECK(j["jobs"][0]["failed"] == false);
  const auto text =
      run_dwsr("colocate --capacity 1060MiB --job envelope@64x64x256 --job envelope@128x128x512@@1@0.00001");
  CHECK(text.out.find("first OOM   job 1") != std::string::npos);
}

TEST_CASE("dwsr colocate refuses bad devices and jobs in one line") {
  expect_user_error(run_dwsr("colocate -d h100-80gb/9g.99gb --job envelope@64x64x256"), "9g.99gb");
  expect_user_error(run_dwsr("colocate --job envelope"), "expected GRAPH@IxXxT");
  expect_user_error(run_dwsr("colocate --job envelope@64x64x256@@0"), "threads '0'; expected 1 to");
  expect_user_error(run_dwsr("colocate --job envelope@64x64x256@@1@-3"), "start '-3'; expected seconds >= 0");
  expect_user_error(run_dwsr("colocate --job nosuchop@64x64x256"), "unknown operator 'nosuchop'");
  expect_user_error(run_dwsr("colocate --job envelope@64x64x256@@1@0@bogus_model"), "bogus_model");
}
