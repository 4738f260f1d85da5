#!/usr/bin/env python3
"""Checks dwsr's allocator models against the real PyTorch and CuPy allocators.

For each dwsr trace (CSV: ``action,id,bytes,device,node,role[,bound]``), the
events on the ``cuda`` device are replayed on the GPU twice:

* through PyTorch's CUDA caching allocator (``torch.empty(bytes,
  dtype=torch.uint8, device="cuda")`` per alloc, ``del`` per free), reading
  ``torch.cuda.memory_allocated()`` and ``memory_reserved()`` after every event;
* through a fresh ``cupy.cuda.MemoryPool()`` (``pool.malloc(bytes)`` per alloc,
  ``del`` per free), reading ``pool.used_bytes()`` and ``pool.total_bytes()``.

The models' values come from ``dwsr replay TRACE -a torch_cuda_caching -a
cupy_pool --timeline TL.json --json``. The timeline is a Chrome trace
(include/dwsr/sim/chrome_trace.hpp): a process per device named by
``process_name`` metadata (pid 0 "host", pid 1 "cuda"), per model two counter
tracks ``"<spec> allocated"`` and ``"<spec> reserved"`` with ``args.bytes``, at
``ts`` = the event's number in the whole trace (host and cuda events counted
together, from 0, in file order), written only when the value changes. A
model that runs out of memory stops there (an instant event ``"OOM <spec>"``).

Example::

    python3 scripts/gpu/allocator_replay.py traces/*.csv --dwsr build/apps/dwsr/dwsr \\
        --out allocators.json

Exit status: 0 when the JSON document was written (a failed comparison is an
entry of its "errors"), 2 for bad arguments (a missing trace file, no dwsr
tool), 1 when the document could not be written.
"""

from __future__ import annotations

import argparse
import bisect
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any, Callable, Iterable

from gpu_common import ArgumentParser, UsageError, error_entry, log, run_script, write_json

#: The model specs replayed, by real allocator.
TORCH_MODEL = "torch_cuda_caching"
CUPY_MODEL = "cupy_pool"
#: The trace's column names, in order (the last four may be left out).
COLUMNS = ("action", "id", "bytes", "device", "node", "role", "bound")
ROLES = ("input", "output", "temporary", "workspace")


class TraceError(Exception):
    """A malformed trace line ("FILE:LINE: why")."""


class ModelError(Exception):
    """dwsr replay failed, or its timeline is not what chrome_trace.hpp writes."""


# ---------------------------------------------------------------------------
# Traces
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Event:
    """One event of a trace; `index` is its number among all events of the file (dwsr's "event N")."""

    index: int
    action: str  # "alloc" or "free"
    id: int
    bytes: int
    device: str  # "host" or "cuda"

    def to_dict(self) -> dict:
        """The event as a JSON object."""
        return dataclasses.asdict(self)


def _number(text: str, what: str, where: str) -> int:
    """A whole non-negative number, or TraceError."""
    if not (text.isascii() and text.isdigit()):
        raise TraceError(f"{where}: {what} '{text}' is not a whole non-negative number")
    return int(text)


def _read_header(fields: list[str], where: str) -> int:
    """The number of columns the header names (TraceError when it is not dwsr's header)."""
    if not 3 <= len(fields) <= 7 or tuple(fields) != COLUMNS[: len(fields)]:
        raise TraceError(f"{where}: expected the header 'action,id,bytes,device,node,role', got '{','.join(fields)}'")
    return len(fields)


