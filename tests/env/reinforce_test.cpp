// The policy-gradient agent (env/reinforce.hpp) on a small masked
// environment of several steps per episode, written here: training is
// deterministic from the seeds, the trained greedy policy beats the random
// one by far on held-out episodes, masked actions are never drawn, the JSON
// state acts as the policy did, an all-masked state is an error, and the
// gradient is the objective's (finite differences).

#include <catch2/catch.hpp>

#include <cmath>
#include <optional>
#include <set>

#include "dwsr/env/reinforce.hpp"

using namespace dwsr;
using namespace dwsr::env;

namespace {

/// Six steps per episode; each step shows one of four contexts (one-hot, and
/// the step's place in the episode). Action c (the context's) earns 1, the
/// other context actions -0.5, action 4 (wait) 0, action 5 (quit, valid on
/// even steps only) ends the episode with 0. The action after the context,
/// (c + 1) % 4, is masked. A random valid action earns 0 on average and
/// quits early; the best policy earns 6.
class context_corridor {
 public:
  using action_space_type = discrete_space;
  struct info_type {
    std::uint64_t step = 0;
    bool operator==(const info_type&) const = default;
  };
  static constexpr std::uint64_t length = 6;

  box_space observation_space() const { return box_space(std::vector<float>(5, 0.f), std::vector<float>(5, 1.f), {5}); }
  discrete_space action_space() const { return {6}; }

  void reset(std::optional<std::uint64_t> seed, std::span<float> obs, info_type& info) {
    if (seed) rng_ = xoshiro256ss(stream_key(*seed, 0, 0));
    t_ = 0;
    draw(obs, info);
  }
  step_result step(std::int64_t action, std::span<float> obs, info_type& info) {
    step_result r;
    if (action == context_)
      r.reward = 1;
    else if (action >= 0 && action < 4)
      r.reward = -0.5;
    ++t_;
    r.terminated = action == 5 || t_ == length;
    draw(obs, info);
    return r;
  }
  void action_mask(std::span<std::uint8_t> mask) const {
    for (std::size_t k = 0; k < mask.size(); ++k) mask[k] = 1;
    mask[std::size_t((context_ + 1) % 4)] = 0;
    mask[5] = t_ % 2 == 0;
  }

 private:
  void draw(std::span<float> obs, info_type& info) {
    context_ = std::int64_t(rng_.next() % 4);
    for (std::size_t k = 0; k < 4; ++k) obs[k] = float(std::int64_t(k) == context_);
    obs[4] = float(t_) / float(length);
    info.step = t_;
  }

