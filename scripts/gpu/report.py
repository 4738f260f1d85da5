#!/usr/bin/env python3
"""Merges the GPU run's JSON documents into report.md and report.json.

Inputs (each optional; a missing or unreadable one is reported as such):

* ``--dwsr-ops``: dwsr's CUDA operators, timed and measured (the lead's C++ program);
* ``--cupy``: the CuPy formulations (scripts/gpu/cupy_attributes.py);
* ``--allocators``: dwsr's allocator models against the real allocators
  (scripts/gpu/allocator_replay.py);
* ``--cli``: the command-line tool on the device (scripts/gpu/cli_device_check.py);
* ``--pack``, ``--pack-csv``: GpuPack's real mode, ``dwsr train --env gpu_pack
  --real N --json``'s summary and its real.csv;
* ``--tests``: a text file, e.g. the tail of ctest's output.

Example::

    python3 scripts/gpu/report.py --dwsr-ops dwsr_ops.json --cupy cupy.json \\
        --allocators allocators.json --tests tests.txt --out-dir out

Exit status: 0 when both reports were written, 2 for bad arguments (an output
folder that cannot be made), 1 when a report could not be written.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import math
import os
import re
import sys
from typing import Any, Iterable

from gpu_common import COMPARED_OPS, ArgumentParser, UsageError, run_script, write_text

#: Lines of the test summary shown in report.md.
TEST_LINES = 60


# ---------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------


def load_json(path: str | None) -> tuple[Any, dict]:
    """The document at `path` and {"path", "status"}: "ok", "not given", "missing" or "unreadable: why"."""
    if not path:
        return None, {"path": None, "status": "not given"}
    if not os.path.isfile(path):
        return None, {"path": path, "status": "missing"}
    try:
        with open(path, encoding="utf-8") as f:
            document = json.load(f)
    except (OSError, ValueError) as exc:
        return None, {"path": path, "status": f"unreadable: {type(exc).__name__}: {str(exc)[:200]}"}
    if not isinstance(document, dict):
        return None, {"path": path, "status": "unreadable: not a JSON object"}
    return document, {"path": path, "status": "ok"}


def load_text(path: str | None) -> tuple[list[str], dict]:
    """The lines of the text file at `path`, and its status as load_json gives it."""
    if not path:
        return [], {"path": None, "status": "not given"}
    if not os.path.isfile(path):
        return [], {"path": path, "status": "missing"}
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().splitlines(), {"path": path, "status": "ok"}
    except OSError as exc:
        return [], {"path": path, "status": f"unreadable: {exc}"}


def as_list(value: Any) -> list:
    """`value` when it is a list, else an empty list."""
    return value if isinstance(value, list) else []


def as_number(value: Any) -> float | None:
    """`value` as a finite number, or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if math.isfinite(value) else None


def shape_key(value: Any) -> tuple[int, ...] | None:
    """A result's shape as a tuple of ints, or None."""
    if not isinstance(value, (list, tuple)) or not value:
        return None
    try:
        return tuple(int(v) for v in value)
    except (TypeError, ValueError):
        return None


def results_by_key(document: Any) -> dict[tuple, dict]:
    """A document's results by (op, shape); later duplicates win."""
    out = {}
    for r in as_list(document.get("results") if isinstance(document, dict) else None):
        if isinstance(r, dict) and isinstance(r.get("op"), str) and shape_key(r.get("shape")) is not None:
            out[(r["op"], shape_key(r["shape"]))] = r
    return out


# ---------------------------------------------------------------------------
# Formatting
# ---------------------------------------------------------------------------


def fmt_mib(value: Any) -> str:
    """Bytes as MiB with one decimal, or "-"."""
    v = as_number(value)
    return "-" if v is None else f"{v / 2**20:.1f} MiB"


def fmt_rate(value: Any) -> str:
    """Voxels per second as Gvoxel/s, or "-"."""
    v = as_number(value)
    return "-" if v is None else f"{v / 1e9:.3f} G/s"


def fmt_ratio(value: Any) -> str:
    """A ratio with two decimals, or "-"."""
    v = as_number(value)
    return "-" if v is None else f"{v:.2f}"