def parse_trace_lines(lines: Iterable[str], name: str) -> list[Event]:
    """Parses a dwsr trace as include/dwsr/sim/trace_csv.hpp reads it.

    Blank lines and '#' lines are skipped and not numbered as events. An alloc
    without a device is on the host; a free takes its alloc's bytes and device.
    """
    columns = 0
    events: list[Event] = []
    allocs: dict[int, tuple[int, str]] = {}
    freed: set[int] = set()
    for line_no, raw in enumerate(lines, 1):
        line = raw.rstrip("\r\n")
        if line_no == 1 and line.startswith("\ufeff"):
            line = line[1:]
        text = line.strip(" \t")
        if not text or text.startswith("#"):
            continue
        fields = [f.strip(" \t") for f in text.split(",")]
        where = f"{name}:{line_no}"
        if columns == 0:
            columns = _read_header(fields, where)
            continue
        if not 2 <= len(fields) <= columns:
            raise TraceError(f"{where}: expected 2 to {columns} comma-separated fields, got {len(fields)}")
        fields += [""] * (7 - len(fields))
        action, ident = fields[0], _number(fields[1], "id", where)
        if ident == 0:
            raise TraceError(f"{where}: id 0; buffer ids start at 1")
        if action not in ("alloc", "free"):
            raise TraceError(f"{where}: unknown action '{action}'; expected alloc or free")
        if fields[3] not in ("", "host", "cuda"):
            raise TraceError(f"{where}: unknown device '{fields[3]}'; expected host or cuda")
        if fields[5] not in ("",) + ROLES:
            raise TraceError(f"{where}: unknown role '{fields[5]}'")
        if action == "alloc":
            if not fields[2]:
                raise TraceError(f"{where}: an alloc needs its bytes")
            if ident in allocs:
                raise TraceError(f"{where}: buffer {ident} allocated twice")
            size = _number(fields[2], "bytes", where)
            device = fields[3] or "host"
            allocs[ident] = (size, device)
        else:
            if ident not in allocs or ident in freed:
                raise TraceError(f"{where}: free of buffer {ident}, which is not allocated")
            size, device = allocs[ident]
            if fields[2] and _number(fields[2], "bytes", where) != size:
                raise TraceError(f"{where}: free of buffer {ident} with bytes {fields[2]}, allocated with {size}")
            if fields[3] and fields[3] != device:
                raise TraceError(f"{where}: free of buffer {ident} on {fields[3]}, allocated on {device}")
            freed.add(ident)
        events.append(Event(len(events), action, ident, size, device))
    if columns == 0:
        raise TraceError(f"{name}: the trace is empty; expected the header 'action,id,bytes,device,node,role'")
    return events


def read_trace(path: str) -> list[Event]:
    """Every event of the trace file at `path` (TraceError when malformed)."""
    with open(path, encoding="utf-8", newline="") as f:
        return parse_trace_lines(f, path)


def cuda_events(events: list[Event]) -> list[Event]:
    """The events on the cuda device, in order."""
    return [e for e in events if e.device == "cuda"]


# ---------------------------------------------------------------------------
# The model side: dwsr replay and its timeline
# ---------------------------------------------------------------------------


@dataclasses.dataclass
class ModelTrack:
    """One model's counter samples on one device: (event number, bytes), sorted, and its OOM event."""

    allocated: list[tuple[int, int]]
    reserved: list[tuple[int, int]]
    oom_event: int | None = None

    def value_after(self, track: str, event: int) -> int:
        """The model's bytes right after event number `event` (the last sample at or before it; 0 before any)."""
        samples = self.allocated if track == "allocated" else self.reserved
        i = bisect.bisect_right(samples, (event, float("inf"))) - 1
        return samples[i][1] if i >= 0 else 0


def timeline_events(document: Any) -> list[dict]:
    """The events of a Chrome trace document (a list, or an object with "traceEvents")."""
    if isinstance(document, list):
        return document
    if isinstance(document, dict) and isinstance(document.get("traceEvents"), list):
        return document["traceEvents"]
    raise ModelError("the timeline is neither a list of events nor an object with a 'traceEvents' list")


def device_pids(events: list[dict]) -> dict[str, int]:
    """Device name → pid, from the process_name metadata (chrome_trace.hpp: host 0, cuda 1)."""
    pids = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            name = (e.get("args") or {}).get("name")
            if isinstance(name, str):
                pids[name] = e.get("pid")
    return pids


def parse_timeline(document: Any, specs: Iterable[str], device: str = "cuda") -> dict[str, ModelTrack]:
    """Each model's counter tracks on `device`: spec → ModelTrack (an empty one when it had no events there)."""
    events = timeline_events(document)
    pids = device_pids(events)
    pid = pids.get(device, 1 if device == "cuda" else 0)
    tracks = {}
    for spec in specs:
        samples: dict[str, list[tuple[int, int]]] = {"allocated": [], "reserved": []}
        oom = None
        for e in events:
            if e.get("pid") != pid:
                continue
            name = e.get("name")
            if e.get("ph") == "C":
                for kind in samples:
                    if name == f"{spec} {kind}":
                        samples[kind].append((int(e["ts"]), int((e.get("args") or {})["bytes"])))
            elif e.get("ph") == "i" and name == f"OOM {spec}":
                oom = int(e["ts"])
        for kind in samples:
            samples[kind].sort()
        tracks[spec] = ModelTrack(samples["allocated"], samples["reserved"], oom)
    return tracks


