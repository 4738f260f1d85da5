// The leaderboard's suites, estimators and runs file: the job list is the
// same from the same seed and its splits follow their rules; `plan` is the
// meta execution's held bytes; volume_linear recovers lines it is fitted on;
// runs.csv reads back what it wrote and refuses what it did not; a board of
// runs measured exactly as planned scores plan at zero error; linucb and
// reinforce, the RL environments' learners, learn the runs' peaks from
// rewards alone.

#include <catch2/catch.hpp>

#include <fstream>
#include <set>

#include "dwsr/estimators/linucb.hpp"
#include "dwsr/estimators/plan.hpp"
#include "dwsr/estimators/reinforce.hpp"
#include "dwsr/estimators/volume_linear.hpp"
#include "dwsr/leaderboard/board.hpp"
#include "dwsr/leaderboard/runs.hpp"
#include "dwsr/leaderboard/suite.hpp"
#include "dwsr/operators/catalogue.hpp"
#include "io/temp_dir.hpp"

using namespace dwsr;
using namespace dwsr::leaderboard;

namespace {

void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}

/// Runs of `s` whose measured peak is `factor` x plan's held bytes.
std::vector<run_record> planned_runs(const suite& s, double factor = 1) {
  std::vector<run_record> runs;
  for (const auto& j : s.jobs) {
    const auto e = estimators::plan{}.predict(j.view());
    runs.push_back({j.id, j.operators, j.cube, j.chunk, j.workers, j.threads, j.test, std::uint64_t(e.held * factor), 0,
                    0, std::uint64_t(e.worker_peak), 0.5});
  }
  return runs;
}

}  // namespace

TEST_CASE("a suite is the same list from the same seed, and its splits follow their rules") {
  const auto& r = operators::catalogue();
  const auto a = make_suite(r, "quick", 0), b = make_suite(r, "quick", 0), c = make_suite(r, "quick", 1);
  REQUIRE(a.jobs.size() == 24);
  CHECK(a.held_out.size() == 2);
  bool differs = false;
  std::size_t large = 0, random_test = 0;
  for (std::size_t k = 0; k < a.jobs.size(); ++k) {
    const auto &x = a.jobs[k], &y = b.jobs[k], &z = c.jobs[k];
    CHECK(x.operators == y.operators);
    CHECK(x.cube == y.cube);
    CHECK(x.chunk == y.chunk);
    CHECK(x.workers == y.workers);
    CHECK(x.threads == y.threads);
    CHECK(x.test == y.test);
    differs = differs || x.operators != z.operators || !(x.cube == z.cube);
    // The extrapolation split: train volumes at most the base, test ones 4-8x it (less the rounding to a square).
    const double v = double(x.cube.voxels()), base = double(a.spec.base_voxels);
    if (x.in_test(split::extrapolation)) {
      CHECK(v >= 3.5 * base);
      CHECK(v <= 8 * base);
      ++large;
    } else {
      CHECK(v <= base);
    }
    // The family split: test exactly when a node belongs to a held-out family.
    bool held = false;
    for (const auto& f : a.held_out) held = held || x.families.count(f) > 0;
    CHECK(x.in_test(split::family) == held);
    random_test += x.in_test(split::random);
    CHECK(x.workers >= 1);
    CHECK(x.workers <= 2);
    CHECK(x.threads <= 2);
    CHECK(x.cube_seed == x.id + 1);
  }
  CHECK(differs);
  CHECK(large > 0);
  CHECK(large < 24);
  CHECK(random_test > 0);
  CHECK(random_test < 24);
  CHECK(make_suite(r, "full", 0).jobs.size() == 216);
  CHECK_THROWS_AS(make_suite(r, "medium", 0), invalid_input);
}

