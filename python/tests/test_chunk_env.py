"""dwsr.envs: ChunkSchedule as Gymnasium classes. check_env with both observation
forms, action masks (method and Dict key), invalid actions, determinism, the
train/test split, the C++ batch against single environments, and the advisor's
documented return of 0."""

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode

import dwsr
import dwsr.envs
from dwsr.envs import ChunkScheduleEnv, ChunkScheduleVectorEnv, chunk_tasks

POOL = dict(pool_tasks=64, pool_seed=3)


def make(**kwargs):
    return gym.make("dwsr/ChunkSchedule-v0", **POOL, **kwargs).unwrapped


def make_vec(num_envs, **kwargs):
    return gym.make_vec("dwsr/ChunkSchedule-v0", num_envs=num_envs, vectorization_mode="vector_entry_point",
                        **POOL, **kwargs)


@pytest.mark.parametrize("mask_in_observation", [False, True])
def test_check_env_passes(mask_in_observation):
    env = make(mask_in_observation=mask_in_observation)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(env, skip_render_check=True)
    obs, info = env.reset(seed=0)
    assert obs in env.observation_space and env.action_space == gym.spaces.Discrete(8)
    assert {"task", "voxels", "seconds", "peak", "budget", "oom", "invalid_action"} <= set(info)
    if mask_in_observation:
        assert set(obs) == {"observation", "action_mask"} and obs["action_mask"].dtype == np.int8
        assert np.array_equal(obs["action_mask"].astype(bool), env.action_masks())
        assert env.observation_space["observation"].dtype == np.float32
    else:
        assert obs.dtype == np.float32 and obs.shape == (24,)


def test_masked_actions_are_invalid_never_raise_and_unmasked_ones_are_valid():
    env = make()
    seen_masked = 0
    for seed in range(20):
        env.reset(seed=seed)
        mask = env.action_masks()
        assert mask.any() and mask[-1]  # the smallest candidate always fits in the best case
        for a in range(8):
            env.reset(seed=seed)
            _, reward, terminated, _, info = env.step(a)
            assert info["invalid_action"] == (not mask[a])
            if not mask[a]:
                seen_masked += 1
                assert info["voxels"] == 0 and reward < 0 and not terminated
    assert seen_masked > 0
    env.reset(seed=0)
    for bad in (-1, 8, 2.5, "one", None, [1, 2], 2 ** 70):
        _, reward, _, _, info = env.step(bad)
        assert info["invalid_action"] and info["voxels"] == 0 and reward < 0


def test_the_same_seed_gives_the_same_trajectory_bit_for_bit_and_another_seed_another():
    def run(seed):
        env = make()
        out = []
        obs, _ = env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        for _ in range(200):
            a = int(rng.choice(np.flatnonzero(env.action_masks())))
            obs, reward, terminated, truncated, info = env.step(a)
            out.append((obs.tobytes(), np.float64(reward).tobytes(), info["task"], terminated, truncated))
            if terminated or truncated:
                obs, _ = env.reset()
        return out

    assert run(1) == run(1)
    assert run(1) != run(2)


def test_train_and_test_never_share_a_task():
    tasks = chunk_tasks(**{"tasks": POOL["pool_tasks"], "pool_seed": POOL["pool_seed"]})
    assert tasks is chunk_tasks(POOL["pool_tasks"], POOL["pool_seed"])  # cached
    flags = tasks.test
    assert flags == [i % 5 == 4 for i in range(len(tasks))]
    for split, want in (("train", False), ("test", True)):
        env = make(split=split)
        env.reset(seed=0)
        for _ in range(100):
            _, info = env.reset()
            assert flags[info["task"]] == want


def test_the_advisor_finishes_every_episode_with_a_return_of_zero():
    env = make(split="test")
    for seed in range(10):
        env.reset(seed=seed)
        total, done = 0.0, False
        while not done:
            _, reward, terminated, truncated, info = env.step(env.advisor_action())
            total += reward
            assert not info["oom"]
            done = terminated or truncated
        assert terminated and abs(total) < 1e-9


def test_the_batch_matches_single_environments_and_its_masks():
    n = 5
    envs = make_vec(n, copy=True, autoreset_mode=AutoresetMode.SAME_STEP)
    assert isinstance(envs, ChunkScheduleVectorEnv) and envs.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    singles = [make() for _ in range(n)]
    obs, info = envs.reset(seed=10)
    for i, e in enumerate(singles):
        o, inf = e.reset(seed=10 + i)
        assert np.array_equal(o, obs[i]) and inf["task"] == info["task"][i]
    rng = np.random.default_rng(0)
    for _ in range(60):
        masks = envs.action_masks()
        assert masks.shape == (n, 8) and masks.dtype == bool
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        obs, rewards, terminated, truncated, info = envs.step(actions)
        for i, e in enumerate(singles):
            assert np.array_equal(e.action_masks(), masks[i])
            o, r, te, tr, inf = e.step(int(actions[i]))
            assert r == rewards[i] and te == terminated[i] and tr == truncated[i]
            if te or tr:  # same_step: the final observation in info, the reset one returned
                assert info["_final_obs"][i] and np.array_equal(info["final_obs"][i], o)
                o, _ = e.reset()
            assert np.array_equal(o, obs[i])


def test_the_batch_offers_the_mask_as_an_observation_key_and_rejects_a_wrong_batch():
    envs = make_vec(3, mask_in_observation=True, copy=True)
    obs, _ = envs.reset(seed=0)
    assert obs in envs.observation_space
    assert np.array_equal(obs["action_mask"].astype(bool), envs.action_masks())
    _, rewards, _, _, info = envs.step(np.array([-1, 9, 7]))
    assert list(info["invalid_action"]) == [True, True, False] and (rewards[:2] < 0).all()
    _, _, _, _, info = envs.step(["a", "b", "c"])
    assert info["invalid_action"].all()
    with pytest.raises(dwsr.InvalidInputError, match="expected 3"):
        envs.step(np.array([1, 2]))
    with pytest.raises(dwsr.InvalidInputError, match="split"):
        ChunkScheduleEnv(split="validation")
    with pytest.raises(dwsr.InvalidInputError, match="tasks"):
        chunk_tasks(0)
