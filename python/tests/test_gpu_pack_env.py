"""dwsr.envs: GpuPack as Gymnasium classes. check_env with both observation forms,
action masks, invalid actions as waits, determinism, the train/test split of
job kinds, the C++ batch against single environments, and the first-fit
heuristic finishing its episodes."""

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode

import dwsr
import dwsr.envs
from dwsr.envs import GpuPackEnv, GpuPackVectorEnv, gpu_pack_jobs

POOL = dict(kinds=20, pool_seed=2, arrivals=12)


def make(**kwargs):
    return gym.make("dwsr/GpuPack-v0", **POOL, **kwargs).unwrapped


@pytest.mark.parametrize("mask_in_observation", [False, True])
def test_check_env_passes(mask_in_observation):
    env = make(mask_in_observation=mask_in_observation)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(env, skip_render_check=True)
    obs, info = env.reset(seed=0)
    assert obs in env.observation_space and env.action_space == gym.spaces.Discrete(5)  # 4 devices + wait
    assert {"job", "kind", "placed", "clock", "work", "completed", "ooms", "invalid_action"} <= set(info)
    if mask_in_observation:
        assert np.array_equal(obs["action_mask"].astype(bool), env.action_masks())


def test_wait_is_always_valid_and_an_invalid_action_is_a_wait_that_never_raises():
    env = make()
    env.reset(seed=1)
    for _ in range(30):
        mask = env.action_masks()
        assert mask[-1]
        masked = np.flatnonzero(~mask)
        bad = int(masked[0]) if len(masked) else 7
        _, _, terminated, truncated, info = env.step(bad)
        assert info["invalid_action"] and info["placed"] == -1
        if terminated or truncated:
            env.reset()
    for bad in (-1, 5, 2.5, "gpu", None):
        _, _, _, _, info = env.step(bad)
        assert info["invalid_action"]


def test_the_same_seed_gives_the_same_trajectory_and_another_seed_another():
    def run(seed):
        env = make()
        obs, _ = env.reset(seed=seed)
        out, rng = [], np.random.default_rng(seed)
        for _ in range(150):
            obs, reward, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
            out.append((obs.tobytes(), np.float64(reward).tobytes(), info["kind"], info["clock"]))
            if terminated or truncated:
                env.reset()
        return out

    assert run(4) == run(4)
    assert run(4) != run(5)


def test_train_and_test_never_share_a_job_kind():
    flags = gpu_pack_jobs(POOL["kinds"], POOL["pool_seed"]).test
    assert flags == [k % 5 == 4 for k in range(POOL["kinds"])]
    for split, want in (("train", False), ("test", True)):
        env = make(split=split)
        env.reset(seed=0)
        for _ in range(200):
            _, _, terminated, truncated, info = env.step(env.first_fit_action())
            if info["queued"]:
                assert flags[info["kind"]] == want
            if terminated or truncated:
                env.reset()


def test_first_fit_finishes_every_job_of_an_episode():
    env = make(split="test")
    for seed in range(5):
        env.reset(seed=seed)
        done, total = False, 0.0
        while not done:
            _, reward, terminated, truncated, info = env.step(env.first_fit_action())
            total += reward
            done = terminated or truncated
        assert terminated and info["completed"] == POOL["arrivals"]


def test_worst_fit_places_whenever_a_device_is_valid_and_beats_first_fit_on_the_test_kinds():
    # The default pool (64 kinds) and arrivals: on POOL's light kinds both heuristics place alike.
    returns = {}
    for name in ("first_fit", "worst_fit"):
        env = gym.make("dwsr/GpuPack-v0", split="test").unwrapped
        total = 0.0
        for seed in range(20):
            env.reset(seed=seed)
            done = False
            while not done:
                mask = env.action_masks()
                action = getattr(env, name + "_action")()
                if name == "worst_fit":
                    assert mask[action]
                    assert (action == len(mask) - 1) == (not mask[:-1].any())
                _, reward, terminated, truncated, _ = env.step(action)
                total += reward
                done = terminated or truncated
        returns[name] = total / 20
    # Measured over these 20 episodes: first fit -11.3, worst fit -3.4.
    assert returns["worst_fit"] > returns["first_fit"] + 5


def test_the_batch_matches_single_environments():
    n = 4
    envs = gym.make_vec("dwsr/GpuPack-v0", num_envs=n, vectorization_mode="vector_entry_point", copy=True,
                        autoreset_mode=AutoresetMode.NEXT_STEP, **POOL)
    assert isinstance(envs, GpuPackVectorEnv) and envs.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    singles = [make() for _ in range(n)]
    obs, _ = envs.reset(seed=20)
    pending = [False] * n  # next_step: the step after an episode's end resets it
    for i, e in enumerate(singles):
        assert np.array_equal(e.reset(seed=20 + i)[0], obs[i])
    rng = np.random.default_rng(1)
    for _ in range(80):
        masks = envs.action_masks()
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        obs, rewards, terminated, truncated, _ = envs.step(actions)
        for i, e in enumerate(singles):
            assert np.array_equal(e.action_masks(), masks[i])  # both: the state before this step
            if pending[i]:
                o, _ = e.reset()
                r, te, tr = 0.0, False, False
                pending[i] = False
            else:
                o, r, te, tr, _ = e.step(int(actions[i]))
                pending[i] = te or tr
            assert np.array_equal(o, obs[i]) and r == rewards[i] and te == terminated[i] and tr == truncated[i]
    with pytest.raises(dwsr.InvalidInputError, match="time_cost"):
        GpuPackEnv(time_cost="energy", **POOL)
    with pytest.raises(dwsr.InvalidInputError):
        GpuPackEnv(devices=["not-a-gpu"], **POOL)
