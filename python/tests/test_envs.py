"""dwsr.envs: PeakPredict as Gymnasium classes. check_env, the C++ batch from
make_vec, determinism, the autoreset modes, invalid actions, and pools loaded
from a dataset directory."""

import subprocess
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode

import dwsr
import dwsr.envs
from dwsr.envs import PeakPredictEnv, PeakPredictVectorEnv, peak_jobs

# Generated pools have constant features (bounds low == high), which Gymnasium warns about: honest bounds.
pytestmark = pytest.mark.filterwarnings("ignore:.*maximum and minimum values are equal")

# A small generated pool, shared by the tests (peak_jobs caches it).
POOL = dict(rows=2000, pool_seed=5, graphs=32)


def make(**kwargs):
    return gym.make("dwsr/PeakPredict-v0", **POOL, **kwargs)


def make_vec(num_envs, **kwargs):
    return gym.make_vec("dwsr/PeakPredict-v0", num_envs=num_envs, vectorization_mode="vector_entry_point",
                        **POOL, **kwargs)


@pytest.mark.parametrize("action", ["box", "bins"])
def test_check_env_passes(action):
    env = make(action=action)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # advice only: constant features, a Box action not in [-1, 1]
        check_env(env.unwrapped, skip_render_check=True)
    obs, info = env.reset(seed=0)
    assert obs.dtype == np.float32 and obs in env.observation_space
    assert env.observation_space.dtype == np.float32
    assert set(info) == {"job", "true_peak", "predicted", "oom", "invalid_action"}
    if action == "box":
        assert env.action_space.shape == (1,) and env.action_space.dtype == np.float32
        assert env.action_space.low[0] == np.floor(env.action_space.low[0])  # whole log2 bounds
    else:
        assert env.action_space == gym.spaces.Discrete(16)
        assert len(env.unwrapped.bin_peaks) == 16 and np.all(np.diff(env.unwrapped.bin_peaks) >= 0)


def test_rewards_follow_the_documented_costs():
    env = make(action="bins", oom_reward=-7.0)
    _, info = env.reset(seed=3)
    peaks = env.unwrapped.bin_peaks
    for k in range(len(peaks)):
        env.reset(seed=3)
        _, reward, terminated, truncated, step_info = env.step(k)
        assert terminated and not truncated
        truth = step_info["true_peak"]
        assert truth == info["true_peak"] and step_info["predicted"] == peaks[k]
        expected = -7.0 if peaks[k] < truth else -(peaks[k] - truth) / truth
        assert reward == expected and step_info["oom"] == (peaks[k] < truth)


def test_the_same_seed_gives_the_same_trajectory_bit_for_bit_and_another_seed_another():
    def run(seed):
        env = make()
        env.action_space.seed(seed)
        out = []
        obs, _ = env.reset(seed=seed)
        for _ in range(50):
            obs2, reward, _, _, info = env.step(env.action_space.sample())
            out.append((obs.tobytes(), np.float64(reward).tobytes(), info["job"]))
            obs, _ = env.reset()
        return out

    assert run(1) == run(1)
    assert run(1) != run(2)


def test_train_and_test_never_share_a_job():
    train, test = make(split="train").unwrapped, make(split="test").unwrapped
    jobs = {"train": set(), "test": set()}
    for name, env in (("train", train), ("test", test)):
        env.reset(seed=0)
        for _ in range(300):
            _, info = env.reset()
            jobs[name].add(info["job"])
    assert jobs["train"] and jobs["test"] and not jobs["train"] & jobs["test"]
    pool = train.jobs
    assert all(pool.test[j] == 0 for j in jobs["train"]) and all(pool.test[j] == 1 for j in jobs["test"])


@pytest.mark.parametrize("action,bad", [
    ("box", [np.nan]), ("box", [1000.0]), ("box", [20.0, 21.0]), ("box", "twenty"), ("box", None),
    ("bins", 16), ("bins", -1), ("bins", 2.5), ("bins", [1, 2]), ("bins", "one"), ("bins", 2 ** 70),
])
def test_an_invalid_action_costs_the_oom_reward_and_never_raises(action, bad):
    env = make(action=action).unwrapped
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(bad)
    assert reward == -10.0 and terminated and not truncated
    assert info["invalid_action"] and info["predicted"] == 0
    assert obs in env.observation_space


