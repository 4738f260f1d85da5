// `dwsr train`: a small run writes policy.json (LinUCB's matrices) and
// curve.csv, the same bytes from the same seed; jobs from a dataset
// directory; bad options fail in one line and leave nothing behind.

#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli_runner.hpp"

using namespace dwsr::test;

namespace {

std::string text_of(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// The rows of curve.csv after its header, each split at commas.
std::vector<std::vector<std::string>> csv_rows(const std::filesystem::path& p) {
  std::istringstream in(text_of(p));
  std::string line;
  std::getline(in, line);
  CHECK(line == "step,mean_reward,oom_rate");
  std::vector<std::vector<std::string>> rows;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::istringstream cells_in(line);
    for (std::string c; std::getline(cells_in, c, ',');) cells.push_back(c);
    rows.push_back(cells);
  }
  return rows;
}

}  // namespace

TEST_CASE("dwsr train writes the learned policy and its learning curve, the same from the same seed") {
  temp_dir dir;
  const std::string common =
      "train --env peak_predict --policy linucb --steps 3000 --window 1000 --rows 600 --eval-episodes 500 --seed 4 -o ";
  const auto r = run_dwsr(common + (dir / "a").string());
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("linucb trained 3000 steps") != std::string::npos);
  CHECK(r.err.empty());  // progress only on a terminal

  const auto doc = nlohmann::json::parse(text_of(dir / "a" / "policy.json"));
  CHECK(doc["format"] == "dwsr policy 1");
  CHECK(doc["policy"] == "linucb");
  CHECK(doc["bins"] == 16);
  CHECK(doc["bin_peaks"].size() == 16);
  const auto features = doc["features"].size();
  REQUIRE(features > 0);
  const auto& arms = doc["linucb"]["arms"];
  REQUIRE(arms.size() == 16);
  std::uint64_t pulls = 0;
  for (const auto& arm : arms) {
    CHECK(arm["a_inverse"].size() == features + 1);
    CHECK(arm["a_inverse"][0].size() == features + 1);
    CHECK(arm["theta"].size() == features + 1);
    pulls += arm["pulls"].get<std::uint64_t>();
  }
  CHECK(pulls == 3000);
  CHECK(doc["test"]["episodes"] == 500);
  CHECK(doc["pool"]["jobs"] == 600);

  const auto rows = csv_rows(dir / "a" / "curve.csv");
  REQUIRE(rows.size() == 3);
  CHECK(rows[0][0] == "1000");
  CHECK(rows[2][0] == "3000");
  for (const auto& row : rows) {
    CHECK(row.size() == 3);
    CHECK(std::stod(row[1]) <= 0);  // PeakPredict's rewards are costs
  }

  REQUIRE(run_dwsr(common + (dir / "b").string()).status == 0);
  CHECK(text_of(dir / "a" / "curve.csv") == text_of(dir / "b" / "curve.csv"));
  auto same = nlohmann::json::parse(text_of(dir / "b" / "policy.json"));
  CHECK(same["linucb"] == doc["linucb"]);
  CHECK(same["test"] == doc["test"]);
}

TEST_CASE("dwsr train takes jobs from a dataset directory and trains the random policy") {
  temp_dir dir;
  REQUIRE(run_dwsr("dataset --rows 400 --graphs 8 --seed 2 -a exact --no-csv -o " + (dir / "jobs").string()).status ==
          0);
  const auto r = run_dwsr(
      "train --env peak_predict --policy random --steps 500 --window 200 --eval-episodes 100 "
      "--dataset " +
      (dir / "jobs").string() + " --json -o " + (dir / "out").string());
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  const auto summary = nlohmann::json::parse(r.out);
  CHECK(summary["policy"] == "random");
  const auto doc = nlohmann::json::parse(text_of(dir / "out" / "policy.json"));
  CHECK(doc["pool"]["dataset"] == (dir / "jobs").string());
  CHECK(!doc.contains("linucb"));
  CHECK(csv_rows(dir / "out" / "curve.csv").size() == 3);  // 200, 400, 500
}

TEST_CASE("dwsr train refuses bad options in one line and writes nothing") {
  temp_dir dir;
  const auto out = " -o " + (dir / "out").string();
  expect_user_error(run_dwsr("train --env chunk_schedule --steps 10" + out), "--env 'chunk_schedule': expected");
  expect_user_error(run_dwsr("train --policy ppo --steps 10" + out), "--policy 'ppo': expected random or linucb");
  expect_user_error(run_dwsr("train --steps 0" + out), "--steps");
  expect_user_error(run_dwsr("train --steps 10 --dataset " + (dir / "missing").string() + out), "columns.json");
  expect_user_error(run_dwsr("train --steps 10 --rows 200 --label peak_bogus" + out), "peak_bogus");
  expect_user_error(run_dwsr("train --steps 10"), "--out");
  CHECK(!std::filesystem::exists(dir / "out"));
  // An output path that is a file: nothing is written beside it.
  std::ofstream(dir / "file") << "x";
  expect_user_error(run_dwsr("train --steps 10 --rows 200 -o " + (dir / "file").string()), "file");
  CHECK(text_of(dir / "file") == "x");
}
