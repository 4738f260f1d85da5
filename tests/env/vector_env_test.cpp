// vector_env: Gymnasium's three autoreset modes on a counting environment of
// three-step episodes, seeding (env i gets seed + i), results independent of
// the parallel split, and the Environment concept both ways.

#include <catch2/catch.hpp>

#include <vector>

#include "dwsr/env/peak_predict.hpp"
#include "dwsr/env/vector_env.hpp"

using namespace dwsr;
using namespace dwsr::env;

namespace {

/// Episodes of three steps. Observation (episode, t): a seeded reset starts
/// episode 100 x seed, an unseeded one the next episode; step t (1 to 3)
/// rewards t + 10 x action and terminates at t = 3.
struct counter_env {
  using action_space_type = discrete_space;
  struct info_type {
    int t = -1;
    double episode = -1;
  };
  box_space obs_space{{0, 0}, {1e9f, 3}, {2}};
  discrete_space actions{2};
  double episode = 0;
  int t = 0;

  const box_space& observation_space() const { return obs_space; }
  const discrete_space& action_space() const { return actions; }
  void reset(std::optional<std::uint64_t> seed, std::span<float> obs, info_type& info) {
    episode = seed ? 100.0 * double(*seed) : episode + 1;
    t = 0;
    write(obs, info);
  }
  step_result step(std::int64_t action, std::span<float> obs, info_type& info) {
    ++t;
    write(obs, info);
    return {double(t) + 10.0 * double(action), t == 3, false};
  }
  void write(std::span<float> obs, info_type& info) const {
    obs[0] = float(episode);
    obs[1] = float(t);
    info = {t, episode};
  }
};

struct missing_step {
  using action_space_type = discrete_space;
  struct info_type {};
  box_space observation_space() const { return box_space::scalar(0, 1); }
  discrete_space action_space() const { return {1}; }
  void reset(std::optional<std::uint64_t>, std::span<float>, info_type&) {}
};

/// Action 1 is valid only in the episode's first two steps.
struct masked_env : counter_env {
  void action_mask(std::span<std::uint8_t> mask) const {
    mask[0] = 1;
    mask[1] = t < 2;
  }
};

static_assert(Environment<counter_env>);
static_assert(!Environment<missing_step>);
static_assert(!MaskedEnvironment<counter_env>);
static_assert(MaskedEnvironment<masked_env>);

/// Buffers for a batch of n counter_envs.
struct batch {
  explicit batch(std::size_t n) : obs(2 * n), rewards(n), term(n), trunc(n), infos(n), final_obs(2 * n), finals(n) {}
  std::vector<float> obs;
  std::vector<double> rewards;
  std::vector<std::uint8_t> term, trunc;
  std::vector<counter_env::info_type> infos;
  std::vector<float> final_obs;
  std::vector<counter_env::info_type> finals;
  vector_step_buffers<counter_env::info_type> buffers() {
    return {obs, rewards, term, trunc, infos, final_obs, finals};
  }
};

vector_env<counter_env> two_counters(autoreset_mode mode) { return vector_env(std::vector<counter_env>(2), mode); }

}  // namespace

TEST_CASE("vector_env next_step: the step after an episode's end resets it, reward 0, flags down") {
  auto v = two_counters(autoreset_mode::next_step);
  batch b(2);
  v.reset(5, b.obs, b.infos);
  CHECK(b.obs == std::vector<float>{500, 0, 600, 0});  // env i seeded with 5 + i
  const std::vector<std::int64_t> actions{0, 1};
  v.step(actions, b.buffers());
  CHECK(b.rewards == std::vector<double>{1, 11});
  v.step(actions, b.buffers());
  v.step(actions, b.buffers());
  CHECK(b.obs == std::vector<float>{500, 3, 600, 3});  // the last observation
  CHECK(b.rewards == std::vector<double>{3, 13});
  CHECK(b.term == std::vector<std::uint8_t>{1, 1});
  CHECK(b.infos[0].t == 3);
  v.step(actions, b.buffers());  // the actions are ignored: resets
  CHECK(b.obs == std::vector<float>{501, 0, 601, 0});
  CHECK(b.rewards == std::vector<double>{0, 0});
  CHECK(b.term == std::vector<std::uint8_t>{0, 0});
  CHECK(b.trunc == std::vector<std::uint8_t>{0, 0});
  CHECK(b.infos[1].t == 0);
  CHECK(b.infos[1].episode == 601);
  v.step(actions, b.buffers());
  CHECK(b.obs == std::vector<float>{501, 1, 601, 1});
  CHECK(b.rewards == std::vector<double>{1, 11});
}