  xoshiro256ss rng_{stream_key(0, 0, 0)};
  std::int64_t context_ = 0;
  std::uint64_t t_ = 0;
};
static_assert(MaskedEnvironment<context_corridor>);

reinforce_options small_net(std::uint64_t seed) {
  reinforce_options o;
  o.hidden = 16;
  o.learning_rate = 0.02;
  o.seed = seed;
  return o;
}

std::vector<episode_curve_point> train(softmax_policy& p, std::uint64_t episodes, std::uint64_t env_seed) {
  context_corridor env;
  return train_policy_gradient(env, p, {.episodes = episodes, .seed = env_seed, .batch = 16, .window = 50});
}

bool same_bits(const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

}  // namespace

TEST_CASE("policy-gradient training is the same bit for bit from the same seeds") {
  context_corridor env;
  softmax_policy a(env.observation_space(), env.action_space(), small_net(5));
  softmax_policy b(env.observation_space(), env.action_space(), small_net(5));
  softmax_policy c(env.observation_space(), env.action_space(), small_net(6));
  REQUIRE(same_bits(a.parameters(), b.parameters()));
  REQUIRE_FALSE(same_bits(a.parameters(), c.parameters()));
  const auto ca = train(a, 400, 7), cb = train(b, 400, 7), cc = train(c, 400, 7);
  CHECK(ca.size() == 8);
  CHECK(ca == cb);
  CHECK(same_bits(a.parameters(), b.parameters()));
  CHECK(a.updates() == 25);
  CHECK(ca != cc);
  CHECK_FALSE(same_bits(a.parameters(), c.parameters()));
  // Another environment seed, the same policy seed: other episodes, other weights.
  softmax_policy d(env.observation_space(), env.action_space(), small_net(5));
  CHECK(train(d, 400, 8) != ca);
  CHECK_FALSE(same_bits(a.parameters(), d.parameters()));
}

TEST_CASE("a trained policy-gradient agent beats the random policy on held-out episodes") {
  // Measured: random scores 0.01 per episode (4.3 steps: it quits
  // early); the trained greedy policy 6.0 of the best 6 (every step right)
  // after 2,000 episodes, for the MLP and for the linear policy (2,000
  // held-out episodes each; the random policy's standard error is about
  // 0.03). The first window of training scores 0.3 (MLP) and 0.15 (linear),
  // the last 6.0 and 5.4 (actions still sampled).
  context_corridor env;
  for (std::size_t hidden : {std::size_t(16), std::size_t(0)}) {
    auto o = small_net(1);
    o.hidden = hidden;
    softmax_policy p(env.observation_space(), env.action_space(), o);
    const auto curve = train(p, 2000, 3);
    const auto trained = evaluate_policy(
        env, [&](std::span<const float> obs, std::span<const std::uint8_t> mask) { return p.greedy(obs, mask); }, 2000,
        999);
    masked_random_policy random(env.action_space(), 4);
    const auto baseline = evaluate_policy(
        env, [&](std::span<const float> obs, std::span<const std::uint8_t> mask) { return random.act(obs, mask); },
        2000, 999);
    INFO("hidden " << hidden << ": trained " << trained.mean_return << " (" << trained.mean_length << " steps), random "
                   << baseline.mean_return << " (" << baseline.mean_length << " steps), curve "
                   << curve.front().mean_return << " -> " << curve.back().mean_return);
    CHECK(std::fabs(baseline.mean_return) < 0.3);
    CHECK(trained.mean_return > 5.5);
    CHECK(trained.mean_length == 6.0);
    CHECK(curve.back().mean_return > curve.front().mean_return + 3);
    CHECK(curve.back().episode == 2000);
  }
}

TEST_CASE("masked actions are never drawn and the valid ones all are") {
  const auto space = box_space(std::vector<float>(3, 0.f), std::vector<float>(3, 1.f), {3});
  softmax_policy p(space, {5}, small_net(2));
  // Large random weights, so that some masked actions would be likely if drawn.
  xoshiro256ss rng(9);
  Eigen::VectorXd theta(Eigen::Index(p.parameter_count()));
  for (auto& w : theta) w = rng.uniform(-3, 3);
  p.set_parameters(theta);
  const std::vector<float> obs{0.2f, 0.9f, 0.5f};
  for (const std::vector<std::uint8_t>& mask :
       {std::vector<std::uint8_t>{1, 0, 1, 0, 1}, std::vector<std::uint8_t>{0, 0, 0, 1, 0},
        std::vector<std::uint8_t>{0, 1, 1, 1, 1}}) {
    const auto probs = p.action_probabilities(obs, mask);
    std::vector<int> counts(5, 0);
    for (int k = 0; k < 20000; ++k) ++counts[std::size_t(p.act(obs, mask))];
    for (std::size_t k = 0; k < 5; ++k) {
      INFO("action " << k << " masked " << !mask[k] << " drawn " << counts[k] << " probability "
                     << probs[Eigen::Index(k)]);
      if (!mask[k]) {
        CHECK(counts[k] == 0);
        CHECK(probs[Eigen::Index(k)] == 0);
      } else {
        CHECK(probs[Eigen::Index(k)] > 0);
        // Within 5 binomial standard deviations of the policy's probability.
        const double pk = probs[Eigen::Index(k)], sd = std::sqrt(20000 * pk * (1 - pk));
        CHECK(std::fabs(counts[k] - 20000 * pk) <= 5 * sd + 1);
      }
    }
    CHECK(mask[std::size_t(p.greedy(obs, mask))]);
    CHECK(std::fabs(probs.sum() - 1) < 1e-12);
  }
}

TEST_CASE("a policy read back from its JSON acts as the policy did") {
  context_corridor env;
  softmax_policy p(env.observation_space(), env.action_space(), small_net(4));
  train(p, 200, 1);
  const auto text = p.to_json().dump();
  const auto q = softmax_policy::from_json(env.observation_space(), nlohmann::json::parse(text));
  CHECK(same_bits(p.parameters(), q.parameters()));
  CHECK(q.updates() == p.updates());
  CHECK(q.options().hidden == 16);
  auto copy = q;
  xoshiro256ss rng(3);
  std::vector<float> obs(5);
  std::vector<std::uint8_t> mask(6);
  for (int k = 0; k < 1000; ++k) {
    for (auto& v : obs) v = float(rng.uniform());
    for (auto& m : mask) m = rng.next() % 2;
    mask[rng.next() % 6] = 1;
    REQUIRE(p.greedy(obs, mask) == copy.greedy(obs, mask));
  }
  // A linear policy too, and a damaged state names what is wrong.
  auto o = small_net(4);
  o.hidden = 0;
  softmax_policy lin(env.observation_space(), env.action_space(), o);
  train(lin, 100, 1);
  CHECK(same_bits(softmax_policy::from_json(env.observation_space(), lin.to_json()).parameters(), lin.parameters()));
  auto broken = p.to_json();
  broken["layers"][1][2].erase(0);
  CHECK_THROWS_WITH(softmax_policy::from_json(env.observation_space(), broken),
                    Catch::Contains("the output layer row 2 is not 17 numbers"));
  CHECK_THROWS_WITH(softmax_policy::from_json(box_space::scalar(0, 1), p.to_json()),
                    Catch::Contains("6 features for an observation space of 1 values"));
}

TEST_CASE("a state with every action masked is an error that says so") {
  context_corridor env;
  softmax_policy p(env.observation_space(), env.action_space(), small_net(1));
  const std::vector<float> obs(5, 0.5f);
  const std::vector<std::uint8_t> none(6, 0), short_mask(5, 1);
  CHECK_THROWS_AS(p.act(obs, none), invalid_input);
  CHECK_THROWS_WITH(p.act(obs, none), Catch::Contains("every one of the 6 actions masked"));
  CHECK_THROWS_WITH(p.greedy(obs, none), Catch::Contains("every one of the 6 actions masked"));
  CHECK_THROWS_WITH(masked_random_policy({6}, 1).act(obs, none), Catch::Contains("every one of the 6 actions masked"));
  CHECK_THROWS_WITH(p.act(obs, short_mask), Catch::Contains("an action mask of 5 bytes; expected 6"));
  CHECK_THROWS_AS(softmax_policy(env.observation_space(), {0}), invalid_input);
  CHECK_THROWS_AS(train_policy_gradient(env, p, {.episodes = 10, .batch = 0}), invalid_input);
}

TEST_CASE("the policy gradient equals finite differences of the objective") {
  const auto space = box_space({0.f, -2.f}, {1.f, 2.f}, {2});
  for (std::size_t hidden : {std::size_t(3), std::size_t(0)}) {
    reinforce_options o;
    o.hidden = hidden;
    o.entropy = 0.3;
    softmax_policy p(space, {4}, o);
    xoshiro256ss rng(17);
    Eigen::VectorXd theta(Eigen::Index(p.parameter_count()));
    for (auto& w : theta) w = rng.uniform(-1.5, 1.5);
    p.set_parameters(theta);
    pg_batch batch{.observation_size = 2, .actions = 4};
    const std::vector<std::vector<std::uint8_t>> masks{
        {1, 1, 1, 1}, {1, 0, 1, 1}, {0, 1, 0, 1}, {0, 0, 1, 0}, {1, 1, 0, 1}};
    std::vector<double> weights;
    for (std::size_t i = 0; i < masks.size(); ++i) {
      const std::vector<float> obs{float(rng.uniform()), float(rng.uniform(-2, 2))};
      std::int64_t a = 0;
      while (!masks[i][std::size_t(a)]) ++a;
      batch.append(obs, masks[i], a + (i == 4 ? 1 : 0), 0);
      weights.push_back(rng.uniform(-2, 2));
    }
    batch.end_episode();
    Eigen::VectorXd g;
    p.gradient(batch, weights, g);
    REQUIRE(g.size() == theta.size());
    double largest = 0;
    for (Eigen::Index k = 0; k < theta.size(); ++k) {
      const double h = 1e-6;
      Eigen::VectorXd up = theta, down = theta;
      up[k] += h;
      down[k] -= h;
      p.set_parameters(up);
      const double fu = p.objective(batch, weights);
      p.set_parameters(down);
      const double fd = p.objective(batch, weights);
      const double numeric = (fu - fd) / (2 * h);
      INFO("hidden " << hidden << " weight " << k << ": analytic " << g[k] << ", numeric " << numeric);
      CHECK(std::fabs(g[k] - numeric) < 1e-7 + 1e-6 * std::fabs(numeric));
      largest = std::max(largest, std::fabs(g[k]));
    }
    CHECK(largest > 0.01);  // a real gradient, not zeros on both sides
  }
}

TEST_CASE("the group baseline measures each episode's return against the others of its group") {
  const auto space = box_space(std::vector<float>(1, 0.f), std::vector<float>(1, 1.f), {1});
  auto o = small_net(3);
  o.baseline = pg_baseline::group;
  o.normalize_advantages = false;
  softmax_policy p(space, {2}, o);
  const std::vector<float> obs{0.5f};
  const std::vector<std::uint8_t> mask{1, 1};
  // Two groups of three episodes: returns 1 + 2, 2, 6 and 0, 0, 3.
  pg_batch b{.observation_size = 1, .actions = 2, .group = 3};
  for (const auto& episode : std::vector<std::vector<double>>{{1, 2}, {2}, {6}, {0}, {0}, {1, 1, 1}}) {
    for (double r : episode) b.append(obs, mask, 0, r);
    b.end_episode();
  }
  p.update(b);
  // Episode 1: 3 - (2 + 6) / 2 = -1 at both of its steps; 2 - 4.5; 6 - 2.5; 0 - 1.5 twice; 3 - 0.
  const std::vector<double> want{-1, -1, -2.5, 3.5, -1.5, -1.5, 3, 3, 3};
  CHECK(b.advantages == want);
  // Normalized: the same signs, mean 0, deviation 1.
  o.normalize_advantages = true;
  softmax_policy q(space, {2}, o);
  q.update(b);
  double mean = 0, square = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    CHECK((b.advantages[i] > 0) == (want[i] > 0));
    mean += b.advantages[i];
    square += b.advantages[i] * b.advantages[i];
  }
  CHECK(std::fabs(mean) < 1e-12);
  CHECK(std::fabs(square / double(want.size()) - 1) < 1e-12);
  // Not whole groups, or groups of one: errors that say so.
  b.group = 4;
  CHECK_THROWS_WITH(p.update(b), Catch::Contains("6 episodes in groups of 4") && Catch::Contains("whole groups"));
  b.group = 1;
  CHECK_THROWS_AS(p.update(b), invalid_input);
}

