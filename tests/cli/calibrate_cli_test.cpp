// `dwsr calibrate`, and `plan` and `advise` predicting time from its profile:
// the profile file, the advice for time against the largest chunk, and the
// errors of a missing or corrupt profile.

#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_runner.hpp"

using namespace dwsr::test;

TEST_CASE("dwsr calibrate writes a profile that plan and advise predict time from") {
  temp_dir dir;
  const auto profile = (dir / "profile.json").string();
  const auto r = run_dwsr("calibrate --quick --ops envelope,gaussian -t 1 -o " + profile);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("wrote " + profile) != std::string::npos);
  const auto doc = nlohmann::json::parse(std::ifstream(profile));
  CHECK(doc["format"] == "dwsr-time-profile");
  CHECK(doc["operators"].size() == 2);
  CHECK(doc["operators"]["envelope"]["seconds_per_voxel"].contains("1"));

  const auto plan = run_dwsr("plan envelope --shape 64x64x256 --chunk 16x64x256 -w 2 --profile " + profile);
  REQUIRE(plan.status == 0);
  CHECK(plan.out.find("predicted from the time profile (0 idle workers)") != std::string::npos);

  // Four workers with a core each: the whole cube fits, and would leave three of them idle.
  const auto base = "advise envelope --shape 64x64x256 --memory 64MiB -w 4 --cores 4 --profile " + profile;
  const auto fastest = run_dwsr(base + " --json");
  REQUIRE(fastest.status == 0);
  const auto a = nlohmann::json::parse(fastest.out);
  CHECK(a["objective"] == "time");
  CHECK(a["advice"]["idle_workers"] == 0);
  CHECK(a["largest"]["blocks"] == 1);
  CHECK(a["largest"]["idle_workers"] == 3);
  CHECK(a["advice"]["predicted_seconds"].get<double>() < a["largest"]["predicted_seconds"].get<double>());
  const auto text = run_dwsr(base);
  CHECK(text.out.find("(the fastest that fits)") != std::string::npos);
  CHECK(text.out.find("largest chunk   64x64x256") != std::string::npos);
  const auto largest = nlohmann::json::parse(run_dwsr(base + " --objective largest --json").out);
  CHECK(largest["objective"] == "largest");
  CHECK(largest["advice"] == a["largest"]);
}

TEST_CASE("advise without a profile keeps the largest chunk and says how to get one") {
  temp_dir dir;
  const auto r = run_dwsr("advise envelope --shape 64x64x256 --memory 64MiB -w 4");
  REQUIRE(r.status == 0);
  CHECK(r.out.find("run `dwsr calibrate` to advise for time") != std::string::npos);
  expect_user_error(run_dwsr("advise envelope --shape 64x64x256 --memory 64MiB --objective time"),
                    "--objective time needs a time profile");
  expect_user_error(run_dwsr("plan envelope --shape 8x8x64 --profile " + (dir / "none.json").string()),
                    "none.json' cannot be read; run `dwsr calibrate`");
  std::ofstream(dir / "bad.json") << "{\"format\": \"dwsr-time-profile\", \"version\": 1";
  expect_user_error(run_dwsr("plan envelope --shape 8x8x64 --profile " + (dir / "bad.json").string()),
                    "is not valid JSON");
  expect_user_error(run_dwsr("calibrate --quick --ops nope -o " + (dir / "p.json").string()),
                    "unknown operator 'nope'");
  CHECK(!std::filesystem::exists(dir / "p.json"));
}
