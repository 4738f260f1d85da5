#pragma once
/// \file Training a policy for PeakPredict's bins (env/peak_predict.hpp)
/// from start to files, what `dwsr train --env peak_predict` does: learn on
/// the pool's train part (train_bandit), score the policy and the random
/// baseline on the test part, jobs never seen in training
/// (evaluate_bandit), and write two files into a directory, together or not
/// at all (policy_file.hpp's write_policy_files):
///
/// - policy.json: the policy document (format "dwsr policy 1"): the
///   environment and its bins, the features, the training run, the scores,
///   and the learned state: LinUCB's matrices (policies.hpp's to_json) or
///   REINFORCE's network (reinforce.hpp's to_json);
/// - curve.csv: the learning curve, `step,mean_reward,oom_rate`, one row
///   per window of training steps.
///
/// LinUCB and REINFORCE (pg_bandit.hpp) are scored greedily (no exploration);
/// the random policy as it acts.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dwsr/core/quote.hpp"
#include "dwsr/env/bandit_training.hpp"
#include "dwsr/env/peak_predict.hpp"
#include "dwsr/env/pg_bandit.hpp"
#include "dwsr/env/policies.hpp"
#include "dwsr/env/policy_file.hpp"
#include "dwsr/error.hpp"

namespace dwsr::env {

/// What to train and how.
struct peak_training_request {
  std::string policy = "linucb";                     ///< "linucb", "reinforce" or "random"
  std::uint64_t steps = 100000;                      ///< training steps (one-step episodes)
  std::uint64_t seed = 0;                            ///< the environments' first resets and the random policy's stream
  std::uint64_t window = 1000;                       ///< steps per point of the learning curve
  std::uint64_t eval_episodes = 10000;               ///< test episodes per score
  std::int64_t bins = 16;                            ///< PeakPredict's quantile bins
  double oom_reward = peak_oom_reward;               ///< PeakPredict's out-of-memory reward
  linucb_options linucb = {};                        ///< LinUCB's settings
  pg_bandit_options reinforce = {};                  ///< REINFORCE's settings; its network is seeded with `seed`
  nlohmann::json pool = nlohmann::json::object();    ///< where the jobs came from, copied into the document
  std::function<void(std::uint64_t)> progress = {};  ///< called with the steps done, once per window
};

/// What a training run gives.
struct peak_training_result {
  std::vector<curve_point> curve;
  bandit_score test;         ///< the trained policy on the test part
  bandit_score random_test;  ///< the random policy on the same test episodes
  nlohmann::json policy;     ///< policy.json's document
  /// The learned policy's greedy action for an observation (empty for the random policy).
  std::function<std::int64_t(std::span<const float>)> greedy;
};

/// Trains r.policy on `jobs`' train part and scores it on the test part (see
/// the file comment). Throws invalid_input for an unknown policy, 0 steps, a
/// window or evaluation of 0, and what PeakPredict and LinUCB refuse.
inline peak_training_result train_peak_predict(std::shared_ptr<const peak_jobs> jobs, const peak_training_request& r) {
  if (r.policy != "random" && r.policy != "linucb" && r.policy != "reinforce")
    throw invalid_input("policy " + quote(r.policy) + ": expected random, linucb or reinforce");
  if (r.eval_episodes == 0) throw invalid_input("0 evaluation episodes; expected at least 1");
  peak_predict_bins train(jobs, {.part = pool_part::train, .oom_reward = r.oom_reward, .bins = r.bins});
  const peak_predict_bins test(jobs, {.part = pool_part::test, .oom_reward = r.oom_reward, .bins = r.bins});
  const bandit_training_options o{.steps = r.steps, .seed = r.seed, .window = r.window, .progress = r.progress};
  peak_training_result out;
  random_policy baseline(train.action_space(), r.seed);
  nlohmann::json learned;
  // Trains a learner of type P, keeps it for `greedy`, and records its state.
  auto learn = [&]<class P>(P p, auto to_json) {
    out.curve = train_bandit(train, p, o);
    auto kept = std::make_shared<P>(std::move(p));
    out.greedy = [kept](std::span<const float> obs) { return kept->greedy(obs); };
    out.test = evaluate_bandit(test, out.greedy, r.eval_episodes, r.seed);
    learned = to_json(*kept);
  };
  if (r.policy == "linucb") {
    learn(linucb(train.observation_space(), train.action_space(), r.linucb),
          [](const linucb& p) { return p.to_json(); });
  } else if (r.policy == "reinforce") {
    auto po = r.reinforce;
    po.policy.seed = r.seed;
    learn(pg_bandit(train.observation_space(), train.action_space(), po), [&](const pg_bandit& p) -> nlohmann::json {
      return {{"network", p.policy().to_json()},
              {"batch", po.batch},
              {"learning_rate", po.policy.learning_rate},
              {"reward_floor", po.reward_floor}};
    });
  } else {
    random_policy p(train.action_space(), r.seed);
    out.curve = train_bandit(train, p, o);
    out.test = evaluate_bandit(
        test, [&](std::span<const float> obs) { return p.act(obs); }, r.eval_episodes, r.seed);
  }
  out.random_test = evaluate_bandit(
      test, [&](std::span<const float> obs) { return baseline.act(obs); }, r.eval_episodes, r.seed);

  const auto& p = train.jobs();
  std::vector<std::string> features;
  for (const auto& c : p.features) features.push_back(c.name);
  std::uint64_t train_jobs = 0;
  for (auto t : p.test) train_jobs += t == 0;
  auto pool = r.pool;
  pool.update({{"label", p.label},
               {"split", p.split},
               {"jobs", p.size()},
               {"train_jobs", train_jobs},
               {"test_jobs", p.size() - train_jobs}});
  auto score = [](const bandit_score& s) {
    return nlohmann::json{{"episodes", s.episodes}, {"mean_reward", s.mean_reward}, {"oom_rate", s.oom_rate}};
  };
  out.policy = {{"format", "dwsr policy 1"},
                {"env", "peak_predict"},
                {"action", "bins"},
                {"bins", r.bins},
                {"bin_peaks", train.bin_peaks()},
                {"oom_reward", r.oom_reward},
                {"policy", r.policy},
                {"features", features},
                {"observation_low", train.observation_space().low},
                {"observation_high", train.observation_space().high},
                {"pool", std::move(pool)},
                {"training", {{"steps", r.steps}, {"seed", r.seed}, {"window", r.window}}},
                {"test", score(out.test)},
                {"random_test", score(out.random_test)}};
  if (!learned.is_null()) out.policy[r.policy] = std::move(learned);
  return out;
}

/// Writes policy.json, curve.csv and `extra` into `dir` (created when
/// missing), together or not at all. Throws io_error naming what could not
/// be written.
inline void write_peak_training(const std::filesystem::path& dir, const peak_training_result& t,
                                const std::vector<extra_file>& extra = {}) {
  write_policy_files(
      dir, t.policy,
      [&](std::ostream& out) {
        out << "step,mean_reward,oom_rate\n";
        for (const auto& c : t.curve) out << c.step << ',' << c.mean_reward << ',' << c.oom_rate << '\n';
      },
      extra);
}

/// The LinUCB policy of a policy.json that write_peak_training wrote, with
/// the observation space it was trained on. Throws io_error naming the file
/// when it cannot be read or is not a dwsr policy, invalid_input when it
/// holds no LinUCB state or a corrupt one.
inline linucb read_peak_policy(const std::filesystem::path& path) {
  const auto p = read_policy_document(path, "linucb");
  return linucb::from_json(p.observations, p.doc["linucb"]);
}

/// The REINFORCE network of a policy.json that write_peak_training wrote for
/// `--policy reinforce`; its greedy action with every bin allowed is the
/// trained policy's. Throws as read_peak_policy does.
inline softmax_policy read_peak_reinforce(const std::filesystem::path& path) {
  const auto p = read_policy_document(path, "reinforce");
  const auto& state = p.doc["reinforce"];
  if (!state.is_object() || !state.contains("network"))
    throw invalid_input(quote(path.string(), 400) +
                        ": \"reinforce\" holds no \"network\"; expected the one dwsr train wrote");
  return softmax_policy::from_json(p.observations, state["network"]);
}

}  // namespace dwsr::env
