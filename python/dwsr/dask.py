"""dwsr over Dask arrays: :func:`apply` maps a graph over blocks, :func:`advise` sizes them for a cluster.

Needs Dask (``pip install dwsr[dask]``); ``import dwsr`` alone does not.

    import dask.array as da, dwsr.dask
    from dask.distributed import Client
    client = Client()                                    # or a cluster's scheduler address
    advice = dwsr.dask.advise("gaussian", cube.shape, client=client)
    x = da.from_array(cube, chunks=advice.chunks)         # or da.from_zarr(...).rechunk(advice.chunks)
    smooth = dwsr.dask.apply(x, "gaussian").compute()    # equals dwsr.run("gaussian", cube) bit for bit
"""

from __future__ import annotations

import json
import operator
import os
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

try:
    import dask.array as da
    from dask.array.overlap import overlap as _overlap
    from dask.array.overlap import trim_internal as _trim_internal
    from dask.utils import parse_bytes as _parse_bytes
except ImportError as e:  # pragma: no cover - exercised only without Dask
    raise ImportError(f"dwsr.dask needs Dask ({e}); install it with: pip install dwsr[dask]") from e

from ._api import Graph, GraphLike, ShapeLike, _invalid, _shape, advise as _dwsr_advise, graph_info, run
from ._errors import FileError, InvalidInputError
from ._types import Advice, Shape

__all__ = ["DaskAdvice", "advise", "apply"]

_AXES = ("inline", "crossline", "time")

#: Dask's default ``distributed.worker.memory.pause``: a worker stops running
#: tasks when its process memory reaches this fraction of its limit.
PAUSE_FRACTION = 0.8


def _portable(graph: GraphLike) -> Union[str, Dict[str, Any], Graph]:
    """The graph as tasks carry it to workers: a graph file is read here, since workers may not see it."""
    if isinstance(graph, os.PathLike) or (isinstance(graph, str) and graph.endswith(".json")):
        try:
            with open(graph, encoding="utf-8") as f:
                return json.load(f)
        except OSError as e:
            raise FileError(f"graph file {os.fspath(graph)!r}: {e.strerror or e}") from None
        except ValueError as e:
            raise _invalid(f"graph file {os.fspath(graph)!r}: not JSON ({e})") from None
    if isinstance(graph, Mapping):
        return dict(graph)
    return graph  # an operator name or a dwsr.Graph (plain Python, pickles)


def _run_block(block: np.ndarray, graph: Any, params: Optional[Mapping[str, Any]], threads: int,
               names: Optional[Tuple[str, ...]]) -> Any:
    """One task: dwsr on a block with its halo; the only output, or all of them as a tuple in ``names`` order."""
    # Blocks Dask assembles are C-contiguous float32 already; copy only what is not.
    if block.dtype != np.float32 or not block.flags.c_contiguous:
        block = np.ascontiguousarray(block, dtype=np.float32)
    outputs = run(graph, block, params=params, threads=threads).outputs
    if names is None:
        return next(iter(outputs.values()))
    return tuple(outputs[n] for n in names)


