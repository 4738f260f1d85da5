// ChunkSchedule: the task pool (parts, budgets, masks, the peak envelope
// against a brute-force replay of the meta execution), the environment's
// determinism, out-of-memory steps, the end of an episode (terminated,
// truncated), invalid actions and misuse, and vector_env over it.

#include <catch2/catch.hpp>

#include <bit>
#include <limits>
#include <map>
#include <set>

#include "dwsr/env/chunk_schedule.hpp"
#include "dwsr/env/vector_env.hpp"
#include "dwsr/operators/catalogue.hpp"

using namespace dwsr;
using namespace dwsr::env;

namespace {

chunk_tasks_options small_options() {
  chunk_tasks_options o;
  o.tasks = 40;
  o.seed = 3;
  o.max_extent = 256;
  o.max_samples = 128;
  return o;
}

/// A small pool, built once for the tests that share it.
std::shared_ptr<const chunk_tasks> small_pool() {
  static const auto p =
      std::make_shared<const chunk_tasks>(generate_chunk_tasks(operators::catalogue(), small_options()));
  return p;
}

/// One episode's record, for bitwise comparisons.
struct record {
  std::vector<float> obs;
  std::vector<double> rewards;
  std::vector<chunk_info> infos;
  bool operator==(const record&) const = default;
};

/// An episode from `seed`, actions from a stream of `action_seed` among the unmasked ones.
record episode(chunk_schedule& e, std::uint64_t seed, std::uint64_t action_seed) {
  record r;
  std::vector<float> obs(chunk_observation_size);
  chunk_info info;
  e.reset(seed, obs, info);
  r.obs = obs;
  r.infos.push_back(info);
  xoshiro256ss rng(action_seed);
  std::array<std::uint8_t, chunk_candidates> mask{};
  e.action_mask(mask);
  for (;;) {
    std::int64_t a = 0;
    do a = std::int64_t(rng.next() % chunk_candidates);
    while (!mask[std::size_t(a)]);
    const auto s = e.step(a, obs, info);
    r.obs.insert(r.obs.end(), obs.begin(), obs.end());
    r.rewards.push_back(s.reward);
    r.infos.push_back(info);
    if (s.terminated || s.truncated) return r;
  }
}

/// Every event of a stream.
struct event_list {
  std::vector<event> events;
  void on_event(const event& e) { events.push_back(e); }
};

/// The per-block peak of `c` at density num / 16 by replaying every block
/// class and phase with each bound alloc's bytes times the density (integers).
std::uint64_t brute_force_peak(const chunk_task& t, const chunk_candidate& c, std::uint64_t num) {
  const auto g = graph::from_specs(operators::catalogue(), t.specs);
  const chunked_schedule s(g, t.cube, {.chunk = c.chunk, .workers = 1, .threads = t.threads});
  node_reductions reductions(g.nodes().size());
  for (const auto& ph : s.phases())
    if (ph.reduces()) reductions[*ph.node] = reduction{};
  const block_classes classes(s.blocks());
  std::uint64_t peak = 0;
  for (const auto& k : classes.classes())
    for (const auto& ph : s.phases()) {
      event_list list;
      event_bus bus(list);
      meta_context ctx(bus, {.threads = t.threads});
      reduction acc;
      run_step(
          ctx, s, ph, k.example, reductions, &acc, nullptr, [](float*) {}, nullptr);
      std::map<std::uint64_t, std::uint64_t> live;
      std::uint64_t now = 0;
      for (const auto& e : list.events) {
        if (e.act == action::alloc) {
          if (e.bound) REQUIRE(e.bytes % 16 == 0);
          const auto bytes = e.bound ? e.bytes / 16 * num : e.bytes;
          live[e.buffer] = bytes;
          now += bytes;
          peak = std::max(peak, now);
        } else {
          now -= live.at(e.buffer);
        }
      }
    }
  return peak;
}

}  // namespace

