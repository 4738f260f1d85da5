"""Reinforcement-learning environments for memory estimators, as Gymnasium classes (docs/env.md).

Importing this module registers ``dwsr/PeakPredict-v0``, ``dwsr/ChunkSchedule-v0`` and
``dwsr/GpuPack-v0`` (the last two: discrete actions with action masks, see
:class:`ChunkScheduleEnv` and :class:`GpuPackEnv`)::

    import gymnasium as gym
    import dwsr.envs

    env = gym.make("dwsr/PeakPredict-v0")                                 # jobs generated from pool_seed 0
    env = gym.make("dwsr/PeakPredict-v0", dataset="data/peak", split="test", action="bins")
    envs = gym.make_vec("dwsr/PeakPredict-v0", num_envs=64, vectorization_mode="vector_entry_point")

PeakPredict is a contextual bandit: each episode is one step. The observation
is a job's feature vector (float32, each feature within its range over the
pool); the action predicts the job's peak memory, either log2 of the bytes
(``action="box"``, a Box of one float32) or one of ``bins`` quantile bins of
the train peaks (``action="bins"``, Discrete). The reward is ``oom_reward``
(-10) for a prediction below the true peak, else minus the memory left idle
relative to the peak: ``-(predicted - true) / true``.

An invalid action (NaN, outside the Box, not one value, a bin outside 0 to
bins - 1, a value that is not a number) never raises from ``step``: it costs
``oom_reward``, ends the episode, and sets ``info["invalid_action"]``.

``make_vec(..., vectorization_mode="vector_entry_point")`` returns
:class:`PeakPredictVectorEnv`, the C++ batch: it steps the environments in
parallel and writes into NumPy arrays it owns, which ``step`` and ``reset``
return without a copy (the next call overwrites them; ``copy=True`` returns
copies instead).
"""

from __future__ import annotations

import functools
import os
from typing import Any, Dict, Optional, Sequence, Tuple, Union

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from . import _core
from ._errors import InvalidInputError

__all__ = ["ChunkScheduleEnv", "ChunkScheduleVectorEnv", "GpuPackEnv", "GpuPackVectorEnv", "PeakPredictEnv",
           "PeakPredictVectorEnv", "chunk_tasks", "gpu_pack_jobs", "peak_jobs"]

PathLike = Union[str, os.PathLike]
_MODES = {AutoresetMode.NEXT_STEP: "next_step", AutoresetMode.SAME_STEP: "same_step",
          AutoresetMode.DISABLED: "disabled"}


@functools.lru_cache(maxsize=8)
def _generated(rows: int, pool_seed: int, graphs: int, label: str, split_by: str) -> _core.PeakJobs:
    return _core.PeakJobs.generate(rows, pool_seed, graphs, ["exact", "host_pages"], label, split_by)


def peak_jobs(dataset: Optional[PathLike] = None, *, rows: int = 20000, pool_seed: int = 0, graphs: int = 256,
              label: str = "peak_requested", split_by: str = "random") -> _core.PeakJobs:
    """The jobs PeakPredict draws from: a ``dwsr dataset --task peak`` directory, or generated.

    Args:
        dataset: a directory written by ``dwsr dataset --task peak`` or
            ``dwsr.dataset("peak", out=...)``; None: generate ``rows`` rows
            from ``pool_seed`` (exact and host_pages allocators, ``graphs``
            random graphs). A generated pool is cached: the same arguments
            give the same object.
        label: the true peak: ``peak_requested`` (the exact plan's peak) or
            an allocator's ``peak_reserved_MODEL``.
        split_by: the dataset's split column that makes train and test:
            ``random``, ``family`` or ``extrapolation``.
    """
    if dataset is not None:
        return _core.PeakJobs.load(os.fspath(dataset), str(label), str(split_by))
    if rows < 1:
        raise InvalidInputError(f"{rows} rows; expected at least 1")
    return _generated(int(rows), int(pool_seed), int(graphs), str(label), str(split_by))


def _jobs_of(jobs: Optional[_core.PeakJobs], dataset: Optional[PathLike], rows: int, pool_seed: int, graphs: int,
             label: str, split_by: str) -> _core.PeakJobs:
    if jobs is not None:
        return jobs
    return peak_jobs(dataset, rows=rows, pool_seed=pool_seed, graphs=graphs, label=label, split_by=split_by)


