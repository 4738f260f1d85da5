// PeakPredict's real mode without running anything: which test jobs it
// picks, the configuration it rebuilds from a job's features (whose plan
// must give the pool's label), and how it compares rewards. The runs
// themselves: rss_cli_test.cpp.

#include <catch2/catch.hpp>

#include <cmath>

#include "dwsr/env/peak_real.hpp"
#include "dwsr/graph/dataset_files.hpp"
#include "dwsr/operators/catalogue.hpp"
#include "io/temp_dir.hpp"

using namespace dwsr;
using namespace dwsr::env;

namespace {

const dataset& pool_dataset() {
  static const dataset d = [] {
    dataset_options o;
    o.rows = 2000;
    o.allocators = {"exact", "host_pages"};
    return make_dataset(operators::catalogue(), o);
  }();
  return d;
}

double feature(const peak_jobs& p, std::uint64_t j, const char* name) {
  for (std::size_t k = 0; k < p.dim(); ++k)
    if (p.features[k].name == name) return p.x[j * p.dim() + k];
  FAIL("no feature " << name);
  return 0;
}

}  // namespace

TEST_CASE("real mode picks small test jobs of dwsr's own execution, whose rebuilt plan gives the pool's label") {
  const auto pool = jobs_from_dataset(pool_dataset());
  const auto chosen = peak_real_jobs(operators::catalogue(), pool, 100, {.cores = 2});
  REQUIRE(chosen.size() >= 2);
  for (auto j : chosen) {
    INFO("job " << j);
    CHECK(pool.test[j] == 1);
    CHECK(feature(pool, j, "exec_dask") == 0);
    CHECK(feature(pool, j, "workers") <= 2);
    CHECK(feature(pool, j, "input_bytes") <= double(real_max_cube_bytes));
    const auto job = peak_real_job(operators::catalogue(), pool, j, j);
    CHECK(job.cube == shape3{std::uint64_t(feature(pool, j, "inlines")), std::uint64_t(feature(pool, j, "crosslines")),
                             std::uint64_t(feature(pool, j, "samples"))});
    CHECK(job.options.threads == std::size_t(feature(pool, j, "threads")));
    const chunked_schedule s(job.g, job.cube, job.options);
    const auto plan = plan_chunked(s);
    std::uint64_t worst = 0, pages = 0;
    for (const auto& w : plan.workers) worst = std::max(worst, w.peak);
    for (auto p : model_peaks(s, plan, "host_pages")) pages += p;
    CHECK(double(worst) == pool.peak[j]);  // what run_peak_real checks after each run
    CHECK(pages >= real_min_pages_bytes);
  }
  // Fewer cores, fewer workers; a smaller cube limit, fewer jobs; the first n in order.
  for (auto j : peak_real_jobs(operators::catalogue(), pool, 100, {.cores = 1}))
    CHECK(feature(pool, j, "workers") == 1);
  CHECK(peak_real_jobs(operators::catalogue(), pool, 100, {.max_cube_bytes = 1 << 20, .cores = 2}).empty());
  CHECK(peak_real_jobs(operators::catalogue(), pool, 1, {.cores = 2}) == std::vector<std::uint64_t>{chosen.front()});
  CHECK(peak_real_jobs(operators::catalogue(), pool, 0).empty());
}

TEST_CASE("real mode refuses a label a real run cannot give and a job without a graph") {
  const auto reserved = jobs_from_dataset(pool_dataset(), {.label = "peak_reserved_host_pages"});
  CHECK_THROWS_WITH(peak_real_jobs(operators::catalogue(), reserved, 2),
                    Catch::Contains("labelled 'peak_reserved_host_pages'") && Catch::Contains("peak_requested"));

  // A dataset directory without graphs.npy loads, without graphs: nothing to run.
  test::temp_dir dir;
  write_dataset(pool_dataset(), dir.path(), false);
  const auto with = load_peak_jobs(dir.path());
  CHECK(with.graph == jobs_from_dataset(pool_dataset()).graph);
  CHECK(with.graphs.size() == pool_dataset().graphs.size());
  std::filesystem::remove(dir / "graphs.npy");
  const auto without = load_peak_jobs(dir.path());
  CHECK(without.graph == std::vector<std::int64_t>(without.size(), -1));
  CHECK(peak_real_jobs(operators::catalogue(), without, 100).empty());
  CHECK_THROWS_WITH(peak_real_job(operators::catalogue(), without, 0, 0), Catch::Contains("has no graph"));
  CHECK_THROWS_WITH(peak_real_job(operators::catalogue(), without, without.size(), 0), Catch::Contains("of a pool of"));
}

TEST_CASE("real mode scores a prediction against the measured peak as PeakPredict scores it against the label") {
  auto row = [](double truth, double predicted, std::uint64_t pages, std::uint64_t increase) {
    peak_real_row r{.true_peak = truth, .predicted = predicted};
    r.m.simulated_pages = pages;
    r.m.rss_increase = increase;
    return r;
  };
  // Exact pages: the same reward. 10 % more measured: an over-prediction of 20 % shrinks to 1.2/1.1 - 1.
  // A prediction 5 % over a truth measured 10 % higher: out of memory for real, not in simulation.
  const std::vector<peak_real_row> rows{row(100, 120, 1000, 1000), row(100, 120, 1000, 1100),
                                        row(100, 105, 1000, 1100)};
  CHECK(rows[1].real_peak() == Approx(110));
  const auto c = peak_real_compare(rows, -10);
  CHECK(c.mean_simulated == Approx((-0.2 - 0.2 - 0.05) / 3));
  CHECK(c.mean_real == Approx((-0.2 - (120.0 / 110 - 1) - 10) / 3));
  CHECK(c.oom_disagreements == 1);
  CHECK(c.mean_abs_difference == Approx((0 + std::fabs(0.2 - (120.0 / 110 - 1)) + 9.95) / 3));
  const auto a = agree(rows);
  CHECK(a.mean == Approx(0.2 / 3));
  CHECK(a.worst == Approx(0.1));
  const auto csv = peak_real_csv(rows, -10);
  CHECK(csv.rfind("job,operators,cube,chunk,workers,threads,true_peak_bytes,predicted_bytes,", 0) == 0);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 4);
}
