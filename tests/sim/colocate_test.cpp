// Co-located jobs on one device: the GPU and MIG tables, the device's peak
// and first OOM on hand-built streams, per-job allocator models and
// overheads, what a failed job releases, determinism, jobs built from
// chunked runs, and the replay of jobs that really ran at once.

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <thread>

#include "dwsr/graph/chunked.hpp"
#include "dwsr/graph/colocated_job.hpp"
#include "dwsr/memory/stamped_log.hpp"
#include "dwsr/sim/colocate.hpp"
#include "dwsr/sim/device_model.hpp"
#include "dwsr/sim/random_stream.hpp"
#include "operators/operator_test_support.hpp"

using namespace dwsr;
using namespace dwsr::sim;

namespace {

event alloc(std::uint64_t id, std::uint64_t bytes) { return {0, action::alloc, device::cuda, {}, 0, id, bytes}; }
event release(std::uint64_t id, std::uint64_t bytes) { return {0, action::free, device::cuda, {}, 0, id, bytes}; }

/// A job of `events` at `times` (seconds after `start`), ending at start + `duration`.
job timed(std::string name, std::vector<event> events, std::vector<double> times, double start, double duration,
          std::uint64_t overhead = 0, std::string allocator = "exact") {
  return {std::move(name), std::move(events), std::move(allocator), overhead, start, duration, std::move(times)};
}

/// A device of `capacity` bytes.
device_spec device_of(std::uint64_t capacity) { return {"test", "test", "", capacity, true}; }

}  // namespace

TEST_CASE("device names resolve to whole GPUs and MIG slices with NVIDIA's figures") {
  const auto whole = device_named("h100-80gb");
  CHECK(whole.capacity == 81559 * mib);
  CHECK(whole.profile.empty());
  const auto slice = device_named("h100-80gb/3g.40gb");
  CHECK(slice.capacity == 40448 * mib);  // 39.50 GiB
  CHECK(slice.gpu == "h100-80gb");
  CHECK(slice.profile == "3g.40gb");
  CHECK(device_named("H100-80GB/MIG-3g.40gb") == slice);
  CHECK(device_named("a100-80gb/1g.10gb").capacity == 9728 * mib);    // 9.50 GiB
  CHECK(device_named("a100-40gb/2g.10gb").capacity == 9856 * mib);    // 9.62 GiB, i.e. 9 5/8
  CHECK(device_named("h200-141gb/1g.18gb").capacity == 16384 * mib);  // 16.00 GiB
  CHECK(device_named("h200-141gb/7g.141gb").capacity == 143360 * mib);
  CHECK_FALSE(device_named("h200-141gb/3g.71gb").listed);

  for (const auto& g : gpu_catalogue()) {
    INFO(g.name);
    REQUIRE(g.profiles.size() == 6);
    for (const auto& p : g.profiles) {
      INFO(p.name);
      CHECK(p.bytes < g.bytes);  // a slice never offers more than the whole GPU
      CHECK(std::string(p.name).find(std::to_string(p.compute_slices) + "g.") == 0);
      for (const auto& q : g.profiles)
        if (q.memory_eighths > p.memory_eighths)
          CHECK(q.bytes > p.bytes);
        else if (q.memory_eighths == p.memory_eighths)
          CHECK(q.bytes == p.bytes);
    }
  }
}

TEST_CASE("unknown device names are invalid_input listing the known ones") {
  for (const std::string bad : {"v100", "h100-80gb/3g.20gb", "h100-80gb/", "", "a100-40gb/7g.80gb"}) {
    INFO(bad);
    try {
      device_named(bad);
      FAIL("accepted");
    } catch (const invalid_input& e) {
      const std::string what = e.what();
      CHECK(what.find("unknown device '" + bad + "'") != std::string::npos);
      CHECK(what.find("h100-80gb/3g.40gb") != std::string::npos);
      CHECK(what.find("h200-141gb/1g.18gb") != std::string::npos);
    }
  }
}

