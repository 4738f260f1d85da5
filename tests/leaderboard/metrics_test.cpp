// The leaderboard's scoring and its predictions files: quantiles against
// NumPy's type-7 values, metrics on hand-made estimates with answers worked
// out by hand, the bootstrap's determinism from a seed, and every error of
// score_estimates, quantile, parse_predictions, read_predictions and
// check_covers, each message naming the value and what was expected.

#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "dwsr/leaderboard/metrics.hpp"
#include "dwsr/leaderboard/predictions_csv.hpp"
#include "io/temp_dir.hpp"

using namespace dwsr;
using namespace dwsr::leaderboard;
using Catch::Contains;

/// `expr` throws a `type` whose message contains `text` (checked as two assertions, so a failure says which).
#define CHECK_REJECTS(expr, type, text)      \
  do {                                       \
    CHECK_THROWS_AS(expr, type);             \
    CHECK_THROWS_WITH(expr, Contains(text)); \
  } while (false)

namespace {

const double not_a_number = std::numeric_limits<double>::quiet_NaN();
const double infinity = std::numeric_limits<double>::infinity();

/// Five runs of 100 bytes, estimated exact, 10% over, 10% under, 50% over, 20% under:
/// relative errors 0, .1, .1, .5, .2.
const std::vector<double> five_actual = {100, 100, 100, 100, 100};
const std::vector<double> five_predicted = {100, 110, 90, 150, 80};

}  // namespace

TEST_CASE("quantile interpolates between order statistics like NumPy's default (type 7)") {
  // np.quantile([1, 2, 3, 4], q) for q = .5, .95, 0, 1: 2.5, 3.85, 1, 4.
  CHECK(quantile({1, 2, 3, 4}, 0.5) == Approx(2.5));
  CHECK(quantile({1, 2, 3, 4}, 0.95) == Approx(3.85));
  CHECK(quantile({1, 2, 3, 4}, 0.0) == 1);
  CHECK(quantile({1, 2, 3, 4}, 1.0) == 4);
  // Unsorted input: np.quantile([3, 1, 2], .25) == 1.5; np.quantile([10, 0, 5, 20, 15], .9) == 18.
  CHECK(quantile({3, 1, 2}, 0.25) == Approx(1.5));
  CHECK(quantile({10, 0, 5, 20, 15}, 0.9) == Approx(18));
  // One value is every quantile.
  CHECK(quantile({7}, 0.0) == 7);
  CHECK(quantile({7}, 0.3) == 7);
  CHECK(quantile({7}, 1.0) == 7);
}

TEST_CASE("quantile rejects no values, q outside [0, 1] and NaN values") {
  CHECK_REJECTS(quantile({}, 0.5), invalid_input, "quantile of no values; expected at least one value");
  CHECK_REJECTS(quantile({1, 2}, 1.5), invalid_input, "quantile 1.5; expected a number in [0, 1]");
  CHECK_REJECTS(quantile({1, 2}, -0.1), invalid_input, "quantile -0.1; expected a number in [0, 1]");
  CHECK_REJECTS(quantile({1, 2}, not_a_number), invalid_input, "expected a number in [0, 1]");
  CHECK_REJECTS(quantile({1, not_a_number}, 0.5), invalid_input, "quantile value 1 is nan; expected a number");
}

