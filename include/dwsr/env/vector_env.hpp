#pragma once
/// \file N environments stepped together, in parallel (TBB), into buffers
/// the caller owns: observations N x obs_dim float32, rewards N float64 (the
/// dtype of Gymnasium's vector rewards), terminated and truncated N uint8,
/// and optionally one info per environment. Python wraps the same buffers
/// as NumPy arrays, so a batch crosses the language boundary without a copy.
///
/// What happens when an episode ends follows Gymnasium's autoreset modes
/// (gymnasium.vector.AutoresetMode, and SyncVectorEnv's behaviour):
/// - next_step (the default): the step that ends an episode returns its last
///   observation; the next step() ignores that environment's action, resets
///   it (continuing its stream) and returns the reset observation and info
///   with reward 0, terminated and truncated false.
/// - same_step: the step that ends an episode resets the environment at
///   once: it returns the step's reward and flags with the reset observation
///   and info; the last observation and info go to final_observations and
///   final_infos (the rows of the environments that ended).
/// - disabled: nothing is reset automatically; the caller resets the
///   environments that ended with reset(seed, mask, ...). Stepping one that
///   ended and was not reset throws invalid_input (Gymnasium asserts).
///
/// Seeding: reset(seed) seeds environment i with seed + i (Gymnasium's
/// convention); each draws from its own stream, so results do not depend on
/// the threads or on how TBB splits the batch.

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dwsr/env/env.hpp"
#include "dwsr/error.hpp"

namespace dwsr::env {

/// When a vector_env resets an environment whose episode ended (see the file comment).
enum class autoreset_mode { next_step, same_step, disabled };

/// Where vector_env::step writes; every span is the caller's. infos,
/// final_observations and final_infos may be empty (then not written); the
/// final ones are written only in same_step mode, only in the rows of the
/// environments whose episode ended in this step.
template <class Info>
struct vector_step_buffers {
  std::span<float> observations;        ///< N x obs_dim
  std::span<double> rewards;            ///< N
  std::span<std::uint8_t> terminated;   ///< N, 0 or 1
  std::span<std::uint8_t> truncated;    ///< N, 0 or 1
  std::span<Info> infos;                ///< N, or empty
  std::span<float> final_observations;  ///< same_step: N x obs_dim, or empty
  std::span<Info> final_infos;          ///< same_step: N, or empty
};

/// A batch of environments of one type (see the file comment).
template <Environment Env>
class vector_env {
 public:
  using info_type = typename Env::info_type;
  /// One value of a batch of actions: float (box actions, action_dim each) or int64 (discrete).
  using action_element = typename action_of<typename Env::action_space_type>::element;
  /// The buffers step() writes.
  using step_buffers = vector_step_buffers<info_type>;

  /// Environments at least one, all with the same spaces. Throws
  /// invalid_input otherwise. `grain`: environments per parallel task (a
  /// batch of at most grain runs on the calling thread).
  explicit vector_env(std::vector<Env> envs, autoreset_mode mode = autoreset_mode::next_step, std::size_t grain = 256)
      : envs_(std::move(envs)), mode_(mode), grain_(std::max<std::size_t>(1, grain)), ended_(envs_.size(), 0) {
    if (envs_.empty()) throw invalid_input("a vector environment of 0 environments; expected at least 1");
    for (std::size_t i = 1; i < envs_.size(); ++i)
      if (!(envs_[i].observation_space() == envs_[0].observation_space()) ||
          !(envs_[i].action_space() == envs_[0].action_space()))
        throw invalid_input("environment " + std::to_string(i) +
                            " of a vector environment has other spaces than environment 0; expected the same");
    obs_dim_ = envs_[0].observation_space().size();
    action_dim_ = action_of<typename Env::action_space_type>::dim(envs_[0].action_space());
  }

  /// Environments in the batch (N).
  std::size_t size() const noexcept { return envs_.size(); }
  /// float32 values of one environment's observation.
  std::size_t obs_dim() const noexcept { return obs_dim_; }
  /// Values of one environment's action in a batch of actions.
  std::size_t action_dim() const noexcept { return action_dim_; }
  autoreset_mode mode() const noexcept { return mode_; }
  /// One environment's observation space.
  const box_space& single_observation_space() const noexcept { return envs_[0].observation_space(); }
  /// One environment's action space.
  const auto& single_action_space() const noexcept { return envs_[0].action_space(); }
  /// Environment i.
  const Env& operator[](std::size_t i) const noexcept { return envs_[i]; }

  /// Resets every environment: i with seed + i when seeded, else continuing
  /// its stream. Writes every row of `observations` and of `infos` (if not empty).
  void reset(std::optional<std::uint64_t> seed, std::span<float> observations, std::span<info_type> infos = {}) {
    check(observations, obs_dim_, "observations");
    check_optional(infos, 1, "infos");
    for_each([&](std::size_t i) {
      envs_[i].reset(seed_of(seed, i), row(observations, i), info_at(infos, i));
      ended_[i] = 0;
    });
    started_ = true;
  }

