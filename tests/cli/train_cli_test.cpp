// `dwsr train`: a small run writes policy.json (LinUCB's matrices, or
// REINFORCE's network for chunk_schedule and gpu_pack) and curve.csv, the same bytes from
// the same seed; jobs from a dataset directory; bad options fail in one line
// and leave nothing behind; GpuPack's real mode with a stand-in runner.
// (ChunkSchedule's real mode: rss_cli_test.cpp.)

#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli_runner.hpp"
#include "dwsr/env/chunk_schedule.hpp"
#include "dwsr/env/chunk_training.hpp"
#include "dwsr/env/pack_training.hpp"
#include "dwsr/env/peak_training.hpp"
#include "dwsr/operators/catalogue.hpp"

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

TEST_CASE("dwsr train --policy reinforce learns PeakPredict's bins by policy gradient, the network in policy.json") {
  temp_dir dir;
  const std::string common =
      "train --policy reinforce --steps 3000 --window 1000 --rows 600 --eval-episodes 500 --seed 4 --lr 0.02 "
      "--batch 8 --json -o ";
  const auto r = run_dwsr(common + (dir / "a").string());
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  const auto summary = nlohmann::json::parse(r.out);
  CHECK(summary["policy"] == "reinforce");
  const auto doc = nlohmann::json::parse(text_of(dir / "a" / "policy.json"));
  CHECK(doc["policy"] == "reinforce");
  CHECK(!doc.contains("linucb"));
  const auto& state = doc["reinforce"];
  CHECK(state["batch"] == 8);
  CHECK(state["network"]["updates"] == 3000 / 8);  // one update per 8 one-step episodes
  CHECK(state["learning_rate"] == 0.02);
  CHECK(state["network"]["hidden"] == 0);  // pg_bandit's linear default, not the episodic agents' 32 units
  CHECK(csv_rows(dir / "a" / "curve.csv").size() == 3);
  // The network reads back; the same options and seed write the same bytes.
  const auto p = dwsr::env::read_peak_reinforce(dir / "a" / "policy.json");
  CHECK(p.updates() == 3000 / 8);
  REQUIRE(run_dwsr(common + (dir / "b").string()).status == 0);
  CHECK(text_of(dir / "a" / "policy.json") == text_of(dir / "b" / "policy.json"));
  CHECK_THROWS_WITH(dwsr::env::read_peak_policy(dir / "a" / "policy.json"),
                    Catch::Contains("holds a 'reinforce' policy; expected linucb"));
}

TEST_CASE("dwsr train learns a reserved peak of the generated pool, host_pages among its allocators") {
  temp_dir dir;
  const auto r = run_dwsr("train --rows 200 --steps 100 --eval-episodes 10 --label peak_reserved_host_pages -o " +
                          (dir / "out").string());
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  const auto doc = nlohmann::json::parse(text_of(dir / "out" / "policy.json"));
  CHECK(doc["pool"]["label"] == "peak_reserved_host_pages");
  CHECK(doc["pool"]["generated"]["allocators"] == nlohmann::json::array({"exact", "host_pages"}));
}

