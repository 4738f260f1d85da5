#!/usr/bin/env python3
"""GpuPack's real-mode runner: replays a dwsr trace through PyTorch's CUDA
caching allocator in this (fresh) process and reads the process's device
memory from the driver (NVML) once its CUDA context is up and after every
event. ``dwsr train --env gpu_pack --real N --real-runner "python3
scripts/gpu/pack_replay.py"`` runs it once per job kind
(include/dwsr/env/pack_real.hpp).

    python3 scripts/gpu/pack_replay.py TRACE OUT

Every event of TRACE is replayed on the GPU, whatever its device column
(a job kind's stream is what one process allocates there): an alloc is
``torch.empty(bytes, dtype=torch.uint8, device="cuda")``, a free drops it.
OUT is CSV, ``step,device_bytes``: the row ``start`` (the context alone),
then one row per event. NVML counts the process's whole device memory (the
context and the allocator's segments); nothing of dwsr's or PyTorch's own
accounting enters it. A summary goes to stderr: PyTorch's reserved bytes
beside the readings, for diagnosis.

Exit status: 0 when OUT was written, 2 for bad arguments or a malformed
trace, 1 when the replay could not run (no GPU, no NVML, out of memory).
"""

from __future__ import annotations

import argparse
import os
import sys

from allocator_replay import TraceError, read_trace
from gpu_common import log, write_text


class ReplayError(Exception):
    """The replay could not run on this machine."""


def process_memory_reader():
    """A function returning this process's device memory as NVML counts it (bytes)."""
    try:
        import pynvml
    except ImportError as exc:
        raise ReplayError("NVML's Python binding (nvidia-ml-py) is not installed") from exc
    pynvml.nvmlInit()
    pid = os.getpid()
    handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]

    def find() -> tuple:
        for h in handles:
            for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h):
                if p.pid == pid:
                    return h
        raise ReplayError(f"NVML lists no compute process {pid} (this one) on any of {len(handles)} devices")

    handle = find()

    def read() -> int:
        for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
            if p.pid == pid:
                if p.usedGpuMemory is None:
                    raise ReplayError("NVML does not report per-process memory on this machine")
                return int(p.usedGpuMemory)
        raise ReplayError(f"NVML no longer lists process {pid}")

    return read


def replay(trace: str) -> tuple[list[int], list[int], int]:
    """The readings (start, then after each event), PyTorch's reserved bytes after each, and the event count."""
    events = read_trace(trace)
    try:
        import torch
    except ImportError as exc:
        raise ReplayError("PyTorch is not installed") from exc
    if not torch.cuda.is_available():
        raise ReplayError("PyTorch sees no CUDA device")
    torch.cuda.mem_get_info()  # creates the context
    torch.cuda.synchronize()
    read = process_memory_reader()
    readings, reserved = [read()], [torch.cuda.memory_reserved()]
    live: dict[int, object] = {}
    try:
        for e in events:
            if e.action == "alloc":
                live[e.id] = torch.empty(e.bytes, dtype=torch.uint8, device="cuda")
            else:
                del live[e.id]
            readings.append(read())
            reserved.append(torch.cuda.memory_reserved())
    except torch.cuda.OutOfMemoryError as exc:
        raise ReplayError(f"out of memory at event {len(readings) - 1}: {str(exc).splitlines()[0]}") from exc
    finally:
        live.clear()
    return readings, reserved, len(events)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace", help="a dwsr trace (CSV)")
    p.add_argument("out", help="where the readings go (CSV: step,device_bytes)")
    args = p.parse_args(argv)
    if not os.path.isfile(args.trace):
        print(f"pack_replay: no trace {args.trace!r}", file=sys.stderr)
        return 2
    try:
        readings, reserved, n = replay(args.trace)
    except TraceError as exc:
        print(f"pack_replay: {exc}", file=sys.stderr)
        return 2
    except ReplayError as exc:
        print(f"pack_replay: {exc}", file=sys.stderr)
        return 1
    rows = ["step,device_bytes", f"start,{readings[0]}"] + [f"{i},{b}" for i, b in enumerate(readings[1:])]
    write_text(args.out, "\n".join(rows) + "\n")
    context = readings[0] - reserved[0]
    above = sum(1 for b, r in zip(readings, reserved) if b - r != context)
    log(f"pack_replay: {n} events; context {context} bytes; readings - reserved differ from it after {above} events; "
        f"peak {max(readings)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