namespace {

/// context_corridor that records the seed of each reset.
struct seed_recorder : context_corridor {
  std::vector<std::optional<std::uint64_t>> seeds;
  void reset(std::optional<std::uint64_t> seed, std::span<float> obs, info_type& info) {
    seeds.push_back(seed);
    context_corridor::reset(seed, obs, info);
  }
};
static_assert(MaskedEnvironment<seed_recorder>);

}  // namespace

TEST_CASE("training in groups resets each group's episodes with one seed and learns with the group baseline") {
  seed_recorder env;
  auto o = small_net(1);
  o.baseline = pg_baseline::group;
  softmax_policy p(env.observation_space(), env.action_space(), o);
  const pg_training_options t{.episodes = 16, .seed = 7, .batch = 8, .window = 8, .group = 4};
  train_policy_gradient(env, p, t);
  REQUIRE(env.seeds.size() == 16);
  std::set<std::uint64_t> distinct;
  for (std::size_t e = 0; e < 16; ++e) {
    REQUIRE(env.seeds[e]);
    CHECK(*env.seeds[e] == *env.seeds[e - e % 4]);
    distinct.insert(*env.seeds[e]);
  }
  CHECK(distinct.size() == 4);
  CHECK(p.updates() == 2);
  // The same seeds, the same groups; by steps, the last group is whole.
  seed_recorder again;
  softmax_policy p2(env.observation_space(), env.action_space(), o);
  train_policy_gradient(again, p2, t);
  CHECK(again.seeds == env.seeds);
  CHECK(same_bits(p.parameters(), p2.parameters()));
  seed_recorder by_steps;
  softmax_policy p3(env.observation_space(), env.action_space(), o);
  const auto curve = train_policy_gradient(by_steps, p3, {.steps = 30, .seed = 7, .batch = 8, .window = 8, .group = 4});
  CHECK(curve.back().episode % 4 == 0);
  CHECK(curve.back().step >= 30);

  // Groups that do not divide the batch or the episodes, or the group baseline without groups.
  auto refused = [&](const pg_training_options& bad) {
    seed_recorder e;
    softmax_policy q(e.observation_space(), e.action_space(), o);
    CHECK_THROWS_AS(train_policy_gradient(e, q, bad), invalid_input);
  };
  refused({.episodes = 16, .batch = 6, .group = 4});
  refused({.episodes = 18, .batch = 8, .group = 4});
  refused({.episodes = 16, .batch = 8, .group = 0});
  refused({.episodes = 16, .batch = 8, .group = 1});

  // It learns: the linear policy with the group baseline beats random as the plain one does.
  context_corridor corridor;
  auto lin = o;
  lin.hidden = 0;
  softmax_policy learner(corridor.observation_space(), corridor.action_space(), lin);
  train_policy_gradient(corridor, learner, {.episodes = 2000, .seed = 3, .batch = 16, .window = 100, .group = 4});
  const auto trained = evaluate_policy(
      corridor, [&](std::span<const float> obs, std::span<const std::uint8_t> m) { return learner.greedy(obs, m); },
      2000, 999);
  INFO("trained " << trained.mean_return);
  CHECK(trained.mean_return > 5.5);
}
