"""The plain dataclasses dwsr's functions return.

Each mirrors a JSON document of the command-line tool (``dwsr ops --json``,
``dwsr plan --json``, ``dwsr advise --json``, ``dwsr replay --json``) and
``to_dict()`` gives that document back, key for key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np

Shape = Tuple[int, int, int]


def parse_shape(text: str) -> Shape:
    """``"64x64x512"`` -> ``(64, 64, 512)``."""
    parts = text.split("x")
    return (int(parts[0]), int(parts[1]), int(parts[2]))


@dataclass(frozen=True)
class Parameter:
    """An operator parameter: its name, default (as text, as on the command line) and meaning."""

    name: str
    default: str
    doc: str


@dataclass(frozen=True)
class Halo:
    """The neighbourhood an operator reads around each voxel.

    ``radius`` is in voxels per axis (inline, crossline, time); an axis marked
    whole is read whole, so a chunk may not split it.
    """

    radius: Tuple[int, int, int]
    whole_inlines: bool
    whole_crosslines: bool
    whole_traces: bool

    @property
    def whole_axes(self) -> Tuple[bool, bool, bool]:
        """Whether each axis (inline, crossline, time) must be kept whole."""
        return (self.whole_inlines, self.whole_crosslines, self.whole_traces)


@dataclass(frozen=True)
class Output:
    """One output of an operator: its file name as the tool writes it, suffix and NumPy dtype."""

    name: str
    suffix: str
    dtype: str


@dataclass(frozen=True)
class Table:
    """A table an operator writes beside its cubes (rows whose number depends on
    the data): its file name as the tool writes it, suffix, and columns as
    (name, NumPy type) pairs, the first three the row's position (inline,
    crossline, sample)."""

    name: str
    suffix: str
    columns: List[Tuple[str, str]]


@dataclass(frozen=True)
class OperatorInfo:
    """An operator of the catalogue, as ``dwsr ops --json`` describes it."""

    name: str
    family: str
    summary: str
    inputs: int
    parameters: List[Parameter]
    halo: Halo
    outputs: List[Output]
    tables: List[Table]
    reduction_passes: int
    fft_based: bool
    _doc: Mapping[str, Any] = field(repr=False, compare=False, default_factory=dict)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "OperatorInfo":
        h = d["halo"]
        return cls(
            name=d["name"],
            family=d["family"],
            summary=d["summary"],
            inputs=d["inputs"],
            parameters=[Parameter(p["name"], p["default"], p["doc"]) for p in d["parameters"]],
            halo=Halo(tuple(h["radius"]), h["whole_inlines"], h["whole_crosslines"], h["whole_traces"]),
            outputs=[Output(o["name"], o["suffix"], o["dtype"]) for o in d["outputs"]],
            tables=[Table(t["name"], t["suffix"], [(c["name"], c["dtype"]) for c in t["columns"]])
                    for t in d["tables"]],
            reduction_passes=d["reduction_passes"],
            fft_based=d["fft_based"],
            _doc=d,
        )

    def to_dict(self) -> Dict[str, Any]:
        """The entry of ``dwsr ops --json``."""
        return dict(self._doc)


@dataclass(frozen=True)
class GraphInfo:
    """What mapping a graph over blocks needs to know.

    ``outputs`` lists (name, dtype) in the order the graph produces them;
    ``halo`` the input voxels each block needs beyond its interior per axis
    (inline, crossline, time); ``whole_axes`` the axes no block may split;
    ``needs_reduction`` whether a node reduces over the whole cube first (then
    blocks computed independently would differ from the whole-cube result).
    """

    outputs: List[Tuple[str, str]]
    halo: Tuple[int, int, int]
    whole_axes: Tuple[bool, bool, bool]
    needs_reduction: bool
    nodes: int

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "GraphInfo":
        return cls([(o["name"], o["dtype"]) for o in d["outputs"]], tuple(d["halo"]), tuple(d["whole_axes"]),
                   d["needs_reduction"], d["nodes"])


@dataclass(frozen=True)
class WorkerMemory:
    """One worker's figures: peak requested bytes, blocks it runs, events it emits."""

    peak_bytes: int
    blocks: int
    events: int


def _workers(ws: List[Mapping[str, Any]]) -> List[WorkerMemory]:
    return [WorkerMemory(w["peak_bytes"], w["blocks"], w["events"]) for w in ws]


@dataclass(frozen=True)
class ChunkEvaluation:
    """One chunking and the per-worker peak dwsr predicts for it."""

    chunk: Shape
    blocks: int
    halo: Tuple[int, int, int]
    halo_overhead: float
    peak_bytes: int
    peak_over_cube: float
    predicted_seconds: Optional[float] = None
    idle_workers: Optional[int] = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ChunkEvaluation":
        return cls(parse_shape(d["chunk"]), d["blocks"], tuple(d["halo"]), d["halo_overhead"], d["peak_bytes"],
                   d["peak_over_cube"], d.get("predicted_seconds"), d.get("idle_workers"))


