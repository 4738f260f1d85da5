// PeakPredict: rewards on hand-made jobs (exact, over, under), invalid
// actions, the spaces' bounds, determinism from a seed, train and test parts
// that never share a job, and the dataset-directory loader's errors.

#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include "dwsr/env/peak_predict.hpp"
#include "dwsr/graph/dataset_files.hpp"
#include "dwsr/operators/catalogue.hpp"
#include "io/temp_dir.hpp"

using namespace dwsr;
using namespace dwsr::env;

namespace {

/// Jobs with two features; `peaks` in train unless listed in `test`.
std::shared_ptr<const peak_jobs> hand_made(const std::vector<double>& peaks, const std::set<std::size_t>& test = {}) {
  auto p = std::make_shared<peak_jobs>();
  p->features = {{"a", "count", ""}, {"b", "bytes", ""}};
  p->label = "peak_requested";
  p->split = "random";
  for (std::size_t j = 0; j < peaks.size(); ++j) {
    p->x.push_back(float(j));
    p->x.push_back(float(peaks[j]));
    p->peak.push_back(peaks[j]);
    p->test.push_back(test.count(j) ? 1 : 0);
    p->row.push_back(j);
  }
  return p;
}

/// A small generated pool, built once for the tests that share it.
const dataset& small_dataset() {
  static const dataset d = [] {
    dataset_options o;
    o.rows = 160;
    o.seed = 7;
    o.random_graphs = 16;
    o.allocators = {"exact", "host_pages"};
    return make_dataset(operators::catalogue(), o);
  }();
  return d;
}

std::shared_ptr<const peak_jobs> small_pool() {
  static const auto p = std::make_shared<const peak_jobs>(jobs_from_dataset(small_dataset()));
  return p;
}

/// One episode's record, for bitwise comparisons.
struct record {
  std::vector<float> obs;
  double reward;
  std::uint64_t job;
  bool operator==(const record&) const = default;
};

/// `episodes` episodes of a peak_predict reset once with `seed`, with
/// actions drawn from a stream of their own.
std::vector<record> trajectory(std::uint64_t seed, std::size_t episodes) {
  peak_predict e(small_pool());
  const auto& box = e.action_space();
  std::vector<float> obs(e.observation_space().size());
  xoshiro256ss actions(99);
  std::vector<record> out;
  peak_info info;
  for (std::size_t k = 0; k < episodes; ++k) {
    e.reset(k == 0 ? std::optional<std::uint64_t>(seed) : std::nullopt, obs, info);
    const float a = float(actions.uniform(box.low[0], box.high[0]));
    const auto r = e.step(std::span<const float>(&a, 1), obs, info);
    out.push_back({obs, r.reward, info.job});
  }
  return out;
}

}  // namespace

TEST_CASE("PeakPredict rewards: exact 0, over-prediction its relative excess, under-prediction the OOM cost") {
  // One train job of 1024 bytes (2^10); the test jobs of 512 and 4096 set the box's bounds.
  peak_predict e(hand_made({512, 1024, 4096}, {0, 2}));
  std::vector<float> obs(2);
  peak_info info;
  auto step = [&](float log2_bytes) {
    e.reset(1, obs, info);
    return e.step(std::span<const float>(&log2_bytes, 1), obs, info);
  };
  CHECK(e.action_space() == box_space::scalar(9, 12));
  CHECK(step(10).reward == 0.0);
  CHECK(info.predicted == 1024);
  CHECK_FALSE(info.oom);
  auto r = step(11);  // 2048 bytes: one job's worth idle
  CHECK(r == step_result{-1.0, true, false});
  CHECK(info.predicted == 2048);
  CHECK(step(12).reward == -3.0);
  CHECK(step(10.5f).reward == Approx(-(std::sqrt(2.0) - 1)).epsilon(1e-12));
  r = step(9.999f);  // a hair under the true peak: out of memory
  CHECK(r == step_result{peak_oom_reward, true, false});
  CHECK(info.oom);
  CHECK_FALSE(info.invalid_action);
  CHECK(info.true_peak == 1024);
  CHECK(obs == std::vector<float>{1, 1024});
}

TEST_CASE("PeakPredict's discrete variant predicts the quantile bins' upper edges of the train peaks") {
  // Train peaks 1..4 KiB (one test job of 8 KiB); two bins: the median and the largest.
  peak_predict_bins e(hand_made({1024, 2048, 3072, 4096, 8192}, {4}), {.bins = 2});
  CHECK(e.action_space() == discrete_space{2});
  CHECK(e.bin_peaks() == std::vector<double>{2048, 4096});
  std::vector<float> obs(2);
  peak_info info;
  std::set<double> seen;
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    e.reset(seed, obs, info);
    const double truth = info.true_peak;
    seen.insert(truth);
    const auto r0 = e.step(0, obs, info);
    CHECK(info.predicted == 2048);
    CHECK(r0.reward == (truth > 2048 ? peak_oom_reward : -(2048 - truth) / truth));
    e.reset(seed, obs, info);
    CHECK(e.step(1, obs, info).reward == -(4096 - truth) / truth);
  }
  CHECK(seen == std::set<double>{1024, 2048, 3072, 4096});  // the train part only

  peak_predict_bins test(hand_made({1024, 2048, 3072, 4096, 8192}, {4}), {.part = pool_part::test, .bins = 2});
  test.reset(0, obs, info);
  CHECK(info.true_peak == 8192);
  CHECK(test.step(1, obs, info).reward == peak_oom_reward);  // above every train edge
  CHECK(info.oom);
}

