#pragma once
/// \file Training a policy for a masked, episodic environment
/// (MaskedEnvironment: ChunkSchedule, GpuPack) from start to files, the
/// environment-independent half of `dwsr train --env chunk_schedule`: learn on
/// the train part (train_policy_gradient), then score on the test part, tasks
/// never seen in training (evaluate_policy), three policies on the SAME test
/// episodes (one seed, and an environment whose episodes do not depend on the
/// actions' randomness): the chosen one (a trained policy greedily), the
/// random masked policy, and the environment's heuristic (ChunkSchedule's
/// advisor_action, GpuPack's first fit), a function of the environment's
/// state. Then write the files into a directory, together or not at all
/// (policy_file.hpp's write_policy_files):
///
/// - policy.json: the policy document (format "dwsr policy 1"): the
///   environment, the observation bounds and actions, the pool, the training
///   run, the scores (`test`, `random_test`, `<heuristic>_test`: episodes,
///   mean return, mean length, OOM rate, truncated share), and for a trained
///   policy `sampled_test` (the policy drawing its actions, as it acted in
///   training, rather than taking the most probable) and its network
///   (softmax_policy::to_json);
/// - curve.csv: the learning curve, `episode,step,mean_return,mean_length`,
///   one row per window of training episodes; the header alone when the
///   policy is only scored (random, the heuristic);
/// - any extra files the caller adds (real mode's real.csv).
///
/// A new environment plugs in with its train and test environments, its
/// name and its heuristic: train_episodic(train, test, {"gpu_pack",
/// "first_fit", first_fit_action}, request).

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "dwsr/core/quote.hpp"
#include "dwsr/env/env.hpp"
#include "dwsr/env/policy_file.hpp"
#include "dwsr/env/reinforce.hpp"
#include "dwsr/error.hpp"