def _check_choice(name: str, value: str, choices: Tuple[str, ...]) -> str:
    if value not in choices:
        raise InvalidInputError(f"{name} {value!r}: expected one of {', '.join(choices)}")
    return value


_EMPTY = np.zeros(0, dtype=np.float32)


def _box_action(action: Any) -> np.ndarray:
    """The action as C-contiguous float32 values; an empty array (invalid) when it converts to none."""
    try:
        return np.ascontiguousarray(np.asarray(action, dtype=np.float32).reshape(-1))
    except (TypeError, ValueError, OverflowError):
        return _EMPTY


def _bin_action(action: Any) -> int:
    """The action as a bin number; -1 (invalid) for anything but one whole number in int64's range."""
    try:
        a = np.asarray(action)
        if a.size != 1 or a.dtype.kind not in "iuf":
            return -1
        v = a.reshape(-1)[0]
        if a.dtype.kind == "f" and not (np.isfinite(v) and float(v).is_integer()):
            return -1
        v = int(v)
        return v if -(2 ** 63) <= v < 2 ** 63 else -1
    except (TypeError, ValueError, OverflowError):
        return -1


def _spaces(core: Any, action: str) -> Tuple[spaces.Box, spaces.Space]:
    s = core.spaces()
    obs = spaces.Box(s["observation_low"], s["observation_high"], dtype=np.float32)
    if action == "box":
        act: spaces.Space = spaces.Box(np.float32(s["action_low"]), np.float32(s["action_high"]), shape=(1,),
                                       dtype=np.float32)
    else:
        act = spaces.Discrete(int(s["bins"]))
    return obs, act


class PeakPredictEnv(gymnasium.Env):
    """PeakPredict, one environment (``gym.make("dwsr/PeakPredict-v0", ...)``); see the module's doc.

    Args:
        jobs: a pool from :func:`peak_jobs` (shared, not copied); else built
            from ``dataset`` or generated from ``pool_seed`` (see
            :func:`peak_jobs` for ``rows``, ``graphs``, ``label`` and ``split_by``).
        split: ``"train"`` or ``"test"``: the part of the pool the episodes
            draw their jobs from. The parts never share a job.
        action: ``"box"`` (log2 bytes) or ``"bins"`` (quantile bins of the train peaks).
        bins: the number of bins of ``action="bins"``.
        oom_reward: the reward of an under-prediction or an invalid action (<= 0).

    ``reset(seed=s)`` restarts the job stream from ``s``: the same seed and
    actions give the same trajectory, bit for bit. ``info`` holds ``job``
    (its index in the pool), ``true_peak`` and ``predicted`` (bytes), ``oom``
    and ``invalid_action``. ``bin_peaks`` gives the bytes each bin predicts.
    """

    metadata: Dict[str, Any] = {"render_modes": []}

    def __init__(self, *, jobs: Optional[_core.PeakJobs] = None, dataset: Optional[PathLike] = None,
                 split: str = "train", action: str = "box", bins: int = 16, oom_reward: float = -10.0,
                 rows: int = 20000, pool_seed: int = 0, graphs: int = 256, label: str = "peak_requested",
                 split_by: str = "random", render_mode: Optional[str] = None) -> None:
        self._action = _check_choice("action", action, ("box", "bins"))
        self.jobs = _jobs_of(jobs, dataset, rows, pool_seed, graphs, label, split_by)
        make = _core.PeakPredict if action == "box" else _core.PeakPredictBins
        self._core = make(self.jobs, _check_choice("split", split, ("train", "test")), float(oom_reward), int(bins))
        self.observation_space, self.action_space = _spaces(self._core, action)
        self.bin_peaks: np.ndarray = self._core.spaces()["bin_peaks"]
        self.render_mode = render_mode

    def reset(self, *, seed: Optional[int] = None,
              options: Optional[Dict[str, Any]] = None) -> Tuple[np.ndarray, Dict[str, Any]]:
        super().reset(seed=seed)
        return self._core.reset(None if seed is None else int(seed))

    def step(self, action: Any) -> Tuple[np.ndarray, float, bool, bool, Dict[str, Any]]:
        if self._action == "box":
            return self._core.step(_box_action(action))
        return self._core.step(_bin_action(action))


