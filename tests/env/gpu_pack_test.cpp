// GpuPack: out-of-memory failures and CARMA's recovery at exact ticks and
// bytes on hand-made kinds, the mask, invalid actions, the job kinds'
// profiles against the co-location replay, determinism from a seed, train and
// test parts that never share a kind, episode ends, vector_env in the three
// autoreset modes, and misuse.

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <limits>
#include <new>
#include <optional>
#include <set>

#include "counting_new.hpp"  // reset and step are checked to allocate nothing
#include "dwsr/env/gpu_pack.hpp"
#include "dwsr/env/vector_env.hpp"
#include "dwsr/operators/catalogue.hpp"

using namespace dwsr;
using namespace dwsr::env;

namespace {

constexpr std::uint64_t gib = std::uint64_t{1} << 30;

/// A kind of `work` voxels, segments of `seg` ticks, holding `low` bytes
/// over its first half and `high` over its second.
gpu_job_kind kind_of(std::uint64_t low, std::uint64_t high, std::uint64_t work, bool test = false,
                     std::uint64_t seg = 10) {
  gpu_job_kind k;
  for (std::size_t s = 0; s < gpu_pack_segments; ++s) k.reserved[s] = s < gpu_pack_segments / 2 ? low : high;
  k.peak = std::max(low, high);
  k.segment_ticks = seg;
  k.seconds = double(seg * gpu_pack_segments);
  k.work = work;
  k.test = test;
  k.name = "kind";
  return k;
}

sim::device_spec device_of(std::uint64_t capacity, std::string name = "test") {
  return {name, name, "", capacity, true};
}

/// Kinds 0 (A: 6 GiB throughout, 100 voxels), 1 (B: 2 then 5 GiB, 300
/// voxels), 2 (C: 12 GiB, 200 voxels), 3 (a test kind); each 320 ticks.
std::shared_ptr<const gpu_pack_jobs> hand_made() {
  auto p = std::make_shared<gpu_pack_jobs>();
  p->kinds = {kind_of(6 * gib, 6 * gib, 100), kind_of(2 * gib, 5 * gib, 300), kind_of(12 * gib, 12 * gib, 200),
              kind_of(gib, gib, 200, true)};
  return p;
}

gpu_pack_options hand_options(std::vector<gpu_pack_arrival> trace,
                              std::vector<std::uint64_t> capacities = {10 * gib, 10 * gib}) {
  gpu_pack_options o;
  o.devices.clear();
  for (auto c : capacities) o.devices.push_back(device_of(c));
  o.recovery = device_of(80 * gib, "recovery");
  o.trace = std::move(trace);
  o.time_cost = gpu_pack_time_cost::makespan;
  return o;
}

/// A small generated pool, built once for the tests that share it.
std::shared_ptr<const gpu_pack_jobs> small_pool() {
  static const auto p =
      std::make_shared<const gpu_pack_jobs>(generate_gpu_pack_jobs(operators::catalogue(), {.kinds = 20, .seed = 3}));
  return p;
}

/// One step's record, for bitwise comparisons.
struct record {
  std::vector<float> obs;
  double reward;
  bool terminated, truncated;
  gpu_pack_info info;
  bool operator==(const record&) const = default;
};

/// `episodes` episodes of a gpu_pack reset once with `seed`, each action
/// drawn among the valid ones from a stream of its own.
std::vector<record> trajectory(std::uint64_t seed, std::size_t episodes, pool_part part = pool_part::train) {
  gpu_pack e(small_pool(), {.part = part, .jobs = 12});
  std::vector<float> obs(e.observation_space().size());
  std::vector<std::uint8_t> mask(std::size_t(e.action_space().n));
  xoshiro256ss actions(99);
  std::vector<record> out;
  gpu_pack_info info;
  for (std::size_t k = 0; k < episodes; ++k) {
    e.reset(k == 0 ? std::optional<std::uint64_t>(seed) : std::nullopt, obs, info);
    out.push_back({obs, 0, false, false, info});
    for (;;) {
      e.action_mask(mask);
      std::int64_t a = 0;
      do a = std::int64_t(actions.next() % mask.size());
      while (!mask[std::size_t(a)]);
      const auto r = e.step(a, obs, info);
      CHECK_FALSE(info.invalid_action);
      out.push_back({obs, r.reward, r.terminated, r.truncated, info});
      if (r.terminated || r.truncated) break;
    }
  }
  return out;
}

}  // namespace

