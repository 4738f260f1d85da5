// GpuPack's real mode (env/pack_real.hpp) without a GPU: readings equal to
// the model give a profile equal to the kind's, a constant context above the
// model's shifts every segment by it and leaves the reserved bytes equal, a
// reading off by a page is found at its event; the rewards with measured
// profiles equal the simulated ones when the profiles do and count the
// out-of-memory verdicts that change when they do not; a runner's output
// is read strictly; a runner is run in a fresh process and its failure named.

#include <catch2/catch.hpp>

#include <fstream>

#include "dwsr/env/pack_real.hpp"
#include "dwsr/env/reinforce.hpp"
#include "dwsr/operators/catalogue.hpp"
#include "io/temp_dir.hpp"

using namespace dwsr;
using namespace dwsr::env;
using dwsr::test::temp_dir;

namespace {

const gpu_pack_jobs_options pool_options{.kinds = 20, .seed = 3};

std::shared_ptr<const gpu_pack_jobs> pool() {
  static const auto p =
      std::make_shared<const gpu_pack_jobs>(generate_gpu_pack_jobs(operators::catalogue(), pool_options));
  return p;
}

/// Readings a perfect probe would give of job `j`: `context` bytes, then the
/// context plus the allocator model's reserved bytes after each event.
pack_measurement model_readings(const sim::job& j, std::uint64_t context) {
  const auto t = alone_timeline(j);
  pack_measurement m{.start = context, .after = {}};
  for (std::size_t i = 1; i + 1 < t.size(); ++i) m.after.push_back(context + t[i].bytes - j.overhead);
  return m;
}

std::vector<pack_real_row> exact_rows(std::uint64_t context) {
  std::vector<pack_real_row> rows;
  for (auto k : pack_real_kinds(*pool(), 4, std::uint64_t(-1))) {
    const auto j = gpu_pack_kind_job(operators::catalogue(), pool_options, k);
    rows.push_back(compare_pack_real(*pool(), k, j, model_readings(j, context)));
  }
  return rows;
}

void write(const std::filesystem::path& p, const std::string& text) { std::ofstream(p) << text; }

}  // namespace

TEST_CASE("Real mode's kinds are the pool's first test kinds under the peak limit, their jobs drawn again") {
  const auto& p = *pool();
  CHECK(pack_real_kinds(p, 3, std::uint64_t(-1)) == std::vector<std::uint32_t>{4, 9, 14});
  CHECK(pack_real_kinds(p, 100, std::uint64_t(-1)).size() == 4);
  const auto limit = p.kinds[4].peak - 1;
  for (auto k : pack_real_kinds(p, 4, limit)) CHECK(p.kinds[k].peak <= limit);
  CHECK(pack_real_kinds(p, 4, limit).front() != 4);
  for (std::uint32_t k : {4u, 9u}) {
    const auto j = gpu_pack_kind_job(operators::catalogue(), pool_options, k);
    CHECK(segment_maxima(j) == p.kinds[k].reserved);
    CHECK(j.allocator == "torch_cuda_caching");
  }
}

TEST_CASE("Readings equal to the model give the kind's profile; a larger context shifts it; a wrong page is found") {
  const auto& p = *pool();
  const std::uint32_t k = 9;
  const auto j = gpu_pack_kind_job(operators::catalogue(), pool_options, k);
  REQUIRE(j.events.size() > 10);

  const auto same = compare_pack_real(p, k, j, model_readings(j, j.overhead));
  CHECK(same.measured == p.kinds[k].reserved);
  CHECK(same.measured_peak == p.kinds[k].peak);
  CHECK(same.ratio() == 1.0);
  CHECK(same.reserved_mismatches == 0);
  CHECK(same.worst_reserved_difference == 0);
  CHECK(same.worst_segment_difference == 0);
  CHECK(same.model_reserved_peak == p.kinds[k].peak - j.overhead);
  CHECK(same.events == j.events.size());

  // The H200's measured context, 520 MiB against the model's 512.
  const std::uint64_t context = 545259520;
  const auto shifted = compare_pack_real(p, k, j, model_readings(j, context));
  CHECK(shifted.measured_overhead == context);
  CHECK(shifted.simulated_overhead == sim::default_process_overhead);
  CHECK(shifted.reserved_mismatches == 0);
  CHECK(shifted.worst_segment_difference == std::int64_t(context - sim::default_process_overhead));
  CHECK(shifted.measured_peak == p.kinds[k].peak + (context - sim::default_process_overhead));
  for (std::size_t s = 0; s < gpu_pack_segments; ++s)
    CHECK(shifted.measured[s] - p.kinds[k].reserved[s] == context - sim::default_process_overhead);

  // A reading 2 MiB low after one event: one mismatch, its signed size.
  auto m = model_readings(j, j.overhead);
  m.after[5] -= 2 << 20;
  const auto off = compare_pack_real(p, k, j, m);
  CHECK(off.reserved_mismatches == 1);
  CHECK(off.worst_reserved_difference == -(2 << 20));

  m.after.pop_back();
  CHECK_THROWS_WITH(compare_pack_real(p, k, j, m), Catch::Contains("expected one per event"));
}

