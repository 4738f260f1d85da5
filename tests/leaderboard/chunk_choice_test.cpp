// Chunk choosing on the leaderboard: the candidates are the suite's three
// chunkings, an estimator picks the first whose estimate fits the budget, the
// budget makes the advisor pick inline halves, and the picks' runs score
// out-of-memory counts, makespans and idle shares with known answers.

#include <catch2/catch.hpp>

#include "dwsr/estimators/plan.hpp"
#include "dwsr/leaderboard/board.hpp"
#include "dwsr/leaderboard/chunk_choice.hpp"
#include "dwsr/operators/catalogue.hpp"

using namespace dwsr;
using namespace dwsr::leaderboard;

namespace {

/// Held bytes by chunking: 100 for the whole cube, 60 for halves, 30 for quarters.
struct stepped {
  std::string_view name() const noexcept { return "stepped"; }
  estimate predict(const estimate_job& j) const {
    const double held = j.chunk == j.cube ? 100 : j.chunk.crosslines == j.cube.crosslines ? 60 : 30;
    return {.held = held, .worker_peak = held, .upper = {}};
  }
};

run_record measured(std::uint64_t job, std::uint64_t rss, double seconds) {
  run_record r;
  r.job = job;
  r.rss_increase = rss;
  r.seconds = seconds;
  return r;
}

}  // namespace

TEST_CASE("chunk choosing: the suite's chunkings, the first that fits, a budget between whole and halves") {
  const auto c = candidate_chunks({9, 9, 128});
  CHECK(c[0] == shape3{9, 9, 128});
  CHECK(c[1] == shape3{5, 9, 128});
  CHECK(c[2] == shape3{5, 5, 128});

  const auto s = make_suite(operators::catalogue(), "quick", 0);
  const auto& j = s.jobs.front();
  const auto one = with_chunk(j, c[2]);
  CHECK(one.workers == 1);
  CHECK(one.threads == j.threads);
  CHECK(one.chunk == c[2]);

  stepped e;
  CHECK(choose_chunk(e, j, 200) == 0u);
  CHECK(choose_chunk(e, j, 100) == 0u);  // fits exactly
  CHECK(choose_chunk(e, j, 70) == 1u);
  CHECK(choose_chunk(e, j, 30) == 2u);
  CHECK(!choose_chunk(e, j, 29));

  // The advisor (plan) picks the halves wherever they hold less than the whole cube.
  const estimators::plan p;
  for (const auto& job : s.jobs) {
    const auto k = candidate_chunks(job.cube);
    const double whole = p.predict(with_chunk(job, k[0]).view()).held;
    const double halves = p.predict(with_chunk(job, k[1]).view()).held;
    const double budget = choice_budget(job);
    INFO("job " << job.id << " " << job.operators << ": whole " << whole << ", halves " << halves);
    CHECK(budget == Approx(std::sqrt(whole * halves)));
    CHECK(choose_chunk(p, job, budget) == (halves < whole ? 1u : 0u));
  }
}

TEST_CASE("score_choices: out of memory, idle share, makespan beside the advisor's, refusals") {
  const auto s = make_suite(operators::catalogue(), "quick", 0);
  const std::vector<std::size_t> test{0, 1, 2};
  std::vector<std::optional<std::size_t>> chosen(s.jobs.size()), advisor(s.jobs.size());
  chosen[0] = 0;                             // the whole cube: runs out of memory
  chosen[1] = 1;                             // as the advisor, within the budget
  advisor[0] = advisor[1] = advisor[2] = 1;  // chosen[2] stays empty: a refusal
  const std::vector<double> budgets(s.jobs.size(), 1000.0);
  choice_runs runs;
  runs[{0, 0}] = measured(0, 1600, 2.0);
  runs[{0, 1}] = measured(0, 900, 3.0);
  runs[{1, 1}] = measured(1, 750, 4.0);
  runs[{2, 1}] = measured(2, 500, 5.0);

  const auto r = score_choices("mine", split::family, s, test, chosen, advisor, budgets, runs, 100);
  CHECK(r.estimator == "mine");
  CHECK(r.part == split::family);
  CHECK(r.jobs == 3);
  CHECK(r.refused == 1);
  CHECK(r.out_of_memory == 1);
  CHECK(r.as_advisor == 1);
  CHECK(r.within_budget == 1);
  CHECK(r.seconds == 6.0);          // 2 + 4: its two picks
  CHECK(r.advisor_seconds == 7.0);  // 3 + 4: the advisor's on the same jobs
  CHECK(r.idle_share == Approx(0.25));

  // Within the probe's resolution of the budget is not out of memory.
  runs[{0, 0}] = measured(0, 1050, 2.0);
  const auto near = score_choices("mine", split::family, s, test, chosen, advisor, budgets, runs, 100);
  CHECK(near.out_of_memory == 0);
  CHECK(near.within_budget == 2);
  CHECK(near.idle_share == Approx(0.125));  // (0 + 0.25) / 2

  // The advisor scored against itself.
  const auto self = score_choices("plan", split::family, s, test, advisor, advisor, budgets, runs, 100);
  CHECK(self.as_advisor == 3);
  CHECK(self.seconds == self.advisor_seconds);

  runs.erase({1, 1});
  CHECK_THROWS_WITH(score_choices("mine", split::family, s, test, chosen, advisor, budgets, runs, 100),
                    Catch::Contains("no run of job 1 with chunk"));
}

TEST_CASE("a board's picks: every estimator picks for every test job, the runs they need listed once") {
  const auto s = make_suite(operators::catalogue(), "quick", 0);
  std::vector<run_record> runs;
  for (const auto& j : s.jobs) {
    const auto e = estimators::plan{}.predict(j.view());
    runs.push_back({j.id, j.operators, j.cube, j.chunk, j.workers, j.threads, j.test, std::uint64_t(e.held), 0, 0,
                    std::uint64_t(e.worker_peak), 0.5});
  }
  const auto b = score_board(s, runs);
  REQUIRE(b.budgets.size() == s.jobs.size());
  REQUIRE(b.test.size() == 3);
  const auto wanted = picked_runs(b);
  REQUIRE(!wanted.empty());
  for (std::size_t n = 1; n < wanted.size(); ++n) CHECK(wanted[n - 1] < wanted[n]);

  // Runs measured exactly as planned: the advisor never runs out of memory.
  choice_runs picked;
  for (auto [k, c] : wanted) {
    const auto job = with_chunk(s.jobs[k], candidate_chunks(s.jobs[k].cube)[c]);
    picked[{s.jobs[k].id, c}] = measured(job.id, std::uint64_t(estimators::plan{}.predict(job.view()).held), 1.0);
  }
  const auto rows = choice_board(s, b, picked);
  REQUIRE(rows.size() == 3 * b.predictions.size());
  for (const auto& r : rows) {
    CHECK(r.jobs == b.test[std::size_t(r.part)].size());
    if (r.estimator != "plan") continue;
    CHECK(r.refused == 0);
    CHECK(r.out_of_memory == 0);
    CHECK(r.as_advisor == r.jobs);
    CHECK(r.idle_share > 0);
  }
  const auto table = choices_markdown(rows);
  CHECK(table.find("### Chunk choosing: extrapolation") != std::string::npos);
  CHECK(table.find("| plan | ") != std::string::npos);
}