TEST_CASE("dwsr train refuses bad options in one line and writes nothing") {
  temp_dir dir;
  const auto out = " -o " + (dir / "out").string();
  expect_user_error(run_dwsr("train --env gpu_bogus --steps 10" + out),
                    "--env 'gpu_bogus': expected peak_predict, chunk_schedule or gpu_pack");
  expect_user_error(run_dwsr("train --policy ppo --steps 10" + out),
                    "--policy 'ppo': expected random, linucb or reinforce");
  expect_user_error(run_dwsr("train --steps 0" + out), "--steps");
  expect_user_error(run_dwsr("train --steps 10 --dataset " + (dir / "missing").string() + out), "columns.json");
  expect_user_error(run_dwsr("train --steps 10 --rows 200 --label peak_bogus" + out), "peak_bogus");
  expect_user_error(run_dwsr("train --steps 10"), "--out");
  // Real mode: a label no real run gives, more jobs than the pool has small ones, another environment's.
  expect_user_error(run_dwsr("train --steps 10 --rows 200 --label peak_reserved_host_pages --real 1" + out),
                    "labelled 'peak_reserved_host_pages'; expected peak_requested");
  expect_user_error(run_dwsr("train --steps 10 --rows 200 --real 50" + out), "--real 50: the pool's test part has");
  expect_user_error(run_dwsr("train --env gpu_pack --real 2" + out),
                    "--env gpu_pack --real 2 needs --real-runner COMMAND");
  expect_user_error(run_dwsr("train --env gpu_pack --real-runner x" + out), "--real-runner applies only with --real N");
  expect_user_error(run_dwsr("train --env gpu_pack --real 1 --real-runner x --real-max-mib 8" + out),
                    "--real-max-mib does not apply to --env gpu_pack");
  expect_user_error(run_dwsr("train --env chunk_schedule --real 1 --real-runner x" + out),
                    "--real-runner does not apply to --env chunk_schedule");
  expect_user_error(run_dwsr("train --env gpu_pack --kinds 20 --real 5 --real-runner x" + out),
                    "--real 5: the pool's test part has 4 kinds");
  CHECK(!std::filesystem::exists(dir / "out"));
  // An output path that is a file: nothing is written beside it.
  std::ofstream(dir / "file") << "x";
  expect_user_error(run_dwsr("train --steps 10 --rows 200 -o " + (dir / "file").string()), "file");
  CHECK(text_of(dir / "file") == "x");
}

TEST_CASE("dwsr train --env chunk_schedule trains REINFORCE, writes both files, the same bytes from the same seed") {
  temp_dir dir;
  const std::string common =
      "train --env chunk_schedule --policy reinforce --tasks 60 --pool-seed 2 --episodes 400 --window 100 --hidden 8 "
      "--lr 0.02 --batch 8 --eval-episodes 200 --seed 3 -o ";
  const auto r = run_dwsr(common + (dir / "a").string());
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("reinforce trained 400 episodes") != std::string::npos);
  CHECK(r.err.empty());
  REQUIRE(run_dwsr(common + (dir / "b").string()).status == 0);
  CHECK(text_of(dir / "a" / "policy.json") == text_of(dir / "b" / "policy.json"));
  CHECK(text_of(dir / "a" / "curve.csv") == text_of(dir / "b" / "curve.csv"));
  CHECK(!std::filesystem::exists(dir / "a" / "real.csv"));

  const auto doc = nlohmann::json::parse(text_of(dir / "a" / "policy.json"));
  CHECK(doc["format"] == "dwsr policy 1");
  CHECK(doc["env"] == "chunk_schedule");
  CHECK(doc["pool"]["tasks"] == 60);
  CHECK(doc["pool"]["seed"] == 2);
  CHECK(doc["training"]["episodes"] == 400);
  CHECK(doc["training"]["hidden"] == 8);
  CHECK(doc["training"]["batch"] == 8);
  for (const char* s : {"test", "random_test", "advisor_test"}) {
    CHECK(doc[s]["episodes"] == 200);
    for (const char* k : {"mean_return", "mean_length", "oom_rate", "truncated_rate"}) CHECK(doc[s].contains(k));
  }
  std::istringstream curve(text_of(dir / "a" / "curve.csv"));
  std::string line;
  std::getline(curve, line);
  CHECK(line == "episode,step,mean_return,mean_length");
  std::size_t rows = 0;
  while (std::getline(curve, line)) ++rows;
  CHECK(rows == 4);

  // The policy reads back and acts as the one trained: its greedy actions on the test tasks.
  auto policy = dwsr::env::read_chunk_policy(dir / "a" / "policy.json");
  auto again = dwsr::env::read_chunk_policy(dir / "b" / "policy.json");
  CHECK(policy.parameters() == again.parameters());
  const auto tasks = std::make_shared<const dwsr::env::chunk_tasks>(
      dwsr::env::generate_chunk_tasks(dwsr::operators::catalogue(), {.tasks = 60, .seed = 2}));
  dwsr::env::chunk_schedule test(tasks, {.part = dwsr::env::pool_part::test});
  std::vector<float> obs(dwsr::env::chunk_observation_size);
  std::vector<std::uint8_t> mask(dwsr::env::chunk_candidates);
  dwsr::env::chunk_info info;
  double total = 0;
  for (std::uint64_t e = 0; e < 200; ++e) {
    if (e == 0)
      test.reset(3, obs, info);
    else
      test.reset(std::nullopt, obs, info);
    for (;;) {
      test.action_mask(mask);
      const auto a = policy.greedy(obs, mask);
      CHECK(a == again.greedy(obs, mask));
      const auto s = test.step(a, obs, info);
      total += s.reward;
      if (s.terminated || s.truncated) break;
    }
  }
  // The same test episodes as `dwsr train` scored: the same mean return.
  CHECK(total / 200 == Approx(doc["test"]["mean_return"].get<double>()).epsilon(1e-12));

  const auto j = run_dwsr("train --env chunk_schedule --policy random --tasks 60 --eval-episodes 50 --json -o " +
                          (dir / "random").string());
  REQUIRE(j.status == 0);
  const auto summary = nlohmann::json::parse(j.out);
  CHECK(summary["policy"] == "random");
  CHECK(summary["test"] == summary["random_test"]);
  CHECK(summary.contains("advisor_test"));
  CHECK(text_of(dir / "random" / "curve.csv") == "episode,step,mean_return,mean_length\n");  // scored, not trained
}