@dataclass(frozen=True)
class Plan(ChunkEvaluation):
    """The prediction for a chunked run: what ``dwsr plan --json`` prints.

    ``peak_bytes`` is the highest per-worker peak (requested bytes under the
    ``exact`` allocator, the model's peak reserved under another);
    ``fits`` and ``budget_bytes`` are set when a memory budget was given;
    ``predicted_seconds`` (the makespan) and ``idle_workers`` when a time
    profile was found (:func:`dwsr.calibrate`). ``peak_is_bound``: an
    operator whose memory depends on the data (event_picks, geobodies) was
    planned at its bound, so the peak is an upper bound. ``dask``: the
    Dask-style figures when planned with ``execution="dask"``.
    """

    graph: str = ""
    shape: Shape = (0, 0, 0)
    workers: int = 1
    threads: int = 1
    allocator: str = "exact"
    input_bytes: int = 0
    planned_workers: List[WorkerMemory] = field(default_factory=list)
    events: int = 0
    seconds: float = 0.0
    fits: Optional[bool] = None
    budget_bytes: Optional[int] = None
    peak_is_bound: bool = False
    dask: Optional[Mapping[str, Any]] = None
    _doc: Mapping[str, Any] = field(repr=False, compare=False, default_factory=dict)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Plan":
        e = ChunkEvaluation.from_dict(d)
        return cls(e.chunk, e.blocks, e.halo, e.halo_overhead, e.peak_bytes, e.peak_over_cube, e.predicted_seconds,
                   e.idle_workers, d["graph"],
                   parse_shape(d["shape"]), d["workers"], d["threads"], d["allocator"], d["input_bytes"],
                   _workers(d["planned_workers"]), d["events"], d["seconds"], d.get("fits"), d.get("budget_bytes"),
                   d["peak_is_bound"], d.get("dask"), d)

    def to_dict(self) -> Dict[str, Any]:
        """The document of ``dwsr plan --json``."""
        return dict(self._doc)


@dataclass(frozen=True)
class Advice:
    """The chunk advisor's answer: what ``dwsr advise --json`` prints.

    ``advice`` is the chunk (time whole) chosen among those whose per-worker
    peak fits the budget: the fastest (``objective == "time"``, with a time
    profile) or the largest; ``largest`` the largest that fits;
    ``next_larger`` the largest's larger neighbours (all over budget);
    ``dask_default`` what dwsr predicts for Dask's default chunk;
    ``peak_is_bound`` whether the peaks are upper bounds (an operator whose
    memory depends on the data was planned at its bound).
    """

    graph: str
    shape: Shape
    budget_bytes: int
    workers: int
    threads: int
    allocator: str
    objective: str
    advice: ChunkEvaluation
    largest: ChunkEvaluation
    next_larger: List[ChunkEvaluation]
    dask_default: ChunkEvaluation
    candidates: int
    seconds: float
    peak_is_bound: bool = False
    _doc: Mapping[str, Any] = field(repr=False, compare=False, default_factory=dict)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Advice":
        return cls(d["graph"], parse_shape(d["shape"]), d["budget_bytes"], d["workers"], d["threads"], d["allocator"],
                   d["objective"], ChunkEvaluation.from_dict(d["advice"]), ChunkEvaluation.from_dict(d["largest"]),
                   [ChunkEvaluation.from_dict(n) for n in d["next_larger"]],
                   ChunkEvaluation.from_dict(d["dask_default"]), d["candidates"], d["seconds"], d["peak_is_bound"], d)

    @property
    def chunk(self) -> Shape:
        """The advised chunk."""
        return self.advice.chunk

    def to_dict(self) -> Dict[str, Any]:
        """The document of ``dwsr advise --json``."""
        return dict(self._doc)


@dataclass(frozen=True)
class DeviceReplay:
    """One allocator model on one device: peaks, the OOM if any, and statistics.

    ``at_peak`` and ``end`` hold the model's statistics (requested, allocated,
    reserved, segments, largest_free, fragmentation, ...) at the reserved peak
    and at the end (or at the OOM); ``alive`` the buffers alive then.
    """

    device: str
    events: int
    peak_allocated: int
    peak_allocated_event: int
    peak_reserved: int
    peak_reserved_event: int
    oom_event: Optional[int]
    oom_requested: Optional[int]
    at_peak: Dict[str, Any]
    end: Dict[str, Any]
    alive: List[Dict[str, Any]]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "DeviceReplay":
        oom = d["oom"]
        return cls(d["device"], d["events"], d["peak_allocated"], d["peak_allocated_event"], d["peak_reserved"],
                   d["peak_reserved_event"], oom["event"] if oom else None, oom["requested"] if oom else None,
                   dict(d["at_peak"]), dict(d["end"]), [dict(a) for a in d["alive"]])


@dataclass(frozen=True)
class ModelReplay:
    """A trace through one allocator model (``spec`` as given, e.g. ``torch_cuda_caching:expandable_segments:True``)."""

    spec: str
    devices: List[DeviceReplay]

    @property
    def peak_reserved(self) -> int:
        """Highest peak reserved over the devices."""
        return max((d.peak_reserved for d in self.devices), default=0)