TEST_CASE("the device's peak is the sum of what each job holds, with its overhead, at the worst moment") {
  // A: 100 at t=1, +300 at t=3 (peak 400), frees both at t=5; ends at 6.
  // B: 250 at t=2, freed at t=4; ends at 4.5. Overheads 10 and 20.
  const std::vector<job> jobs{
      timed("a", {alloc(1, 100), alloc(2, 300), release(2, 300), release(1, 100)}, {1, 3, 5, 5}, 0, 6, 10),
      timed("b", {alloc(1, 250), release(1, 250)}, {0, 2}, 2, 2.5, 20),
  };
  const auto r = colocate(device_of(unlimited), jobs, {.timeline = true});
  CHECK(r.peak == 10 + 400 + 20 + 250);  // at t=3: A's both buffers and B's one
  CHECK(r.peak_time == 3);
  CHECK(r.at_peak == std::vector<std::uint64_t>{410, 270});
  CHECK(r.ooms.empty());
  CHECK_FALSE(r.first_oom());
  CHECK(r.jobs[0].peak == 410);
  CHECK(r.jobs[1].peak == 270);
  CHECK(r.jobs[0].end == 6);
  CHECK(r.jobs[1].end == 4.5);
  CHECK_FALSE(r.jobs[0].failed);
  // Every step: A's start, A@1, B's start, B@2, A@3, B@4, B's end, A@5 x2, A's end.
  const std::vector<usage_point> expected{{0, 10},  {1, 110},   {2, 130}, {2, 380}, {3, 680},
                                          {4, 430}, {4.5, 410}, {5, 110}, {5, 10},  {6, 0}};
  CHECK(r.timeline == expected);
}

TEST_CASE("without times a job's events are spread evenly over its duration") {
  const std::vector<job> jobs{
      {"even", {alloc(1, 100), release(1, 100), alloc(2, 50), release(2, 50)}, "exact", 0, 10, 8, {}},
  };
  const auto r = colocate(device_of(unlimited), jobs, {.timeline = true});
  REQUIRE(r.timeline.size() == 6);
  CHECK(r.timeline[1] == usage_point{10, 100});
  CHECK(r.timeline[2] == usage_point{12, 0});
  CHECK(r.timeline[3] == usage_point{14, 50});
  CHECK(r.timeline[5] == usage_point{18, 0});
}

TEST_CASE("the first OOM names the job, the time, the bytes asked for and the device's usage") {
  const std::vector<job> jobs{
      timed("a", {alloc(1, 600), release(1, 600)}, {0, 10}, 0, 10, 100),
      timed("b", {alloc(1, 100), alloc(2, 250), release(2, 250), release(1, 100)}, {0, 1, 2, 3}, 2, 5, 50),
      timed("c", {alloc(1, 10), release(1, 10)}, {0, 1}, 4, 1, 50),
  };
  const auto r = colocate(device_of(1000), jobs);
  REQUIRE(r.first_oom());
  const auto oom = *r.first_oom();
  CHECK(oom.job == 1);
  CHECK(oom.time == 3);
  REQUIRE(oom.event);
  CHECK(*oom.event == 1);
  CHECK(oom.requested == 250);
  CHECK(oom.usage == 700 + 150);
  CHECK(oom.capacity == 1000);
  // B fails and releases everything; A runs on, and C finds room B left.
  CHECK(r.jobs[1].failed);
  CHECK(r.jobs[1].end == 3);
  CHECK(r.jobs[1].events == 2);
  CHECK_FALSE(r.jobs[0].failed);
  CHECK_FALSE(r.jobs[2].failed);
  CHECK(r.ooms.size() == 1);
  CHECK(r.peak == 850);

  const auto stopped = colocate(device_of(1000), jobs, {.stop_at_first_oom = true});
  CHECK(stopped.stopped);
  CHECK(stopped.ooms == r.ooms);
  CHECK(stopped.jobs[2].events == 0);  // C never started
}

TEST_CASE("a job whose overhead does not fit fails at its start") {
  const std::vector<job> jobs{
      timed("a", {alloc(1, 500), release(1, 500)}, {0, 1}, 0, 2, 400),
      timed("b", {}, {}, 0.5, 1, 200),
  };
  const auto r = colocate(device_of(1000), jobs);
  REQUIRE(r.ooms.size() == 1);
  CHECK(r.ooms[0].job == 1);
  CHECK_FALSE(r.ooms[0].event);
  CHECK(r.ooms[0].requested == 200);
  CHECK(r.ooms[0].usage == 900);
  CHECK(r.jobs[1].end == 0.5);
  // A capacity option replaces the device's.
  CHECK(colocate(device_of(1000), jobs, {.capacity = 1100}).ooms.empty());
}