TEST_CASE("the plan estimator gives the meta execution's peaks, volume_linear the lines it was fitted on") {
  const auto s = make_suite(operators::catalogue(), "quick", 0);
  const auto& j = s.jobs.front();
  const chunked_schedule sched(*j.g, j.cube, {.chunk = j.chunk, .workers = j.workers, .threads = j.threads});
  const auto p = plan_chunked(sched);
  double held = 0, worst = 0;
  for (auto pages : model_peaks(sched, p, "host_pages")) held += double(pages);
  for (const auto& w : p.workers) worst = std::max(worst, double(w.peak));
  const auto e = estimators::plan{}.predict(j.view());
  CHECK(e.held == held);
  CHECK(e.worker_peak == worst);
  CHECK(!e.upper);
  auto no_graph = j.view();
  no_graph.g = nullptr;
  CHECK_THROWS_AS(estimators::plan{}.predict(no_graph), invalid_input);

  // Two graphs, each on an exact line; a third seen once; an unseen one falls back to the pooled line.
  auto job = [](std::string ops, std::uint64_t side) {
    estimate_job v;
    v.operators = std::move(ops);
    v.cube = {side, side, 256};
    v.workers = 2;
    return v;
  };
  std::vector<labelled_run> runs;
  for (std::uint64_t side : {16, 32, 64}) {
    const double x = double(side * side * 256 * 4);
    runs.push_back({job("envelope", side), 1000 + 2 * x});
    runs.push_back({job("gaussian", side), 3 * x});
  }
  runs.push_back({job("median", 32), 5.0 * 32 * 32 * 256 * 4});
  estimators::volume_linear v;
  CHECK_THROWS_AS(v.predict(job("envelope", 8)), invalid_input);  // before fit
  v.fit(runs);
  const double x = 128.0 * 128 * 256 * 4;
  CHECK(v.predict(job("envelope", 128)).held == Approx(1000 + 2 * x));
  CHECK(v.predict(job("envelope", 128)).worker_peak == Approx((1000 + 2 * x) / 2));
  CHECK(v.predict(job("gaussian", 128)).held == Approx(3 * x));
  CHECK(v.predict(job("median", 128)).held == Approx(5 * x));  // through the origin
  const auto pooled = v.predict(job("chaos", 128)).held;
  CHECK(pooled > 2 * x);
  CHECK(pooled < 5 * x);
  CHECK_THROWS_AS(v.fit({}), invalid_input);

  // online: the largest measured/predicted ratio of the last runs it saw.
  estimators::online<estimators::volume_linear> o({}, 2);
  CHECK(o.name() == "online_volume_linear");
  o.fit(runs);  // every training run on its own line: ratios of 1
  CHECK(o.correction() == Approx(1));
  const auto base = v.predict(job("envelope", 128)).held;
  o.observe(job("envelope", 128), 1.5 * base);
  CHECK(o.correction() == Approx(1.5));
  CHECK(o.predict(job("envelope", 128)).held == Approx(1.5 * base));
  o.observe(job("envelope", 64), 0.5 * v.predict(job("envelope", 64)).held);
  CHECK(o.correction() == Approx(1.5));
  o.observe(job("envelope", 32), 0.8 * v.predict(job("envelope", 32)).held);
  CHECK(o.correction() == Approx(0.8));  // the 1.5 left the window of 2
  CHECK_THROWS_AS(o.observe(job("envelope", 32), -1), invalid_input);
  CHECK_THROWS_AS(estimators::online<estimators::plan>({}, 0), invalid_input);

  // Once a job's first blocks ran: their measurement times the largest
  // whole-run/first-blocks ratio of the last runs that had one (1 before any).
  static_assert(EarlyCorrectedEstimator<estimators::online<estimators::volume_linear>>);
  static_assert(!EarlyCorrectedEstimator<estimators::volume_linear>);
  CHECK(o.first_blocks_correction() == 1);
  const auto early = o.predict(job("envelope", 128), 1e6);
  CHECK(early.held == Approx(1e6));
  CHECK(early.worker_peak == Approx(0.5e6));  // the base's share of the workers kept
  CHECK(o.predict(job("envelope", 128), 0).held == o.predict(job("envelope", 128)).held);  // not measured
  o.observe(job("envelope", 64), 3e6, 2e6);
  CHECK(o.first_blocks_correction() == Approx(1.5));
  CHECK(3e6 / v.predict(job("envelope", 64)).held < 0.8);
  CHECK(o.correction() == Approx(0.8));  // the whole run's history: this run's ratio beside the 0.8
  o.observe(job("envelope", 64), 2e6, 2e6);
  CHECK(o.first_blocks_correction() == Approx(1.5));  // the largest of the window
  CHECK(o.predict(job("envelope", 128), 1e6).held == Approx(1.5e6));
  o.observe(job("envelope", 64), 2e6);  // no first blocks measured: that history keeps its runs
  CHECK(o.first_blocks_correction() == Approx(1.5));
  CHECK_THROWS_WITH(o.predict(job("envelope", 128), -1), Catch::Contains("its first blocks measured at"));
  CHECK_THROWS_AS(o.observe(job("envelope", 32), 1e6, std::nan("")), invalid_input);
  std::vector<labelled_run> early_runs{{job("envelope", 32), 4e6, 1e6}, {job("envelope", 64), 9e6, 3e6}};
  o.fit(early_runs);  // fit starts both histories anew
  CHECK(o.first_blocks_correction() == Approx(4));

  runs.back().held = -1;
  CHECK_THROWS_AS(v.fit(runs), invalid_input);
}

