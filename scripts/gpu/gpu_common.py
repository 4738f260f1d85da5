"""What the GPU validation scripts in scripts/gpu share (standard library only).

The scripts run as ``python3 scripts/gpu/NAME.py``, which puts this folder on
``sys.path``, so they import this module by its bare name::

    from gpu_common import ArgumentParser, UsageError, log, run_script, write_json

* UsageError and ArgumentParser: a bad argument is one line on stderr and exit
  status 2, not argparse's usage text;
* log: a progress line on stdout, flushed at once (the runs are long and their
  output is often piped to a file);
* error_entry: an entry of a JSON document's "errors" list;
* write_text and write_json: atomic writes (a temporary file in the same folder
  renamed into place), so a reader never sees half a document;
* run_script: the scripts' main(): parse, run, write, print a summary.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import traceback
from typing import Any, Callable


#: The operators timed against CuPy's formulations (cupy_attributes.py), in
#: the order report.py's tables list them.
COMPARED_OPS = (
    "envelope",
    "instantaneous_phase",
    "cosine_instantaneous_phase",
    "hilbert",
    "gaussian",
    "median",
    "rms",
    "first_derivative",
    "relative_amplitude_change",
    "instantaneous_frequency",
    "sweetness",
    "semblance",
    "reflection_intensity",
    "time_gain",
    "gradient_magnitude",
    "gradient_dips",
    "gradient_structure_tensor",
    "lowpass_filter",
    "bandpass_filter",
    "cwt_ricker",
    "cwt_ormsby",
)

class UsageError(Exception):
    """A bad command-line argument (exit status 2)."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse, but a bad argument raises UsageError (one line on stderr) instead of printing the usage."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def log(message: str) -> None:
    """Prints one progress line on stdout, at once."""
    print(message, flush=True)


def error_entry(where: dict, exc: BaseException) -> dict:
    """An entry of "errors": where it happened, the exception's type and message, the end of its traceback."""
    tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
    return {**where, "type": type(exc).__name__, "message": str(exc)[:2000], "traceback": "".join(tb)[-3000:]}


def write_text(path: str, text: str) -> None:
    """Writes `text` (UTF-8) to `path` atomically: a temporary file in the same folder, renamed into place.

    The file gets the usual mode of a new file (0666 less the umask), not
    mkstemp's owner-only one. On any failure the temporary file is removed and
    the exception (OSError when the folder or file cannot be written) propagates.
    """
    fd, tmp = tempfile.mkstemp(prefix=".partial-", dir=os.path.dirname(os.path.abspath(path)))
    umask = os.umask(0)
    os.umask(umask)
    os.fchmod(fd, 0o666 & ~umask)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json(path: str, document: Any) -> None:
    """Writes `document` to `path` atomically as JSON, indented by 2, with a final newline."""
    write_text(path, json.dumps(document, indent=2) + "\n")


def run_script(
    prog: str,
    argv: list[str] | None,
    parse_args: Callable[[list[str] | None], argparse.Namespace],
    run: Callable[[argparse.Namespace], Any],
    summary: Callable[[argparse.Namespace, Any], str],
    write: Callable[[argparse.Namespace, Any], None] | None = None,
    target: Callable[[argparse.Namespace], str] | None = None,
) -> int:
    """A script's main(): parses the arguments, runs, writes the document, logs a summary; the exit status.

    * ``parse_args(argv)`` gives the arguments; a UsageError is printed as
      "PROG: message" on stderr and gives exit status 2;
    * ``run(args)`` gives the document;
    * ``write(args, document)`` writes it (default: write_json to args.out); an
      OSError is printed as "PROG: cannot write TARGET: why" on stderr, where
      TARGET is ``target(args)`` (default: args.out), and gives exit status 1;
    * ``summary(args, document)`` is the line logged at the end; exit status 0.
    """
    try:
        args = parse_args(argv)
    except UsageError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    document = run(args)
    try:
        if write is None:
            write_json(args.out, document)
        else:
            write(args, document)
    except OSError as exc:
        where = args.out if target is None else target(args)
        print(f"{prog}: cannot write {where}: {exc}", file=sys.stderr)
        return 1
    log(summary(args, document))
    return 0