def test_make_vec_returns_the_cpp_batch_with_its_autoreset_mode_and_spaces():
    envs = make_vec(8)
    assert isinstance(envs, PeakPredictVectorEnv) and isinstance(envs, gym.vector.VectorEnv)
    assert envs.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    single = make().unwrapped
    assert envs.single_observation_space == single.observation_space
    assert envs.single_action_space == single.action_space
    assert envs.observation_space.shape == (8, single.observation_space.shape[0])
    assert envs.observation_space.dtype == np.float32
    obs, info = envs.reset(seed=0)
    assert obs in envs.observation_space and info["job"].shape == (8,) and info["_job"].all()
    same = make_vec(8, autoreset_mode=AutoresetMode.SAME_STEP)
    assert same.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert make_vec(2, action="bins").action_space == gym.spaces.MultiDiscrete([16, 16])


def test_the_batch_returns_its_own_arrays_without_copies():
    envs = make_vec(4)
    obs, _ = envs.reset(seed=0)
    obs2, rewards, terminated, truncated, _ = envs.step(envs.action_space.sample())
    assert obs2 is obs  # the buffer the C++ batch writes in place
    assert np.shares_memory(obs, envs.unwrapped._core.observations)
    assert rewards.dtype == np.float64 and terminated.dtype == np.bool_ and truncated.dtype == np.bool_
    copied = make_vec(4, copy=True)
    a, _ = copied.reset(seed=0)
    b, *_ = copied.step(copied.action_space.sample())
    assert a is not b and not np.shares_memory(a, b)


def test_the_batch_matches_single_environments_seeded_seed_plus_i():
    envs = make_vec(3, action="bins")
    obs, _ = envs.reset(seed=10)
    actions = np.array([0, 7, 15])
    _, rewards, *_ = envs.step(actions)
    for i in range(3):
        env = make(action="bins").unwrapped
        o, _ = env.reset(seed=10 + i)
        assert np.array_equal(o, obs[i])
        _, r, *_ = env.step(int(actions[i]))
        assert r == rewards[i]


def test_batches_are_deterministic_and_seeds_differ():
    def run(seed):
        envs = make_vec(16, copy=True)
        envs.action_space.seed(seed)
        envs.reset(seed=seed)
        return [envs.step(envs.action_space.sample())[:2] for _ in range(6)]

    a, b, c = run(4), run(4), run(5)
    assert all(np.array_equal(x[0], y[0]) and np.array_equal(x[1], y[1]) for x, y in zip(a, b))
    assert not all(np.array_equal(x[1], y[1]) for x, y in zip(a, c))


def test_next_step_autoreset_resets_with_reward_zero_on_the_step_after_the_end():
    envs = make_vec(4, copy=True)
    envs.reset(seed=0)
    _, _, terminated, _, ended = envs.step(np.full((4, 1), 20.0, dtype=np.float32))
    assert terminated.all()  # PeakPredict's episodes are one step
    obs, rewards, terminated, truncated, info = envs.step(np.full((4, 1), np.nan, dtype=np.float32))
    assert (rewards == 0).all() and not terminated.any() and not truncated.any()  # the actions were ignored
    assert not info["invalid_action"].any() and (info["predicted"] == 0).all()
    _, rewards, terminated, *_ = envs.step(np.full((4, 1), 20.0, dtype=np.float32))
    assert terminated.all() and (rewards != 0).any()


