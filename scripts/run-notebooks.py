#!/usr/bin/env python3
"""Executes the notebooks of notebooks/ top to bottom; any failing cell fails the run.

Each notebook runs in a fresh kernel of the interpreter that runs this script
(so it sees the dwsr that interpreter imports), from the notebook's own folder
(its figures land beside it). The executed copies, outputs included, are
written to --output; the sources are never modified. Exit status: 0 when every
notebook ran, 1 when a cell failed or timed out (each failure is named:
notebook, cell, error), 2 on misuse.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import List, Optional

REPO = Path(__file__).resolve().parent.parent
KERNEL = "dwsr-notebooks"


def parse_args(argv: List[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Execute dwsr's notebooks top to bottom with nbclient; fail if any cell fails.")
    parser.add_argument("notebooks", nargs="*", type=Path,
                        help="notebooks to run (default: every .ipynb in notebooks/)")
    parser.add_argument("--output", type=Path, default=REPO / "build" / "notebooks",
                        help="folder for the executed notebooks (default: build/notebooks)")
    parser.add_argument("--timeout", type=int, default=300, help="seconds a cell may run (default: 300)")
    return parser.parse_args(argv)


def kernel_home(folder: Path) -> None:
    """Declares a kernel that runs this interpreter, found through JUPYTER_PATH.

    The kernel named python3 may belong to another interpreter (a system
    Jupyter's); this one is certain to import the dwsr under test.
    """
    spec = folder / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": f"Python ({sys.executable})",
        "language": "python",
    }))
    os.environ["JUPYTER_PATH"] = os.pathsep.join([str(folder), *filter(None, [os.environ.get("JUPYTER_PATH")])])


def first_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else ""


def run_one(source: Path, output: Path, timeout: int) -> Optional[str]:
    """Runs one notebook and writes its executed copy; returns what failed, or None."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    nb = nbformat.read(source, as_version=4)
    current = {"index": -1}

    def on_cell_start(cell, cell_index):
        current["index"] = cell_index

    client = NotebookClient(nb, timeout=timeout, kernel_name=KERNEL, allow_errors=False,
                            resources={"metadata": {"path": str(source.parent)}}, on_cell_start=on_cell_start)
    failure = None
    try:
        client.execute()
    except CellExecutionError as e:
        failure = f"{e.ename}: {first_line(e.evalue) or e.ename}"
    except CellTimeoutError:
        failure = f"the cell ran longer than {timeout} s (--timeout)"
    except DeadKernelError as e:
        failure = f"the kernel died: {first_line(str(e))}"
    finally:
        output.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, output / source.name)
    if failure is None:
        return None
    cell = nb.cells[current["index"]] if 0 <= current["index"] < len(nb.cells) else None
    code = first_line(cell.source) if cell is not None else ""
    where = f"cell {current['index'] + 1} of {len(nb.cells)}" + (f" ({code[:60]})" if code else "")
    return f"{where}: {failure}"


def main(argv: List[str]) -> int:
    args = parse_args(argv)
    notebooks = args.notebooks or sorted((REPO / "notebooks").glob("*.ipynb"))
    if not notebooks:
        print("run-notebooks: no notebooks to run", file=sys.stderr)
        return 2
    for nb in notebooks:
        if nb.suffix != ".ipynb" or not nb.is_file():
            print(f"run-notebooks: '{nb}' is not a notebook file (.ipynb)", file=sys.stderr)
            return 2
    try:
        import ipykernel  # noqa: F401  (the kernel below runs it)
        import nbclient  # noqa: F401
        import nbformat  # noqa: F401
    except ImportError as e:
        print(f"run-notebooks: {e.name} is missing; install the test extras: pip install '.[test]'", file=sys.stderr)
        return 2

    output = args.output.resolve()
    failures = []
    with tempfile.TemporaryDirectory(prefix="dwsr-kernel-") as home:
        kernel_home(Path(home))
        for nb in notebooks:
            source = nb.resolve()
            start = time.monotonic()
            failure = run_one(source, output, args.timeout)
            seconds = time.monotonic() - start
            print(f"{source.name}: {'ok' if failure is None else 'FAILED'} in {seconds:.1f} s", flush=True)
            if failure is not None:
                failures.append(f"{source.name}: {failure}")
    for f in failures:
        print(f"run-notebooks: {f}", file=sys.stderr)
    if failures:
        print(f"run-notebooks: {len(failures)} of {len(notebooks)} notebooks failed; "
              f"the executed copies are in {output}", file=sys.stderr)
        return 1
    print(f"{len(notebooks)} notebooks ran; executed copies in {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