def fmt_value(value: Any) -> str:
    """Any value for a table cell ("-" for none)."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def cell(text: Any) -> str:
    """A Markdown table cell: no line breaks, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def table(header: list[str], rows: Iterable[list[Any]]) -> list[str]:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return lines


def ratio(a: Any, b: Any) -> float | None:
    """a / b, or None when either is missing or b is 0."""
    a, b = as_number(a), as_number(b)
    return None if a is None or b is None or b == 0 else a / b


# ---------------------------------------------------------------------------
# Merging
# ---------------------------------------------------------------------------


def op_sort_key(op: str) -> tuple[int, str]:
    """The tables' order of operators."""
    return (COMPARED_OPS.index(op), "") if op in COMPARED_OPS else (len(COMPARED_OPS), op)


def error_keys(document: Any) -> set[tuple]:
    """The (op, shape) pairs that a document's "errors" name."""
    out = set()
    for e in as_list(document.get("errors") if isinstance(document, dict) else None):
        if isinstance(e, dict) and isinstance(e.get("op"), str) and shape_key(e.get("shape")) is not None:
            out.add((e["op"], shape_key(e["shape"])))
    return out


def comparisons(dwsr: Any, cupy: Any) -> list[dict]:
    """One row per (shape, op) found in either document (results or errors), with the ratios dwsr/CuPy."""
    d, c = results_by_key(dwsr), results_by_key(cupy)
    d_err, c_err = error_keys(dwsr), error_keys(cupy)
    rows = []
    keys = set(d) | set(c) | d_err | c_err
    for op, shape in sorted(keys, key=lambda k: (math.prod(k[1]), k[1], op_sort_key(k[0]))):
        dr, cr = d.get((op, shape), {}), c.get((op, shape), {})
        rows.append({
            "shape": list(shape),
            "op": op,
            "dwsr_voxels_per_s": dr.get("voxels_per_s"),
            "cupy_voxels_per_s": cr.get("voxels_per_s"),
            "speed_ratio": ratio(dr.get("voxels_per_s"), cr.get("voxels_per_s")),
            "dwsr_peak_event_bytes": dr.get("device_peak_event_bytes"),
            "cupy_peak_used_bytes": cr.get("peak_used_bytes"),
            "memory_ratio": ratio(dr.get("device_peak_event_bytes"), cr.get("peak_used_bytes")),
            "dwsr_seconds_median": dr.get("seconds_median"),
            "cupy_seconds_median": cr.get("seconds_median"),
            "dwsr_peak_memgetinfo_bytes": dr.get("device_peak_memgetinfo_bytes"),
            "dwsr_memgetinfo_overhead_bytes": dr.get("memgetinfo_overhead_bytes"),
            "dwsr_events_match_memgetinfo": dr.get("events_match_memgetinfo"),
            "dwsr_max_abs_diff_vs_cpu": dr.get("max_abs_diff_vs_cpu"),
            "dwsr_tolerance": dr.get("tolerance"),
            "dwsr_within_tolerance": within_tolerance(dr),
            "cupy_peak_total_bytes": cr.get("peak_total_bytes"),
            "cupy_formulation": cr.get("formulation"),
            "in_dwsr": bool(dr),
            "in_cupy": bool(cr),
            "dwsr_error": (op, shape) in d_err and not dr,
            "cupy_error": (op, shape) in c_err and not cr,
        })
    return rows


def within_tolerance(result: dict) -> bool | None:
    """Whether dwsr's difference from the CPU result is within its tolerance (None when unknown)."""
    diff, tol = as_number(result.get("max_abs_diff_vs_cpu")), as_number(result.get("tolerance"))
    return None if diff is None or tol is None else diff <= tol