def _autoreset_mode(autoreset_mode: Union[AutoresetMode, str]) -> AutoresetMode:
    try:
        return AutoresetMode(autoreset_mode)
    except ValueError:
        raise InvalidInputError(f"autoreset_mode {autoreset_mode!r}: expected a gymnasium.vector.AutoresetMode"
                                " (NextStep, SameStep or Disabled)") from None


class _BatchEnv(VectorEnv):
    """What the C++ batches share: autoreset, reset masks, arrays returned in place, infos by field."""

    metadata: Dict[str, Any] = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def _start(self, core: Any, num_envs: int, mode: AutoresetMode, copy: bool, render_mode: Optional[str],
               single_observation_space: spaces.Space, single_action_space: spaces.Space) -> None:
        self._core = core
        self.num_envs = int(num_envs)
        self.autoreset_mode = mode
        self.metadata = {**type(self).metadata, "autoreset_mode": mode}
        self.render_mode = render_mode
        self.single_observation_space, self.single_action_space = single_observation_space, single_action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._copy = bool(copy)
        self._all = np.ones(self.num_envs, dtype=bool)

    def reset(self, *, seed: Optional[int] = None,
              options: Optional[Dict[str, Any]] = None) -> Tuple[Any, Dict[str, Any]]:
        if seed is not None and not isinstance(seed, (int, np.integer)):
            raise InvalidInputError(f"seed {seed!r}: expected an int or None (environment i gets seed + i)")
        super().reset(seed=seed)
        mask = None
        if options and options.get("reset_mask") is not None:
            mask = np.ascontiguousarray(np.asarray(options["reset_mask"], dtype=bool).reshape(-1))
        self._core.reset(None if seed is None else int(seed), mask)
        return self._observations(self._core.observations), self._infos(self._core.infos, self._all)

    def step(self, actions: Any) -> Tuple[Any, np.ndarray, np.ndarray, np.ndarray, Dict[str, Any]]:
        self._core.step(self._actions(actions))
        c = self._core
        infos = self._infos(c.infos, self._all)
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            done = np.logical_or(c.terminated, c.truncated)
            infos["final_obs"] = self._observations(c.final_observations)
            infos["_final_obs"] = done
            infos["final_info"] = self._infos(c.final_infos, done)
            infos["_final_info"] = done
        return (self._observations(c.observations), self._out(c.rewards), self._out(c.terminated),
                self._out(c.truncated), infos)

    def _actions(self, actions: Any) -> np.ndarray:
        raise NotImplementedError

    def _observations(self, obs: np.ndarray) -> Any:
        return self._out(obs)

    def _out(self, a: np.ndarray) -> np.ndarray:
        return a.copy() if self._copy else a

    def _infos(self, infos: np.ndarray, mask: np.ndarray) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for key in infos.dtype.names:
            out[key] = self._out(infos[key])
            out["_" + key] = mask
        return out


def _discrete_batch(actions: Any) -> np.ndarray:
    """Discrete actions as int64; values that are not whole numbers become -1 (invalid)."""
    a = np.asarray(actions)
    if a.dtype.kind in "iu":
        if a.dtype == np.uint64:
            return np.where(a < 2 ** 63, a, -1).astype(np.int64)
        return a.astype(np.int64, copy=False)
    a = np.asarray(a, dtype=np.float64)
    whole = np.isfinite(a) & (a == np.floor(a)) & (np.abs(a) < 2.0 ** 63)
    return np.where(whole, a, -1).astype(np.int64)


def _discrete_or_invalid(actions: Any, num_envs: int) -> np.ndarray:
    try:
        return _discrete_batch(actions)
    except (TypeError, ValueError, OverflowError):  # not numbers: every action of the batch is invalid
        return np.full(num_envs, -1, np.int64)