def model_series(track: ModelTrack, events: list[Event]) -> list[tuple[int, int]]:
    """(allocated, reserved) of a model right after each of `events`, up to and excluding its OOM event."""
    out = []
    for e in events:
        if track.oom_event is not None and e.index >= track.oom_event:
            break
        out.append((track.value_after("allocated", e.index), track.value_after("reserved", e.index)))
    return out


def replay_command(dwsr: str, trace: str, specs: list[str], timeline: str) -> list[str]:
    """The dwsr replay command line."""
    cmd = [dwsr, "replay", trace]
    for spec in specs:
        cmd += ["-a", spec]
    return cmd + ["--timeline", timeline, "--json"]


def parse_stdout_json(text: str) -> dict:
    """The JSON document `dwsr replay --json` printed (ModelError when there is none)."""
    start = text.find("{")
    if start < 0:
        raise ModelError("dwsr replay --json printed no JSON document")
    try:
        document, _ = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError as exc:
        raise ModelError(f"dwsr replay --json printed invalid JSON: {exc}") from exc
    return document


def run_models(dwsr: str, trace: str, specs: list[str], timeline: str) -> tuple[dict, dict[str, ModelTrack]]:
    """Runs dwsr replay on `trace`: its --json document and each model's cuda timeline."""
    cmd = replay_command(dwsr, trace, specs, timeline)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise ModelError(f"{' '.join(cmd)} exited with {proc.returncode}: {proc.stderr.strip()[-1500:]}")
    document = parse_stdout_json(proc.stdout)
    with open(timeline, encoding="utf-8") as f:
        tracks = parse_timeline(json.load(f), specs)
    return document, tracks


def model_device_summary(document: dict, spec: str, device: str = "cuda") -> dict | None:
    """The `--json` document's entry of `spec` on `device` (events, peaks, oom), or None."""
    for m in document.get("models") or []:
        if m.get("spec") != spec:
            continue
        for d in m.get("devices") or []:
            if d.get("device") == device:
                return {k: d.get(k) for k in ("events", "peak_allocated", "peak_reserved", "oom")}
    return None


# ---------------------------------------------------------------------------
# The real side
# ---------------------------------------------------------------------------


@dataclasses.dataclass
class RealRun:
    """A replay through a real allocator: (allocated, reserved) after each event it completed."""

    series: list[tuple[int, int]]
    oom_event: int | None = None
    oom_message: str = ""
    start: tuple[int, int] = (0, 0)
    extra: dict = dataclasses.field(default_factory=dict)


def is_oom(exc: BaseException) -> bool:
    """Whether `exc` is an out-of-memory error of torch or CuPy."""
    text = f"{type(exc).__name__} {exc}".lower()
    return "outofmemory" in text or "out of memory" in text


def torch_stats_reader(torch: Any) -> tuple[Callable[[], tuple[int, int]], str]:
    """A function returning (memory_allocated(), memory_reserved()), and its name.

    torch.cuda.memory_allocated() flattens the whole statistics dictionary on
    each call; the nested dictionary of torch._C._cuda_memoryStats holds the
    same numbers at a fraction of the cost, so it is used when it agrees.
    """
    device = torch.cuda.current_device()

    def slow() -> tuple[int, int]:
        stats = torch.cuda.memory_stats(device)
        return int(stats.get("allocated_bytes.all.current", 0)), int(stats.get("reserved_bytes.all.current", 0))

    raw = getattr(torch._C, "_cuda_memoryStats", None)
    if raw is None:
        return slow, "torch.cuda.memory_stats"

    def fast() -> tuple[int, int]:
        stats = raw(device)
        return int(stats["allocated_bytes"]["all"]["current"]), int(stats["reserved_bytes"]["all"]["current"])

    try:
        if fast() == (torch.cuda.memory_allocated(), torch.cuda.memory_reserved()):
            return fast, "torch._C._cuda_memoryStats"
    except Exception:  # noqa: BLE001 - the documented functions are the fallback
        pass
    return slow, "torch.cuda.memory_stats"