TEST_CASE("dwsr train --env chunk_schedule refuses options of another environment or policy in one line") {
  temp_dir dir;
  const auto out = " -o " + (dir / "out").string();
  const std::string env = "train --env chunk_schedule --tasks 20 ";
  expect_user_error(run_dwsr(env + "--bins 4" + out), "--bins does not apply to --env chunk_schedule");
  expect_user_error(run_dwsr(env + "--rows 40 --alpha 2" + out),
                    "--rows, --alpha do not apply to --env chunk_schedule");
  expect_user_error(run_dwsr(env + "--policy linucb" + out),
                    "--policy 'linucb': expected random, advisor or reinforce for --env chunk_schedule");
  expect_user_error(run_dwsr(env + "--policy advisor --episodes 10" + out),
                    "--episodes does not apply to --policy advisor");
  expect_user_error(run_dwsr(env + "--steps 100 --episodes 10" + out), "--steps and --episodes");
  expect_user_error(run_dwsr(env + "--real-max-mib 8" + out), "--real-max-mib");
  expect_user_error(run_dwsr(env + "--policy advisor --real 2 --real-max-mib 1" + out), "--real 2");
  expect_user_error(run_dwsr("train --env peak_predict --hidden 4 --steps 10" + out),
                    "--hidden does not apply to --policy linucb");
  expect_user_error(run_dwsr("train --policy reinforce --episodes 10" + out),
                    "--episodes does not apply to --env peak_predict");
  expect_user_error(run_dwsr("train --policy reinforce --group 4" + out),
                    "--group does not apply to --env peak_predict");
  CHECK(!std::filesystem::exists(dir / "out"));
}