TEST_CASE("ChunkSchedule tasks: a seed names the pool, parts split by task, every budget lets the smallest fit") {
  const auto& p = *small_pool();
  const auto again = generate_chunk_tasks(operators::catalogue(), small_options());
  REQUIRE(p.size() == 40);
  std::size_t picks = 0, masked = 0, risky = 0, test = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const auto& t = p.tasks[i];
    const auto& u = again.tasks[i];
    CHECK(t.budget == u.budget);
    CHECK(t.cube == u.cube);
    for (std::size_t k = 0; k < chunk_candidates; ++k) CHECK(t.candidates[k].hull == u.candidates[k].hull);
    CHECK(t.test == (i % 5 == 4));
    test += t.test;
    picks += t.picks;
    CHECK(t.mask[chunk_candidates - 1] == 1);  // the smallest fits at d = 0
    for (std::size_t k = 0; k < chunk_candidates; ++k) {
      const auto& c = t.candidates[k];
      CHECK(t.mask[k] == (c.peak0 <= double(t.budget)));
      CHECK(c.peak0 <= c.peak1);
      CHECK(c.chunk.samples == t.cube.samples);
      masked += !t.mask[k];
      risky += t.mask[k] && c.peak1 > double(t.budget);
      if (!t.picks) CHECK(c.peak0 == c.peak1);  // nothing depends on the data
    }
    CHECK(t.reference_seconds > 0);
    CHECK(t.mask[t.advisor] == 1);
  }
  CHECK(test == 8);
  CHECK(picks > 5);
  CHECK(picks < 35);
  const double share = double(masked) / double(p.size() * chunk_candidates);
  CHECK(share > 0.1);
  CHECK(share < 0.5);
  CHECK(risky > 0);
  const auto other = generate_chunk_tasks(operators::catalogue(), [] {
    auto o = small_options();
    o.seed = 4;
    return o;
  }());
  bool differs = false;
  for (std::size_t i = 0; i < p.size(); ++i) differs = differs || other.tasks[i].budget != p.tasks[i].budget;
  CHECK(differs);
}

TEST_CASE("ChunkSchedule tasks: the peak envelope equals a brute-force replay at every density tested") {
  const auto& p = *small_pool();
  std::size_t checked = 0, sloped = 0;
  for (const auto& t : p.tasks) {
    if (!t.picks || checked >= 3) continue;
    ++checked;
    for (std::size_t k : {std::size_t(0), std::size_t(3), chunk_candidates - 1}) {
      const auto& c = t.candidates[k];
      sloped += c.peak1 > c.peak0;  // event_picks' table grows with the data (unless the peak is elsewhere)
      for (std::uint64_t num : {0, 1, 5, 8, 13, 16})
        CHECK(c.peak(double(num) / 16) == double(brute_force_peak(t, c, num)));
    }
  }
  CHECK(checked == 3);
  CHECK(sloped > 0);
}

TEST_CASE("ChunkSchedule: same seed same trajectory bit for bit, other seeds differ") {
  chunk_schedule a(small_pool()), b(small_pool());
  for (std::uint64_t seed : {1, 2, 99}) {
    const auto ra = episode(a, seed, 7), rb = episode(b, seed, 7);
    CHECK(ra == rb);
    for (std::size_t i = 0; i < ra.rewards.size(); ++i)
      CHECK(std::bit_cast<std::uint64_t>(ra.rewards[i]) == std::bit_cast<std::uint64_t>(rb.rewards[i]));
  }
  CHECK(episode(a, 1, 7) != episode(a, 2, 7));
  auto copy = a;  // a copy goes on with the same stream
  std::vector<float> o1(chunk_observation_size), o2(chunk_observation_size);
  chunk_info i1, i2;
  a.reset(std::nullopt, o1, i1);
  copy.reset(std::nullopt, o2, i2);
  CHECK(o1 == o2);
  CHECK(i1 == i2);
}

TEST_CASE("ChunkSchedule: train and test never share a task, observations stay in their bounds") {
  chunk_schedule train(small_pool()), test(small_pool(), {.part = pool_part::test});
  CHECK(train.observation_space() == test.observation_space());
  CHECK(train.action_space() == discrete_space{8});
  std::set<std::uint64_t> seen_train, seen_test;
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    const auto r = episode(train, seed, seed);
    const auto s = episode(test, seed, seed);
    seen_train.insert(r.infos[0].task);
    seen_test.insert(s.infos[0].task);
    for (std::size_t i = 0; i < r.obs.size(); i += chunk_observation_size)
      CHECK(train.observation_space().contains(std::span(r.obs).subspan(i, chunk_observation_size)));
  }
  for (auto t : seen_train) CHECK_FALSE(small_pool()->tasks[t].test);
  for (auto t : seen_test) CHECK(small_pool()->tasks[t].test);
  CHECK(seen_train.size() > 10);
  CHECK(seen_test.size() > 3);
}