class PeakPredictVectorEnv(_BatchEnv):
    """PeakPredict's C++ batch (``gym.make_vec(..., vectorization_mode="vector_entry_point")``).

    Takes :class:`PeakPredictEnv`'s arguments, and:

    Args:
        num_envs: environments in the batch; ``reset(seed=s)`` seeds
            environment i with ``s + i``.
        autoreset_mode: a ``gymnasium.vector.AutoresetMode`` (or its value):
            ``NEXT_STEP`` (default), ``SAME_STEP`` (the last observation and
            info go to ``info["final_obs"]`` and ``info["final_info"]``, an
            ``num_envs x dim`` array and a dict of arrays, valid in the rows
            ``info["_final_obs"]`` marks) or ``DISABLED`` (reset the
            environments that ended with ``reset(options={"reset_mask": done})``;
            stepping one that was not reset raises InvalidInputError).
        copy: return copies of the batch's arrays; by default ``step`` and
            ``reset`` return the arrays the C++ batch writes in place, which
            the next call overwrites.

    Infos follow Gymnasium's vector convention: ``info["job"]`` is an array
    over the batch and ``info["_job"]`` marks every environment.
    A batch of actions that does not hold ``num_envs`` actions raises
    InvalidInputError; an invalid action within it is scored as the module's
    doc says, and a batch that does not convert to numbers is a batch of
    invalid actions.
    """

    def __init__(self, num_envs: int = 1, *, autoreset_mode: Union[AutoresetMode, str] = AutoresetMode.NEXT_STEP,
                 copy: bool = False, jobs: Optional[_core.PeakJobs] = None, dataset: Optional[PathLike] = None,
                 split: str = "train", action: str = "box", bins: int = 16, oom_reward: float = -10.0,
                 rows: int = 20000, pool_seed: int = 0, graphs: int = 256, label: str = "peak_requested",
                 split_by: str = "random", render_mode: Optional[str] = None) -> None:
        mode = _autoreset_mode(autoreset_mode)
        if num_envs < 1:
            raise InvalidInputError(f"num_envs {num_envs}: expected at least 1")
        self._action = _check_choice("action", action, ("box", "bins"))
        self.jobs = _jobs_of(jobs, dataset, rows, pool_seed, graphs, label, split_by)
        make = _core.PeakPredictBatch if action == "box" else _core.PeakPredictBinsBatch
        core = make(self.jobs, int(num_envs), _check_choice("split", split, ("train", "test")), float(oom_reward),
                    int(bins), _MODES[mode])
        self._start(core, num_envs, mode, copy, render_mode, *_spaces(core, action))
        self.bin_peaks: np.ndarray = core.spaces()["bin_peaks"]

    def _actions(self, actions: Any) -> np.ndarray:
        if self._action == "bins":
            return _discrete_or_invalid(actions, self.num_envs)
        try:
            return np.asarray(actions, dtype=np.float32)
        except (TypeError, ValueError, OverflowError):  # not numbers: every action of the batch is invalid
            return np.full(self.num_envs, np.nan, np.float32)


@functools.lru_cache(maxsize=8)
def _generated_tasks(tasks: int, pool_seed: int) -> _core.ChunkTasks:
    return _core.ChunkTasks.generate(tasks, pool_seed)


def chunk_tasks(tasks: int = 256, pool_seed: int = 0) -> _core.ChunkTasks:
    """The tasks ChunkSchedule draws from: ``tasks`` tasks generated from ``pool_seed`` (cached:
    the same arguments give the same object). Task i is a test task when i % 5 == 4."""
    if tasks < 1:
        raise InvalidInputError(f"{tasks} tasks; expected at least 1")
    return _generated_tasks(int(tasks), int(pool_seed))


def _info(info: np.ndarray) -> Dict[str, Any]:
    """A one-element structured array as a dict of Python numbers."""
    return {key: info[key][0].item() for key in info.dtype.names}


def _masked_spaces(core_spaces: Dict[str, Any], mask_in_observation: bool) -> Tuple[spaces.Space, spaces.Discrete]:
    box = spaces.Box(core_spaces["observation_low"], core_spaces["observation_high"], dtype=np.float32)
    n = int(core_spaces["actions"])
    if mask_in_observation:
        return spaces.Dict({"observation": box, "action_mask": spaces.MultiBinary(n)}), spaces.Discrete(n)
    return box, spaces.Discrete(n)