def allocator_rows(document: Any) -> list[dict]:
    """One row per (trace, real allocator) of allocator_replay.py's document."""
    rows = []
    for t in as_list(document.get("traces") if isinstance(document, dict) else None):
        if not isinstance(t, dict):
            continue
        for name in ("torch", "cupy"):
            r = t.get(name)
            r = r if isinstance(r, dict) else {}
            events = r.get("events")
            equal = None
            if r:
                equal = (r.get("allocated_mismatches") == 0 and r.get("reserved_mismatches") == 0
                         and bool(r.get("compared_all", True)))
            rows.append({
                "trace": t.get("trace"),
                "allocator": name,
                "model": r.get("model") or (document.get("models") or {}).get(name),
                "cuda_events": t.get("cuda_events"),
                "events": events,
                "allocated_mismatches": r.get("allocated_mismatches"),
                "reserved_mismatches": r.get("reserved_mismatches"),
                "equal_after_every_event": equal,
                "first_mismatch": r.get("first_mismatch"),
                "max_abs_diff_allocated": r.get("max_abs_diff_allocated"),
                "max_abs_diff_reserved": r.get("max_abs_diff_reserved"),
                "peak_reserved_real": r.get("peak_reserved_real"),
                "peak_reserved_model": r.get("peak_reserved_model"),
                "real_oom_event": r.get("real_oom_event"),
                "model_oom_event": r.get("model_oom_event"),
                "compared": bool(r),
            })
    return rows


def collect_errors(documents: dict[str, Any]) -> list[dict]:
    """Every document's "errors", tagged with the document's name."""
    out = []
    for source, document in documents.items():
        if not isinstance(document, dict):
            continue
        for e in as_list(document.get("errors")):
            out.append({"source": source, **(e if isinstance(e, dict) else {"message": str(e)})})
    return out


def test_summary(lines: list[str]) -> str | None:
    """ctest's verdict line ("100% tests passed, 0 tests failed out of N"), or None."""
    for line in reversed(lines):
        if re.search(r"tests passed.*tests failed out of", line):
            return line.strip()
    return None


def device_of(documents: dict[str, Any]) -> str:
    """The GPU's name from the first document that names one."""
    for document in documents.values():
        if isinstance(document, dict) and isinstance(document.get("device"), str) and document["device"]:
            return document["device"]
    return "unknown"


# ---------------------------------------------------------------------------
# Markdown
# ---------------------------------------------------------------------------


def describe_mismatch(m: Any) -> str:
    """A first mismatch in a few words."""
    if not isinstance(m, dict):
        return "-"
    return (f"event {m.get('event')} ({m.get('action')} {fmt_value(m.get('bytes'))} B): "
            f"allocated {fmt_value(m.get('real_allocated'))} real / {fmt_value(m.get('model_allocated'))} model, "
            f"reserved {fmt_value(m.get('real_reserved'))} / {fmt_value(m.get('model_reserved'))}")


def or_error(text: str, failed: bool) -> str:
    """A cell's text, or "error" when the value is missing because the run failed."""
    return "error" if failed and text == "-" else text


def operator_section(rows: list[dict], devices: dict[str, Any]) -> list[str]:
    """The per-shape tables of dwsr against CuPy."""
    lines = ["## Operators: dwsr against CuPy", ""]
    if not rows:
        return lines + ["No operator results (see Inputs).", ""]
    # dwsr names the card with its memory and compute capability after a comma.
    names = {v.split(",")[0].strip() for v in devices.values() if isinstance(v, str)}
    if all(isinstance(v, str) for v in devices.values()) and len(names) > 1:
        lines += [f"**Different devices**: dwsr ran on {devices['dwsr_ops']}, CuPy on {devices['cupy']}; "
                  "the speed ratios compare different cards.", ""]
    lines += ["Speed ratio > 1: dwsr is faster. Memory ratio < 1: dwsr holds less at its peak. "
              "CuPy's peak is the pool's used bytes, input cube included; dwsr's comes from its allocation events.", ""]
    shapes = sorted({tuple(r["shape"]) for r in rows}, key=lambda s: (math.prod(s), s))
    for shape in shapes:
        sub = [r for r in rows if tuple(r["shape"]) == shape]
        lines += [f"### {' x '.join(map(str, shape))} ({math.prod(shape):,} voxels)", ""]
        lines += table(
            ["op", "dwsr voxels/s", "CuPy voxels/s", "speed ratio (dwsr/CuPy)", "dwsr peak device bytes (events)",
             "CuPy peak (used)", "memory ratio (dwsr/CuPy)"],
            [[r["op"], or_error(fmt_rate(r["dwsr_voxels_per_s"]), r["dwsr_error"]),
              or_error(fmt_rate(r["cupy_voxels_per_s"]), r["cupy_error"]), fmt_ratio(r["speed_ratio"]),
              or_error(fmt_mib(r["dwsr_peak_event_bytes"]), r["dwsr_error"]),
              or_error(fmt_mib(r["cupy_peak_used_bytes"]), r["cupy_error"]), fmt_ratio(r["memory_ratio"])]
             for r in sub])
        lines.append("")
        checked = [r for r in sub if r["in_dwsr"]]
        if checked:
            lines += ["dwsr's own checks:", ""]
            lines += table(
                ["op", "events match memGetInfo", "peak (memGetInfo)", "memGetInfo overhead", "max abs diff vs CPU",
                 "tolerance", "within"],
                [[r["op"], fmt_value(r["dwsr_events_match_memgetinfo"]), fmt_mib(r["dwsr_peak_memgetinfo_bytes"]),
                  fmt_mib(r["dwsr_memgetinfo_overhead_bytes"]), fmt_value(r["dwsr_max_abs_diff_vs_cpu"]),
                  fmt_value(r["dwsr_tolerance"]), fmt_value(r["dwsr_within_tolerance"])] for r in checked])
            lines.append("")
    return lines