@dataclass(frozen=True)
class Replay:
    """A replay: what ``dwsr replay --json`` prints.

    ``models`` has one entry per allocator model (empty for a what-if replay,
    whose rows are in ``what_if``); ``trace`` describes the file.
    """

    trace: Dict[str, Any]
    capacity: Optional[int]
    models: List[ModelReplay]
    what_if: Optional[Dict[str, Any]]
    timeline: Optional[str]
    _doc: Mapping[str, Any] = field(repr=False, compare=False, default_factory=dict)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Replay":
        models = [ModelReplay(m["spec"], [DeviceReplay.from_dict(x) for x in m["devices"]]) for m in d.get("models", [])]
        return cls(dict(d["trace"]), d.get("capacity"), models, d.get("what_if"), d.get("timeline"), d)

    def model(self, spec: str) -> ModelReplay:
        """The result of the model named ``spec`` (its name alone matches too)."""
        for m in self.models:
            if m.spec == spec or m.spec.split(":", 1)[0] == spec:
                return m
        raise KeyError(f"no model {spec!r} in this replay; it has {[m.spec for m in self.models]}")

    def to_dict(self) -> Dict[str, Any]:
        """The document of ``dwsr replay --json``."""
        return dict(self._doc)


@dataclass(frozen=True)
class Event:
    """One allocation or free, as dwsr code requested it.

    ``node`` is the graph node (0: the input, k + 1: node k); ``role`` one of
    input, output, temporary, workspace; ``buffer`` identifies the buffer
    within its stream; a free carries the bytes of its alloc.
    """

    seq: int
    action: str
    role: str
    node: int
    buffer: int
    bytes: int


@dataclass
class RunResult:
    """What :func:`dwsr.run` computed and measured.

    ``outputs`` maps each output's name (as the tool names its files, without
    ``.npy``) to an array whose memory dwsr allocated: it lives as long as the
    array does. Tables (``event_picks_picks``, ``geobodies_bodies``) are 1-D
    structured arrays, one field per column, copied out of the run.
    ``planned_peak_bytes`` is the meta execution's prediction of the run's
    peak requested bytes (outputs included, the caller's cube not: it is read
    in place); ``measured_peak_bytes`` the same figure from the run's own
    events. They are equal by construction, except for operators whose memory
    depends on the data (event_picks, geobodies), whose plan is an upper bound.
    """

    outputs: Dict[str, np.ndarray]
    planned_peak_bytes: int
    measured_peak_bytes: int
    events: int
    seconds: float
    threads: int
    input_bytes: int
    shape: Shape

    def __getitem__(self, name: str) -> np.ndarray:
        return self.outputs[name]

    def __iter__(self):
        return iter(self.outputs)

    def __len__(self) -> int:
        return len(self.outputs)

    @property
    def output(self) -> np.ndarray:
        """The only output (an error when the graph has several)."""
        if len(self.outputs) != 1:
            raise ValueError(f"this run has {len(self.outputs)} outputs ({', '.join(self.outputs)}); index by name")
        return next(iter(self.outputs.values()))

    def to_dict(self) -> Dict[str, Any]:
        """The figures (not the arrays) as a dict, with the output names and shapes."""
        return {
            "shape": "x".join(map(str, self.shape)),
            "threads": self.threads,
            "input_bytes": self.input_bytes,
            "planned_peak_bytes": self.planned_peak_bytes,
            "measured_peak_bytes": self.measured_peak_bytes,
            "events": self.events,
            "seconds": self.seconds,
            "outputs": {k: {"dtype": str(v.dtype), "shape": list(v.shape)} for k, v in self.outputs.items()},
        }


@dataclass(frozen=True)
class Dataset:
    """Labelled rows for memory estimators, as ``dwsr dataset`` writes them (docs/dataset.md).

    ``features`` (float32, rows x features), ``labels`` (float64, rows x
    labels), ``splits`` (uint8, rows x 3: random, family, extrapolation; 1 =
    test), ``graphs`` (int64: each row's graph, an index into
    ``columns["graphs"]``; rows x 4 for task pack) and ``columns``, the
    document of ``columns.json``: every column's name, unit and meaning.
    """

    features: Any = field(repr=False)
    labels: Any = field(repr=False)
    splits: Any = field(repr=False)
    graphs: Any = field(repr=False)
    columns: Mapping[str, Any] = field(repr=False)
    task: str = ""
    rows: int = 0

    @property
    def feature_names(self) -> List[str]:
        """The features' column names, in order."""
        return [c["name"] for c in self.columns["features"]]

    @property
    def label_names(self) -> List[str]:
        """The labels' column names, in order."""
        return [c["name"] for c in self.columns["labels"]]

    def split(self, name: str = "random") -> Tuple[Any, Any]:
        """Boolean masks (train, test) of the split ``name``: random, family or extrapolation."""
        names = list(self.columns["splits"]["columns"])
        if name not in names:
            raise ValueError(f"split {name!r}: expected one of {', '.join(names)}")
        test = self.splits[:, names.index(name)] == 1
        return ~test, test

    def to_dict(self) -> Dict[str, Any]:
        """columns.json's document."""
        return dict(self.columns)