class _MaskedEnv(gymnasium.Env):
    """One environment with discrete actions and an action mask (see ChunkScheduleEnv)."""

    metadata: Dict[str, Any] = {"render_modes": []}

    def _start(self, core: Any, mask_in_observation: bool, render_mode: Optional[str]) -> None:
        self._core = core
        self._mask_in_observation = bool(mask_in_observation)
        self.observation_space, self.action_space = _masked_spaces(core.spaces(), self._mask_in_observation)
        self.render_mode = render_mode

    def reset(self, *, seed: Optional[int] = None,
              options: Optional[Dict[str, Any]] = None) -> Tuple[Any, Dict[str, Any]]:
        super().reset(seed=seed)
        obs, info = self._core.reset(None if seed is None else int(seed))
        return self._observation(obs), _info(info)

    def step(self, action: Any) -> Tuple[Any, float, bool, bool, Dict[str, Any]]:
        obs, reward, terminated, truncated, info = self._core.step(_bin_action(action))
        return self._observation(obs), reward, terminated, truncated, _info(info)

    def action_masks(self) -> np.ndarray:
        """One bool per action, True where the action is valid in the current state."""
        return self._core.action_mask().astype(bool)

    def _observation(self, obs: np.ndarray) -> Any:
        if not self._mask_in_observation:
            return obs
        return {"observation": obs, "action_mask": self._core.action_mask().astype(np.int8)}


class _MaskedBatchEnv(_BatchEnv):
    """A C++ batch of masked environments: ``action_masks()`` and the Dict observation option."""

    def _start_masked(self, core: Any, num_envs: int, mode: AutoresetMode, copy: bool, render_mode: Optional[str],
                      mask_in_observation: bool) -> None:
        self._mask_in_observation = bool(mask_in_observation)
        self._start(core, num_envs, mode, copy, render_mode,
                    *_masked_spaces(core.spaces(), self._mask_in_observation))

    def action_masks(self) -> np.ndarray:
        """A ``num_envs x actions`` bool array, True where an action is valid in the current state."""
        return self._core.masks.astype(bool)

    def _actions(self, actions: Any) -> np.ndarray:
        return _discrete_or_invalid(actions, self.num_envs)

    def _observations(self, obs: np.ndarray) -> Any:
        if not self._mask_in_observation:
            return self._out(obs)
        # The masks of the current states; a final observation's mask is not kept (its episode ended).
        return {"observation": self._out(obs), "action_mask": self._core.masks.astype(np.int8)}


class ChunkScheduleEnv(_MaskedEnv):
    """ChunkSchedule, one environment (``gym.make("dwsr/ChunkSchedule-v0", ...)``); docs/env.md.

    An episode processes one cube under a per-worker memory budget, slab by
    slab along inline; each step picks the chunk of the next slab among 8
    candidates (Discrete(8), largest first). A candidate whose peak does not
    fit the budget even in the best case is masked. What the blocks really
    use depends on a data density hidden from the agent; a slab that does not
    fit runs out of memory, costs its time plus a retry, and stays to do. The
    reward is ``voxels / V - seconds / T_ref`` (V the cube's voxels, T_ref its
    time at the advisor's chunk), so a finished episode returns ``1 - T / T_ref``.

    Args:
        tasks: a pool from :func:`chunk_tasks` (shared); else generated from
            ``pool_tasks`` and ``pool_seed``.
        split: ``"train"`` or ``"test"``; the parts never share a task.
        retry_seconds: what an out-of-memory or invalid step costs beside the failed block.
        step_limit: steps before the episode is truncated (0: 4 x the slabs of the smallest candidate).
        mask_in_observation: observations are dicts ``{"observation": Box, "action_mask": MultiBinary(8)}``.

    ``action_masks()`` gives the mask as bools. An invalid action (masked,
    outside 0 to 7, not a whole number) never raises: nothing is done, the
    step costs ``retry_seconds`` and ``info["invalid_action"]`` is set.
    ``advisor_action()`` is today's advisor's safe choice for the current task.
    """

    def __init__(self, *, tasks: Optional[_core.ChunkTasks] = None, split: str = "train",
                 retry_seconds: float = 0.02, step_limit: int = 0, pool_tasks: int = 256, pool_seed: int = 0,
                 mask_in_observation: bool = False, render_mode: Optional[str] = None) -> None:
        self.tasks = tasks if tasks is not None else chunk_tasks(pool_tasks, pool_seed)
        config = _core.chunk_schedule(self.tasks, _check_choice("split", split, ("train", "test")),
                                      float(retry_seconds), int(step_limit))
        self._start(_core.ChunkSchedule(config), mask_in_observation, render_mode)

    def advisor_action(self) -> int:
        """The largest candidate whose peak at the highest density fits: the advisor's choice."""
        return int(_core.chunk_advisor_action(self._core))