def apply(array: "da.Array", op_or_graph: GraphLike, *, params: Optional[Mapping[str, Any]] = None, threads: int = 1,
          rechunk: bool = True) -> Union["da.Array", Dict[str, "da.Array"]]:
    """Maps an operator or a graph over a Dask array, block by block, with the halo it needs.

    Each block is extended by the graph's halo (``dwsr.graph_info(...).halo``)
    from its neighbours with ``map_overlap(depth=halo, boundary="none",
    trim=True)``: at the cube's faces there is nothing to add, exactly as
    dwsr clips a chunk's halo, so the result equals ``dwsr.run`` on the whole
    cube bit for bit. Each task runs ``dwsr.run`` on its block (one
    C-contiguous float32 array, read in place).

    Args:
        array: a 3-D ``dask.array.Array`` of float32 (inline, crossline, time).
            Convert other dtypes first (``array.astype(numpy.float32)``).
        op_or_graph: an operator name, a graph (dict or :class:`dwsr.Graph`)
            or the path of a graph file (read here, so workers need not see it).
        params: parameter overrides of a single operator, e.g. ``{"sigmas": (2, 2, 2)}``.
        threads: threads of each task's dwsr run (1 suits a Dask worker, which
            runs one task per thread).
        rechunk: axes the graph reads whole (e.g. time for the Hilbert
            transform's operators) must be a single chunk; with ``True`` such
            an axis is rechunked to one chunk, with ``False`` a split one
            raises :class:`dwsr.InvalidInputError`. A chunk smaller than the
            halo is merged with its neighbour by Dask (``map_overlap``'s rule).

    Returns:
        The output as a lazy ``dask.array.Array`` when the graph has one,
        otherwise a dict ``{name: array}`` with dwsr's output names (as
        ``dwsr.run`` names them), each with its dtype (float32, complex64 or
        int64). The outputs of a multi-output graph share one task per block:
        computing them together (``dask.compute(*result.values())``) runs each
        block once.

    Raises:
        dwsr.InvalidInputError: not a 3-D float32 Dask array; an axis read whole
            is split and ``rechunk=False``; the graph reduces over the whole
            cube first (histogram_equalization, trace_agc, rgb_blending, the
            glcm operators), which block-by-block execution cannot reproduce:
            run such graphs with ``dwsr.run`` on the whole cube instead.
    """
    if not isinstance(array, da.Array):
        raise _invalid(f"array: expected a dask.array.Array of float32; got {type(array).__name__}")
    if array.ndim != 3:
        raise _invalid(f"array of {array.ndim} dimensions {array.shape}: expected 3 (inline, crossline, time)")
    if array.dtype != np.float32:
        raise _invalid(f"array of dtype {array.dtype}: expected float32; convert it with array.astype(numpy.float32)")
    graph = _portable(op_or_graph)
    info = graph_info(graph, params=params)
    if info.needs_reduction:
        raise _invalid("this graph reduces over the whole cube before it computes a voxel (e.g. a histogram or "
                       "cube-wide statistics), so blocks computed independently would differ from the whole-cube "
                       "result; run it with dwsr.run on the whole cube (array.compute()) instead")
    split = [ax for ax in range(3) if info.whole_axes[ax] and len(array.chunks[ax]) > 1]
    if split and not rechunk:
        ax = split[0]
        raise _invalid(f"{_AXES[ax]} axis (axis {ax}) is split into chunks {array.chunks[ax]}, but the graph reads "
                       f"it whole; rechunk it to one chunk (array.rechunk({{{ax}: -1}})) or pass rechunk=True")
    if split:
        array = array.rechunk({ax: -1 for ax in split})

    depth = {ax: int(h) for ax, h in enumerate(info.halo)}
    threads = int(threads)
    if len(info.outputs) == 1:
        dtype = np.dtype(info.outputs[0][1])
        return da.map_overlap(_run_block, array, depth=depth, boundary="none", trim=True, dtype=dtype,
                              meta=np.empty((0, 0, 0), dtype), graph=graph, params=params, threads=threads,
                              names=None)

    # Several outputs: map_overlap's three steps (overlap, map_blocks, trim) with one task per block that returns
    # every output as a tuple, and one cheap task per output and block that picks its own.
    names = tuple(name for name, _ in info.outputs)
    extended = _overlap(array, depth=depth, boundary="none")
    blocks = extended.map_blocks(_run_block, dtype=np.float32, meta=np.empty((0, 0, 0), np.float32), graph=graph,
                                 params=params, threads=threads, names=names)
    outputs: Dict[str, da.Array] = {}
    for k, (name, dtype_name) in enumerate(info.outputs):
        dtype = np.dtype(dtype_name)
        picked = blocks.map_blocks(operator.getitem, k, dtype=dtype, meta=np.empty((0, 0, 0), dtype),
                                   name=f"dwsr-{name}-{blocks.name}")
        outputs[name] = _trim_internal(picked, depth, boundary="none")
    return outputs