TEST_CASE("score_estimates on hand-made estimates") {
  SECTION("no tolerance: the two low estimates are failures") {
    const auto m = score_estimates(five_predicted, five_actual, 0);
    CHECK(m.runs == 5);
    // Sorted errors 0, .1, .1, .2, .5: median .1; p95 at h = 3.8: .2 + .8 (.5 - .2) = .44.
    CHECK(m.median_rel_error == Approx(0.1));
    CHECK(m.p95_rel_error == Approx(0.44));
    CHECK(m.under_rate == Approx(0.4));
    // Idle over the estimates 100, 110, 150: (0 + .1 + .5) / 3.
    CHECK(m.idle_when_over == Approx(0.2));
    CHECK(m.safe_failure == m.under_rate);
    // Resample failure counts are Binomial(5, .4): P(k <= 3) = .913, P(k <= 4) = .990, so the
    // 95th percentile of 10,000 resampled rates is 4/5 for any seed, far from either edge.
    CHECK(m.safe_failure_upper == Approx(0.8));
  }
  SECTION("a tolerance of 10 bytes forgives the estimate 10% under") {
    const auto m = score_estimates(five_predicted, five_actual, 10);
    CHECK(m.median_rel_error == Approx(0.1));  // errors do not depend on the tolerance
    CHECK(m.p95_rel_error == Approx(0.44));
    CHECK(m.under_rate == Approx(0.2));
    // Idle over 100, 110, 90, 150; the 90 leaves nothing idle: (0 + .1 + 0 + .5) / 4.
    CHECK(m.idle_when_over == Approx(0.15));
    CHECK(m.safe_failure == m.under_rate);
    CHECK(m.safe_failure_upper >= m.safe_failure);
  }
  SECTION("a tolerance of 20 bytes forgives both: no failure in any resample") {
    const auto m = score_estimates(five_predicted, five_actual, 20);
    CHECK(m.under_rate == 0);
    CHECK(m.idle_when_over == Approx(0.12));  // (0 + .1 + 0 + .5 + 0) / 5
    CHECK(m.safe_failure == 0);
    CHECK(m.safe_failure_upper == 0);
  }
}

TEST_CASE("score_estimates: exact estimates score zero, all-low estimates fail every time") {
  const std::vector<double> actual = {1e6, 2.5e6, 4096, 1};
  SECTION("exact") {
    const auto m = score_estimates(actual, actual, 0);
    CHECK(m.runs == 4);
    CHECK(m.median_rel_error == 0);
    CHECK(m.p95_rel_error == 0);
    CHECK(m.under_rate == 0);
    CHECK(m.idle_when_over == 0);
    CHECK(m.safe_failure == 0);
    CHECK(m.safe_failure_upper == 0);
  }
  SECTION("all half the peak") {
    const std::vector<double> half = {5e5, 1.25e6, 2048, 0.5};
    const auto m = score_estimates(half, actual, 0);
    CHECK(m.median_rel_error == Approx(0.5));
    CHECK(m.under_rate == 1);
    CHECK(m.idle_when_over == 0);  // no run was over: nothing to average
    CHECK(m.safe_failure_upper == 1);
  }
}

TEST_CASE("score_estimates' bootstrap is deterministic from its seed") {
  // 20 runs, 5 of them failures: enough spread for the resamples to depend on the seed.
  std::vector<double> actual(20, 1000), predicted(20, 1100);
  for (std::size_t i = 0; i < 5; ++i) predicted[i * 4] = 900;
  const auto a = score_estimates(predicted, actual, 0, 42);
  const auto b = score_estimates(predicted, actual, 0, 42);
  CHECK(a.under_rate == Approx(0.25));
  CHECK(a.safe_failure_upper >= a.under_rate);
  CHECK(a.safe_failure_upper <= 1);
  CHECK(a.safe_failure_upper == b.safe_failure_upper);  // bit for bit
  CHECK(a.median_rel_error == b.median_rel_error);
  CHECK(a.idle_when_over == b.idle_when_over);
  // Another seed may give another bound; with few resamples, some of ten seeds do.
  std::set<double> bounds;
  for (std::uint64_t seed = 0; seed < 10; ++seed)
    bounds.insert(score_estimates(predicted, actual, 0, seed, 20).safe_failure_upper);
  CHECK(bounds.size() > 1);
}