TEST_CASE("GpuPack runs the job placed last out of memory when its device's summed profile exceeds the capacity") {
  // A (6 GiB) then B (2 GiB, 5 GiB from tick 160) on one 10 GiB device: 8 GiB
  // at first, 11 GiB at tick 160, so B fails there and reruns alone on the
  // recovery GPU from 160 to 480; A completes at 320. T_ref = 320 ticks,
  // W_ref = 200 voxels (the four kinds' means).
  gpu_pack e(hand_made(), hand_options({{0, 0}, {1, 0}}));
  CHECK(e.reference_ticks() == 320);
  CHECK(e.reference_work() == 200);
  CHECK(e.action_space() == discrete_space{3});
  std::vector<float> obs(e.observation_space().size());
  gpu_pack_info info;
  e.reset(0, obs, info);
  CHECK(info.queued == 2);
  CHECK(info.clock == 0);
  auto r = e.step(0, obs, info);
  CHECK(r == step_result{0.0, false, false});
  CHECK(info.placed == 0);
  CHECK(e.usage(0) == 6 * gib);
  CHECK(e.future_peak(0, 320) == 6 * gib);
  CHECK(obs[1] == Approx(0.6));  // device 0's usage / capacity
  CHECK(e.oom_tick(0) == std::optional<std::uint64_t>(160));
  CHECK_FALSE(e.oom_tick(1));
  CHECK(first_fit_action(e) == 1);  // 6 GiB now + B's 5 GiB peak exceed device 0
  r = e.step(0, obs, info);
  CHECK(r.terminated);
  CHECK_FALSE(r.truncated);
  CHECK(info.clock == 480);
  CHECK(info.ooms == 1);
  CHECK(info.completed == 2);
  CHECK(info.work == 400);
  CHECK(r.reward == 400.0 / 200 - 480.0 / 320);

  // Charged by flow time: A's 320 ticks and B's 480 in the system.
  auto flow = hand_options({{0, 0}, {1, 0}});
  flow.time_cost = gpu_pack_time_cost::flow_time;
  gpu_pack f(hand_made(), flow);
  f.reset(0, obs, info);
  CHECK(f.step(0, obs, info).reward == 0.0);
  CHECK(f.step(0, obs, info) == step_result{400.0 / 200 - 800.0 / 320, true, false});

  // On two devices: both complete at 320, no recovery.
  e.reset(0, obs, info);
  e.step(0, obs, info);
  CHECK(safe_fit_action(e) == 1);
  r = e.step(1, obs, info);
  CHECK(r == step_result{400.0 / 200 - 1.0, true, false});
  CHECK(info.ooms == 0);
  CHECK(info.clock == 320);
}