@dataclass(frozen=True)
class DaskAdvice:
    """Dask chunks for a graph on a cluster, and the memory predicted for them.

    ``chunks`` is usable as ``chunks=`` (``da.from_array(cube,
    chunks=advice.chunks)``, ``x.rechunk(advice.chunks)``). A worker's
    predicted peak, ``worker_peak_bytes``, is ``reserve`` (the process
    itself), ``threads`` dwsr runs at once at ``dwsr_peak_bytes`` each
    (dwsr's prediction for a block with its halo, its temporaries and its
    outputs) and ``held_chunks`` input chunks of ``chunk_bytes`` that Dask
    keeps meanwhile; it stays under the pause threshold, ``pause_fraction``
    of ``memory_limit``. ``task_budget`` is that threshold less ``reserve``,
    per task. ``advice`` is dwsr's answer for the chunk (:class:`dwsr.Advice`).
    """

    chunks: Shape
    memory_limit: int
    threads: int
    workers: int
    pause_fraction: float
    reserve: int
    task_budget: int
    dwsr_peak_bytes: int
    chunk_bytes: int
    held_chunks: int
    advice: Advice

    @property
    def worker_peak_bytes(self) -> int:
        """A worker's predicted peak: ``reserve``, ``threads`` dwsr runs at their peak, ``held_chunks`` input chunks."""
        return self.reserve + self.threads * self.dwsr_peak_bytes + self.held_chunks * self.chunk_bytes

    def to_dict(self) -> Dict[str, Any]:
        """The figures as a dict, with dwsr's advice document under ``"advice"``."""
        return {
            "chunks": list(self.chunks),
            "memory_limit": self.memory_limit,
            "threads": self.threads,
            "workers": self.workers,
            "pause_fraction": self.pause_fraction,
            "reserve": self.reserve,
            "task_budget": self.task_budget,
            "dwsr_peak_bytes": self.dwsr_peak_bytes,
            "chunk_bytes": self.chunk_bytes,
            "held_chunks": self.held_chunks,
            "worker_peak_bytes": self.worker_peak_bytes,
            "advice": self.advice.to_dict(),
        }


def _process_memory() -> int:
    """The calling process's resident memory: what Dask's ``metrics["memory"]`` reports (run on a worker)."""
    import psutil  # a dependency of distributed
    return int(psutil.Process().memory_info().rss)


def _cluster_workers(client: Any, addresses: Optional[Iterable[str]]) -> Dict[str, Mapping[str, Any]]:
    """The scheduler's description of the workers considered, by address (every worker when ``addresses`` is None)."""
    try:
        info = client.scheduler_info(n_workers=-1)
    except TypeError:  # distributed before n_workers: every worker is listed
        info = client.scheduler_info()
    workers = info.get("workers", {})
    if addresses is not None:
        wanted = list(addresses)
        missing = [a for a in wanted if a not in workers]
        if missing:
            raise _invalid(f"workers {missing}: not workers of this client (it has {sorted(workers)})")
        workers = {a: workers[a] for a in wanted}
    if not workers:
        raise _invalid("the client has no workers; start the cluster's workers first (client.wait_for_workers(n))")
    return dict(workers)


def _bytes(value: Union[int, str], what: str) -> int:
    try:
        n = int(value) if isinstance(value, (int, np.integer)) else int(_parse_bytes(str(value)))
    except (ValueError, TypeError):
        raise _invalid(f"{what} {value!r}: expected bytes, e.g. 4000000000 or \"4GiB\"") from None
    if n < 0 or (n == 0 and what != "reserve"):
        raise _invalid(f"{what} {value!r}: expected a positive number of bytes")
    return n