TEST_CASE("each job has its own allocator model: a caching job holds its cache after frees") {
  const std::uint64_t mb = 1 << 20;
  auto jobs_with = [&](std::string allocator) {
    return std::vector<job>{
        timed("cache", {alloc(1, 3 * mb), release(1, 3 * mb)}, {0, 1}, 0, 10, 0, allocator),
        timed("exact", {alloc(1, 5 * mb), release(1, 5 * mb)}, {0, 1}, 5, 2, 0),
    };
  };
  auto cached = make_model("torch_cuda_caching");
  cached.on_event(alloc(1, 3 * mb));
  cached.on_event(release(1, 3 * mb));
  REQUIRE(cached.reserved() >= 3 * mb);  // the segment stays in PyTorch's cache

  CHECK(colocate(device_of(unlimited), jobs_with("exact")).peak == 5 * mb);
  const auto r = colocate(device_of(unlimited), jobs_with("torch_cuda_caching"));
  CHECK(r.peak == cached.reserved() + 5 * mb);
  CHECK(r.at_peak[0] == cached.reserved());
  CHECK(r.jobs[0].stats.reserved == cached.reserved());

  // When the device is full, the caching job releases its own cache before
  // failing, as PyTorch does: a larger buffer then fits.
  const std::vector<job> tight{
      timed("cache", {alloc(1, 3 * mb), release(1, 3 * mb), alloc(2, 30 * mb), release(2, 30 * mb)}, {0, 1, 2, 3}, 0, 4,
            0, "torch_cuda_caching"),
  };
  const auto full = colocate(device_of(32 * mb), tight);
  CHECK(full.ooms.empty());
  CHECK(full.jobs[0].cache_releases == 1);
  CHECK(full.peak <= 32 * mb);
}

TEST_CASE("a co-location replay is deterministic and breaks ties by job index") {
  std::vector<job> jobs;
  for (std::uint64_t k = 0; k < 4; ++k) {
    auto events = random_stream(400, 11 + k, {.min_log2 = 10, .max_log2 = 24});
    jobs.push_back({"r" + std::to_string(k),
                    std::move(events),
                    k % 2 ? "torch_cuda_caching" : "exact",
                    1 << 20,
                    double(k % 2),
                    3.0,
                    {}});
  }
  const auto a = colocate(device_of(unlimited), jobs, {.timeline = true});
  const auto b = colocate(device_of(unlimited), jobs, {.timeline = true});
  CHECK(a.timeline == b.timeline);
  CHECK(a.peak == b.peak);
  CHECK(a.at_peak == b.at_peak);
  std::uint64_t sum = 0, largest = 0;
  for (const auto& j : a.jobs) {
    sum += j.peak;
    largest = std::max(largest, j.peak);
  }
  CHECK(a.peak >= largest);
  CHECK(a.peak <= sum);

  // Two jobs whose steps coincide: job 0's step comes first at every time.
  const std::vector<job> tie{
      timed("x", {alloc(1, 1), release(1, 1)}, {0, 1}, 0, 2),
      timed("y", {alloc(1, 2), release(1, 2)}, {0, 1}, 0, 2),
  };
  const auto t = colocate(device_of(unlimited), tie, {.timeline = true});
  const std::vector<usage_point> expected{{0, 0}, {0, 1}, {0, 1}, {0, 3}, {1, 2}, {1, 0}, {2, 0}, {2, 0}};
  CHECK(t.timeline == expected);
}

TEST_CASE("bad timings, allocator specs and streams are invalid_input naming the job") {
  auto fails_with = [](std::vector<job> jobs, const std::string& part) {
    try {
      colocate(device_of(unlimited), jobs);
      FAIL("accepted");
    } catch (const invalid_input& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(part) != std::string::npos);
    }
  };
  fails_with({timed("t", {alloc(1, 1), release(1, 1)}, {0}, 0, 1)}, "job 0 (t): 1 event times for 2 events");
  fails_with({timed("t", {alloc(1, 1), release(1, 1)}, {2, 1}, 0, 3)}, "job 0 (t): event 1 at 1");
  fails_with({timed("t", {}, {}, -1, 1)}, "job 0 (t): start -1");
  fails_with({job{"m", {}, "no_such_model", 0, 0, 1, {}}}, "unknown allocator model 'no_such_model'");
  fails_with({timed("ok", {}, {}, 0, 1), timed("s", {release(7, 1)}, {0}, 0, 1)}, "job 1 (s), event 0");
}