TEST_CASE("vector_env same_step: the ending step returns its reward with the reset observation, the last one apart") {
  auto v = two_counters(autoreset_mode::same_step);
  batch b(2);
  v.reset(1, b.obs, b.infos);
  const std::vector<std::int64_t> actions{1, 0};
  v.step(actions, b.buffers());
  v.step(actions, b.buffers());
  b.final_obs.assign(4, -1);
  v.step(actions, b.buffers());
  CHECK(b.rewards == std::vector<double>{13, 3});
  CHECK(b.term == std::vector<std::uint8_t>{1, 1});
  CHECK(b.obs == std::vector<float>{101, 0, 201, 0});  // already reset
  CHECK(b.infos[0].t == 0);
  CHECK(b.final_obs == std::vector<float>{100, 3, 200, 3});
  CHECK(b.finals[0].t == 3);
  CHECK(b.finals[1].episode == 200);
  b.final_obs.assign(4, -1);
  v.step(actions, b.buffers());  // an ordinary step: no final rows written
  CHECK(b.obs == std::vector<float>{101, 1, 201, 1});
  CHECK(b.rewards == std::vector<double>{11, 1});
  CHECK(b.term == std::vector<std::uint8_t>{0, 0});
  CHECK(b.final_obs == std::vector<float>(4, -1));
}

TEST_CASE("vector_env disabled: the caller resets ended environments with a mask") {
  auto v = two_counters(autoreset_mode::disabled);
  batch b(2);
  v.reset(2, b.obs);
  const std::vector<std::int64_t> actions{0, 0};
  for (int k = 0; k < 3; ++k) v.step(actions, b.buffers());
  CHECK(b.obs == std::vector<float>{200, 3, 300, 3});
  CHECK(b.term == std::vector<std::uint8_t>{1, 1});
  CHECK_THROWS_WITH(v.step(actions, b.buffers()), Catch::Contains("environment 0 whose episode ended"));

  const std::vector<std::uint8_t> first{1, 0}, second{0, 1};
  v.reset(std::nullopt, first, b.obs, b.infos);
  CHECK(b.obs == std::vector<float>{201, 0, 300, 3});  // row 1 untouched
  CHECK_THROWS_WITH(v.step(actions, b.buffers()), Catch::Contains("environment 1 whose episode ended"));
  v.reset(7, second, b.obs, b.infos);
  CHECK(b.obs == std::vector<float>{201, 0, 800, 0});  // env 1 seeded with 7 + 1
  v.step(actions, b.buffers());
  CHECK(b.obs == std::vector<float>{201, 1, 800, 1});
  CHECK(b.term == std::vector<std::uint8_t>{0, 0});

  CHECK_THROWS_WITH(v.reset(1, std::vector<std::uint8_t>{0, 0}, b.obs), Catch::Contains("selects no environment"));
  CHECK_THROWS_WITH(v.reset(1, std::vector<std::uint8_t>{1}, b.obs), Catch::Contains("expected 2"));
}

TEST_CASE("vector_env refuses wrong buffers and a step before the first reset") {
  auto v = two_counters(autoreset_mode::next_step);
  batch b(2);
  const std::vector<std::int64_t> actions{0, 0}, three{0, 0, 0};
  CHECK_THROWS_WITH(v.step(actions, b.buffers()), Catch::Contains("before reset()"));
  CHECK_THROWS_WITH(v.reset(std::nullopt, std::vector<std::uint8_t>{1, 0}, b.obs), Catch::Contains("first reset"));
  v.reset(0, b.obs);
  CHECK_THROWS_WITH(v.step(three, b.buffers()), Catch::Contains("actions buffer of 3 values; expected 2"));
  std::vector<float> small(3);
  CHECK_THROWS_WITH(v.reset(0, small), Catch::Contains("observations buffer of 3 values; expected 4"));
  CHECK_THROWS_AS(vector_env<counter_env>(std::vector<counter_env>{}), invalid_input);
  std::vector<counter_env> mixed(2);
  mixed[1].actions = {3};
  CHECK_THROWS_WITH(vector_env<counter_env>(mixed), Catch::Contains("other spaces"));
}

