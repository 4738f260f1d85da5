#pragma once
/// \file The contract every dwsr environment keeps, Gymnasium's in C++:
/// reset(seed) gives the first observation of an episode, step(action) the
/// next one with a reward and whether the episode terminated (its natural
/// end) or was truncated (a limit outside the task). An environment writes
/// its observations into caller memory (a float32 span of the observation
/// space's size), so that a batch (env/vector_env.hpp) fills one N x dim
/// buffer that Python reads without a copy, and a step allocates nothing.
///
/// Determinism: an environment draws from its own xoshiro256** stream
/// (core/random.hpp), seeded by reset(seed); reset() without a seed goes on
/// with the stream it has (a new environment's is seed 0's). Same seed, same
/// actions: the same observations, rewards and flags, bit for bit, on any
/// standard library.
///
/// Invalid actions (outside the action space, NaN) are not exceptions: each
/// environment documents their outcome and says so in its info.

#include <concepts>
#include <cstdint>
#include <optional>
#include <span>

#include "dwsr/env/spaces.hpp"

namespace dwsr::env {

/// What step() returns beside the observation and the info.
struct step_result {
  double reward = 0;
  bool terminated = false;  ///< the episode reached its natural end
  bool truncated = false;   ///< the episode was cut short (a step limit)
  bool operator==(const step_result&) const = default;
};

/// An environment (see the file comment). Env declares:
/// - `action_space_type`: box_space or discrete_space, and
///   `action_space()` returning it; step() takes action_of<that>::type;
/// - `info_type`: a small copyable struct filled by reset() and step();
/// - `observation_space()`: a box_space of float32 values;
/// - `reset(seed, obs, info)`: starts an episode, seeded when `seed` holds a value;
/// - `step(action, obs, info)`: advances the episode; after it terminated or
///   was truncated, only reset() is meaningful.
template <class Env>
concept Environment = std::copy_constructible<Env> && std::default_initializable<typename Env::info_type> &&
    std::copyable<typename Env::info_type> &&
    requires(Env& e, const Env& ce, std::optional<std::uint64_t> seed, std::span<float> obs,
             typename Env::info_type& info, typename action_of<typename Env::action_space_type>::type action) {
  { ce.observation_space() } -> std::convertible_to<const box_space&>;
  { ce.action_space() } -> std::convertible_to<const typename Env::action_space_type&>;
  { e.reset(seed, obs, info) } -> std::same_as<void>;
  { e.step(action, obs, info) } -> std::same_as<step_result>;
};

/// An environment whose discrete actions are not all valid in every state
/// (ChunkSchedule's chunks that cannot fit): action_mask(mask) writes one
/// byte per action, 1 where the action is valid now.
template <class Env>
concept MaskedEnvironment = Environment<Env> && std::same_as<typename Env::action_space_type, discrete_space> &&
    requires(const Env& ce, std::span<std::uint8_t> mask) {
  { ce.action_mask(mask) } -> std::same_as<void>;
};

/// The action type Env's step() takes.
template <Environment Env>
using action_t = typename action_of<typename Env::action_space_type>::type;

}  // namespace dwsr::env