  /// Resets the environments where mask[i] is non-zero (Gymnasium's
  /// reset_mask), i with seed + i when seeded; the other rows of
  /// `observations` and `infos` are left as they are. Throws invalid_input
  /// for a mask of other than N bytes or with no environment set.
  void reset(std::optional<std::uint64_t> seed, std::span<const std::uint8_t> mask, std::span<float> observations,
             std::span<info_type> infos = {}) {
    check(observations, obs_dim_, "observations");
    check_optional(infos, 1, "infos");
    if (mask.size() != size())
      throw invalid_input("a reset mask of " + std::to_string(mask.size()) + " values; expected " +
                          std::to_string(size()) + ", one per environment");
    if (std::none_of(mask.begin(), mask.end(), [](std::uint8_t m) { return m != 0; }))
      throw invalid_input("a reset mask that selects no environment; expected at least one");
    if (!started_ && std::any_of(mask.begin(), mask.end(), [](std::uint8_t m) { return m == 0; }))
      throw invalid_input("a partial reset mask before the first reset; expected every environment reset first");
    for_each([&](std::size_t i) {
      if (!mask[i]) return;
      envs_[i].reset(seed_of(seed, i), row(observations, i), info_at(infos, i));
      ended_[i] = 0;
    });
    started_ = true;
  }

  /// Writes each environment's action mask (MaskedEnvironment) into row i of
  /// `masks`, N x n bytes for n actions: 1 where the action is valid now.
  void action_masks(std::span<std::uint8_t> masks) const requires MaskedEnvironment<Env> {
    const auto n = std::size_t(envs_[0].action_space().n);
    check(masks, n, "action masks");
    for (std::size_t i = 0; i < size(); ++i) envs_[i].action_mask(masks.subspan(i * n, n));
  }

  /// Steps every environment with its action (N x action_dim values) and
  /// resets those whose episode ended as the mode says (see the file
  /// comment). Invalid actions are the environments' business (each
  /// documents their outcome); this throws invalid_input only for buffers of
  /// the wrong size, a step before the first reset, or, in disabled mode,
  /// an ended environment not reset.
  void step(std::span<const action_element> actions, const step_buffers& out) {
    if (!started_) throw invalid_input("vector environment step() before reset(); expected reset() first");
    check(actions, action_dim_, "actions");
    check(out.observations, obs_dim_, "observations");
    check(out.rewards, 1, "rewards");
    check(out.terminated, 1, "terminated");
    check(out.truncated, 1, "truncated");
    check_optional(out.infos, 1, "infos");
    check_optional(out.final_observations, obs_dim_, "final_observations");
    check_optional(out.final_infos, 1, "final_infos");
    if (mode_ == autoreset_mode::disabled)
      if (const auto it = std::find(ended_.begin(), ended_.end(), std::uint8_t{1}); it != ended_.end())
        throw invalid_input("step() of environment " + std::to_string(it - ended_.begin()) +
                            " whose episode ended; in autoreset mode disabled, expected reset(seed, mask) first");
    for_each([&](std::size_t i) {
      const auto obs = row(out.observations, i);
      if (mode_ == autoreset_mode::next_step && ended_[i]) {
        envs_[i].reset(std::nullopt, obs, info_at(out.infos, i));
        out.rewards[i] = 0;
        out.terminated[i] = out.truncated[i] = 0;
        ended_[i] = 0;
        return;
      }
      const auto action = action_of<typename Env::action_space_type>::at(actions, i, action_dim_);
      const auto r = envs_[i].step(action, obs, info_at(out.infos, i));
      out.rewards[i] = r.reward;
      out.terminated[i] = r.terminated;
      out.truncated[i] = r.truncated;
      ended_[i] = r.terminated || r.truncated;
      if (mode_ == autoreset_mode::same_step && ended_[i]) {
        if (!out.final_observations.empty()) std::copy(obs.begin(), obs.end(), row(out.final_observations, i).begin());
        if (!out.final_infos.empty()) out.final_infos[i] = info_at(out.infos, i);
        envs_[i].reset(std::nullopt, obs, info_at(out.infos, i));
        ended_[i] = 0;
      }
    });
  }

 private:
  template <class F>
  void for_each(F&& f) {
    const auto n = envs_.size();
    if (n <= grain_) {
      for (std::size_t i = 0; i < n; ++i) f(i);
      return;
    }
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, grain_), [&](const tbb::blocked_range<std::size_t>& r) {
      for (auto i = r.begin(); i != r.end(); ++i) f(i);
    });
  }
  static std::optional<std::uint64_t> seed_of(std::optional<std::uint64_t> seed, std::size_t i) noexcept {
    return seed ? std::optional<std::uint64_t>(*seed + i) : std::nullopt;
  }
  std::span<float> row(std::span<float> m, std::size_t i) const noexcept { return m.subspan(i * obs_dim_, obs_dim_); }
  /// The info of row i, or a scratch info of this thread when infos is empty.
  static info_type& info_at(std::span<info_type> infos, std::size_t i) noexcept {
    if (!infos.empty()) return infos[i];
    thread_local info_type scratch;
    return scratch;
  }
  template <class T>
  void check(std::span<T> s, std::size_t per_env, const char* what) const {
    if (s.size() != size() * per_env)
      throw invalid_input(std::string("a ") + what + " buffer of " + std::to_string(s.size()) + " values; expected " +
                          std::to_string(size() * per_env) + " (" + std::to_string(size()) + " environments x " +
                          std::to_string(per_env) + ")");
  }
  template <class T>
  void check_optional(std::span<T> s, std::size_t per_env, const char* what) const {
    if (!s.empty()) check(s, per_env, what);
  }

  std::vector<Env> envs_;
  autoreset_mode mode_;
  std::size_t grain_;
  std::vector<std::uint8_t> ended_;  ///< the episode ended in the last step and is not reset yet
  std::size_t obs_dim_ = 0, action_dim_ = 0;
  bool started_ = false;
};

}  // namespace dwsr::env