def allocator_section(rows: list[dict], document: Any) -> list[str]:
    """The allocator models against the real allocators."""
    lines = ["## Allocator models against the real allocators", ""]
    if isinstance(document, dict):
        lines += [f"torch {fmt_value(document.get('torch'))}, cupy {fmt_value(document.get('cupy'))}; values compared "
                  "after every cuda event of each trace.", ""]
    if not rows:
        return lines + ["No allocator results (see Inputs).", ""]
    lines += table(
        ["trace", "model", "events", "allocated mismatches", "reserved mismatches", "equal", "peak reserved real",
         "peak reserved model", "first mismatch"],
        [[os.path.basename(str(r["trace"])), r["model"] or r["allocator"], fmt_value(r["events"]),
          fmt_value(r["allocated_mismatches"]), fmt_value(r["reserved_mismatches"]),
          fmt_value(r["equal_after_every_event"]) if r["compared"] else "not compared",
          fmt_mib(r["peak_reserved_real"]), fmt_mib(r["peak_reserved_model"]), describe_mismatch(r["first_mismatch"])]
         for r in rows])
    return lines + [""]


def tests_section(lines_in: list[str], status: dict) -> list[str]:
    """The first lines of the test output."""
    lines = ["## Tests", ""]
    if status["status"] != "ok":
        return lines + [f"Test output {status['status']}.", ""]
    verdict = test_summary(lines_in)
    if verdict:
        lines += [f"**{verdict}**", ""]
    shown = lines_in[:TEST_LINES]
    lines += ["```"] + [line.replace("```", "'''") for line in shown] + ["```"]
    if len(lines_in) > TEST_LINES:
        lines.append(f"({len(lines_in) - TEST_LINES} more lines in {status['path']})")
    return lines + [""]


def errors_section(errors: list[dict]) -> list[str]:
    """Every recorded error."""
    lines = ["## Errors", ""]
    if not errors:
        return lines + ["None recorded.", ""]
    rows = []
    for e in errors:
        where = ", ".join(f"{k} {fmt_value(e[k])}" for k in ("trace", "stage", "op", "shape") if e.get(k) is not None)
        message = str(e.get("message", ""))
        short = message[:300] + ("…" if len(message) > 300 else "")
        rows.append([e["source"], where or "-", e.get("type", "-"), short])
    return lines + table(["source", "where", "type", "message"], rows) + [""]


def inputs_section(inputs: dict[str, dict]) -> list[str]:
    """Which input files were read."""
    return ["## Inputs", ""] + table(
        ["input", "path", "status"], [[k, v["path"] or "-", v["status"]] for k, v in inputs.items()]) + [""]