TEST_CASE("PeakPredict gives an invalid action the OOM cost and says so, never an exception") {
  const auto jobs = hand_made({1024, 4096});
  peak_predict box(jobs, {.oom_reward = -7});
  std::vector<float> obs(2);
  peak_info info;
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (const auto& action : std::vector<std::vector<float>>{{nan}, {inf}, {-inf}, {9.5f}, {12.5f}, {}, {11, 11}}) {
    box.reset(3, obs, info);
    CHECK(box.step(action, obs, info) == step_result{-7, true, false});
    CHECK(info.invalid_action);
    CHECK_FALSE(info.oom);
  }
  peak_predict_bins bins(jobs, {.bins = 4});
  for (std::int64_t k : {std::int64_t{-1}, std::int64_t{4}, std::numeric_limits<std::int64_t>::max()}) {
    bins.reset(3, obs, info);
    CHECK(bins.step(k, obs, info) == step_result{peak_oom_reward, true, false});
    CHECK(info.invalid_action);
  }
  bins.reset(3, obs, info);
  bins.step(3, obs, info);
  CHECK_FALSE(info.invalid_action);
}

TEST_CASE("PeakPredict misuse throws: a step without an episode, a wrong buffer, an empty part, bad options") {
  peak_predict e(hand_made({1024, 4096}));
  std::vector<float> obs(2), wrong(3);
  peak_info info;
  const float a = 11;
  CHECK_THROWS_AS(e.step(std::span<const float>(&a, 1), obs, info), invalid_input);
  e.reset(0, obs, info);
  e.step(std::span<const float>(&a, 1), obs, info);
  CHECK_THROWS_WITH(e.step(std::span<const float>(&a, 1), obs, info), Catch::Contains("expected reset() first"));
  CHECK_THROWS_WITH(e.reset(0, wrong, info), Catch::Contains("expected 2"));
  CHECK_THROWS_WITH(peak_predict(hand_made({1024}), {.part = pool_part::test}),
                    Catch::Contains("test part of split 'random' has no job"));
  CHECK_THROWS_AS(peak_predict(hand_made({1024}), {.oom_reward = 1}), invalid_input);
  CHECK_THROWS_AS(peak_predict_bins(hand_made({1024}), {.bins = 0}), invalid_input);
}

TEST_CASE("PeakPredict's observations lie within the observation space, bounds from the pool") {
  peak_predict e(small_pool());
  const auto& space = e.observation_space();
  REQUIRE(space.size() == small_dataset().features.size());
  std::vector<float> obs(space.size());
  peak_info info;
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    e.reset(seed, obs, info);
    CHECK(space.contains(obs));
    const auto& box = e.action_space();
    CHECK(box.low[0] <= std::log2(info.true_peak));
    CHECK(std::log2(info.true_peak) <= box.high[0]);
  }
  const auto& p = *small_pool();
  for (std::size_t k = 0; k < p.dim(); ++k) {  // tight: some job reaches each bound
    bool low = false, high = false;
    for (std::size_t j = 0; j < p.size(); ++j) {
      low |= p.x[j * p.dim() + k] == space.low[k];
      high |= p.x[j * p.dim() + k] == space.high[k];
    }
    CHECK((low && high));
  }
}

TEST_CASE("PeakPredict is bit-reproducible from a seed; other seeds give other trajectories") {
  const auto a = trajectory(11, 200), b = trajectory(11, 200), c = trajectory(12, 200);
  CHECK(a == b);
  CHECK(a != c);
  // Bitwise: the rewards' bits too (== on doubles would equate 0 and -0).
  for (std::size_t k = 0; k < a.size(); ++k)
    CHECK(std::bit_cast<std::uint64_t>(a[k].reward) == std::bit_cast<std::uint64_t>(b[k].reward));
  std::set<std::uint64_t> jobs;
  for (const auto& r : a) jobs.insert(r.job);
  CHECK(jobs.size() > 20);  // the draws cover the pool
}