def replay_events(name: str, events: list[Event], alloc: Callable[[int], Any], read: Callable[[], tuple[int, int]],
                  run: RealRun, live: dict[int, Any]) -> None:
    """Replays `events` through one real allocator, appending read() to run.series after each.

    An alloc keeps alloc(bytes) in `live` under the buffer's id; a free drops
    that reference (the allocator frees the block when its last reference
    goes). An exception of an alloc or free ends the replay: it is recorded in
    run.oom_event and run.oom_message, and raised again unless it is an OOM.
    The caller owns `live` and clears it when done.
    """
    for k, e in enumerate(events):
        if k and k % 100000 == 0:
            log(f"  {name}: {k} of {len(events)} events")
        try:
            if e.action == "alloc":
                live[e.id] = alloc(e.bytes)
            else:
                live.pop(e.id, None)
        except Exception as exc:  # noqa: BLE001 - an OOM ends the replay; anything else too, recorded
            run.oom_event, run.oom_message = e.index, f"{type(exc).__name__}: {str(exc)[:500]}"
            if not is_oom(exc):
                raise
            break
        run.series.append(read())


def replay_torch(torch: Any, events: list[Event]) -> RealRun:
    """Replays cuda events through PyTorch's caching allocator (values minus those at the start)."""
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    a0, r0 = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
    read, reader = torch_stats_reader(torch)
    run = RealRun([], start=(a0, r0))
    live: dict[int, Any] = {}

    def alloc(size: int) -> Any:
        return torch.empty(size, dtype=torch.uint8, device="cuda")

    def read_relative() -> tuple[int, int]:
        allocated, reserved = read()
        return allocated - a0, reserved - r0

    try:
        replay_events("torch", events, alloc, read_relative, run, live)
        run.extra = {
            "max_memory_allocated": torch.cuda.max_memory_allocated() - a0,
            "max_memory_reserved": torch.cuda.max_memory_reserved() - r0,
            "stats_reader": reader,
            "stats_reader_agrees_at_end": read() == (torch.cuda.memory_allocated(), torch.cuda.memory_reserved()),
        }
    finally:
        live.clear()
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    return run


def replay_cupy(cp: Any, events: list[Event]) -> RealRun:
    """Replays cuda events through a fresh cupy.cuda.MemoryPool()."""
    pool = cp.cuda.MemoryPool()
    run = RealRun([])
    live: dict[int, Any] = {}
    try:
        replay_events("cupy", events, pool.malloc,
                      lambda: (int(pool.used_bytes()), int(pool.total_bytes())), run, live)
    finally:
        live.clear()
        pool.free_all_blocks()
    return run


# ---------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------


def compare(events: list[Event], real: RealRun, model: list[tuple[int, int]], model_oom: int | None) -> dict:
    """Real and model values after every cuda event both completed: counts, the first mismatch, the largest gaps."""
    n = min(len(real.series), len(model))
    mismatches = {"allocated": 0, "reserved": 0}
    max_diff = {"allocated": 0, "reserved": 0}
    first = None
    for k in range(n):
        (ra, rr), (ma, mr) = real.series[k], model[k]
        for key, r, m in (("allocated", ra, ma), ("reserved", rr, mr)):
            if r != m:
                mismatches[key] += 1
                max_diff[key] = max(max_diff[key], abs(r - m))
        if first is None and (ra != ma or rr != mr):
            first = {"event": events[k].index, "cuda_event": k, **events[k].to_dict(),
                     "real_allocated": ra, "model_allocated": ma, "real_reserved": rr, "model_reserved": mr}
    return {
        "events": n,
        "allocated_mismatches": mismatches["allocated"],
        "reserved_mismatches": mismatches["reserved"],
        "first_mismatch": first,
        "max_abs_diff_allocated": max_diff["allocated"],
        "max_abs_diff_reserved": max_diff["reserved"],
        "peak_allocated_real": max((a for a, _ in real.series), default=0),
        "peak_reserved_real": max((r for _, r in real.series), default=0),
        "peak_allocated_model": max((a for a, _ in model), default=0),
        "peak_reserved_model": max((r for _, r in model), default=0),
        "real_oom_event": real.oom_event,
        "real_oom_message": real.oom_message or None,
        "model_oom_event": model_oom,
        "oom_agrees": real.oom_event == model_oom,
        "compared_all": n == len(events) and real.oom_event is None and model_oom is None,
        "real_start_offsets": {"allocated": real.start[0], "reserved": real.start[1]},
        **({"real_" + k: v for k, v in real.extra.items()}),
    }