namespace {

/// A PeakPredict estimator fitted on the full suite's jobs labelled with the
/// plan's held bytes: it predicts a run's held bytes for each, earns more
/// reward than the best constant prediction by `margin`, and the same seed
/// gives the same policy.
template <class Estimator>
void check_peak_bandit(Estimator e, Estimator again, const std::string& name, double margin) {
  const auto s = make_suite(operators::catalogue(), "full", 0);
  std::vector<labelled_run> runs;
  for (const auto& j : s.jobs) runs.push_back({j.view(), estimators::plan{}.predict(j.view()).held});
  CHECK(e.name() == name);
  CHECK_THROWS_WITH(e.predict(runs[0].job), Catch::Contains("predict before fit"));
  CHECK_THROWS_AS(e.fit({}), invalid_input);
  e.fit(runs);
  std::set<double> held;
  std::vector<double> sorted;
  for (const auto& r : runs) held.insert(r.held), sorted.push_back(r.held);
  std::sort(sorted.begin(), sorted.end());
  // Its reward on the runs it learned from, against the best constant prediction among the runs' quantiles.
  double reward = 0, best_constant = -1e300;
  for (const auto& r : runs) {
    const auto p = e.predict(r.job);
    CHECK(held.count(p.held) == 1);  // a bin's upper edge: a run's held bytes
    CHECK(p.worker_peak == Approx(p.held / double(r.job.workers)));
    reward += env::peak_reward(p.held, r.held, env::peak_oom_reward) / double(runs.size());
  }
  for (double q : {0.5, 0.75, 0.9, 1.0}) {
    const double c = sorted[std::size_t(q * double(sorted.size() - 1))];
    double sum = 0;
    for (const auto& r : runs) sum += env::peak_reward(c, r.held, env::peak_oom_reward) / double(runs.size());
    best_constant = std::max(best_constant, sum);
  }
  INFO(name << " " << reward << ", best constant " << best_constant);
  CHECK(reward > best_constant + margin);
  // The same seed, the same policy.
  again.fit(runs);
  for (std::size_t k = 0; k < runs.size(); k += 17)
    CHECK(again.predict(runs[k].job).held == e.predict(runs[k].job).held);
  runs[0].held = 0;
  CHECK_THROWS_WITH(e.fit(runs),
                    Catch::Contains(name + ": run of job") && Catch::Contains("expected a finite number > 0"));
}

}  // namespace

TEST_CASE("linucb: PeakPredict's bandit as an estimator predicts train runs' held bytes, learned from rewards") {
  check_peak_bandit(estimators::linucb({.seed = 3}), estimators::linucb({.seed = 3}), "linucb", 1);
}

TEST_CASE("reinforce: PeakPredict learned by policy gradient, as an estimator, learned from rewards") {
  estimators::reinforce_options o{.seed = 3};
  o.policy.policy.seed = 3;  // the network's defaults kept
  check_peak_bandit(estimators::reinforce(o), estimators::reinforce(o), "reinforce", 0.25);
  const auto s = make_suite(operators::catalogue(), "quick", 0);
  const std::vector<labelled_run> one{{s.jobs[0].view(), 1e6}};
  CHECK_THROWS_WITH(estimators::reinforce({.policy = {.batch = 0}}).fit(one), Catch::Contains("batch of 0 steps"));
}

