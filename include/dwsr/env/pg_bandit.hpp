#pragma once
/// \file REINFORCE as a bandit policy (BanditPolicy, env/policies.hpp), so
/// that PeakPredict's discrete variant learns by policy gradient as well as
/// by LinUCB, in the same train_bandit loop and with the same scores. Each
/// step is an episode of one step for softmax_policy (env/reinforce.hpp):
/// its return is its reward, the baseline a ridge regression of the reward
/// on the features, every action valid. The policy updates once per `batch`
/// steps. As LinUCB does, it learns rewards below a floor (PeakPredict's
/// out-of-memory reward) as the floor: an over-prediction's idle share is
/// unbounded, and without the floor a few huge ones rule every batch's
/// advantages, teaching the policy to under-predict.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "dwsr/env/peak_predict.hpp"
#include "dwsr/env/reinforce.hpp"
#include "dwsr/env/spaces.hpp"
#include "dwsr/error.hpp"

namespace dwsr::env {

/// pg_bandit's settings.
/// The defaults are the best of a sweep on PeakPredict's generated pool
/// (learning rate 0.003-0.03, batch 16-256, linear or 32 tanh units, with
/// and without the floor; tests/env/policies_test.cpp's protocol): most
/// other settings collapsed to one bin for every job.
struct pg_bandit_options {
  reinforce_options policy = {.hidden = 0};  ///< the network (linear) and its learning (reinforce.hpp)
  std::size_t batch = 16;                    ///< steps per REINFORCE update
  double reward_floor = peak_oom_reward;     ///< rewards below are learned as this value
};

/// A softmax policy learned by REINFORCE from one-step episodes (see the file comment).
class pg_bandit {
 public:
  /// A policy for observations of `space` and actions of `actions`, nothing
  /// learned yet. Throws invalid_input for a batch of 0 steps, and what
  /// softmax_policy throws.
  pg_bandit(const box_space& space, discrete_space actions, const pg_bandit_options& o = {})
      : policy_(space, actions, o.policy), every_(o.batch), floor_(o.reward_floor), mask_(std::size_t(actions.n), 1) {
    if (o.batch == 0) throw invalid_input("a REINFORCE bandit's batch of 0 steps; expected at least 1");
    if (!std::isfinite(o.reward_floor))
      throw invalid_input("a REINFORCE bandit's reward floor " + std::to_string(o.reward_floor) +
                          ": expected a finite number");
    batch_.observation_size = space.size();
    batch_.actions = std::size_t(actions.n);
  }

  /// An action drawn from the policy for `obs`.
  std::int64_t act(std::span<const float> obs) { return policy_.act(obs, mask_); }
  /// The most probable action for `obs`: how the learned policy is evaluated.
  std::int64_t greedy(std::span<const float> obs) { return policy_.greedy(obs, mask_); }

  /// Adds the step as an episode, its reward at least the floor; every `batch` episodes, one REINFORCE
  /// update. Throws what softmax_policy::update throws (an action out of range).
  void learn(std::span<const float> obs, std::int64_t action, double reward) {
    batch_.append(obs, mask_, action, std::max(reward, floor_));
    batch_.end_episode();
    if (batch_.episodes() < every_) return;
    policy_.update(batch_);
    batch_.clear();
  }

  /// The network.
  const softmax_policy& policy() const noexcept { return policy_; }

 private:
  softmax_policy policy_;
  std::size_t every_;
  double floor_;
  std::vector<std::uint8_t> mask_;
  pg_batch batch_;
};

static_assert(BanditPolicy<pg_bandit>);

}  // namespace dwsr::env