def device_facts_section(dwsr: Any) -> list[str]:
    """The CUDA context's memory and cuFFT's work areas against dwsr's bound, as cuda_table measured them."""
    if not isinstance(dwsr, dict):
        return []
    lines = ["## Device facts", ""]
    if dwsr.get("context_overhead_bytes") is not None:
        lines += [f"CUDA context (cudaMemGetInfo's used memory in a fresh process before any allocation): "
                  f"{fmt_mib(dwsr['context_overhead_bytes'])} ({dwsr['context_overhead_bytes']} bytes).", ""]
    areas = [a for a in as_list(dwsr.get("work_areas")) if isinstance(a, dict)]
    if areas:
        lines += ["cuFFT work areas of R2C plans (batch as dwsr plans it) against dwsr's bound:", ""]
        lines += table(["length", "batch", "cuFFT bytes", "bound bytes", "within"],
                       [[a.get("n"), a.get("batch"), a.get("cufft"), a.get("bound"),
                         "yes" if (as_number(a.get("cufft")) or 0) <= (as_number(a.get("bound")) or 0) else "NO"]
                        for a in areas]) + [""]
    return lines


def cli_section(cli: Any) -> list[str]:
    """dwsr run --device cuda against the host run of the same graph (cli_device_check.py)."""
    if not isinstance(cli, dict):
        return []
    lines = ["## The command-line tool on the device", ""]
    lines += [f"`dwsr run` of a 4-node graph on {cli.get('input')}, chunk {cli.get('chunk')}, "
              f"{cli.get('workers')} workers, on the host and with `--device cuda`.", ""]
    if cli.get("error"):
        lines += [f"Error: {cli['error']}", ""]
    for side in ("host", "device", "plan"):
        if isinstance(cli.get(side), dict) and cli[side].get("error"):
            lines += [f"{side}: {cli[side]['error']}", ""]
    if "plan_equals_run" in cli:
        lines += [f"Planned device peaks per worker {cli.get('planned_peaks')}, measured {cli.get('measured_peaks')}: "
                  f"{'equal' if cli['plan_equals_run'] else 'DIFFERENT'}.", ""]
    rows = [c for c in as_list(cli.get("comparisons")) if isinstance(c, dict)]
    if rows:
        lines += table(["output", "max abs diff", "tolerance", "within"],
                       [[c.get("output"), fmt_value(c.get("max_abs_diff")), fmt_value(c.get("tolerance")),
                         "yes" if c.get("ok") else "no"] for c in rows]) + [""]
    for side in ("host", "device"):
        d = cli.get(side)
        if isinstance(d, dict) and d.get("seconds") is not None:
            lines += [f"{side} run: {d['seconds']:.3f} s."]
    return lines + [""]


def load_csv(path: str | None) -> list[dict]:
    """A CSV file's rows as dicts (none when there is no such file)."""
    if not path or not os.path.isfile(path):
        return []
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def pack_section(pack: Any, rows: list[dict]) -> list[str]:
    """GpuPack's real mode: job kinds replayed through PyTorch and read by NVML (dwsr train --env gpu_pack --real)."""
    if not isinstance(pack, dict) or not isinstance(pack.get("real"), dict):
        return []
    real = pack["real"]
    lines = ["## GpuPack's real mode", "",
             f"{len(as_list(real.get('kinds')))} test job kinds, each replayed by `{real.get('runner')}` in a fresh "
             "process: its events through PyTorch's caching allocator, the process's device memory read from NVML "
             "after each. Simulated: the torch_cuda_caching model plus the fixed context overhead.", ""]
    def mib(row: dict, key: str) -> str:
        return fmt_mib(int(row[key])) if str(row.get(key, "")).lstrip("-").isdigit() else "-"

    if rows:
        lines += table(["kind", "job", "events", "simulated peak", "measured peak", "context (model)",
                        "context (NVML)", "reserved mismatches", "worst reserved diff", "worst segment diff"],
                       [[r.get("kind"), r.get("name"), r.get("events"), mib(r, "simulated_peak_bytes"),
                         mib(r, "measured_peak_bytes"), mib(r, "simulated_overhead_bytes"),
                         mib(r, "measured_overhead_bytes"), r.get("reserved_mismatches"),
                         mib(r, "worst_reserved_difference_bytes"),
                         mib(r, "worst_segment_difference_bytes")] for r in rows]) + [""]
    lines += [f"|measured peak / simulated peak - 1|: mean {fmt_value(real.get('mean_abs_ratio_error'))}, worst "
              f"{fmt_value(real.get('worst_abs_ratio_error'))}; events after which the reserved bytes differ from "
              f"the model: {real.get('reserved_mismatches')}.", ""]
    who = [("chosen", pack.get("policy")), ("first_fit", "first_fit")]
    lines += table(["policy", "episodes", "mean return (simulated)", "mean return (measured)", "mean abs difference",
                    "jobs out of memory (simulated)", "jobs out of memory (measured)",
                    "episodes where they differ"],
                   [[name, w.get("episodes"), fmt_value(w.get("mean_simulated_return")),
                     fmt_value(w.get("mean_measured_return")), fmt_value(w.get("mean_abs_difference")),
                     w.get("simulated_ooms"), w.get("measured_ooms"), w.get("episodes_with_other_ooms")]
                    for key, name in who if isinstance(w := real.get(key), dict)])
    return lines + [""]