TEST_CASE("dwsr train --env gpu_pack trains on the train kinds and scores first fit and random on the test kinds") {
  temp_dir dir;
  const std::string common =
      "train --env gpu_pack --kinds 20 --pool-seed 3 --devices h100-80gb,h100-80gb/3g.40gb --arrivals 12 "
      "--episodes 64 --window 32 --hidden 4 --eval-episodes 30 --json -o ";
  const auto r = run_dwsr(common + (dir / "a").string());
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  const auto summary = nlohmann::json::parse(r.out);
  CHECK(summary["env"] == "gpu_pack");
  CHECK(summary["policy"] == "reinforce");
  CHECK(summary["training"]["episodes"] == 64);
  // GpuPack's own defaults: episodes in groups of 8 traces, each against its group, an entropy bonus.
  CHECK(summary["training"]["group"] == 8);
  CHECK(summary["training"]["baseline"] == "group");
  CHECK(summary["training"]["entropy"] == 0.02);
  CHECK(summary["training"]["hidden"] == 4);
  CHECK(summary.contains("first_fit_test"));
  CHECK(summary.contains("sampled_test"));
  const auto doc = nlohmann::json::parse(text_of(dir / "a" / "policy.json"));
  CHECK(doc["environment"]["devices"] == nlohmann::json{"h100-80gb", "h100-80gb/3g.40gb"});
  CHECK(doc["pool"]["allocator"] == "torch_cuda_caching");
  CHECK(doc["test"] == summary["test"]);
  // The policy acts on the environment's observations: it reads back for them.
  const auto back = dwsr::env::read_pack_policy(dir / "a" / "policy.json");
  CHECK(back.parameters().size() > 0);
  REQUIRE(run_dwsr(common + (dir / "b").string()).status == 0);
  CHECK(text_of(dir / "a" / "policy.json") == text_of(dir / "b" / "policy.json"));
  CHECK(text_of(dir / "a" / "curve.csv") == text_of(dir / "b" / "curve.csv"));

  const auto out = " -o " + (dir / "bad").string();
  const std::string env = "train --env gpu_pack --kinds 20 ";
  expect_user_error(run_dwsr(env + "--tasks 30" + out), "--tasks does not apply to --env gpu_pack");
  expect_user_error(run_dwsr(env + "--policy advisor" + out),
                    "--policy 'advisor': expected random, first_fit, worst_fit or reinforce for --env gpu_pack");
  expect_user_error(run_dwsr(env + "--group 3" + out), "--group 3: expected a divisor of --batch (16)");
  expect_user_error(run_dwsr(env + "--episodes 100" + out),
                    "--group 8: expected a divisor of --batch (16) and of --episodes (100)");
  expect_user_error(run_dwsr(env + "--policy worst_fit --group 2" + out),
                    "--group does not apply to --policy worst_fit");
  expect_user_error(run_dwsr(env + "--devices h100-80gb,x100" + out), "unknown device 'x100'");
  expect_user_error(run_dwsr(env + "--time-cost seconds" + out), "--time-cost 'seconds'");
  expect_user_error(run_dwsr(env + "--policy first_fit --hidden 3" + out),
                    "--hidden does not apply to --policy first_fit");
  expect_user_error(run_dwsr("train --env chunk_schedule --kinds 20" + out),
                    "--kinds does not apply to --env chunk_schedule");
  CHECK(!std::filesystem::exists(dir / "bad"));

  // Worst fit, only scored: its score is the document's test, beside random and first fit on the same episodes.
  const auto w =
      run_dwsr("train --env gpu_pack --eval-episodes 30 --policy worst_fit --json -o " + (dir / "w").string());
  INFO("stderr: " << w.err);
  REQUIRE(w.status == 0);
  const auto wdoc = nlohmann::json::parse(text_of(dir / "w" / "policy.json"));
  CHECK(wdoc["policy"] == "worst_fit");
  CHECK(wdoc["training"]["episodes"] == 0);
  CHECK(wdoc["test"]["episodes"] == 30);
  // The default pool's test kinds: a head job held back blocks the queue behind it (docs/env.md).
  CHECK(wdoc["test"]["mean_return"].get<double>() > wdoc["first_fit_test"]["mean_return"].get<double>() + 5);
  CHECK(!wdoc.contains("reinforce"));
}