TEST_CASE("a chunked run's worker becomes a job: its stream, with the time model's block times") {
  const auto g = graph::single(operators::catalogue(), "gst_3d_dip");
  const shape3 cube{8, 10, 32};
  const chunked_schedule s(g, cube, {.chunk = {4, 4, 32}, .workers = 2, .threads = 2});
  sim::time_profile p;
  p.cores = 2;
  p.copy = {1e-4, {{1, 1e-8}}};
  p.operators["gst_3d_dip"] = {1e-3, {{1, 1e-7}, {2, 5e-8}}};
  for (std::size_t w = 0; w < 2; ++w) {
    INFO("worker " << w);
    recorder stream;
    worker_events(s, w, stream);
    const auto j = colocated_job(s, {.worker = w, .profile = &p, .overhead = 0});
    CHECK(j.events == stream.events());
    REQUIRE(j.times.size() == j.events.size());
    CHECK(std::is_sorted(j.times.begin(), j.times.end()));
    CHECK(j.duration == Approx(predict_time(s, p).worker_seconds[w]).epsilon(1e-12));
    // Alone on an unlimited device, the job's peak is the plan's.
    const auto alone = colocate(device_of(unlimited), std::vector<job>{j});
    CHECK(alone.peak == plan_chunked(s).workers[w].peak);
  }
  // Every operator's stream splits into its blocks (a worker holds nothing between them).
  for (const auto& e : operators::catalogue().entries()) {
    if (e.configure()->arity() != 1) continue;
    INFO(e.name);
    const auto one = graph::single(operators::catalogue(), e.name);
    const auto whole = one.whole_axes();
    const shape3 chunk{whole[0] ? 0 : 4u, whole[1] ? 0 : 5u, whole[2] ? 0 : 16u};
    const chunked_schedule split(one, cube, {.chunk = chunk});
    const auto j = colocated_job(split);
    CHECK(j.times.size() == j.events.size());
    CHECK(j.duration > 0);
  }
  const auto fallback = colocated_job(s);
  CHECK(fallback.name == "worker 0");
  CHECK(fallback.overhead == default_process_overhead);
  CHECK(fallback.duration > 0);
  CHECK_THROWS_AS(colocated_job(s, {.worker = 2}), invalid_input);
}

TEST_CASE("jobs that really ran at once replay to the device peak they had, byte for byte") {
  // Three chunked runs on their own threads, each its own host context: the
  // device model must find the peak of their summed live bytes exactly, in
  // the order they happened. The time model's interleaving of the same jobs
  // is then bounded by the largest and the sum of their own peaks.
  const shape3 cube{12, 10, 48};
  const auto data = test::noise(cube, 5);
  const std::vector<std::pair<std::string, shape3>> runs{
      {"envelope", {6, 5, 48}}, {"gst_3d_dip", {4, 10, 48}}, {"semblance", {12, 5, 48}}};
  stamped_log log;
  std::vector<graph> graphs;
  for (const auto& [op, chunk] : runs) graphs.push_back(graph::single(operators::catalogue(), op));
  std::vector<stamped_sink> sinks;
  for (std::size_t k = 0; k < runs.size(); ++k) sinks.push_back({&log, k});
  std::vector<std::thread> threads;
  for (std::size_t k = 0; k < runs.size(); ++k)
    threads.emplace_back([&, k] {
      memory_block_source source(cube_view<const float>(data.data(), cube));
      run_chunked(graphs[k], source, nullptr, {.chunk = runs[k].second}, {event_sink_ref(sinks[k])});
    });
  for (auto& t : threads) t.join();

  // The measured peak: live bytes summed over the jobs, in the log's order.
  std::uint64_t live = 0, measured = 0;
  std::vector<job> recorded(runs.size());
  for (const auto& [time, k, e] : log.entries) {
    live = e.act == action::alloc ? live + e.bytes : live - e.bytes;
    measured = std::max(measured, live);
    recorded[k].events.push_back(e);
    recorded[k].times.push_back(time);  // from the common origin: every job starts at 0
  }
  for (std::size_t k = 0; k < runs.size(); ++k) {
    recorded[k].name = runs[k].first;
    recorded[k].overhead = 0;
    recorded[k].duration = recorded[k].times.back();
  }
  const auto replayed = colocate(device_of(unlimited), recorded);
  CHECK(replayed.peak == measured);

  // The time model's interleaving, each job starting at 0 as the threads did.
  std::vector<job> predicted;
  std::uint64_t sum = 0, largest = 0;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const chunked_schedule s(graphs[k], cube, {.chunk = runs[k].second});
    predicted.push_back(colocated_job(s, {.overhead = 0}));
    const auto own = plan_chunked(s).peak();
    sum += own;
    largest = std::max(largest, own);
  }
  const auto model = colocate(device_of(unlimited), predicted);
  CHECK(model.peak >= largest);
  CHECK(model.peak <= sum);
  CHECK(measured >= largest);
  CHECK(measured <= sum);
}