TEST_CASE(
    "GpuPack queues the jobs that ran out of memory for the recovery GPU one at a time, and a device full to the byte "
    "still fits") {
  // A, B, B on one 10 GiB device: at tick 0, 6 + 2 + 2 = 10 GiB fits exactly;
  // the first B fails at 160 (6 + 5 > 10), and so does the second (the first
  // holds nothing from 160 on, but 6 + 5 still exceeds). The recovery GPU
  // runs them at 160-480 and 480-800.
  gpu_pack e(hand_made(), hand_options({{0, 0}, {1, 0}, {1, 0}}, {10 * gib}));
  std::vector<float> obs(e.observation_space().size());
  gpu_pack_info info;
  e.reset(0, obs, info);
  e.step(0, obs, info);
  e.step(0, obs, info);
  CHECK(e.usage(0) == 8 * gib);
  CHECK(e.oom_tick(0) == std::optional<std::uint64_t>(160));
  const auto r = e.step(0, obs, info);
  CHECK(r.terminated);
  CHECK(info.ooms == 2);
  CHECK(info.clock == 800);
  CHECK(r.reward == 700.0 / 200 - 800.0 / 320);

  // Waiting for A to complete first: B then runs alone at 320-640.
  gpu_pack w(hand_made(), hand_options({{0, 0}, {1, 0}}, {10 * gib}));
  w.reset(0, obs, info);
  w.step(0, obs, info);
  auto s = w.step(w.wait_action(), obs, info);
  CHECK_FALSE(info.invalid_action);
  CHECK(info.clock == 320);
  CHECK(info.work == 100);
  CHECK(s.reward == 100.0 / 200 - 1.0);
  s = w.step(0, obs, info);
  CHECK(s.terminated);
  CHECK(info.ooms == 0);
  CHECK(info.clock == 640);
}

TEST_CASE("GpuPack's mask forbids devices too small for the head job, and an invalid action waits without throwing") {
  // C peaks at 12 GiB: never on the 10 GiB device.
  auto o = hand_options({{2, 0}, {0, 50}}, {10 * gib, 16 * gib});
  o.max_running = 1;
  gpu_pack e(hand_made(), o);
  std::vector<float> obs(e.observation_space().size());
  std::vector<std::uint8_t> mask(3);
  gpu_pack_info info;
  e.reset(0, obs, info);
  e.action_mask(mask);
  CHECK(mask == std::vector<std::uint8_t>{0, 1, 1});
  for (std::int64_t bad : {std::int64_t{0}, std::int64_t{-1}, std::int64_t{3}, std::int64_t{99}}) {
    const auto r = e.step(bad, obs, info);  // a wait: the next event is A's arrival at 50
    CHECK(info.invalid_action);
    CHECK(info.placed == -1);
    CHECK_FALSE(r.terminated);
  }
  CHECK(info.clock == 50);
  CHECK(info.queued == 2);
  e.step(1, obs, info);
  e.action_mask(mask);
  CHECK(mask == std::vector<std::uint8_t>{1, 0, 1});  // device 1 holds max_running jobs
  CHECK(first_fit_action(e) == 0);

  // On generated kinds: a masked device never holds the head job's peak, an unmasked one does.
  gpu_pack g(small_pool(), {.jobs = 16});
  std::vector<float> gobs(g.observation_space().size());
  std::vector<std::uint8_t> gmask(std::size_t(g.action_space().n));
  std::size_t masked = 0;
  for (std::uint64_t seed = 0; seed < 10; ++seed) {
    g.reset(seed, gobs, info);
    for (bool done = false; !done;) {
      REQUIRE(g.observation_space().contains(gobs));
      g.action_mask(gmask);
      CHECK(gmask.back() == 1);
      const auto peak = g.jobs().kinds[*g.head()].peak;
      for (std::size_t d = 0; d < g.devices().size(); ++d) {
        CHECK(bool(gmask[d]) == (peak <= g.devices()[d].capacity && g.running(d) < g.limit(d)));
        masked += !gmask[d];
      }
      const auto r = g.step(first_fit_action(g), gobs, info);
      done = r.terminated || r.truncated;
    }
  }
  CHECK(masked > 0);  // some kinds do not fit the smaller slices, or a slice is full
  // Each device runs as many jobs at once as it has compute slices.
  CHECK(g.limit(0) == 7);
  CHECK(g.limit(1) == 3);
  CHECK(g.limit(3) == 1);
  CHECK(gpu_pack(small_pool(), {.max_running = 2}).limit(0) == 2);
}