TEST_CASE("dwsr train --env gpu_pack --real replays each kind through the runner and writes real.csv") {
  temp_dir dir;
  // A stand-in for the GPU runner: a probe that sees the exact live bytes above a 1000-byte context.
  std::ofstream(dir / "runner.sh") << "awk -F, 'NR == 1 { print \"step,device_bytes\"; print \"start,1000\"; next }\n"
                                      "  { if ($1 == \"alloc\") { live += $3; size[$2] = $3 } else live -= size[$2]; "
                                      "print NR - 2 \",\" 1000 + live }'"
                                      " \"$1\" > \"$2\"\n";
  const std::string common =
      "train --env gpu_pack --kinds 20 --pool-seed 3 --policy first_fit --eval-episodes 10 "
      "--real 2 --real-runner '/bin/sh " +
      (dir / "runner.sh").string() + "' ";
  const auto r = run_dwsr(common + "--json -o " + (dir / "a").string());
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  const auto summary = nlohmann::json::parse(r.out);
  const auto& real = summary["real"];
  CHECK(real["kinds"] == nlohmann::json{4, 9});
  CHECK(real["file"] == "real.csv");
  CHECK(real["first_fit"]["episodes"] == 10);
  CHECK(real["chosen"] == real["first_fit"]);
  const auto doc = nlohmann::json::parse(text_of(dir / "a" / "policy.json"));
  CHECK(doc["real"] == real);
  CHECK(doc["pool"]["context_overhead"] == 512 << 20);
  std::istringstream csv(text_of(dir / "a" / "real.csv"));
  std::string line;
  std::getline(csv, line);
  CHECK(line.rfind("kind,name,events,simulated_peak_bytes,measured_peak_bytes,ratio,", 0) == 0);
  for (const char* kind : {"4,", "9,"}) {
    REQUIRE(std::getline(csv, line));
    CHECK(line.rfind(kind, 0) == 0);
  }
  CHECK(!std::getline(csv, line));
  CHECK(!std::filesystem::exists(dir / "a" / ".dwsr-train-real"));
  REQUIRE(run_dwsr(common + "--json -o " + (dir / "b").string()).status == 0);
  CHECK(text_of(dir / "a" / "policy.json") == text_of(dir / "b" / "policy.json"));

  // Lines: what was measured against what was simulated.
  const auto lines = run_dwsr(common + "-o " + (dir / "c").string());
  REQUIRE(lines.status == 0);
  CHECK(lines.out.find("real: 2 kinds replayed") != std::string::npos);
  CHECK(lines.out.find("wrote " + (dir / "c").string() + "/policy.json, curve.csv, real.csv") != std::string::npos);

  // The context the replays measured, given to the model: the profiles take it.
  const auto sized = run_dwsr(common + "--context-overhead 518MiB --json -o " + (dir / "e").string());
  REQUIRE(sized.status == 0);
  CHECK(nlohmann::json::parse(text_of(dir / "e" / "policy.json"))["pool"]["context_overhead"] == 518 << 20);
  auto first_peak = [&](const char* run) {  // kind 4's simulated_peak_bytes, real.csv's fourth column
    std::istringstream in(text_of(dir / run / "real.csv"));
    std::string row, cell;
    std::getline(in, row);
    std::getline(in, row);
    std::istringstream cells(row);
    for (int c = 0; c < 4; ++c) std::getline(cells, cell, ',');
    return std::stoull(cell);
  };
  CHECK(first_peak("e") - first_peak("a") == 6 << 20);

  // A runner that fails: its last line named, nothing written.
  std::ofstream(dir / "runner.sh") << "echo 'no CUDA device here' >&2; exit 1\n";
  expect_user_error(run_dwsr(common + "-o " + (dir / "d").string()),
                    "failed on job kind 4 (exit 1, signal 0): no CUDA device here");
  CHECK(!std::filesystem::exists(dir / "d"));
}
