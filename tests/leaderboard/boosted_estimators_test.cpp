// The XGBoost estimators (volume_xgboost, features_gbt) and their booster:
// they recover what they were fitted on, refit to the same trees from the
// same runs, stay within the range they saw (the thesis's extrapolation
// failure, which the leaderboard's extrapolation split measures), and refuse
// bad input with the project's errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "dwsr/estimators/features_gbt.hpp"
#include "dwsr/estimators/plan.hpp"
#include "dwsr/estimators/volume_xgboost.hpp"
#include "dwsr/graph/graph.hpp"
#include "dwsr/operators/catalogue.hpp"

using namespace dwsr;

namespace {

estimate_job volume_job(std::string ops, std::uint64_t side, std::size_t workers = 1) {
  estimate_job v;
  v.operators = std::move(ops);
  v.cube = {side, side, 256};
  v.workers = workers;
  return v;
}

}  // namespace

TEST_CASE("boosted trees fit a step function, refit to the same bits, and refuse mismatched sizes") {
  std::vector<float> x, y;
  for (int i = 0; i < 64; ++i) {
    x.push_back(float(i));
    y.push_back(i < 32 ? 1.0f : 5.0f);
  }
  estimators::detail::boosted_trees t, u;
  CHECK_FALSE(t.fitted());
  CHECK_THROWS_AS(t.predict(x), invalid_input);
  t.fit(x, 1, y, {});
  u.fit(x, 1, y, {});
  const auto p = t.predict(x), q = u.predict(x);
  REQUIRE(p.size() == 64);
  CHECK(p == q);
  CHECK(p[0] == Approx(1.0).margin(0.01));
  CHECK(p[63] == Approx(5.0).margin(0.01));
  CHECK_THROWS_AS(t.fit(x, 2, y, {}), invalid_input);  // 64 values are not 64 rows of 2
  CHECK_THROWS_AS(t.fit({}, 1, {}, {}), invalid_input);
}

TEST_CASE("volume_xgboost: one ensemble per graph on the input volume, the pooled one elsewhere, no extrapolation") {
  std::vector<labelled_run> runs;
  for (std::uint64_t side = 16; side <= 128; side += 8) {
    const double bytes = double(side * side * 256 * 4);
    runs.push_back({volume_job("envelope", side, 2), 2 * bytes});
    runs.push_back({volume_job("gaussian", side), 3 * bytes});
  }
  runs.push_back({volume_job("median", 32), 5.0 * 32 * 32 * 256 * 4});  // seen once: the pooled ensemble
  estimators::volume_xgboost v;
  CHECK(v.name() == "volume_xgboost");
  CHECK_THROWS_AS(v.predict(volume_job("envelope", 32)), invalid_input);  // before fit
  v.fit(runs);
  for (std::uint64_t side : {24, 64, 120}) {
    const double bytes = double(side * side * 256 * 4);
    INFO("side " << side);
    CHECK(v.predict(volume_job("envelope", side, 2)).held == Approx(2 * bytes).epsilon(0.05));
    CHECK(v.predict(volume_job("envelope", side, 2)).worker_peak == Approx(bytes).epsilon(0.05));
    CHECK(v.predict(volume_job("gaussian", side)).held == Approx(3 * bytes).epsilon(0.05));
  }
  // Eight times the largest training volume: trees repeat the largest they saw.
  const double largest = 3.0 * 128 * 128 * 256 * 4;
  const double beyond = v.predict(volume_job("gaussian", 362)).held;
  CHECK(beyond == Approx(largest).epsilon(0.05));
  CHECK(beyond < 0.2 * 3.0 * 362 * 362 * 256 * 4);
  // A graph never seen takes the pooled ensemble: between the graphs' values.
  const double pooled = v.predict(volume_job("chaos", 64)).held, bytes = 64.0 * 64 * 256 * 4;
  CHECK(pooled > 1.5 * bytes);
  CHECK(pooled < 3.5 * bytes);
  // The same runs, the same trees.
  estimators::volume_xgboost w;
  w.fit(runs);
  CHECK(w.predict(volume_job("chaos", 64)).held == pooled);
  CHECK_THROWS_AS(v.fit({}), invalid_input);
  runs.back().held = 0;
  CHECK_THROWS_WITH(v.fit(runs), Catch::Contains("holds 0") && Catch::Contains("expected a finite number > 0"));
}

TEST_CASE("features_gbt: gradient-boosted trees on the dataset's feature vector of each job") {
  const auto& reg = operators::catalogue();
  std::vector<graph> graphs;
  for (const char* op : {"envelope", "gaussian", "gst_3d_dip"}) graphs.push_back(graph::single(reg, op));
  // Jobs over three graphs, cubes, chunks and W, labelled by the plan estimator.
  std::vector<labelled_run> runs;
  std::uint64_t id = 0;
  for (const auto& g : graphs)
    for (std::uint64_t side : {24, 32, 48, 64})
      for (std::size_t workers : {1, 2}) {
        estimate_job j;
        j.id = id++;
        j.g = &g;
        j.operators = g.nodes().front().spec.op;
        j.cube = {side, side, 128};
        j.chunk = {side / 2, side, 128};
        j.workers = workers;
        runs.push_back({j, estimators::plan{}.predict(j).held});
      }
  const auto width = estimators::features_gbt::features(runs.front().job).size();
  CHECK(width > 30);
  for (const auto& r : runs) CHECK(estimators::features_gbt::features(r.job).size() == width);
  estimators::features_gbt f;
  CHECK(f.name() == "features_gbt");
  CHECK_THROWS_AS(f.predict(runs.front().job), invalid_input);  // before fit
  f.fit(runs);
  for (const auto& r : runs) {
    INFO("job " << r.job.id << " " << r.job.operators);
    CHECK(f.predict(r.job).held == Approx(r.held).epsilon(0.1));
  }
  estimators::features_gbt again;
  again.fit(runs);
  CHECK(again.predict(runs[5].job).held == f.predict(runs[5].job).held);
  auto no_graph = runs.front().job;
  no_graph.g = nullptr;
  CHECK_THROWS_WITH(f.predict(no_graph), Catch::Contains("has no graph"));
}