TEST_CASE("ChunkSchedule: a masked action is invalid, an unmasked one fits in the best case, never an exception") {
  chunk_schedule e(small_pool());
  std::vector<float> obs(chunk_observation_size);
  chunk_info info;
  std::size_t masked_seen = 0;
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    e.reset(seed, obs, info);
    std::array<std::uint8_t, chunk_candidates> mask{};
    e.action_mask(mask);
    const auto& t = e.task();
    CHECK(std::count(mask.begin(), mask.end(), 1) >= 1);
    for (std::size_t k = 0; k < chunk_candidates; ++k) {
      if (mask[k]) {
        CHECK(t.candidates[k].peak(0) <= double(t.budget));
        continue;
      }
      ++masked_seen;
      const auto before = obs;
      const auto s = e.step(std::int64_t(k), obs, info);
      CHECK(info.invalid_action);
      CHECK(info.voxels == 0);
      CHECK(e.inlines_done() == 0);
      CHECK(s.reward < 0);
      CHECK(info.seconds == 0.02);
      if (s.truncated) e.reset(seed, obs, info);
    }
    for (std::int64_t a : {std::int64_t(-1), std::int64_t(8), std::numeric_limits<std::int64_t>::max(),
                           std::numeric_limits<std::int64_t>::min()}) {
      step_result s;
      REQUIRE_NOTHROW(s = e.step(a, obs, info));
      CHECK(info.invalid_action);
      CHECK(info.voxels == 0);
      if (s.truncated) e.reset(seed, obs, info);
    }
  }
  CHECK(masked_seen > 0);
}

TEST_CASE(
    "ChunkSchedule: a slab whose density lifts the peak over the budget runs out of memory, costs time, does nothing") {
  chunk_schedule e(small_pool());
  std::vector<float> obs(chunk_observation_size);
  chunk_info info;
  std::size_t ooms = 0, fits = 0;
  for (std::uint64_t seed = 0; seed < 200 && (ooms < 3 || fits < 3); ++seed) {
    e.reset(seed, obs, info);
    const auto& t = e.task();
    for (std::size_t k = 0; k < chunk_candidates; ++k) {
      const auto& c = t.candidates[k];
      if (!t.mask[k] || c.peak1 <= double(t.budget)) continue;  // risky candidates only
      double d = 0;
      for (std::uint64_t i = 0; i < std::min(c.chunk.inlines, t.cube.inlines); ++i) d = std::max(d, e.density(i));
      const bool over = c.peak(d) > double(t.budget);
      const auto s = e.step(std::int64_t(k), obs, info);
      CHECK(info.density == d);
      CHECK(info.oom == over);
      CHECK_FALSE(info.invalid_action);
      if (over) {
        ++ooms;
        CHECK(info.voxels == 0);
        CHECK(e.inlines_done() == 0);
        CHECK(info.seconds > 0.02);
        CHECK(s.reward < 0);
        CHECK(obs[2 * chunk_candidates + 4] == 1.0f);  // the OOM flag
        CHECK(obs[2 * chunk_candidates + 3] > 1.0f);   // peak over budget
      } else {
        ++fits;
        CHECK(info.voxels > 0);
        CHECK(e.inlines_done() > 0);
      }
      break;
    }
  }
  CHECK(ooms >= 3);
  CHECK(fits >= 3);
}

TEST_CASE("ChunkSchedule: an episode terminates when every inline is done, returning 1 - T / T_ref") {
  chunk_schedule e(small_pool());
  std::vector<float> obs(chunk_observation_size);
  chunk_info info;
  for (std::uint64_t seed = 0; seed < 10; ++seed) {
    e.reset(seed, obs, info);
    const auto& t = e.task();
    double ret = 0, seconds = 0;
    std::uint64_t voxels = 0;
    for (;;) {
      const auto s = e.step(advisor_action(e), obs, info);
      ret += s.reward;
      seconds += info.seconds;
      voxels += info.voxels;
      if (t.candidates[t.advisor].peak1 <= double(t.budget)) CHECK_FALSE(info.oom);  // the safe choice
      if (s.terminated) break;
      REQUIRE_FALSE(s.truncated);
    }
    CHECK(e.inlines_done() == t.cube.inlines);
    CHECK(voxels == t.cube.voxels());
    CHECK(obs[2 * chunk_candidates] == 1.0f);
    CHECK(info.episode_voxels_per_second == Approx(double(voxels) / seconds));
    CHECK(ret == Approx(1 - seconds / t.reference_seconds).margin(1e-9));
    if (!info.oom && t.candidates[t.advisor].peak1 <= double(t.budget)) CHECK(ret == Approx(0).margin(1e-9));
    CHECK_THROWS_AS(e.step(0, obs, info), invalid_input);  // ended
  }
}

