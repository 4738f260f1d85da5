"""dwsr's functions: run, plan, advise, replay and the operator catalogue."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _core
from ._errors import InvalidInputError
from ._types import Advice, Dataset, Event, GraphInfo, OperatorInfo, Plan, Replay, RunResult, Shape, parse_shape


class Node:
    """A node of a :class:`Graph`; pass it as another node's input.

    ``node["suffix"]`` refers to one of the node's other outputs (for
    operators with several, e.g. ``gst_2d_dips["dip"]``).
    """

    def __init__(self, name: str, output: str = "") -> None:
        self.name = name
        self._output = output

    def __getitem__(self, suffix: str) -> "Node":
        return Node(self.name, suffix)

    @property
    def ref(self) -> str:
        """The reference as a graph document writes it: ``name`` or ``name.suffix``."""
        return f"{self.name}.{self._output}" if self._output else self.name

    def __repr__(self) -> str:
        return f"Node({self.ref!r})"


class Graph:
    """A graph of operators over one input cube, built in Python.

    >>> g = dwsr.Graph()
    >>> env = g.add("envelope", name="env")
    >>> freq = g.add("instantaneous_frequency", name="freq")
    >>> g.add("sweetness_from", env, freq, name="sweet")
    Node('sweet')

    Nodes without inputs read the cube. ``keep=True`` makes a node that
    others consume an output too. The document is the one graph files hold
    (see the README); ``Graph.from_dict`` and ``Graph.load`` read one.
    """

    INPUT = "input"

    def __init__(self) -> None:
        self._nodes: List[Dict[str, Any]] = []

    def add(self, op: str, *inputs: Union[Node, str], name: Optional[str] = None, keep: bool = False,
            **params: Any) -> Node:
        """Adds operator ``op`` reading ``inputs`` (nodes, or ``"input"``; none: the cube) and returns its node.

        ``params`` override the operator's defaults (numbers, strings, or
        sequences of numbers, e.g. ``sigmas=(3, 3, 3)``).
        """
        if name is None:
            taken = {n["name"] for n in self._nodes}
            name = op if op not in taken else f"{op}_{len(self._nodes)}"
        node: Dict[str, Any] = {"name": name, "op": op}
        if inputs:
            node["inputs"] = [i.ref if isinstance(i, Node) else str(i) for i in inputs]
        if params:
            node["params"] = {k: list(v) if isinstance(v, (tuple, list, np.ndarray)) else v for k, v in params.items()}
        if keep:
            node["keep"] = True
        self._nodes.append(node)
        return Node(name)

    def to_dict(self) -> Dict[str, Any]:
        """The graph document: ``{"nodes": [...]}``."""
        return {"nodes": [dict(n) for n in self._nodes]}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> "Graph":
        """A graph from its document (checked when it is used)."""
        g = cls()
        g._nodes = [dict(n) for n in doc.get("nodes", [])]
        return g

    @classmethod
    def load(cls, path: Union[str, os.PathLike]) -> "Graph":
        """A graph from a JSON file."""
        with open(path, encoding="utf-8") as f:
            return cls.from_dict(json.load(f))

    def __repr__(self) -> str:
        return f"Graph({[n['name'] for n in self._nodes]})"


GraphLike = Union[str, os.PathLike, Mapping[str, Any], Graph]
ShapeLike = Union[Sequence[int], str, np.ndarray]


def _graph_spec(g: GraphLike) -> str:
    """The core's graph argument: an operator name, a .json path, or a document's JSON text."""
    if isinstance(g, Graph):
        return json.dumps(g.to_dict())
    if isinstance(g, Mapping):
        return json.dumps(g)
    if isinstance(g, os.PathLike):
        return os.fspath(g)
    if isinstance(g, str):
        return g
    raise TypeError(f"expected an operator name, a graph (dict, dwsr.Graph) or a .json path; got {type(g).__name__}")


def _params(params: Optional[Mapping[str, Any]]) -> Dict[str, str]:
    """Parameter overrides as the command line spells them (lists joined with commas)."""
    out: Dict[str, str] = {}
    for k, v in (params or {}).items():
        if isinstance(v, (tuple, list, np.ndarray)):
            out[k] = ",".join(str(x) for x in v)
        elif isinstance(v, bool):
            out[k] = "true" if v else "false"
        else:
            out[k] = str(v)
    return out


def _shape(shape: ShapeLike) -> Shape:
    if isinstance(shape, np.ndarray):
        shape = shape.shape
    if isinstance(shape, str):
        try:
            return parse_shape(shape)
        except (ValueError, IndexError):
            raise _invalid(f"shape {shape!r}: expected IxXxT, e.g. 64x64x512") from None
    dims = tuple(int(d) for d in shape)
    if len(dims) != 3 or min(dims) <= 0:
        raise _invalid(f"shape {tuple(shape)!r}: expected three positive extents (inline, crossline, time)")
    return dims  # type: ignore[return-value]


def _invalid(message: str) -> InvalidInputError:
    return InvalidInputError("invalid input: " + message)


def _cores(cores: Optional[int]) -> int:
    if cores is None:
        return 0
    if int(cores) <= 0:
        raise _invalid(f"cores {cores}: expected a positive number")
    return int(cores)


def _path(path: Union[str, os.PathLike, None]) -> str:
    return "" if path is None else os.fspath(path)


def _memory(memory: Union[int, str, None]) -> Optional[str]:
    if memory is None:
        return None
    if isinstance(memory, (int, np.integer)) and not isinstance(memory, bool):
        if memory <= 0:
            raise _invalid(f"memory {memory}: expected a positive number of bytes")
        return str(int(memory))
    return str(memory)


class EventLog:
    """Collects the allocation events of runs and plans, in order.

    Pass one as ``events=`` to :func:`run` (every event of the run, and later
    the frees of its output arrays when they are garbage collected) or to
    :func:`plan` (worker 0's planned events).
    """

    def __init__(self) -> None:
        self._log = _core.EventLog()

    @property
    def events(self) -> List[Event]:
        """The events so far."""
        return [Event(*row) for row in self._log.rows()]

    def __len__(self) -> int:
        return len(self._log)

    def __iter__(self) -> Iterator[Event]:
        return iter(self.events)

    def clear(self) -> None:
        """Forgets the events so far."""
        self._log.clear()

    def live_bytes(self) -> np.ndarray:
        """Live requested bytes after each event (an int64 array as long as the log)."""
        rows = self._log.rows()
        delta = np.array([b if a == "alloc" else -b for _, a, _, _, _, b in rows], dtype=np.int64)
        return np.cumsum(delta)

    @property
    def peak_bytes(self) -> int:
        """Highest live requested bytes over the log (0 when empty)."""
        live = self.live_bytes()
        return int(live.max()) if live.size else 0

    def write_trace(self, path: Union[str, os.PathLike]) -> None:
        """Writes the events as a dwsr trace (CSV) for :func:`replay` and ``dwsr replay``.

        The format ``dwsr run --trace`` writes (header
        ``action,id,bytes,device,node,role``, one event per line; see
        docs/trace-format.md), on the host, where every run from Python
        computes. Buffers are numbered 1, 2, ... in the order they are
        allocated; buffers still alive (outputs not yet freed) stay allocated
        at the end. A log that gathered runs whose buffers overlap (a second
        run while the first one's outputs live) is ambiguous and raises
        :class:`InvalidInputError`. The file is written whole or not at all.
        """
        self._log.write_trace(os.fspath(path))


def operators() -> List[OperatorInfo]:
    """Every operator of the catalogue: name, family, parameters with defaults, halo, outputs.

    The same descriptions as ``dwsr ops --json``.
    """
    return [OperatorInfo.from_dict(d) for d in json.loads(_core.operators_json())]


def graph_info(graph: GraphLike, *, params: Optional[Mapping[str, Any]] = None) -> GraphInfo:
    """An operator's or a graph's outputs, halo, axes kept whole and reductions (checks the graph)."""
    return GraphInfo.from_dict(json.loads(_core.graph_info_json(_graph_spec(graph), _params(params))))


def run(graph: GraphLike, cube: np.ndarray, *, params: Optional[Mapping[str, Any]] = None, threads: int = 1,
        memory: Union[int, str, None] = None, events: Optional[EventLog] = None) -> RunResult:
    """Runs an operator or a graph on a cube in memory and returns its outputs.

    Args:
        graph: an operator name (see :func:`operators`), a graph (dict or
            :class:`Graph`) or the path of a graph file (.json).
        cube: a C-contiguous float32 array of shape (inline, crossline, time).
            It is read in place, never copied; any other array raises
            :class:`InvalidInputError` (``numpy.ascontiguousarray(cube,
            dtype=numpy.float32)`` makes the one copy needed).
        params: parameter overrides of a single operator, e.g.
            ``{"sigmas": (3, 3, 3)}``.
        threads: threads of the run (1 to 1024).
        memory: a budget for the run's own buffers (bytes, or text such as
            ``"512MiB"``); exceeding it raises :class:`OutOfMemoryError`
            before the allocation is made.
        events: an :class:`EventLog` that receives every event of the run.

    Returns:
        A :class:`RunResult`: the outputs by name (arrays whose memory dwsr
        allocated and counted; each is freed, with its free event, when the
        array is), and the planned and measured peaks.

    The GIL is released while computing; Ctrl-C stops the run (its buffers
    are freed) and raises KeyboardInterrupt. The outputs equal those of
    ``dwsr run`` on the same cube, bit for bit.
    """
    if not isinstance(cube, np.ndarray):
        raise _invalid(f"cube: expected a numpy.ndarray of float32; got {type(cube).__name__}")
    arrays, stats = _core.run(_graph_spec(graph), cube, _params(params), int(threads), _memory(memory),
                              events._log if events is not None else None)
    return RunResult(outputs=dict(arrays), planned_peak_bytes=stats["planned_peak_bytes"],
                     measured_peak_bytes=stats["measured_peak_bytes"], events=stats["events"],
                     seconds=stats["seconds"], threads=stats["threads"], input_bytes=stats["input_bytes"],
                     shape=parse_shape(stats["shape"]))


def plan(graph: GraphLike, shape: ShapeLike, *, params: Optional[Mapping[str, Any]] = None,
         chunk: Optional[ShapeLike] = None, workers: int = 1, threads: int = 1, memory: Union[int, str, None] = None,
         allocator: str = "exact", profile: Union[str, os.PathLike, None] = None, cores: Optional[int] = None,
         execution: str = "dwsr", tasks: str = "fused", events: Optional[EventLog] = None) -> Plan:
    """Predicts each worker's peak memory for a chunked run, without computing.

    The same figures as ``dwsr plan --json``: the cube of ``shape`` (a tuple,
    ``"IxXxT"`` or an array, whose shape is used) cut into blocks of ``chunk``
    (default: the whole cube), run by ``workers`` workers of ``threads``
    threads, each block read into a buffer and its outputs written out.
    ``memory`` (bytes, or text such as ``"2GiB"``) adds whether the peak fits;
    ``allocator`` applies an allocator model (e.g. ``"host_malloc"``,
    ``"torch_cuda_caching"``) to each worker's events. ``events`` receives
    worker 0's planned events. With a time profile (``profile``, else the
    default one of :func:`calibrate` when it exists) the plan predicts the
    run's time too (``predicted_seconds``), the workers sharing ``cores``
    cores (default: the profiled machine's; workers on machines of their own:
    ``workers * threads``). ``execution="dask"`` plans a Dask-style run
    instead (as ``dwsr plan --exec dask``): each worker runs ``threads``
    single-threaded tasks at once, ``tasks`` ``"fused"`` (one per block) or
    ``"unfused"`` (one per node and block); :attr:`Plan.dask` then holds the
    schedule's peak, the bound over all orders, the floor and Dask's
    thresholds against ``memory``. ``peak_is_bound`` says whether an operator
    whose memory depends on the data made the peak an upper bound.
    """
    doc = _core.plan_json(_graph_spec(graph), _shape(shape), _params(params),
                          None if chunk is None else _shape(chunk), int(workers), int(threads), _memory(memory),
                          allocator, _path(profile), _cores(cores), execution, tasks,
                          events._log if events is not None else None)
    return Plan.from_dict(json.loads(doc))


def advise(graph: GraphLike, shape: ShapeLike, *, memory: Union[int, str], params: Optional[Mapping[str, Any]] = None,
           workers: int = 1, threads: int = 1, allocator: str = "exact", objective: str = "auto",
           profile: Union[str, os.PathLike, None] = None, cores: Optional[int] = None) -> Advice:
    """The chunking to use: the fastest, or the largest, whose predicted per-worker peak fits ``memory``.

    The same answer as ``dwsr advise --json``: time is kept whole, and every
    axis an operator reads whole; Dask's default chunk is evaluated beside it.
    ``objective="time"`` picks the smallest predicted makespan (it needs a
    time profile: ``profile``, else the default one of :func:`calibrate`),
    ``"largest"`` the largest chunk, and ``"auto"`` time when a profile
    exists; ``cores`` as in :func:`plan`. Raises :class:`InvalidInputError`
    when even the smallest chunk does not fit.
    """
    mem = _memory(memory)
    assert mem is not None
    doc = _core.advise_json(_graph_spec(graph), _shape(shape), _params(params), mem, int(workers), int(threads),
                            allocator, objective, _path(profile), _cores(cores))
    return Advice.from_dict(json.loads(doc))


def calibrate(*, quick: bool = False, ops: Optional[Iterable[str]] = None, threads: Optional[Iterable[int]] = None,
              output: Union[str, os.PathLike, None] = None) -> Dict[str, Any]:
    """Measures each operator on this machine and writes the time profile :func:`plan` and :func:`advise` use.

    As ``dwsr calibrate``: ``quick`` measures smaller cubes (seconds instead of
    a minute or two), ``ops`` and ``threads`` restrict what is measured (default:
    every operator, 1 thread and the machine's cores), ``output`` is where the
    profile goes (default: ``$DWSR_TIME_PROFILE``, else the user's cache
    directory). Returns the profile's document, with ``"path"`` added.
    """
    doc = _core.calibrate_json(bool(quick), list(ops or []), [int(t) for t in threads or []], _path(output))
    return json.loads(doc)


def replay(trace: Union[str, os.PathLike], allocators: Optional[Iterable[str]] = None, *,
           capacity: Union[int, str, None] = None, gpu: Optional[int] = None, what_if: bool = False,
           timeline: Union[str, os.PathLike, None] = None) -> Replay:
    """Replays a recorded trace through allocator models: what a device or the OS would hold.

    Args:
        trace: a dwsr trace (CSV, from ``dwsr run --trace``) or a PyTorch
            memory snapshot (pickle or its JSON export).
        allocators: model specs ``NAME[:SETTINGS]``, e.g. ``["exact",
            "torch_cuda_caching:expandable_segments:True"]`` (default: exact,
            or for a snapshot PyTorch's allocator with the recorded settings).
        capacity: memory per device (bytes or text such as ``"80GiB"``).
        gpu: which GPU of a snapshot.
        what_if: a snapshot under alternative allocator settings.
        timeline: write a Chrome trace of the replay there.

    The same document as ``dwsr replay --json``.
    """
    doc = _core.replay_json(os.fspath(trace), list(allocators or []), _memory(capacity), gpu, bool(what_if),
                            "" if timeline is None else os.fspath(timeline))
    return Replay.from_dict(json.loads(doc))


def dataset(task: str = "peak", rows: int = 10000, seed: int = 0, *, allocators: Optional[Iterable[str]] = None,
            execs: Optional[Iterable[str]] = None, graphs: int = 256, profile: Union[str, os.PathLike, None] = None,
            cores: Optional[int] = None, out: Union[str, os.PathLike, None] = None, csv: bool = True) -> Dataset:
    """Labelled training data for memory estimators, as ``dwsr dataset`` (docs/dataset.md).

    Args:
        task: ``"peak"`` (the peaks of a given chunking), ``"chunk"`` (the
            chunk to choose for a budget) or ``"pack"`` (1 to 4 jobs
            co-located on a GPU or MIG slice).
        rows: rows to generate.
        seed: the same options and seed give the same arrays, byte for byte.
        allocators: allocator models the rows draw from (and, for task peak,
            one label column each); default: every model (task pack: exact and
            the three GPU pools).
        execs: task peak's execution models: ``"dwsr"``, ``"dask"``,
            ``"dask_unfused"`` (default: dwsr only).
        graphs: random graphs of 2 to 4 nodes in the pool, beside every
            operator alone.
        profile: a time profile (``dwsr.calibrate``): adds the predicted makespan.
        cores: cores for the makespan (default: the profiled machine's).
        out: also write the files (features.npy, labels.npy, ...) into this directory.
        csv: with ``out``, write dataset.csv too.

    Ctrl-C cancels between groups of rows.
    """
    if rows < 1:
        raise _invalid(f"{rows} rows; expected at least 1")
    r = _core.dataset(str(task), int(rows), int(seed), list(allocators or []), list(execs or []), int(graphs),
                      _path(profile), _cores(cores), _path(out), bool(csv))
    columns = json.loads(r["columns"])
    return Dataset(r["features"], r["labels"], r["splits"], r["graphs"], columns, columns["task"], columns["rows"])
