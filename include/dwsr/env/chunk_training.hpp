#pragma once
/// \file What `dwsr train --env chunk_schedule` does (env/episodic_training.hpp
/// for ChunkSchedule): generate the task pool, train `reinforce` on its train
/// part (or only score `random` or `advisor`), score the policy, the random
/// masked policy and advisor_action on the same test episodes, and give the
/// document policy.json holds. read_chunk_policy reads a trained policy back.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "dwsr/env/chunk_schedule.hpp"
#include "dwsr/env/chunk_tasks.hpp"
#include "dwsr/env/episodic_training.hpp"
#include "dwsr/env/reinforce.hpp"

namespace dwsr::env {

/// The policy names `dwsr train --env chunk_schedule` takes.
inline const std::vector<std::string>& chunk_policy_names() {
  static const std::vector<std::string> names{"random", "advisor", "reinforce"};
  return names;
}

/// ChunkSchedule's name and heuristic, advisor_action.
inline episodic_heuristic<chunk_schedule> chunk_heuristic() {
  return {"chunk_schedule", "advisor", [](const chunk_schedule& e) { return advisor_action(e); }};
}

/// Trains r.policy on `tasks`' train part and scores it on the test part
/// (env/episodic_training.hpp); the document's pool names the pool's
/// options. Throws invalid_input as train_episodic does.
inline episodic_training_result train_chunk_schedule(std::shared_ptr<const chunk_tasks> tasks,
                                                     episodic_training_request r) {
  const chunk_schedule train(tasks), test(tasks, {.part = pool_part::test});
  std::uint64_t test_tasks = 0;
  for (const auto& t : tasks->tasks) test_tasks += t.test;
  r.pool.update({{"tasks", tasks->size()},
                 {"seed", tasks->options.seed},
                 {"test_every", tasks->options.test_every},
                 {"train_tasks", tasks->size() - test_tasks},
                 {"test_tasks", test_tasks}});
  return train_episodic(train, test, chunk_heuristic(), r);
}

/// The trained policy of a `dwsr train --env chunk_schedule --policy
/// reinforce` policy.json, for ChunkSchedule's observations. Throws as
/// read_episodic_policy does.
inline softmax_policy read_chunk_policy(const std::filesystem::path& path) {
  return read_episodic_policy(path, "chunk_schedule");
}

}  // namespace dwsr::env