namespace dwsr::env {

/// What to train and how.
struct episodic_training_request {
  std::string policy = "reinforce";     ///< "reinforce", "random", or the environment's heuristic's name
  std::uint64_t episodes = 20000;       ///< training episodes (when steps is 0)
  std::uint64_t steps = 0;              ///< when nonzero: training episodes until this many steps
  std::uint64_t seed = 0;               ///< the environments' first resets, the policy's weights, the random stream
  std::uint64_t batch = 16;             ///< episodes per REINFORCE update
  std::uint64_t group = 1;              ///< episodes per reset seed (pg_training_options::group)
  std::uint64_t window = 1000;          ///< episodes per point of the learning curve
  std::uint64_t eval_episodes = 10000;  ///< test episodes per score
  reinforce_options reinforce = {};     ///< the network and its learning (its seed is `seed`)
  nlohmann::json pool = nlohmann::json::object();    ///< where the tasks came from, copied into the document
  std::function<void(std::uint64_t)> progress = {};  ///< called with the episodes done, once per window
};

/// An environment's name and its heuristic: `act(env)`, the action for the
/// environment's state (ChunkSchedule's advisor_action), scored beside every
/// policy; `others`, heuristics scored only when chosen (GpuPack's worst fit).
template <class Env>
struct episodic_heuristic {
  using act_type = std::function<std::int64_t(const Env&)>;
  std::string env;   ///< the environment's name, as `dwsr train --env` takes it
  std::string name;  ///< the heuristic's, as `--policy` takes it
  act_type act;
  std::vector<std::pair<std::string, act_type>> others = {};  ///< name, act
  /// The policies `--policy` takes: random, the heuristics, reinforce.
  std::vector<std::string> policies() const {
    std::vector<std::string> v{"random", name};
    for (const auto& o : others) v.push_back(o.first);
    v.push_back("reinforce");
    return v;
  }
  /// The heuristic named `policy` (this one's or one of `others`), or none.
  const act_type* find(const std::string& policy) const {
    if (policy == name) return &act;
    for (const auto& o : others)
      if (o.first == policy) return &o.second;
    return nullptr;
  }
};

/// What a training run gives.
struct episodic_training_result {
  std::vector<episode_curve_point> curve;  ///< empty when the policy is only scored
  policy_score test;                       ///< the chosen policy on the test part (a trained one greedily)
  policy_score sampled_test;               ///< a trained policy sampling its actions, on the same episodes
  policy_score random_test;                ///< the random masked policy on the same test episodes
  policy_score heuristic_test;             ///< the heuristic on the same test episodes
  std::optional<softmax_policy> trained;   ///< the trained policy (reinforce)
  nlohmann::json document;                 ///< policy.json's
};

/// "a, b or c".
inline std::string one_of(const std::vector<std::string>& names) {
  std::string s;
  for (std::size_t k = 0; k < names.size(); ++k) s += (k == 0 ? "" : k + 1 == names.size() ? " or " : ", ") + names[k];
  return s;
}

/// A baseline's name as policy.json's training entry holds it.
inline const char* baseline_name(pg_baseline b) noexcept {
  switch (b) {
    case pg_baseline::none: return "none";
    case pg_baseline::batch_mean: return "batch_mean";
    case pg_baseline::linear: return "linear";
    case pg_baseline::group: return "group";
  }
  return "?";
}

/// A policy_score as policy.json holds it.
inline nlohmann::json score_json(const policy_score& s) {
  return {{"episodes", s.episodes},
          {"mean_return", s.mean_return},
          {"mean_length", s.mean_length},
          {"oom_rate", s.oom_rate},
          {"truncated_rate", s.truncated_rate}};
}

/// Trains r.policy on `train` and scores it, the random masked policy and
/// h's heuristic on `test` (see the file comment). Throws invalid_input for
/// a policy other than reinforce, random or h.name, 0 evaluation episodes,
/// and what train_policy_gradient and softmax_policy refuse.
template <MaskedEnvironment Env>
episodic_training_result train_episodic(Env train, const Env& test, const episodic_heuristic<Env>& h,
                                        const episodic_training_request& r) {
  const auto names = h.policies();
  if (std::find(names.begin(), names.end(), r.policy) == names.end())
    throw invalid_input("policy " + quote(r.policy) + ": expected " + one_of(names) + " for " + h.env);
  if (r.eval_episodes == 0) throw invalid_input("0 evaluation episodes; expected at least 1");
  episodic_training_result out;
  const auto& space = train.observation_space();
  auto heuristic = [&](const Env& e, std::span<const float>, std::span<const std::uint8_t>) { return h.act(e); };
  out.heuristic_test = evaluate_policy(test, heuristic, r.eval_episodes, r.seed);
  masked_random_policy random(test.action_space(), r.seed);
  out.random_test = evaluate_policy(
      test, [&](std::span<const float> o, std::span<const std::uint8_t> m) { return random.act(o, m); },
      r.eval_episodes, r.seed);
  nlohmann::json training = nlohmann::json::object();
  if (r.policy == "reinforce") {
    auto o = r.reinforce;
    o.seed = r.seed;
    softmax_policy p(space, train.action_space(), o);
    const pg_training_options t{.episodes = r.episodes,
                                .steps = r.steps,
                                .seed = r.seed,
                                .batch = r.batch,
                                .window = r.window,
                                .group = r.group,
                                .progress = r.progress};
    out.curve = train_policy_gradient(train, p, t);
    out.test = evaluate_policy(
        test, [&](std::span<const float> obs, std::span<const std::uint8_t> m) { return p.greedy(obs, m); },
        r.eval_episodes, r.seed);
    training = {{"episodes", out.curve.empty() ? 0 : out.curve.back().episode},
                {"steps", out.curve.empty() ? 0 : out.curve.back().step},
                {"requested", r.steps ? nlohmann::json{{"steps", r.steps}} : nlohmann::json{{"episodes", r.episodes}}},
                {"seed", r.seed},
                {"batch", r.batch},
                {"group", r.group},
                {"baseline", baseline_name(o.baseline)},
                {"window", r.window},
                {"hidden", o.hidden},
                {"learning_rate", o.learning_rate},
                {"gamma", o.gamma},
                {"entropy", o.entropy}};
    auto sampler = p;  // its stream continues where training left it: deterministic from the seed
    out.sampled_test = evaluate_policy(
        test, [&](std::span<const float> obs, std::span<const std::uint8_t> m) { return sampler.act(obs, m); },
        r.eval_episodes, r.seed);
    out.trained = std::move(p);
  } else {
    out.test = r.policy == "random" ? out.random_test : out.heuristic_test;
    if (r.policy != "random" && r.policy != h.name) {
      const auto& act = *h.find(r.policy);
      out.test = evaluate_policy(
          test, [&](const Env& e, std::span<const float>, std::span<const std::uint8_t>) { return act(e); },
          r.eval_episodes, r.seed);
    }
    training = {{"episodes", 0}, {"seed", r.seed}};
  }
  out.document = {{"format", "dwsr policy 1"},
                  {"env", h.env},
                  {"policy", r.policy},
                  {"actions", train.action_space().n},
                  {"observation_low", space.low},
                  {"observation_high", space.high},
                  {"pool", r.pool},
                  {"training", std::move(training)},
                  {"test", score_json(out.test)},
                  {"random_test", score_json(out.random_test)},
                  {h.name + "_test", score_json(out.heuristic_test)}};
  if (out.trained) {
    out.document["sampled_test"] = score_json(out.sampled_test);
    out.document["reinforce"] = out.trained->to_json();
  }
  return out;
}

/// Writes policy.json, curve.csv and `extra` into `dir` (created when
/// missing), together or not at all. Throws io_error naming what could not
/// be written.
inline void write_episodic_training(const std::filesystem::path& dir, const episodic_training_result& t,
                                    const std::vector<extra_file>& extra = {}) {
  write_policy_files(
      dir, t.document,
      [&](std::ostream& out) {
        out << "episode,step,mean_return,mean_length\n";
        for (const auto& c : t.curve)
          out << c.episode << ',' << c.step << ',' << c.mean_return << ',' << c.mean_length << '\n';
      },
      extra);
}

/// The trained softmax policy of a policy.json of environment `env` that
/// write_episodic_training wrote, for observations of the space it was
/// trained on. Throws io_error naming the file when it cannot be read or is
/// not a dwsr policy, invalid_input when it is of another environment, holds
/// no trained policy or a corrupt one.
inline softmax_policy read_episodic_policy(const std::filesystem::path& path, const std::string& env) {
  auto p = read_policy_document(path, "reinforce");
  if (p.doc.value("env", "") != env)
    throw invalid_input(quote(path.string(), 400) + " is a policy for " + quote(p.doc.value("env", "")) +
                        "; expected " + env);
  return softmax_policy::from_json(p.observations, p.doc["reinforce"]);
}

}  // namespace dwsr::env