TEST_CASE("runs.csv reads back what it wrote and refuses what it did not write") {
  const auto s = make_suite(operators::catalogue(), "quick", 3);
  auto runs = planned_runs(s);
  for (std::size_t k = 0; k < runs.size(); ++k) runs[k].first_blocks_rss_increase = 1000 * k;
  test::temp_dir dir;
  write_text(dir / "runs.csv", runs_csv(runs));
  const auto back = read_runs(dir / "runs.csv");
  REQUIRE(back.size() == runs.size());
  for (std::size_t k = 0; k < runs.size(); ++k) {
    CHECK(back[k].job == runs[k].job);
    CHECK(back[k].operators == runs[k].operators);
    CHECK(back[k].cube == runs[k].cube);
    CHECK(back[k].chunk == runs[k].chunk);
    CHECK(back[k].test == runs[k].test);
    CHECK(back[k].rss_increase == runs[k].rss_increase);
    CHECK(back[k].event_peak == runs[k].event_peak);
    CHECK(back[k].first_blocks_rss_increase == runs[k].first_blocks_rss_increase);
  }
  const std::string header(runs_header);
  // A runs.csv of an earlier dwsr, without the first blocks' column: read, not measured.
  write_text(dir / "older.csv", std::string(runs_header_without_first_blocks) +
                                    "\n3,envelope,8x8x128,8x8x128,1,1,0,0,1,40960,50000,9040,30000,0.1\n");
  const auto older = read_runs(dir / "older.csv");
  REQUIRE(older.size() == 1);
  CHECK(older[0].rss_increase == 40960);
  CHECK(older[0].test[2]);
  CHECK(older[0].first_blocks_rss_increase == 0);
  auto refused = [&](const std::string& text, const std::string& expected) {
    write_text(dir / "bad.csv", text);
    CHECK_THROWS_WITH(read_runs(dir / "bad.csv"), Catch::Contains(expected));
  };
  refused("job,predicted_bytes\n1,2\n", "line 1: expected the header");
  refused(header + "\n", "holds no runs");
  refused(header + "\n0,envelope,8x8x128\n", "line 2: 3 fields; expected 15");
  refused(header + "\nx,envelope,8x8x128,8x8x128,1,1,0,0,0,10,0,0,0,0.1,0\n", "field 1 'x'; expected a job id");
  refused(header + "\n0,envelope,8x8,8x8x128,1,1,0,0,0,10,0,0,0,0.1,0\n", "field 3 '8x8'; expected a cube");
  refused(header + "\n0,envelope,8x8x128,8x8x128,1,1,2,0,0,10,0,0,0,0.1,0\n", "field 7 '2'; expected 0 or 1");
  refused(header + "\n0,envelope,8x8x128,8x8x128,1,1,0,0,0,-4,0,0,0,0.1,0\n", "field 10 '-4'; expected bytes");
  refused(header + "\n0,envelope,8x8x128,8x8x128,1,1,0,0,0,10,0,0,0,0.1,x\n", "field 15 'x'; expected bytes");
  refused(std::string(runs_header_without_first_blocks) +
              "\n3,envelope,8x8x128,8x8x128,1,1,0,0,1,40960,50000,9040,30000,0.1,7\n",
          "line 2: 15 fields; expected 14");
  CHECK_THROWS_AS(read_runs(dir / "missing.csv"), io_error);
}

TEST_CASE("a board of runs measured as planned scores plan at zero error, and refuses another suite's runs") {
  const auto s = make_suite(operators::catalogue(), "quick", 0);
  const auto b = score_board(s, planned_runs(s));
  REQUIRE(b.rows.size() == 15);  // five estimators (XGBoost's are in boosted_estimators_test) x three splits
  for (const auto& r : b.rows) {
    CHECK(r.metrics.runs > 0);
    CHECK(r.train_runs + r.metrics.runs == s.jobs.size());
    if (r.estimator != "plan") continue;
    CHECK(r.metrics.median_rel_error == 0);
    CHECK(r.metrics.p95_rel_error == 0);
    CHECK(r.metrics.under_rate == 0);
    CHECK(r.metrics.safe_failure_upper == 0);
  }
  // 10 % more than planned: plan under-predicts every run.
  const auto over = score_board(s, planned_runs(s, 1.1));
  for (const auto& r : over.rows)
    if (r.estimator == "plan") CHECK(r.metrics.under_rate == 1);
  // Runs whose first blocks held 80 % of their peak: online_volume_linear
  // predicts each test run from its first blocks, times the 1.25 its training
  // runs taught it, exactly.
  auto early = planned_runs(s);
  for (auto& r : early) r.first_blocks_rss_increase = r.rss_increase / 5 * 4;
  for (const auto& r : score_board(s, early).rows)
    if (r.estimator == "online_volume_linear") {
      CHECK(r.metrics.median_rel_error < 1e-4);
      CHECK(r.metrics.under_rate == 0);
    }
  for (const auto& r : b.rows)  // without first blocks, the history of whole runs alone
    if (r.estimator == "online_volume_linear") CHECK(r.metrics.median_rel_error > 0.01);
  // The external path scores the same predictions the same way.
  std::vector<double> held;
  for (const auto& j : s.jobs) held.push_back(estimators::plan{}.predict(j.view()).held);
  const auto ext = score_external("mine", planned_runs(s), held, all_splits);
  REQUIRE(ext.size() == 3);
  CHECK(ext[1].metrics.median_rel_error == 0);
  CHECK(ext[1].metrics.runs == b.rows[1].metrics.runs);

  // A run the probe did not resolve is left out of fits and scores.
  auto runs = planned_runs(s);
  runs[0].rss_increase = 0;
  const auto left_out = score_board(s, runs);
  for (std::size_t k = 0; k < left_out.rows.size(); ++k)
    CHECK(left_out.rows[k].train_runs + left_out.rows[k].metrics.runs == s.jobs.size() - 1);

  runs.pop_back();
  CHECK_THROWS_AS(score_board(s, runs), invalid_input);
  CHECK_THROWS_AS(score_board(make_suite(operators::catalogue(), "quick", 5), planned_runs(s)), invalid_input);
}
