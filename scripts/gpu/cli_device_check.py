"""The command-line tool on a GPU: one graph run chunked over two workers on
the host and with ``--device cuda``, the outputs compared file by file, and
the device run's measured per-worker peaks against ``dwsr plan --device
cuda``. Writes a JSON document for report.py.

    python3 scripts/gpu/cli_device_check.py --dwsr build/apps/dwsr/dwsr --out cli.json [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from gpu_common import log, write_text

GRAPH = {
    "nodes": [
        {"name": "smooth", "op": "gaussian", "params": {"sigmas": [1, 1, 1]}},
        {"name": "env", "op": "envelope", "inputs": ["smooth"]},
        {"name": "dip", "op": "gst_3d_dip", "inputs": ["smooth"]},
        {"name": "med", "op": "median"},
    ]
}
INPUT = "synthetic:96x80x256:3"
CHUNK = "40x32x256"


def run(cmd: list[str]) -> dict:
    """Runs a dwsr command that prints JSON; its document, or an error entry."""
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        return {"command": " ".join(cmd), "error": (done.stderr or done.stdout).strip()[-2000:]}
    doc = json.loads(done.stdout)
    doc["command"] = " ".join(cmd)
    return doc


def compare(host: Path, device: Path) -> list[dict]:
    """Each output file of the device run against the host run's: largest difference and tolerance."""
    out = []
    for f in sorted(host.glob("*.npy")):
        a, b = np.load(f), np.load(device / f.name)
        finite = np.isfinite(a) & np.isfinite(b)
        diff = float(np.max(np.abs(a[finite].astype(np.float64) - b[finite]))) if finite.any() else 0.0
        tolerance = 1e-4 * max(1.0, float(np.max(np.abs(a[finite])))) if finite.any() else 0.0
        out.append({"output": f.name, "max_abs_diff": diff, "tolerance": tolerance,
                    "finiteness_mismatches": int(np.sum(np.isfinite(a) != np.isfinite(b))),
                    "ok": diff <= tolerance and bool(np.all(np.isfinite(a) == np.isfinite(b)))})
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dwsr", required=True, help="the dwsr command-line tool")
    p.add_argument("--out", required=True, help="the JSON document to write")
    p.add_argument("--work", help="directory for the runs' files (default: a temporary one)")
    a = p.parse_args()
    if not Path(a.dwsr).is_file():
        print(f"cli_device_check: {a.dwsr}: no such program", file=sys.stderr)
        return 2
    work = Path(a.work or tempfile.mkdtemp(prefix="dwsr-cli-"))
    work.mkdir(parents=True, exist_ok=True)
    graph = work / "graph.json"
    graph.write_text(json.dumps(GRAPH))
    doc: dict = {"graph": GRAPH, "input": INPUT, "chunk": CHUNK, "workers": 2}
    common = [str(graph), "--input", INPUT, "--chunk", CHUNK, "-w", "2", "--json"]
    doc["host"] = run([a.dwsr, "run", *common, "-t", "4", "--output", str(work / "host")])
    doc["device"] = run([a.dwsr, "run", *common, "--device", "cuda", "--output", str(work / "cuda")])
    doc["plan"] = run([a.dwsr, "plan", str(graph), "--input", INPUT, "--chunk", CHUNK, "-w", "2", "--device", "cuda",
                       "--json"])
    try:
        doc["comparisons"] = compare(work / "host", work / "cuda")
        planned = [w["peak_bytes"] for w in doc["plan"]["planned_workers"]]
        measured = [w["peak_bytes"] for w in doc["device"]["measured_workers"]]
        doc["planned_peaks"], doc["measured_peaks"] = planned, measured
        doc["plan_equals_run"] = planned == measured
    except (KeyError, OSError, ValueError) as e:
        doc["error"] = f"{type(e).__name__}: {e}"
    write_text(a.out, json.dumps(doc, indent=2))
    ok = doc.get("plan_equals_run") and all(c["ok"] for c in doc.get("comparisons", [])) and doc.get("comparisons")
    log(f"cli_device_check: plan == run per worker: {doc.get('plan_equals_run')}; outputs within tolerance: "
        f"{bool(ok)}; {doc.get('error', '')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