TEST_CASE("A job kind's profile is its co-location replay alone, highest per segment, byte for byte") {
  // Hand-made: 1 GiB at 1/4 of the duration, 2 GiB more at 1/2, both freed at
  // 3/4 (segment 24 starts at 3 GiB, the level it inherits).
  sim::job j;
  j.events = {{0, action::alloc, device::cuda, {}, 0, 1, gib},
              {0, action::alloc, device::cuda, {}, 0, 2, 2 * gib},
              {0, action::free, device::cuda, {}, 0, 1, gib},
              {0, action::free, device::cuda, {}, 0, 2, 2 * gib}};
  j.times = {0.25, 0.5, 0.75, 0.75};
  j.duration = 1;
  j.overhead = 0;
  const auto p = segment_maxima(j);
  for (std::size_t s = 0; s < gpu_pack_segments; ++s) {
    INFO(s);
    CHECK(p[s] == (s < 8 ? 0 : s < 16 ? gib : s <= 24 ? 3 * gib : 0));
  }

  // Generated kinds: torch_cuda_caching plus the process overhead, replayed
  // alone by sim::colocate; each segment holds the highest usage within it.
  const auto& pool = *small_pool();
  const random_graphs graphs(operators::catalogue());
  for (std::size_t k = 0; k < 4; ++k) {
    INFO(k);
    sim::job job;
    const auto kind = env::detail::draw_gpu_job_kind(graphs, {.kinds = 20, .seed = 3}, k, &job);
    CHECK(kind.reserved == pool.kinds[k].reserved);
    CHECK(job.allocator == "torch_cuda_caching");
    CHECK(job.overhead == sim::default_process_overhead);
    const auto replay = sim::colocate(device_of(std::numeric_limits<std::uint64_t>::max()),
                                      std::span<const sim::job>(&job, 1), {.timeline = true});
    CHECK(pool.kinds[k].peak == replay.peak);
    CHECK(pool.kinds[k].peak <= 81559 * sim::mib);
    const double span = std::max(job.duration, job.times.back());
    std::array<std::uint64_t, gpu_pack_segments> want{};
    for (std::size_t s = 0; s < gpu_pack_segments; ++s) {
      std::uint64_t level = 0;  // the usage when segment s begins
      for (const auto& pt : replay.timeline) {
        const auto at = std::min(gpu_pack_segments - 1, std::size_t(pt.time * double(gpu_pack_segments) / span));
        if (at < s) level = pt.bytes;
        if (at == s) want[s] = std::max(want[s], pt.bytes);
      }
      want[s] = std::max(want[s], level);
    }
    CHECK(pool.kinds[k].reserved == want);
    CHECK(pool.kinds[k].work > 0);
    CHECK(double(pool.kinds[k].ticks()) * pool.tick_seconds >= pool.kinds[k].seconds);
  }
}

TEST_CASE("GpuPack is deterministic from a seed, and its train and test parts never share a job kind") {
  const auto a = trajectory(5, 3), b = trajectory(5, 3), c = trajectory(6, 3);
  CHECK(a == b);
  CHECK_FALSE(a == c);
  const auto again = generate_gpu_pack_jobs(operators::catalogue(), {.kinds = 20, .seed = 3});
  REQUIRE(again.size() == small_pool()->size());
  for (std::size_t k = 0; k < again.size(); ++k) {
    CHECK(again.kinds[k].reserved == small_pool()->kinds[k].reserved);
    CHECK(again.kinds[k].seconds == small_pool()->kinds[k].seconds);
    CHECK(again.kinds[k].name == small_pool()->kinds[k].name);
  }

  std::set<std::string> train, test;
  for (const auto& k : small_pool()->kinds) (k.test ? test : train).insert(k.name);
  CHECK(test.size() == 4);
  for (const auto& n : test) CHECK(train.count(n) == 0);
  for (auto part : {pool_part::train, pool_part::test}) {
    gpu_pack e(small_pool(), {.part = part});
    std::vector<float> obs(e.observation_space().size());
    gpu_pack_info info;
    for (std::uint64_t seed = 0; seed < 5; ++seed) {
      e.reset(seed, obs, info);
      for (const auto& arrival : e.trace()) CHECK(small_pool()->kinds[arrival.kind].test == (part == pool_part::test));
    }
  }
  // A trace of the other part's kinds is refused.
  CHECK_THROWS_AS(gpu_pack(hand_made(), hand_options({{3, 0}})), invalid_input);
}