TEST_CASE("ChunkSchedule: truncated at the step limit") {
  chunk_schedule e(small_pool(), {.step_limit = 3});
  std::vector<float> obs(chunk_observation_size);
  chunk_info info;
  e.reset(5, obs, info);
  CHECK(e.step_limit() == 3);
  CHECK(e.step(-1, obs, info) == step_result{-0.02 / e.task().reference_seconds, false, false});
  CHECK_FALSE(e.step(-1, obs, info).truncated);
  const auto s = e.step(-1, obs, info);
  CHECK(s.truncated);
  CHECK_FALSE(s.terminated);
  CHECK(obs[2 * chunk_candidates + 2] == 1.0f);
  chunk_schedule d(small_pool());
  d.reset(5, obs, info);
  CHECK(d.step_limit() == 4 * d.task().smallest_slabs);
}

TEST_CASE("ChunkSchedule: misuse throws invalid_input") {
  chunk_schedule e(small_pool());
  std::vector<float> obs(chunk_observation_size), small(3);
  chunk_info info;
  CHECK_THROWS_AS(e.step(0, obs, info), invalid_input);  // before reset
  CHECK_THROWS_AS(e.reset(1, small, info), invalid_input);
  e.reset(1, obs, info);
  CHECK_THROWS_AS(e.step(0, small, info), invalid_input);
  std::array<std::uint8_t, 3> mask{};
  CHECK_THROWS_AS(e.action_mask(mask), invalid_input);
  CHECK_THROWS_AS(chunk_schedule(nullptr), invalid_input);
  CHECK_THROWS_AS(chunk_schedule(small_pool(), {.density_low = 0.5, .density_high = 0.2}), invalid_input);
  auto o = small_options();
  o.tasks = 3;  // no task i % 5 == 4: an empty test part
  const auto few = std::make_shared<const chunk_tasks>(generate_chunk_tasks(operators::catalogue(), o));
  CHECK_THROWS_AS(chunk_schedule(few, {.part = pool_part::test}), invalid_input);
  o.max_workers = 9;
  CHECK_THROWS_AS(generate_chunk_tasks(operators::catalogue(), o), invalid_input);
}

TEST_CASE("ChunkSchedule in a vector_env: every autoreset mode, action masks") {
  for (auto mode : {autoreset_mode::next_step, autoreset_mode::same_step, autoreset_mode::disabled}) {
    const std::size_t n = 4;
    vector_env<chunk_schedule> v(std::vector<chunk_schedule>(n, chunk_schedule(small_pool())), mode);
    std::vector<float> obs(n * chunk_observation_size), final_obs(n * chunk_observation_size);
    std::vector<double> rewards(n);
    std::vector<std::uint8_t> term(n), trunc(n), masks(n * chunk_candidates);
    std::vector<chunk_info> infos(n), finals(n);
    v.reset(11, obs, infos);
    std::size_t ended = 0;
    for (int step = 0; step < 200; ++step) {
      v.action_masks(masks);
      std::vector<std::int64_t> actions(n);
      for (std::size_t i = 0; i < n; ++i) {
        // the largest unmasked candidate: risky, so some steps run out of memory
        std::size_t k = 0;
        while (!masks[i * chunk_candidates + k]) ++k;
        actions[i] = std::int64_t(k);
        CHECK(masks[i * chunk_candidates + k] == 1);
      }
      v.step(actions, {obs, rewards, term, trunc, infos, final_obs, finals});
      for (std::size_t i = 0; i < n; ++i) CHECK_FALSE(infos[i].invalid_action);
      std::vector<std::uint8_t> done(n);
      for (std::size_t i = 0; i < n; ++i) done[i] = term[i] || trunc[i];
      ended += std::size_t(std::count(done.begin(), done.end(), 1));
      if (mode == autoreset_mode::disabled && std::count(done.begin(), done.end(), 1))
        v.reset(std::nullopt, done, obs, infos);
    }
    CHECK(ended > 4);
  }
}