TEST_CASE("score_estimates rejects malformed runs, naming the value and the expectation") {
  const std::vector<double> four = {1, 2, 3, 4};
  const std::vector<double> three = {1, 2, 3};
  const std::vector<double> none;
  /// `four` with run i's value replaced by v.
  auto with = [&](std::size_t i, double v) {
    auto x = four;
    x[i] = v;
    return x;
  };
  CHECK_REJECTS(score_estimates(three, four, 0), invalid_input,
                "3 predictions for 4 measured runs; expected one prediction per run");
  CHECK_REJECTS(score_estimates(none, none, 0), invalid_input, "no runs to score");
  CHECK_REJECTS(score_estimates(with(3, -5), four, 0), invalid_input,
                "prediction 3 is -5; expected a finite number of bytes >= 0");
  CHECK_REJECTS(score_estimates(with(0, not_a_number), four, 0), invalid_input, "prediction 0 is nan");
  CHECK_REJECTS(score_estimates(with(1, infinity), four, 0), invalid_input, "prediction 1 is inf");
  CHECK_REJECTS(score_estimates(four, with(1, 0), 0), invalid_input,
                "measured peak 1 is 0; expected a finite number of bytes > 0");
  CHECK_REJECTS(score_estimates(four, with(2, -3), 0), invalid_input, "measured peak 2 is -3");
  CHECK_REJECTS(score_estimates(four, with(3, infinity), 0), invalid_input, "measured peak 3 is inf");
  CHECK_REJECTS(score_estimates(four, with(3, not_a_number), 0), invalid_input, "measured peak 3 is nan");
  CHECK_REJECTS(score_estimates(four, four, -1), invalid_input, "tolerance -1; expected a finite number of bytes >= 0");
  CHECK_REJECTS(score_estimates(four, four, not_a_number), invalid_input, "tolerance nan");
  CHECK_REJECTS(score_estimates(four, four, 0, 0, 0), invalid_input, "bootstrap 0; expected at least one resample");
}

TEST_CASE("parse_predictions reads both headers, CRLF, empty upper bounds and trailing blank lines") {
  SECTION("two columns, integer and decimal bytes") {
    const auto p = parse_predictions("job,predicted_bytes\n0,1048576\n7,1.5e6\n", "'p.csv'");
    REQUIRE(p.size() == 2);
    CHECK(p[0].job == 0);
    CHECK(p[0].predicted == 1048576);
    CHECK(!p[0].upper);
    CHECK(p[1].job == 7);
    CHECK(p[1].predicted == 1.5e6);
    CHECK(!p[1].upper);
  }
  SECTION("three columns with CRLF, a byte order mark, an empty upper and a blank last line") {
    const auto p = parse_predictions(
        "\xEF\xBB\xBFjob,predicted_bytes,upper_bytes\r\n3,100,200.5\r\n18446744073709551615,0,\r\n\r\n", "'p.csv'");
    REQUIRE(p.size() == 2);
    CHECK(p[0].job == 3);
    CHECK(p[0].predicted == 100);
    REQUIRE(p[0].upper);
    CHECK(*p[0].upper == 200.5);
    CHECK(p[1].job == 18446744073709551615ull);
    CHECK(p[1].predicted == 0);
    CHECK(!p[1].upper);
  }
  SECTION("a header alone is no predictions") { CHECK(parse_predictions("job,predicted_bytes", "'p.csv'").empty()); }
}