TEST_CASE("PeakPredict's train and test parts never share a job (nor a group of rows)") {
  const auto& d = small_dataset();
  for (const char* split : {"random", "family", "extrapolation"}) {
    const auto pool = std::make_shared<const peak_jobs>(jobs_from_dataset(d, {.split = split}));
    std::set<std::uint64_t> seen[2];
    for (auto part : {pool_part::train, pool_part::test}) {
      peak_predict e(pool, {.part = part});
      std::vector<float> obs(pool->dim());
      peak_info info;
      e.reset(5, obs, info);
      for (int k = 0; k < 400; ++k) {
        e.reset(std::nullopt, obs, info);
        CHECK(pool->test[info.job] == (part == pool_part::test));
        seen[part == pool_part::test].insert(info.job);
      }
    }
    CHECK(!seen[0].empty());
    CHECK(!seen[1].empty());
    for (auto j : seen[1]) CHECK(seen[0].count(j) == 0);
    if (std::string(split) == "random") {  // whole groups: no graph and cube on both sides
      std::set<std::uint64_t> train_groups;
      for (auto j : seen[0]) train_groups.insert(pool->row[j] / d.options.rows_per_group);
      for (auto j : seen[1]) CHECK(train_groups.count(pool->row[j] / d.options.rows_per_group) == 0);
    }
  }
}

TEST_CASE("PeakPredict picks the label by name and leaves out rows without one") {
  const auto& d = small_dataset();
  const auto requested = jobs_from_dataset(d);
  CHECK(requested.size() == d.rows());
  CHECK(generate_peak_jobs(operators::catalogue(), d.options).x == requested.x);  // the same draw
  const auto reserved = jobs_from_dataset(d, {.label = "peak_reserved_host_pages"});
  CHECK(reserved.size() == d.rows());
  CHECK(reserved.peak != requested.peak);
  CHECK_THROWS_WITH(jobs_from_dataset(d, {.label = "peak"}),
                    Catch::Contains("no label 'peak'") && Catch::Contains("peak_requested"));
  CHECK_THROWS_WITH(jobs_from_dataset(d, {.split = "groups"}), Catch::Contains("expected random, family"));
}

TEST_CASE("PeakPredict's jobs load from a dataset directory as generated, with clear errors") {
  const auto& d = small_dataset();
  test::temp_dir dir;
  write_dataset(d, dir.path(), false);
  const auto loaded = load_peak_jobs(dir.path(), {.split = "extrapolation"});
  const auto direct = jobs_from_dataset(d, {.split = "extrapolation"});
  CHECK(loaded.x == direct.x);
  CHECK(loaded.peak == direct.peak);
  CHECK(loaded.test == direct.test);
  CHECK(loaded.row == direct.row);
  CHECK(loaded.features.size() == direct.features.size());
  CHECK(loaded.features.back().name == direct.features.back().name);

  SECTION("a missing file") {
    std::filesystem::remove(dir / "labels.npy");
    CHECK_THROWS_WITH(load_peak_jobs(dir.path()), Catch::Contains("labels.npy") && Catch::Contains("file not found"));
  }
  SECTION("a truncated file") {
    std::filesystem::resize_file(dir / "features.npy", std::filesystem::file_size(dir / "features.npy") - 4);
    CHECK_THROWS_AS(load_peak_jobs(dir.path()), io_error);
    CHECK_THROWS_WITH(load_peak_jobs(dir.path()), Catch::Contains("features.npy") && Catch::Contains("expected"));
  }
  SECTION("a file of another dtype") {
    std::filesystem::copy_file(dir / "features.npy", dir / "splits.npy",
                               std::filesystem::copy_options::overwrite_existing);
    CHECK_THROWS_WITH(load_peak_jobs(dir.path()),
                      Catch::Contains("splits.npy") && Catch::Contains("'<f4'; expected '|u1'"));
  }
  SECTION("not a .npy file") {
    std::ofstream(dir / "splits.npy") << "hello";
    CHECK_THROWS_WITH(load_peak_jobs(dir.path()), Catch::Contains("splits.npy") && Catch::Contains("truncated"));
  }
  SECTION("corrupt or missing columns.json") {
    std::ofstream(dir / "columns.json") << "{\"format\": ";
    CHECK_THROWS_AS(load_peak_jobs(dir.path()), io_error);
    CHECK_THROWS_WITH(load_peak_jobs(dir.path()), Catch::Contains("columns.json") && Catch::Contains("not valid JSON"));
    std::filesystem::remove(dir / "columns.json");
    CHECK_THROWS_WITH(load_peak_jobs(dir.path()), Catch::Contains("columns.json") && Catch::Contains("not found"));
  }
  SECTION("another task") {
    auto doc = dataset_columns(d);
    doc["task"] = "chunk";
    std::ofstream(dir / "columns.json") << doc.dump();
    CHECK_THROWS_AS(load_peak_jobs(dir.path()), invalid_input);
    CHECK_THROWS_WITH(load_peak_jobs(dir.path()), Catch::Contains("expected task peak"));
  }
  SECTION("a label the dataset lacks") {
    CHECK_THROWS_WITH(load_peak_jobs(dir.path(), {.label = "peak_reserved_cupy_pool"}),
                      Catch::Contains("no label 'peak_reserved_cupy_pool'"));
  }
}