TEST_CASE("vector_env of PeakPredict: env i is the single environment seeded seed + i, whatever the parallel split") {
  auto jobs = std::make_shared<peak_jobs>();
  jobs->features = {{"f", "count", ""}};
  for (int j = 0; j < 64; ++j) {
    jobs->x.push_back(float(j));
    jobs->peak.push_back(1024.0 * (j + 1));
    jobs->test.push_back(j % 5 == 0);
    jobs->row.push_back(std::uint64_t(j));
  }
  const std::shared_ptr<const peak_jobs> pool = jobs;
  constexpr std::size_t n = 1000;
  struct out {
    std::vector<float> obs = std::vector<float>(n), final_obs = std::vector<float>(n);
    std::vector<double> rewards = std::vector<double>(n);
    std::vector<std::uint8_t> term = std::vector<std::uint8_t>(n), trunc = std::vector<std::uint8_t>(n);
    std::vector<peak_info> infos = std::vector<peak_info>(n);
    bool operator==(const out&) const = default;
  };
  std::vector<float> actions(n);
  for (std::size_t i = 0; i < n; ++i) actions[i] = 10.0f + float(i % 70) * 0.1f;
  auto run = [&](std::size_t grain, autoreset_mode mode) {
    vector_env<peak_predict> v(std::vector<peak_predict>(n, peak_predict(pool)), mode, grain);
    std::vector<out> steps(4);
    v.reset(42, steps[0].obs, steps[0].infos);
    for (std::size_t k = 1; k < steps.size(); ++k) {
      auto& s = steps[k];
      v.step(actions, {s.obs, s.rewards, s.term, s.trunc, s.infos, s.final_obs, {}});
    }
    return steps;
  };
  for (auto mode : {autoreset_mode::next_step, autoreset_mode::same_step}) {
    const auto serial = run(n, mode), parallel = run(7, mode);
    CHECK(serial == parallel);
  }
  const auto steps = run(16, autoreset_mode::next_step);
  for (std::size_t i : {std::size_t{0}, std::size_t{1}, std::size_t{999}}) {
    peak_predict e(pool);
    float obs = 0;
    peak_info info;
    e.reset(42 + i, std::span<float>(&obs, 1), info);
    CHECK(obs == steps[0].obs[i]);
    const auto r = e.step(std::span<const float>(&actions[i], 1), std::span<float>(&obs, 1), info);
    CHECK(r.reward == steps[1].rewards[i]);
    CHECK(steps[1].term[i] == 1);
    CHECK(steps[2].rewards[i] == 0);  // next_step: the reset step
    e.reset(std::nullopt, std::span<float>(&obs, 1), info);
    CHECK(obs == steps[2].obs[i]);
  }
}

TEST_CASE("vector_env gathers the action masks of masked environments, one row each") {
  vector_env<masked_env> v(std::vector<masked_env>(2), autoreset_mode::disabled);
  std::vector<float> obs(4);
  std::vector<double> rewards(2);
  std::vector<std::uint8_t> term(2), trunc(2), masks(4);
  v.reset(0, obs);
  v.action_masks(masks);
  CHECK(masks == std::vector<std::uint8_t>{1, 1, 1, 1});
  const std::vector<std::int64_t> actions{0, 0};
  v.step(actions, {obs, rewards, term, trunc, {}, {}, {}});
  v.step(actions, {obs, rewards, term, trunc, {}, {}, {}});
  v.action_masks(masks);
  CHECK(masks == std::vector<std::uint8_t>{1, 0, 1, 0});
  std::vector<std::uint8_t> short_masks(3);
  CHECK_THROWS_WITH(v.action_masks(short_masks), Catch::Contains("expected 4"));
}