def summary_line(trace: str, name: str, result: dict) -> str:
    """The one line printed per trace and model."""
    if result["events"] == 0:
        return f"trace {trace}: {name} 0 events compared (no cuda events, or an OOM at the first)"

    def yes(key: str) -> str:
        return "yes" if result[key] == 0 and result["events"] > 0 else "no"

    extra = "" if result["compared_all"] else (
        f" (compared {result['events']} events; real OOM at {result['real_oom_event']}, "
        f"model OOM at {result['model_oom_event']})")
    return (f"trace {trace}: {name} {result['events']} events, allocated equal after every event: "
            f"{yes('allocated_mismatches')}, reserved: {yes('reserved_mismatches')}{extra}")


# ---------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line (UsageError for a missing trace or tool)."""
    p = ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("traces", nargs="+", help="dwsr trace CSV files")
    p.add_argument("--dwsr", default=None, help="the dwsr command-line tool (default: dwsr on PATH)")
    p.add_argument("--out", default="allocators.json", help="the JSON document to write")
    p.add_argument("--timeline-dir", default=None, help="keep the timelines of dwsr replay here (default: discarded)")
    p.add_argument("--torch-model", default=None,
                   help="the torch model spec (default: torch_cuda_caching, with PYTORCH_CUDA_ALLOC_CONF when set)")
    p.add_argument("--cupy-model", default=CUPY_MODEL, help="the CuPy model spec (default: cupy_pool)")
    a = p.parse_args(argv)
    for t in a.traces:
        if not os.path.isfile(t):
            raise UsageError(f"trace '{t}' is not a file")
    dwsr = a.dwsr or shutil.which("dwsr")
    if not dwsr:
        raise UsageError("no dwsr tool on PATH; pass --dwsr PATH (e.g. build/apps/dwsr/dwsr)")
    if not (os.path.isfile(dwsr) and os.access(dwsr, os.X_OK)):
        raise UsageError(f"--dwsr {dwsr}: not an executable file")
    a.dwsr = os.path.abspath(dwsr)
    if a.torch_model is None:
        conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "").strip()
        a.torch_model = TORCH_MODEL + (":" + conf if conf else "")
    if not os.path.isdir(os.path.dirname(os.path.abspath(a.out))):
        raise UsageError(f"--out {a.out}: its folder does not exist")
    if a.timeline_dir is not None and not os.path.isdir(a.timeline_dir):
        raise UsageError(f"--timeline-dir {a.timeline_dir}: not a folder")
    return a


def import_backends(document: dict) -> tuple[Any, Any]:
    """torch and cupy, each None (and an error entry) when it cannot be imported or sees no GPU."""
    torch = cp = None
    try:
        import torch as torch_module

        document["torch"] = torch_module.__version__
        if not torch_module.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False")
        torch = torch_module
        document["device"] = torch.cuda.get_device_name()
        try:  # "native" (the caching allocator that the model follows) or "cudaMallocAsync"
            document["torch_allocator_backend"] = torch.cuda.get_allocator_backend()
        except Exception:  # noqa: BLE001 - informative only
            document["torch_allocator_backend"] = None
    except Exception as exc:  # noqa: BLE001 - recorded; CuPy may still run
        document["errors"].append(error_entry({"stage": "import torch"}, exc))
        log(f"torch unavailable: {exc}")
    try:
        import cupy as cupy_module

        document["cupy"] = cupy_module.__version__
        cupy_module.cuda.runtime.getDeviceCount()
        cp = cupy_module
    except Exception as exc:  # noqa: BLE001 - recorded; torch may still run
        document["errors"].append(error_entry({"stage": "import cupy"}, exc))
        log(f"cupy unavailable: {exc}")
    return torch, cp


