#pragma once
/// \file Chunk choosing on the leaderboard: estimates used for what users use
/// them for, picking a chunk under a memory budget, then judged by running
/// the pick for real.
///
/// Each test job is shown to every estimator on one worker (so that the
/// process's peak is the worker's) with its T threads and each of the suite's
/// three chunkings; the estimator picks the one with the fewest blocks whose
/// estimated held bytes fit the budget, or refuses when none fits. `plan`'s
/// pick is dwsr's advisor (graph/advisor.hpp maximises the block the same way).
/// The budget is the geometric mean of the plan's held bytes for the whole
/// cube and for inline halves, so the advisor picks the halves: an estimate
/// too low picks the whole cube and runs out of memory, one too high splits
/// finer than needed, into more blocks and more halo.
///
/// A pick runs out of memory when its run's peak RSS increase passes the
/// budget by more than the probe's resolution; its idle share is what it
/// left of the budget. The makespan of an estimator is the wall time of its
/// picks run one after another, beside the advisor's on the same jobs.

#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "dwsr/estimators/plan.hpp"
#include "dwsr/leaderboard/runs.hpp"
#include "dwsr/leaderboard/suite.hpp"

namespace dwsr::leaderboard {

/// A job on one worker with chunk `chunk`: what chunk choosing runs.
inline suite_job with_chunk(const suite_job& j, shape3 chunk) {
  auto k = j;
  k.chunk = chunk;
  k.workers = 1;
  return k;
}

/// The budget for choosing `j`'s chunk (see the file comment).
inline double choice_budget(const suite_job& j) {
  const auto c = candidate_chunks(j.cube);
  const estimators::plan p;
  return std::sqrt(p.predict(with_chunk(j, c[0]).view()).held * p.predict(with_chunk(j, c[1]).view()).held);
}

/// The candidate (candidate_chunks' index) `e` picks for `j` under `budget`:
/// the first whose estimate fits; nullopt when none does.
template <class E>
std::optional<std::size_t> choose_chunk(E& e, const suite_job& j, double budget) {
  const auto c = candidate_chunks(j.cube);
  for (std::size_t k = 0; k < c.size(); ++k)
    if (e.predict(with_chunk(j, c[k]).view()).held <= budget) return k;
  return std::nullopt;
}

/// The runs chunk choosing needs, by job and candidate.
using choice_runs = std::map<std::pair<std::uint64_t, std::size_t>, run_record>;

/// One estimator's picks on one split's test jobs, judged by their runs.
struct choice_row {
  std::string estimator;
  split part = split::random;
  std::size_t jobs = 0;           ///< test jobs
  std::size_t refused = 0;        ///< jobs where no candidate's estimate fit the budget
  std::size_t out_of_memory = 0;  ///< picks whose run passed the budget
  std::size_t as_advisor = 0;     ///< picks equal to the advisor's
  std::size_t within_budget = 0;  ///< picks whose run stayed within the budget
  double seconds = 0;             ///< its picks' runs, one after another
  double advisor_seconds = 0;     ///< the advisor's picks' runs on the same jobs
  double idle_share = 0;          ///< mean (budget - peak) / budget over the picks within the budget (0 for none)
};

/// Scores picks `chosen` (per job of `s`: a candidate, or nullopt for a
/// refusal or a job outside the test part) against the advisor's, for the
/// test jobs `test` of split `part`. Every pick's run must be in `runs`;
/// invalid_input otherwise.
inline choice_row score_choices(std::string estimator, split part, const suite& s, const std::vector<std::size_t>& test,
                                const std::vector<std::optional<std::size_t>>& chosen,
                                const std::vector<std::optional<std::size_t>>& advisor,
                                const std::vector<double>& budgets, const choice_runs& runs, double resolution) {
  auto run_of = [&](std::size_t k, std::size_t c) -> const run_record& {
    const auto it = runs.find({s.jobs[k].id, c});
    if (it == runs.end())
      throw invalid_input("no run of job " + std::to_string(s.jobs[k].id) + " with chunk " +
                          to_string(candidate_chunks(s.jobs[k].cube)[c]) + "; expected one for every pick");
    return it->second;
  };
  choice_row row{std::move(estimator), part, test.size()};
  for (auto k : test) {
    if (!chosen[k]) {
      ++row.refused;
      continue;
    }
    const auto& r = run_of(k, *chosen[k]);
    row.seconds += r.seconds;
    if (advisor[k]) row.advisor_seconds += run_of(k, *advisor[k]).seconds;
    row.as_advisor += chosen[k] == advisor[k];
    if (double(r.rss_increase) > budgets[k] + resolution) {
      ++row.out_of_memory;
    } else {
      row.idle_share += std::max(0.0, budgets[k] - double(r.rss_increase)) / budgets[k];
      ++row.within_budget;
    }
  }
  if (row.within_budget) row.idle_share /= double(row.within_budget);
  return row;
}

/// The rows as a markdown section: what they are, then a table per split.
inline std::string choices_markdown(const std::vector<choice_row>& rows) {
  std::ostringstream out;
  out.precision(3);
  out << "\n## Chunk choosing under a budget\n\nEach estimator picks, for every test job on one worker, the "
         "chunking with the fewest blocks whose estimate fits the job's budget; the picks run for real "
         "(chunk_runs.csv). plan's picks are the advisor's.\n";
  for (auto part : all_splits) {
    out << "\n### Chunk choosing: " << name_of(part) << "\n\n";
    out << "| estimator | test jobs | refused | out of memory | as the advisor | makespan (s) | the advisor's (s) | "
           "idle share of the budget |\n";
    out << "|---|---|---|---|---|---|---|---|\n";
    for (const auto& r : rows) {
      if (r.part != part) continue;
      out << "| " << r.estimator << " | " << r.jobs << " | " << r.refused << " | " << r.out_of_memory << " | "
          << r.as_advisor << " | " << r.seconds << " | " << r.advisor_seconds << " | ";
      if (r.within_budget)
        out << 100 * r.idle_share << " % |\n";
      else
        out << "- |\n";  // no pick within the budget
    }
  }
  return out.str();
}

}  // namespace dwsr::leaderboard