class ChunkScheduleVectorEnv(_MaskedBatchEnv):
    """ChunkSchedule's C++ batch (``gym.make_vec(..., vectorization_mode="vector_entry_point")``).

    Takes :class:`ChunkScheduleEnv`'s arguments, and ``num_envs``,
    ``autoreset_mode`` and ``copy`` as :class:`PeakPredictVectorEnv` does.
    ``action_masks()`` is a ``num_envs x 8`` bool array for the current
    states (after an autoreset, the new episode's).
    """

    def __init__(self, num_envs: int = 1, *, autoreset_mode: Union[AutoresetMode, str] = AutoresetMode.NEXT_STEP,
                 copy: bool = False, tasks: Optional[_core.ChunkTasks] = None, split: str = "train",
                 retry_seconds: float = 0.02, step_limit: int = 0, pool_tasks: int = 256, pool_seed: int = 0,
                 mask_in_observation: bool = False, render_mode: Optional[str] = None) -> None:
        mode = _autoreset_mode(autoreset_mode)
        if num_envs < 1:
            raise InvalidInputError(f"num_envs {num_envs}: expected at least 1")
        self.tasks = tasks if tasks is not None else chunk_tasks(pool_tasks, pool_seed)
        config = _core.chunk_schedule(self.tasks, _check_choice("split", split, ("train", "test")),
                                      float(retry_seconds), int(step_limit))
        self._start_masked(_core.ChunkScheduleBatch(config, int(num_envs), _MODES[mode]), num_envs, mode, copy,
                           render_mode, mask_in_observation)


@functools.lru_cache(maxsize=8)
def _generated_kinds(kinds: int, pool_seed: int, allocator: str) -> _core.GpuPackJobs:
    return _core.GpuPackJobs.generate(kinds, pool_seed, allocator)


def gpu_pack_jobs(kinds: int = 64, pool_seed: int = 0, allocator: str = "torch_cuda_caching") -> _core.GpuPackJobs:
    """The job kinds GpuPack's traces draw from: ``kinds`` chunked runs generated from ``pool_seed``,
    each one's reserved memory over time under ``allocator`` (cached: the same arguments give the
    same object). Kind k is a test kind when k % 5 == 4."""
    if kinds < 2:
        raise InvalidInputError(f"{kinds} job kinds; expected at least 2 (one per part)")
    return _generated_kinds(int(kinds), int(pool_seed), str(allocator))


_DEVICES = ("h100-80gb", "h100-80gb/3g.40gb", "h100-80gb/2g.20gb", "h100-80gb/1g.10gb")


def _gpu_pack_config(jobs: Optional[_core.GpuPackJobs], split: str, devices: Sequence[str], arrivals: int,
                     load: float, time_cost: str, kinds: int, pool_seed: int, allocator: str) -> Any:
    pool = jobs if jobs is not None else gpu_pack_jobs(kinds, pool_seed, allocator)
    config = _core.gpu_pack(pool, _check_choice("split", split, ("train", "test")), [str(d) for d in devices],
                            int(arrivals), float(load), _check_choice("time_cost", time_cost,
                                                                      ("flow_time", "makespan")))
    return pool, config


