#pragma once
/// \file What `dwsr train --env gpu_pack` does (env/episodic_training.hpp for
/// GpuPack): train `reinforce` on the pool's train kinds (or only score
/// `random` or `first_fit`), score the policy, the random masked policy and
/// first_fit_action on the same test episodes, kinds never seen in training,
/// and give the document policy.json holds: the environment's options (the
/// devices, arrivals, load, time cost) are part of it, since a policy acts on
/// observations of those devices. read_pack_policy reads a trained policy back.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "dwsr/env/episodic_training.hpp"
#include "dwsr/env/gpu_pack.hpp"
#include "dwsr/env/gpu_pack_jobs.hpp"
#include "dwsr/env/reinforce.hpp"

namespace dwsr::env {

/// What `dwsr train --env gpu_pack --policy reinforce` trains by default: a
/// linear policy, 50,000 episodes in groups of 8 that share their arrivals,
/// each against the others of its group (pg_baseline::group), an entropy
/// bonus of 0.02. The arrivals, which no policy chooses, decide most of an
/// episode's return, so the plain estimator's batch of 16 traces learns
/// mostly their noise (docs/env.md has the comparison).
inline episodic_training_request pack_training_request() {
  episodic_training_request r;
  r.episodes = 50000;
  r.group = 8;
  r.reinforce.hidden = 0;
  r.reinforce.entropy = 0.02;
  r.reinforce.baseline = pg_baseline::group;
  return r;
}

/// GpuPack's name and heuristic, first_fit_action (blind to the future, as a
/// real scheduler is; safe_fit_action is an oracle of the profiles), and
/// worst_fit_action, scored when chosen.
inline episodic_heuristic<gpu_pack> pack_heuristic() {
  return {"gpu_pack",
          "first_fit",
          [](const gpu_pack& e) { return first_fit_action(e); },
          {{"worst_fit", [](const gpu_pack& e) { return worst_fit_action(e); }}}};
}

/// Trains r.policy on `jobs`' train kinds and scores it on the test kinds,
/// both under `options` (its part is set here). The document's pool is
/// r.pool (how the caller drew it) with the kinds of each part counted, and
/// its `environment` the options. Throws invalid_input as
/// train_episodic and gpu_pack do.
inline episodic_training_result train_gpu_pack(std::shared_ptr<const gpu_pack_jobs> jobs, episodic_training_request r,
                                               gpu_pack_options options = {}) {
  options.part = pool_part::train;
  const gpu_pack train(jobs, options);
  options.part = pool_part::test;
  const gpu_pack test(jobs, options);
  std::uint64_t test_kinds = 0;
  for (const auto& k : jobs->kinds) test_kinds += k.test;
  r.pool.update({{"kinds", jobs->size()}, {"train_kinds", jobs->size() - test_kinds}, {"test_kinds", test_kinds}});
  std::vector<std::string> devices;
  for (const auto& d : options.devices) devices.push_back(d.name);
  auto t = train_episodic(train, test, pack_heuristic(), r);
  t.document["environment"] = {
      {"devices", devices},
      {"recovery", options.recovery.name},
      {"arrivals", options.jobs},
      {"load", options.load},
      {"max_running", options.max_running},
      {"time_cost", options.time_cost == gpu_pack_time_cost::makespan ? "makespan" : "flow_time"}};
  return t;
}

/// The trained policy of a `dwsr train --env gpu_pack --policy reinforce`
/// policy.json, for GpuPack's observations of the devices it was trained on
/// (the document's `environment`). Throws as read_episodic_policy does.
inline softmax_policy read_pack_policy(const std::filesystem::path& path) {
  return read_episodic_policy(path, "gpu_pack");
}

}  // namespace dwsr::env