TEST_CASE("Rewards with measured profiles equal the simulated ones when the profiles do, and count changed verdicts") {
  gpu_pack_options o;
  o.devices = {sim::device_named("a100-80gb/1g.10gb"), sim::device_named("a100-80gb/2g.20gb")};
  o.jobs = 12;
  auto act = [](const gpu_pack& e, std::span<const float>, std::span<const std::uint8_t>) {
    return first_fit_action(e);
  };
  const auto rows = exact_rows(sim::default_process_overhead);
  const auto same = pack_real_compare(pool(), rows, o, act, 20, 7);
  CHECK(same.episodes == 20);
  CHECK(same.mean_measured_return == same.mean_simulated_return);
  CHECK(same.mean_abs_difference == 0);
  CHECK(same.episodes_with_other_ooms == 0);
  CHECK(same.measured_ooms == same.simulated_ooms);
  CHECK(pack_real_compare(pool(), rows, o, act, 20, 7).mean_measured_return == same.mean_measured_return);
  // A policy with a random stream draws the same actions with either profile.
  masked_random_policy random(discrete_space{3}, 5);
  auto draw = [random](const gpu_pack&, std::span<const float> obs, std::span<const std::uint8_t> m) mutable {
    return random.act(obs, m);
  };
  const auto drawn = pack_real_compare(pool(), rows, o, draw, 20, 7);
  CHECK(drawn.mean_measured_return == drawn.mean_simulated_return);
  CHECK(drawn.mean_simulated_return != same.mean_simulated_return);

  // Each kind measured at 11 GiB or more all along: a policy that fills the
  // 20 GiB slice whenever its mask allows runs two such jobs out of memory.
  auto heavy = rows;
  for (auto& r : heavy)
    for (auto& b : r.measured) b = std::max<std::uint64_t>(b, 11 * (sim::mib << 10));
  auto fill = [](const gpu_pack& e, std::span<const float>, std::span<const std::uint8_t> mask) {
    return mask[1] ? std::int64_t{1} : e.wait_action();
  };
  const auto worse = pack_real_compare(pool(), heavy, o, fill, 20, 7);
  CHECK(worse.measured_ooms > worse.simulated_ooms);
  CHECK(worse.episodes_with_other_ooms > 0);
  CHECK(worse.mean_measured_return != worse.mean_simulated_return);
  CHECK(worse.mean_abs_difference > 0);

  CHECK_THROWS_WITH(pack_real_compare(pool(), std::span<const pack_real_row>(), o, act, 20, 7),
                    Catch::Contains("expected at least one of each"));
}

TEST_CASE("A runner's readings are read strictly, naming the file and line") {
  temp_dir dir;
  const auto f = dir / "m.csv";
  write(f, "step,device_bytes\nstart,100\n0,200\n1,150\n");
  const auto m = read_pack_measurement(f, 2);
  CHECK(m.start == 100);
  CHECK(m.after == std::vector<std::uint64_t>{200, 150});

  auto fails = [&](const std::string& text, std::size_t events, const std::string& why) {
    write(f, text);
    INFO(text);
    CHECK_THROWS_WITH(read_pack_measurement(f, events), Catch::Contains(why));
  };
  fails("step,bytes\nstart,1\n", 0, ":1: 'step,bytes': expected the header step,device_bytes");
  fails("step,device_bytes\n0,1\n", 1, ":2: step '0': expected 'start'");
  fails("step,device_bytes\nstart,1\n1,5\n", 2, ":3: step '1': expected '0'");
  fails("step,device_bytes\nstart,1\n0,-5\n", 1, ":3: '-5': expected a count of bytes");
  fails("step,device_bytes\nstart,1\n0,5\n1,5\n", 1, ":4: step '1': expected no more rows (the trace has 1 events)");
  fails("step,device_bytes\nstart,1\n0,5\n", 2,
        "readings after 1 events; expected the start and one row per event (2)");
  fails("step,device_bytes\n", 0, "no start row");
  fails("step,device_bytes\nstart 1\n", 0, ":2: 'start 1': expected step,device_bytes");
  CHECK_THROWS_WITH(read_pack_measurement(dir / "missing.csv", 1), Catch::Contains("cannot read"));
}

TEST_CASE("run_pack_real gives the runner the kind's trace in a fresh process and names a failing runner") {
  temp_dir dir;
  // A probe that sees the exact live bytes above a 1000-byte context.
  const auto runner = dir / "runner.sh";
  write(
      runner,
      "awk -F, 'NR == 1 { print \"step,device_bytes\"; print \"start,1000\"; next }\n"
      "  { if ($1 == \"alloc\") { live += $3; size[$2] = $3 } else live -= size[$2]; print NR - 2 \",\" 1000 + live }'"
      " \"$1\" > \"$2\"\n");
  const std::uint32_t k = 4;
  const auto row =
      run_pack_real(operators::catalogue(), pool_options, *pool(), k, {"/bin/sh", runner.string()}, dir.path());
  const auto j = gpu_pack_kind_job(operators::catalogue(), pool_options, k);
  std::uint64_t live = 0, peak = 0;
  for (const auto& e : j.events) {
    live = e.act == action::alloc ? live + e.bytes : live - e.bytes;
    peak = std::max(peak, live);
  }
  CHECK(row.kind == k);
  CHECK(row.measured_overhead == 1000);
  CHECK(row.measured_reserved_peak == peak);
  CHECK(row.measured_peak == 1000 + peak);
  CHECK(row.simulated_peak == pool()->kinds[k].peak);
  CHECK(row.model_reserved_peak >= peak);  // the caching allocator's segments hold at least what is live
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path()), {}) == 1);  // its files removed, the runner kept

  write(runner, "echo 'warming up' >&2; echo 'no CUDA device here' >&2; exit 3\n");
  CHECK_THROWS_WITH(
      run_pack_real(operators::catalogue(), pool_options, *pool(), k, {"/bin/sh", runner.string()}, dir.path()),
      Catch::Contains("failed on job kind 4 (exit 3, signal 0): no CUDA device here"));
  write(runner, "echo step,device_bytes > \"$2\"\n");
  CHECK_THROWS_WITH(
      run_pack_real(operators::catalogue(), pool_options, *pool(), k, {"/bin/sh", runner.string()}, dir.path()),
      Catch::Contains("no start row"));
}