TEST_CASE("GpuPack episodes terminate when every job completed and are truncated at the step limit") {
  gpu_pack e(small_pool(), {.jobs = 16, .time_cost = gpu_pack_time_cost::makespan});
  std::vector<float> obs(e.observation_space().size());
  gpu_pack_info info;
  // Safe fit never runs a job out of memory; every episode completes its jobs.
  for (std::uint64_t seed = 0; seed < 5; ++seed) {
    e.reset(seed, obs, info);
    double ret = 0;
    for (std::size_t steps = 0;; ++steps) {
      REQUIRE(steps < 128);
      const auto r = e.step(safe_fit_action(e), obs, info);
      ret += r.reward;
      if (r.terminated) break;
      CHECK_FALSE(r.truncated);
    }
    CHECK(info.completed == 16);
    CHECK(info.ooms == 0);
    CHECK(info.queued == 0);
    double work = 0;
    for (const auto& a : e.trace()) work += double(e.jobs().kinds[a.kind].work);
    CHECK(ret == Approx(work / e.reference_work() - double(info.clock) / e.reference_ticks()));
    CHECK_THROWS_AS(e.step(0, obs, info), invalid_input);  // the episode ended
  }
  // Always waiting: the clock runs through the arrivals, then nothing happens until the limit.
  gpu_pack w(small_pool(), {.jobs = 4, .max_steps = 10});
  w.reset(1, obs, info);
  step_result r;
  for (int k = 0; k < 10; ++k) {
    REQUIRE_FALSE(r.truncated);
    r = w.step(w.wait_action(), obs, info);
    CHECK_FALSE(r.terminated);
  }
  CHECK(r.truncated);
  CHECK(info.queued == 4);
  CHECK(info.clock == w.trace().back().tick);
}

TEST_CASE("GpuPack's reset and step allocate nothing") {
  std::optional<gpu_pack> made;
  CHECK(test::allocations_during([&] { made.emplace(small_pool(), gpu_pack_options{.jobs = 16}); }) > 0);  // it counts
  auto& e = *made;
  std::vector<float> obs(e.observation_space().size());
  std::vector<std::uint8_t> mask(std::size_t(e.action_space().n));
  gpu_pack_info info;
  e.reset(0, obs, info);
  std::size_t steps = 0, episodes = 0;
  xoshiro256ss rng(4);
  CHECK(test::allocations_during([&] {
          for (; episodes < 20; ++steps) {
            e.action_mask(mask);
            const auto a = rng.next() % 2 ? first_fit_action(e) : std::int64_t(rng.next() % mask.size());
            const auto r = e.step(a, obs, info);
            if (r.terminated || r.truncated) {
              e.reset(std::nullopt, obs, info);
              ++episodes;
            }
          }
        }) == 0);
  CHECK(steps > 300);
}