class GpuPackEnv(_MaskedEnv):
    """GpuPack, one environment (``gym.make("dwsr/GpuPack-v0", ...)``); docs/env.md.

    Jobs arrive from a seeded trace; each step places the head job on one of
    G devices (whole GPUs or MIG slices) or waits (action G). A job's
    reserved memory over time comes from the simulator's device model; a
    placement whose sum exceeds a device's capacity runs out of memory, and
    the job reruns alone on a recovery GPU at its full cost (CARMA's recovery).
    With ``time_cost="flow_time"`` (default) the return is the completed work
    minus the jobs' summed time in the system; ``"makespan"`` charges elapsed time.

    Args:
        jobs: a pool from :func:`gpu_pack_jobs` (shared); else generated from
            ``kinds``, ``pool_seed`` and ``allocator``.
        split: ``"train"`` or ``"test"``; the parts never share a job kind.
        devices: the G devices, by name (``dwsr colocate --help`` lists them).
        arrivals: jobs per episode.
        load: arrival rate relative to what the devices can run (above 1: a queue builds).
        mask_in_observation: observations are dicts with an ``"action_mask"`` key.

    A device is masked when no job waits, when it runs as many jobs as it
    has compute slices, or when the head job alone does not fit it; waiting
    is always valid. An invalid action is a wait with ``info["invalid_action"]``
    set; it never raises. ``first_fit_action()`` and ``worst_fit_action()``
    are heuristics to compare a policy with.
    """

    def __init__(self, *, jobs: Optional[_core.GpuPackJobs] = None, split: str = "train",
                 devices: Sequence[str] = _DEVICES, arrivals: int = 32, load: float = 2.0,
                 time_cost: str = "flow_time", kinds: int = 64, pool_seed: int = 0,
                 allocator: str = "torch_cuda_caching", mask_in_observation: bool = False,
                 render_mode: Optional[str] = None) -> None:
        self.jobs, config = _gpu_pack_config(jobs, split, devices, arrivals, load, time_cost, kinds, pool_seed,
                                             allocator)
        self._start(_core.GpuPack(config), mask_in_observation, render_mode)

    def first_fit_action(self) -> int:
        """The first device whose current usage plus the head job's peak fits, else wait."""
        return int(_core.gpu_pack_first_fit_action(self._core))

    def worst_fit_action(self) -> int:
        """The valid device with the most memory left over the head job's duration after its peak, else wait."""
        return int(_core.gpu_pack_worst_fit_action(self._core))


class GpuPackVectorEnv(_MaskedBatchEnv):
    """GpuPack's C++ batch (``gym.make_vec(..., vectorization_mode="vector_entry_point")``).

    Takes :class:`GpuPackEnv`'s arguments, and ``num_envs``, ``autoreset_mode``
    and ``copy`` as :class:`PeakPredictVectorEnv` does; ``action_masks()`` is a
    ``num_envs x (G + 1)`` bool array for the current states.
    """

    def __init__(self, num_envs: int = 1, *, autoreset_mode: Union[AutoresetMode, str] = AutoresetMode.NEXT_STEP,
                 copy: bool = False, jobs: Optional[_core.GpuPackJobs] = None, split: str = "train",
                 devices: Sequence[str] = _DEVICES, arrivals: int = 32, load: float = 2.0,
                 time_cost: str = "flow_time", kinds: int = 64, pool_seed: int = 0,
                 allocator: str = "torch_cuda_caching", mask_in_observation: bool = False,
                 render_mode: Optional[str] = None) -> None:
        mode = _autoreset_mode(autoreset_mode)
        if num_envs < 1:
            raise InvalidInputError(f"num_envs {num_envs}: expected at least 1")
        self.jobs, config = _gpu_pack_config(jobs, split, devices, arrivals, load, time_cost, kinds, pool_seed,
                                             allocator)
        self._start_masked(_core.GpuPackBatch(config, int(num_envs), _MODES[mode]), num_envs, mode, copy,
                           render_mode, mask_in_observation)


def _register() -> None:
    if "dwsr/PeakPredict-v0" not in gymnasium.registry:
        gymnasium.register(id="dwsr/PeakPredict-v0", entry_point="dwsr.envs:PeakPredictEnv",
                           vector_entry_point="dwsr.envs:PeakPredictVectorEnv")
    if "dwsr/ChunkSchedule-v0" not in gymnasium.registry:
        gymnasium.register(id="dwsr/ChunkSchedule-v0", entry_point="dwsr.envs:ChunkScheduleEnv",
                           vector_entry_point="dwsr.envs:ChunkScheduleVectorEnv")
    if "dwsr/GpuPack-v0" not in gymnasium.registry:
        gymnasium.register(id="dwsr/GpuPack-v0", entry_point="dwsr.envs:GpuPackEnv",
                           vector_entry_point="dwsr.envs:GpuPackVectorEnv")


_register()