def markdown(report: dict) -> str:
    """report.md's text."""
    lines = [f"# dwsr GPU report, {report['generated_utc']}", "", f"Device: {report['device']}", ""]
    lines += inputs_section(report["inputs"])
    docs = report["documents"]
    devices = {k: (docs.get(k) or {}).get("device") for k in ("dwsr_ops", "cupy")}
    lines += operator_section(report["comparisons"], devices)
    lines += allocator_section(report["allocators"], report["documents"].get("allocators"))
    lines += device_facts_section(docs.get("dwsr_ops"))
    lines += cli_section(docs.get("cli"))
    lines += pack_section(docs.get("pack"), report["pack_rows"])
    lines += tests_section(report["tests"]["lines"], report["inputs"]["tests"])
    lines += errors_section(report["errors"])
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------


def build_report(args: argparse.Namespace, now: datetime.datetime | None = None) -> dict:
    """The merged report (what report.json holds)."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    documents, inputs = {}, {}
    for name, path in (("dwsr_ops", args.dwsr_ops), ("cupy", args.cupy), ("allocators", args.allocators),
                       ("cli", args.cli), ("pack", args.pack)):
        documents[name], inputs[name] = load_json(path)
    test_lines, inputs["tests"] = load_text(args.tests)
    return {
        "generated_utc": now.strftime("%Y-%m-%d %H:%M UTC"),
        "device": device_of(documents),
        "inputs": inputs,
        "documents": documents,
        "comparisons": comparisons(documents["dwsr_ops"], documents["cupy"]),
        "allocators": allocator_rows(documents["allocators"]),
        "tests": {"summary": test_summary(test_lines), "lines": test_lines},
        "errors": collect_errors(documents),
        "pack_rows": load_csv(args.pack_csv),
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line; makes the output folder (UsageError when it cannot)."""
    p = ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dwsr-ops", default=None, help="dwsr's operator results (JSON)")
    p.add_argument("--cupy", default=None, help="cupy_attributes.py's results (JSON)")
    p.add_argument("--allocators", default=None, help="allocator_replay.py's results (JSON)")
    p.add_argument("--tests", default=None, help="test output (text), e.g. ctest's tail")
    p.add_argument("--cli", default=None, help="cli_device_check.py's results (JSON)")
    p.add_argument("--pack", default=None, help="dwsr train --env gpu_pack --real --json's summary (JSON)")
    p.add_argument("--pack-csv", default=None, help="that training's real.csv")
    p.add_argument("--out-dir", default=".", help="where report.md and report.json go (made when missing)")
    a = p.parse_args(argv)
    try:
        os.makedirs(a.out_dir, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out-dir {a.out_dir}: cannot make it: {exc}") from exc
    return a


def write_reports(args: argparse.Namespace, report: dict) -> None:
    """Writes report.md and report.json into args.out_dir (OSError when it cannot)."""
    write_text(os.path.join(args.out_dir, "report.md"), markdown(report) + "\n")
    write_text(os.path.join(args.out_dir, "report.json"), json.dumps(report, indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    """Parses the arguments, merges, writes both reports; the exit status."""
    return run_script(
        "report.py", argv, parse_args, build_report,
        lambda args, report: f"wrote {os.path.join(args.out_dir, 'report.md')} and report.json: "
                             f"{len(report['comparisons'])} operator rows, {len(report['allocators'])} allocator rows, "
                             f"{len(report['errors'])} errors",
        write=write_reports, target=lambda args: f"the reports in {args.out_dir}")


if __name__ == "__main__":
    sys.exit(main())