def advise(op_or_graph: GraphLike, shape: ShapeLike, *, client: Any = None, memory: Union[int, str, None] = None,
           workers: Optional[Sequence[str]] = None, threads: Optional[int] = None,
           params: Optional[Mapping[str, Any]] = None, allocator: str = "exact",
           reserve: Union[int, str, None] = None, pause_fraction: float = PAUSE_FRACTION) -> DaskAdvice:
    """Dask chunks whose predicted per-worker peak stays under Dask's pause threshold.

    The model (dwsr's, with the input chunks Dask holds, until the simulator
    models Dask's execution): a worker with ``nthreads`` = T runs up to T
    single-threaded tasks at once, each a one-worker, one-thread dwsr run of
    one chunk plus its halo (:func:`apply`'s task), whose peak
    ``dwsr.advise(..., workers=1, threads=1)`` predicts. Meanwhile Dask keeps
    each running task's input chunk (dwsr reads a window copied from it and
    its neighbours) and, when the graph has a halo, one more chunk a coming
    window needs. So a worker's peak is ``reserve + T * dwsr_peak + (T + 1) *
    chunk_bytes`` (T chunks without a halo), and the advised chunk is the
    largest one, time kept whole (and every axis the graph reads whole), whose
    peak stays under the pause threshold: ``pause_fraction * memory_limit``
    (Dask pauses a worker whose process memory reaches it; 80 % by default).
    ``reserve`` is what the worker process holds besides tasks (Python,
    NumPy, Dask and dwsr loaded: about 80 MiB).

    Args:
        op_or_graph: an operator name, a graph (dict or :class:`dwsr.Graph`) or a graph file.
        shape: the cube's shape (inline, crossline, time), a tuple, ``"IxXxT"`` or an array.
        client: a ``distributed.Client``; each worker's ``memory_limit`` and
            ``nthreads`` are read from ``client.scheduler_info()`` and the
            tightest worker (least memory per thread) decides.
        memory: a worker's memory limit (bytes or text such as ``"4GiB"``);
            overrides the client's.
        workers: addresses of the client's workers to consider (default: all).
        threads: tasks a worker runs at once (its ``nthreads``); overrides the client's.
        params: parameter overrides of a single operator.
        allocator: dwsr's allocator model for the prediction (``"exact"``:
            requested bytes; ``"host_malloc"``: what glibc would hold).
        reserve: bytes of a worker's memory not available to tasks (bytes or
            text such as ``"100MiB"``). Default: with a client, the largest
            resident memory among the workers considered, measured when
            ``advise`` is called (``client.run``, no task; call it while the
            workers are idle); without, 0.
        pause_fraction: the workers' ``distributed.worker.memory.pause``.

    Returns:
        A :class:`DaskAdvice` (``.chunks`` for Dask, the budget and the predicted peaks).

    Raises:
        dwsr.InvalidInputError: no client and no ``memory``/``threads``, a
            worker without a memory limit, or a budget that even the smallest
            chunk does not fit (dwsr's message, with the worker's limit and
            threshold). No task is submitted to the cluster.
    """
    if not 0 < pause_fraction <= 1:
        raise _invalid(f"pause_fraction {pause_fraction}: expected a fraction in (0, 1]")
    if client is None and (memory is None or threads is None):
        raise _invalid("advise needs a client, or both memory (a worker's limit) and threads (tasks per worker)")
    if threads is not None and int(threads) < 1:
        raise _invalid(f"threads {threads}: expected at least 1")
    described = _cluster_workers(client, workers) if client is not None else {"": {}}
    per_worker = []  # (memory limit, tasks at once) of each worker considered
    for w in described.values():
        if memory is None and not w.get("memory_limit"):
            raise _invalid(f"worker {w.get('name', '?')} has no memory limit; start workers with memory_limit=... "
                           f"or pass memory=")
        limit = _bytes(memory, "memory") if memory is not None else int(w["memory_limit"])
        per_worker.append((limit, int(threads) if threads is not None else int(w["nthreads"])))
    if reserve is not None:
        reserved = _bytes(reserve, "reserve")
    elif client is None:
        reserved = 0
    else:
        # Measured now: the scheduler's metrics["memory"] is a heartbeat old, and a heartbeat taken while tasks ran
        # counts their memory as the process's own.
        reserved = max(client.run(_process_memory, workers=list(described)).values())

    # The tightest worker decides: the least pause-threshold memory per concurrent task.
    limit, nthreads = min(per_worker, key=lambda lt: lt[0] / lt[1])
    threshold = int(pause_fraction * limit)
    if reserved >= threshold:
        raise _invalid(f"reserve of {reserved} bytes: expected less than the pause threshold, {pause_fraction:.0%} of "
                       f"the worker memory limit {limit} bytes = {threshold} bytes")
    budget = (threshold - reserved) // nthreads
    graph, dims = _portable(op_or_graph), _shape(shape)
    overlapping = any(graph_info(graph, params=params).halo)
    # dwsr's advice for a budget leaves no room for the input chunks Dask holds: lower dwsr's budget until they fit
    # beside it. Each step rules out the chunk just advised, so this ends (at the latest with dwsr's refusal).
    dwsr_budget = budget
    while True:
        try:
            advice = _dwsr_advise(graph, dims, memory=dwsr_budget, params=params, workers=1, threads=1,
                                  allocator=allocator, objective="largest")
        except InvalidInputError as e:
            raise InvalidInputError(f"{e} (Dask worker memory limit {limit} bytes, pause threshold "
                                    f"{pause_fraction:.0%} = {threshold} bytes, less {reserved} reserved, shared by "
                                    f"{nthreads} task(s) at once: {budget} bytes per task, before the input chunks "
                                    f"Dask holds)") from None
        chunk_bytes = 4 * int(np.prod(advice.chunk))
        held = nthreads + 1 if overlapping else nthreads
        over = nthreads * advice.advice.peak_bytes + held * chunk_bytes - (threshold - reserved)
        if over <= 0:
            break
        dwsr_budget = max(1, min(dwsr_budget - -(-over // nthreads), advice.advice.peak_bytes - 1))
    return DaskAdvice(chunks=advice.chunk, memory_limit=limit, threads=nthreads, workers=len(described),
                      pause_fraction=pause_fraction, reserve=reserved, task_budget=budget,
                      dwsr_peak_bytes=advice.advice.peak_bytes, chunk_bytes=chunk_bytes,
                      held_chunks=held, advice=advice)