def test_same_step_autoreset_returns_the_reset_observation_and_the_final_one_in_info():
    envs = make_vec(4, copy=True, autoreset_mode="SameStep", action="bins")
    first, first_info = envs.reset(seed=0)
    obs, rewards, terminated, _, info = envs.step(np.array([15, 15, 15, 15]))
    assert terminated.all() and (rewards != -10.0).all()  # the top bin never runs out on train jobs
    assert info["_final_obs"].all() and np.array_equal(info["final_obs"], first)
    assert np.array_equal(info["final_info"]["job"], first_info["job"])
    assert (info["final_info"]["predicted"] > 0).all() and (info["predicted"] == 0).all()  # reset infos
    assert not np.array_equal(obs, first)


def test_disabled_autoreset_needs_a_reset_mask_and_leaves_other_rows():
    envs = make_vec(4, copy=True, autoreset_mode=AutoresetMode.DISABLED)
    assert envs.metadata["autoreset_mode"] == AutoresetMode.DISABLED
    before, _ = envs.reset(seed=0)
    envs.step(np.full((4, 1), 20.0, dtype=np.float32))
    with pytest.raises(dwsr.InvalidInputError, match="reset"):
        envs.step(np.full((4, 1), 20.0, dtype=np.float32))
    mask = np.array([True, False, True, True])
    obs, _ = envs.reset(options={"reset_mask": mask})
    assert np.array_equal(obs[1], before[1])  # its last observation, untouched
    with pytest.raises(dwsr.InvalidInputError, match="environment 1"):
        envs.step(np.full((4, 1), 20.0, dtype=np.float32))
    envs.reset(options={"reset_mask": ~mask})
    _, rewards, terminated, *_ = envs.step(np.full((4, 1), 20.0, dtype=np.float32))
    assert terminated.all()


def test_invalid_actions_in_a_batch_are_scored_and_a_batch_of_the_wrong_size_raises():
    envs = make_vec(3, action="bins", copy=True)
    envs.reset(seed=0)
    _, rewards, terminated, _, info = envs.step(np.array([-1.0, 2.5, 3.0]))
    assert list(info["invalid_action"]) == [True, True, False] and terminated.all()
    assert rewards[0] == rewards[1] == -10.0
    _, rewards, _, _, info = envs.step(np.array([1, 1, 1]))  # next_step: the resets
    _, rewards, _, _, info = envs.step(["a", "b", "c"])
    assert info["invalid_action"].all() and (rewards == -10.0).all()
    with pytest.raises(dwsr.InvalidInputError, match="expected 3"):
        envs.step(np.array([1, 2]))
    with pytest.raises(dwsr.InvalidInputError, match="autoreset_mode"):
        make_vec(2, autoreset_mode="sometimes")


def test_a_pool_from_a_dataset_directory(tmp_path, cli):
    out = tmp_path / "py"
    dwsr.dataset("peak", 300, seed=2, allocators=["exact", "host_pages"], graphs=8, out=out, csv=False)
    jobs = peak_jobs(out)
    assert len(jobs) == 300 and jobs.label == "peak_requested"
    env = gym.make("dwsr/PeakPredict-v0", dataset=out, split="test")
    obs, info = env.reset(seed=0)
    assert obs.shape == (jobs.dim,) and jobs.test[info["job"]] == 1
    reserved = PeakPredictEnv(dataset=out, label="peak_reserved_host_pages", split_by="family")
    assert reserved.jobs.label == "peak_reserved_host_pages"
    # The tool's directory gives the same pool, bit for bit.
    subprocess.run([cli, "dataset", "--task", "peak", "-n", "300", "--seed", "2", "-a", "exact,host_pages",
                    "--graphs", "8", "--no-csv", "-o", str(tmp_path / "cli")], check=True, capture_output=True)
    again = PeakPredictEnv(dataset=tmp_path / "cli", split="test")
    assert np.array_equal(again.reset(seed=0)[0], obs)
    with pytest.raises(dwsr.FileError, match="columns.json"):
        PeakPredictEnv(dataset=tmp_path / "missing")
    with pytest.raises(dwsr.InvalidInputError, match="no label"):
        PeakPredictEnv(dataset=out, label="peak_reserved_rmm_pool")
    with pytest.raises(dwsr.InvalidInputError, match="split"):
        PeakPredictEnv(dataset=out, split="validation")
