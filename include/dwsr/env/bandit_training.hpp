#pragma once
/// \file Training and scoring a bandit policy (env/policies.hpp) in an
/// environment with discrete actions, PeakPredict's bins above all:
/// train_bandit() runs episodes, feeds each step's outcome to the policy and
/// records a learning curve (the mean reward over each window of steps);
/// evaluate_bandit() runs a fixed policy on an environment (the test part)
/// and reports its mean reward and how often it ran out of memory.
///
/// The observation a policy learns from is the one it acted on (the step's
/// context); environments of several steps per episode work too, each step
/// being one sample. Deterministic: the environment is seeded once, with
/// `seed`, and continues its stream from there.

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dwsr/env/env.hpp"
#include "dwsr/env/peak_predict.hpp"
#include "dwsr/env/policies.hpp"
#include "dwsr/error.hpp"

namespace dwsr::env {

/// One point of a learning curve: the steps in its window, ending at `step`.
struct curve_point {
  std::uint64_t step = 0;  ///< steps taken so far (the window's last)
  double mean_reward = 0;  ///< over the window's steps
  double oom_rate = 0;     ///< share of the window's steps that ran out of memory (PeakPredict)
  bool operator==(const curve_point&) const = default;
};

/// train_bandit's settings.
struct bandit_training_options {
  std::uint64_t steps = 10000;  ///< steps to learn from
  std::uint64_t seed = 0;       ///< the environment's first reset
  std::uint64_t window = 1000;  ///< steps per point of the curve (the last point may hold fewer)
  /// Called after each window with the steps taken so far (progress reports).
  std::function<void(std::uint64_t)> progress = {};
};

/// What evaluate_bandit reports.
struct bandit_score {
  std::uint64_t episodes = 0;
  double mean_reward = 0;
  double oom_rate = 0;  ///< share of episodes that ran out of memory (or acted invalidly)
};

namespace detail {
template <class Info>
bool ran_out(const Info& info) {
  if constexpr (requires { info.oom; })
    return info.oom || info.invalid_action;
  else if constexpr (requires { info.ooms; })
    return info.ooms > 0;  // an episode's count so far (GpuPack)
  return false;
}
}  // namespace detail

/// Trains `policy` in `env` for o.steps steps (see the file comment) and
/// returns the learning curve. Throws invalid_input for 0 steps or a window of 0.
template <Environment Env, BanditPolicy Policy>
requires std::same_as<typename Env::action_space_type, discrete_space> std::vector<curve_point> train_bandit(
    Env& env, Policy& policy, const bandit_training_options& o) {
  if (o.steps == 0) throw invalid_input("training for 0 steps; expected at least 1");
  if (o.window == 0) throw invalid_input("a learning-curve window of 0 steps; expected at least 1");
  std::vector<float> obs(env.observation_space().size()), next(obs.size());
  typename Env::info_type info{};
  env.reset(o.seed, obs, info);
  std::vector<curve_point> curve;
  double sum = 0;
  std::uint64_t ooms = 0, in_window = 0;
  for (std::uint64_t s = 1; s <= o.steps; ++s) {
    const auto action = policy.act(obs);
    const auto r = env.step(action, next, info);
    policy.learn(obs, action, r.reward);
    sum += r.reward;
    ooms += detail::ran_out(info);
    ++in_window;
    if (in_window == o.window || s == o.steps) {
      curve.push_back({s, sum / double(in_window), double(ooms) / double(in_window)});
      sum = 0;
      ooms = in_window = 0;
      if (o.progress) o.progress(s);
    }
    if (r.terminated || r.truncated)
      env.reset(std::nullopt, obs, info);
    else
      obs.swap(next);
  }
  return curve;
}

/// Runs `act` (observation -> action, not learning) in `env` for `episodes`
/// one-step episodes from `seed`, and scores it. Throws invalid_input for 0 episodes.
template <Environment Env, class Act>
requires std::same_as<typename Env::action_space_type, discrete_space> bandit_score
evaluate_bandit(Env env, Act&& act, std::uint64_t episodes, std::uint64_t seed) {
  if (episodes == 0) throw invalid_input("evaluating over 0 episodes; expected at least 1");
  std::vector<float> obs(env.observation_space().size());
  typename Env::info_type info{};
  bandit_score score{.episodes = episodes};
  env.reset(seed, obs, info);
  for (std::uint64_t e = 0; e < episodes; ++e) {
    if (e) env.reset(std::nullopt, obs, info);
    const std::int64_t action = act(std::span<const float>(obs));
    const auto r = env.step(action, obs, info);
    score.mean_reward += r.reward;
    score.oom_rate += detail::ran_out(info);
  }
  score.mean_reward /= double(episodes);
  score.oom_rate /= double(episodes);
  return score;
}

}  // namespace dwsr::env