TEST_CASE("vector_env runs GpuPack in the three autoreset modes with its action masks") {
  constexpr std::size_t n = 3;
  for (auto mode : {autoreset_mode::next_step, autoreset_mode::same_step, autoreset_mode::disabled}) {
    vector_env<gpu_pack> v(std::vector<gpu_pack>(n, gpu_pack(small_pool(), {.jobs = 6})), mode);
    const auto d = v.obs_dim(), na = std::size_t(v.single_action_space().n);
    std::vector<float> obs(n * d), final_obs(n * d);
    std::vector<double> rewards(n);
    std::vector<std::uint8_t> term(n), trunc(n), masks(n * na);
    std::vector<gpu_pack_info> infos(n), finals(n);
    std::vector<std::int64_t> actions(n);
    v.reset(10, obs, infos);
    // The batch's environments follow their own seeds: a single one seeded 10 + i agrees.
    std::vector<gpu_pack> alone(n, gpu_pack(small_pool(), {.jobs = 6}));
    std::vector<float> single(d);
    gpu_pack_info single_info;
    for (std::size_t i = 0; i < n; ++i) {
      alone[i].reset(10 + i, single, single_info);
      CHECK(std::equal(single.begin(), single.end(), obs.begin() + std::ptrdiff_t(i * d)));
      CHECK(single_info == infos[i]);
    }
    std::size_t ended = 0;
    for (int step = 0; step < 200; ++step) {
      v.action_masks(masks);
      for (std::size_t i = 0; i < n; ++i) {
        actions[i] = first_fit_action(v[i]);
        CHECK(masks[i * na + std::size_t(actions[i])] == 1);
        CHECK(masks[i * na + na - 1] == 1);
      }
      v.step(actions, {obs, rewards, term, trunc, infos, final_obs, finals});
      for (std::size_t i = 0; i < n; ++i) {
        if (!term[i] && !trunc[i]) continue;
        ++ended;
        if (mode == autoreset_mode::same_step) {
          CHECK(finals[i].completed == (term[i] ? 6u : finals[i].completed));
          CHECK(infos[i].completed == 0);  // already the next episode's
        } else if (term[i]) {
          CHECK(infos[i].completed == 6);
        }
      }
      std::vector<std::uint8_t> done(n);
      for (std::size_t i = 0; i < n; ++i) done[i] = term[i] || trunc[i];
      if (mode == autoreset_mode::disabled && std::count(done.begin(), done.end(), 1) > 0) {
        CHECK_THROWS_AS(v.step(actions, {obs, rewards, term, trunc, infos, {}, {}}), invalid_input);
        v.reset(std::nullopt, done, obs, infos);
      }
    }
    CHECK(ended > n);
  }
}

TEST_CASE("GpuPack misuse throws invalid_input") {
  auto pool = hand_made();
  gpu_pack e(pool, hand_options({{0, 0}}));
  std::vector<float> obs(e.observation_space().size()), wrong(3);
  std::vector<std::uint8_t> mask(2);
  gpu_pack_info info;
  CHECK_THROWS_AS(e.step(0, obs, info), invalid_input);  // before reset
  CHECK_THROWS_AS(e.reset(0, wrong, info), invalid_input);
  e.reset(0, obs, info);
  CHECK_THROWS_AS(e.step(0, wrong, info), invalid_input);
  CHECK_THROWS_AS(e.action_mask(mask), invalid_input);
  CHECK_THROWS_AS(gpu_pack(nullptr), invalid_input);
  auto o = hand_options({{0, 0}});
  o.devices.clear();
  CHECK_THROWS_AS(gpu_pack(pool, o), invalid_input);
  CHECK_THROWS_AS(gpu_pack(pool, hand_options({{2, 0}})), invalid_input);          // C fits no 10 GiB device
  CHECK_THROWS_AS(gpu_pack(pool, hand_options({{0, 5}, {1, 4}})), invalid_input);  // out of time order
  CHECK_THROWS_AS(gpu_pack(pool, hand_options({{9, 0}})), invalid_input);          // no such kind
  CHECK_THROWS_AS(gpu_pack(pool, {.jobs = 0}), invalid_input);
  CHECK_THROWS_AS(gpu_pack(pool, {.load = 0}), invalid_input);
  CHECK_THROWS_AS(gpu_pack(pool, {.max_running = 2000}), invalid_input);
  CHECK_THROWS_AS(generate_gpu_pack_jobs(operators::catalogue(), {.kinds = 0}), invalid_input);
  CHECK_THROWS_AS(generate_gpu_pack_jobs(operators::catalogue(), {.kinds = 4, .test_every = 5}), invalid_input);
  CHECK_THROWS_AS(generate_gpu_pack_jobs(operators::catalogue(), {.kinds = 4, .allocator = "nope"}), invalid_input);
}
