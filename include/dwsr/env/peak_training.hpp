#pragma once
/// \file Training a policy for PeakPredict's bins (env/peak_predict.hpp)
/// from start to files, what `dwsr train --env peak_predict` does: learn on
/// the pool's train part (train_bandit), score the policy and the random
/// baseline on the test part, jobs never seen in training
/// (evaluate_bandit), and write two files into a directory, together or not
/// at all (core/atomic_file.hpp):
///
/// - policy.json: the policy document (format "dwsr policy 1"): the
///   environment and its bins, the features, the training run, the scores,
///   and for LinUCB its learned matrices (policies.hpp's to_json);
/// - curve.csv: the learning curve, `step,mean_reward,oom_rate`, one row
///   per window of training steps.
///
/// LinUCB is scored greedily (no exploration); the random policy as it acts.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dwsr/core/atomic_file.hpp"
#include "dwsr/core/quote.hpp"
#include "dwsr/env/bandit_training.hpp"
#include "dwsr/env/peak_predict.hpp"
#include "dwsr/env/policies.hpp"
#include "dwsr/env/policy_file.hpp"
#include "dwsr/error.hpp"

namespace dwsr::env {

/// What to train and how.
struct peak_training_request {
  std::string policy = "linucb";                     ///< "linucb" or "random"
  std::uint64_t steps = 100000;                      ///< training steps (one-step episodes)
  std::uint64_t seed = 0;                            ///< the environments' first resets and the random policy's stream
  std::uint64_t window = 1000;                       ///< steps per point of the learning curve
  std::uint64_t eval_episodes = 10000;               ///< test episodes per score
  std::int64_t bins = 16;                            ///< PeakPredict's quantile bins
  double oom_reward = peak_oom_reward;               ///< PeakPredict's out-of-memory reward
  linucb_options linucb = {};                        ///< LinUCB's settings
  nlohmann::json pool = nlohmann::json::object();    ///< where the jobs came from, copied into the document
  std::function<void(std::uint64_t)> progress = {};  ///< called with the steps done, once per window
};

/// What a training run gives.
struct peak_training_result {
  std::vector<curve_point> curve;
  bandit_score test;              ///< the trained policy on the test part
  bandit_score random_test;       ///< the random policy on the same test episodes
  nlohmann::json policy;          ///< policy.json's document
  std::optional<linucb> trained;  ///< the learned LinUCB (none for the random policy)
};

/// The policy names train_peak_predict takes.
inline const std::vector<std::string>& peak_policy_names() {
  static const std::vector<std::string> names{"random", "linucb"};
  return names;
}

/// Trains r.policy on `jobs`' train part and scores it on the test part (see
/// the file comment). Throws invalid_input for an unknown policy, 0 steps, a
/// window or evaluation of 0, and what PeakPredict and LinUCB refuse.
inline peak_training_result train_peak_predict(std::shared_ptr<const peak_jobs> jobs, const peak_training_request& r) {
  if (r.policy != "random" && r.policy != "linucb")
    throw invalid_input("policy " + quote(r.policy) + ": expected random or linucb");
  if (r.eval_episodes == 0) throw invalid_input("0 evaluation episodes; expected at least 1");
  peak_predict_bins train(jobs, {.part = pool_part::train, .oom_reward = r.oom_reward, .bins = r.bins});
  const peak_predict_bins test(jobs, {.part = pool_part::test, .oom_reward = r.oom_reward, .bins = r.bins});
  const bandit_training_options o{.steps = r.steps, .seed = r.seed, .window = r.window, .progress = r.progress};
  peak_training_result out;
  random_policy baseline(train.action_space(), r.seed);
  nlohmann::json learned;
  if (r.policy == "linucb") {
    linucb p(train.observation_space(), train.action_space(), r.linucb);
    out.curve = train_bandit(train, p, o);
    out.test = evaluate_bandit(
        test, [&](std::span<const float> obs) { return p.greedy(obs); }, r.eval_episodes, r.seed);
    learned = p.to_json();
    out.trained = std::move(p);
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
  if (!learned.is_null()) out.policy["linucb"] = std::move(learned);
  return out;
}

/// Writes policy.json, curve.csv and `extra` into `dir` (created when
/// missing), together or not at all. Throws io_error naming what could not
/// be written.
inline void write_peak_training(const std::filesystem::path& dir, const peak_training_result& t,
                                const std::vector<extra_file>& extra = {}) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw io_error("cannot create the output directory " + quote(dir.string(), 400) +
                   (ec ? ": " + ec.message() : std::string(": a file of that name exists")));
  dwsr::detail::commit_group files;
  files.write(dir / "policy.json", [&](std::ostream& out) { out << t.policy.dump(1) << '\n'; });
  files.write(dir / "curve.csv", [&](std::ostream& out) {
    out << "step,mean_reward,oom_rate\n";
    out.precision(17);
    for (const auto& c : t.curve) out << c.step << ',' << c.mean_reward << ',' << c.oom_rate << '\n';
  });
  for (const auto& f : extra) files.write(dir / f.name, [&](std::ostream& out) { out << f.content; });
  files.commit();
}

/// The LinUCB policy of a policy.json that write_peak_training wrote, with
/// the observation space it was trained on. Throws io_error naming the file
/// when it cannot be read or is not a dwsr policy, invalid_input when it
/// holds no LinUCB state or a corrupt one.
inline linucb read_peak_policy(const std::filesystem::path& path) {
  const auto p = read_policy_document(path, "linucb");
  return linucb::from_json(p.observations, p.doc["linucb"]);
}

}  // namespace dwsr::env