TEST_CASE("parse_predictions rejects malformed files, naming the file, line, text and expectation") {
  const std::string w = "'p.csv'";
  SECTION("empty") {
    CHECK_REJECTS(parse_predictions("", w), invalid_input,
                  "'p.csv': the file is empty; expected the header 'job,predicted_bytes'");
    CHECK_REJECTS(parse_predictions("\r\n\n", w), invalid_input, "the file is empty");
  }
  SECTION("wrong or missing header") {
    CHECK_REJECTS(parse_predictions("jobs,pred\n1,2\n", w), invalid_input,
                  "'p.csv':1: expected the header 'job,predicted_bytes' or 'job,predicted_bytes,upper_bytes', got "
                  "'jobs,pred'");
    CHECK_REJECTS(parse_predictions("1,1048576\n", w), invalid_input, "'p.csv':1: expected the header");
    CHECK_REJECTS(parse_predictions("job, predicted_bytes\n", w), invalid_input, "got 'job, predicted_bytes'");
    CHECK_REJECTS(parse_predictions("job,predicted_bytes,upper\n", w), invalid_input,
                  "got 'job,predicted_bytes,upper'");
  }
  SECTION("wrong number of fields") {
    CHECK_REJECTS(parse_predictions("job,predicted_bytes\n1,10\n2,10,20\n", w), invalid_input,
                  "'p.csv':3: 3 fields in '2,10,20'; expected 2 (job,predicted_bytes)");
    CHECK_REJECTS(parse_predictions("job,predicted_bytes,upper_bytes\n1,10\n", w), invalid_input,
                  "'p.csv':2: 2 fields in '1,10'; expected 3 (job,predicted_bytes,upper_bytes)");
    CHECK_REJECTS(parse_predictions("job,predicted_bytes\n1\n", w), invalid_input,
                  "'p.csv':2: 1 field in '1'; expected 2");
  }
  SECTION("a job id that is not an unsigned integer") {
    for (const std::string job : {"x1", "-1", "1.5", "", " 1", "18446744073709551616"})
      CHECK_REJECTS(parse_predictions("job,predicted_bytes\n1,10\n" + job + ",20\n", w), invalid_input,
                    "'p.csv':3: job " + quote(job) + " is not an unsigned integer; expected a job id such as 17");
    CHECK_REJECTS(parse_predictions("job,predicted_bytes\n\x1b[2J,20\n", w), invalid_input, "job '\\x1b[2J'");
  }
  SECTION("a duplicated job id") {
    CHECK_REJECTS(parse_predictions("job,predicted_bytes\n1,10\n2,10\n1,30\n", w), invalid_input,
                  "'p.csv':4: job 1 is listed twice (first at line 2); expected one prediction per job");
  }
  SECTION("a value that is not a finite number >= 0") {
    for (const std::string bytes : {"-5", "nan", "inf", "abc", "", "10 ", "0x10", "1e400"})
      CHECK_REJECTS(parse_predictions("job,predicted_bytes\r\n1," + bytes + "\r\n", w), invalid_input,
                    "'p.csv':2: predicted_bytes " + quote(bytes) +
                        " is not a finite number >= 0; expected bytes such as 1048576 or 1.5e6");
    CHECK_REJECTS(parse_predictions("job,predicted_bytes,upper_bytes\n1,10,-1\n", w), invalid_input,
                  "'p.csv':2: upper_bytes '-1' is not a finite number >= 0");
  }
}

TEST_CASE("read_predictions reads a file and names it in errors") {
  test::temp_dir dir;
  const auto file = dir / "predictions.csv";
  const auto where = quote(file.string(), 400);
  SECTION("a file that cannot be opened") {
    CHECK_REJECTS(read_predictions(file), io_error, where + ": cannot open for reading");
  }
  SECTION("a good file") {
    test::write_raw(file, "job,predicted_bytes,upper_bytes\r\n4,64,128\r\n");
    const auto p = read_predictions(file);
    REQUIRE(p.size() == 1);
    CHECK(p[0].job == 4);
    CHECK(p[0].predicted == 64);
    CHECK(p[0].upper == 128);
  }
  SECTION("a malformed file") {
    test::write_raw(file, "job,predicted_bytes\n4,lots\n");
    CHECK_REJECTS(read_predictions(file), invalid_input, where + ":2: predicted_bytes 'lots'");
  }
}

TEST_CASE("check_covers wants one prediction per suite run and none other") {
  const std::vector<std::uint64_t> jobs = {1, 2, 3, 4};
  auto with = [](std::vector<std::uint64_t> ids) {
    std::vector<prediction> p;
    for (const auto id : ids) p.push_back({id, 100.0, std::nullopt});
    return p;
  };
  CHECK_NOTHROW(check_covers(with({4, 3, 2, 1}), jobs, "'p.csv'"));
  CHECK_REJECTS(check_covers(with({1, 3}), jobs, "'p.csv'"), invalid_input,
                "'p.csv': no prediction for job 2 (2 of the suite's 4 runs have none)");
  CHECK_REJECTS(check_covers(with({1, 2, 17, 3, 4, 18}), jobs, "'p.csv'"), invalid_input,
                "'p.csv': job 17 is not in the suite's runs");
}