def model_side(args: argparse.Namespace, trace: str, entry: dict, document: dict, folder: str) -> dict:
    """Runs dwsr replay on one trace: spec → ModelTrack (empty when it failed, with an error entry)."""
    specs = [args.torch_model, args.cupy_model]
    base = os.path.splitext(os.path.basename(trace))[0]
    timeline = os.path.join(args.timeline_dir or folder, f"{base}.timeline.json")
    try:
        model_doc, tracks = run_models(args.dwsr, trace, specs, timeline)
    except Exception as exc:  # noqa: BLE001 - recorded; the real side still runs
        document["errors"].append(error_entry({"trace": trace, "stage": "dwsr replay"}, exc))
        log(f"trace {trace}: dwsr replay failed: {str(exc)[:300]}")
        return {}
    entry["model_trace_events"] = (model_doc.get("trace") or {}).get("events")
    entry["model_summary"] = {s: model_device_summary(model_doc, s) for s in specs}
    if entry["model_trace_events"] not in (None, entry["trace_events"]):
        document["errors"].append({"trace": trace, "stage": "event count", "type": "mismatch",
                                   "message": f"dwsr replay counted {entry['model_trace_events']} events, "
                                              f"this script {entry['trace_events']}"})
    return tracks


def real_side(name: str, backend: Any, events: list[Event], trace: str, document: dict) -> RealRun | None:
    """One real replay (torch or cupy), or None with an error entry."""
    if backend is None:
        return None
    try:
        run = replay_torch(backend, events) if name == "torch" else replay_cupy(backend, events)
    except Exception as exc:  # noqa: BLE001 - recorded; the other allocator still runs
        document["errors"].append(error_entry({"trace": trace, "stage": f"{name} replay"}, exc))
        log(f"trace {trace}: {name} replay failed: {str(exc)[:300]}")
        return None
    return run


def check_trace(args: argparse.Namespace, trace: str, backends: dict, document: dict, folder: str) -> None:
    """Both allocators on one trace; appends its entry to document["traces"]."""
    entry: dict = {"trace": trace, "cuda_events": None}
    document["traces"].append(entry)
    try:
        events = read_trace(trace)
    except (TraceError, OSError, UnicodeDecodeError) as exc:
        document["errors"].append(error_entry({"trace": trace, "stage": "read trace"}, exc))
        log(f"trace {trace}: cannot read: {exc}")
        return
    gpu_events = cuda_events(events)
    entry["trace_events"], entry["cuda_events"] = len(events), len(gpu_events)
    log(f"trace {trace}: {len(events)} events, {len(gpu_events)} on cuda")
    tracks = model_side(args, trace, entry, document, folder)
    specs = {"torch": args.torch_model, "cupy": args.cupy_model}
    for name in ("torch", "cupy"):
        entry[name] = None
        track = tracks.get(specs[name])
        run = real_side(name, backends[name], gpu_events, trace, document)
        if run is None or track is None:
            log(f"trace {trace}: {name} not compared ({'no model timeline' if track is None else 'no real replay'}; "
                "see errors)")
            continue
        try:
            result = compare(gpu_events, run, model_series(track, gpu_events), track.oom_event)
            result["model"] = specs[name]
            entry[name] = result
            log(summary_line(trace, name, result))
        except Exception as exc:  # noqa: BLE001 - recorded
            document["errors"].append(error_entry({"trace": trace, "stage": f"{name} compare"}, exc))


def run(args: argparse.Namespace) -> dict:
    """Checks every trace; the JSON document (also rewritten to args.out after each trace)."""
    document: dict = {"torch": None, "cupy": None, "device": None, "dwsr": args.dwsr,
                      "models": {"torch": args.torch_model, "cupy": args.cupy_model},
                      "env": {k: os.environ.get(k) for k in ("PYTORCH_CUDA_ALLOC_CONF", "CUPY_GPU_MEMORY_LIMIT")},
                      "traces": [], "errors": []}
    torch, cp = import_backends(document)
    log(f"torch {document['torch']}, cupy {document['cupy']}, device {document['device']}, dwsr {args.dwsr}")
    with tempfile.TemporaryDirectory(prefix="allocator_replay-") as folder:
        for trace in args.traces:
            check_trace(args, trace, {"torch": torch, "cupy": cp}, document, folder)
            write_json(args.out, document)
    return document


def main(argv: list[str] | None = None) -> int:
    """Parses the arguments, runs, writes the JSON document; the exit status."""
    return run_script("allocator_replay.py", argv, parse_args, run,
                      lambda args, document: f"wrote {args.out}: {len(document['traces'])} traces, "
                                             f"{len(document['errors'])} errors")


if __name__ == "__main__":
    sys.exit(main())
