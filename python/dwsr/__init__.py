"""dwsr: exact memory simulation and native execution of seismic attributes.

Run an operator on a cube in memory, or plan its memory without running it::

    import numpy as np, dwsr
    cube = np.load("cube.npy")                       # float32, (inline, crossline, time)
    result = dwsr.run("envelope", cube, threads=2)   # outputs and measured peak
    envelope = result["envelope"]
    plan = dwsr.plan("gst_3d_dip", cube.shape, chunk=(128, 128, 462), workers=4, threads=2)
    advice = dwsr.advise("envelope", (651, 951, 462), memory="2GiB", workers=4)

``dwsr.dask`` maps operators over Dask arrays (``pip install dwsr[dask]``).
Every function has the numbers of the command-line tool's ``--json``.
"""

from ._api import EventLog, Graph, Node, advise, calibrate, dataset, graph_info, operators, plan, replay, run
from ._core import __version__
from ._errors import CancelledError, Error, FileError, InvalidInputError, OutOfMemoryError
from ._types import (Advice, ChunkEvaluation, Dataset, DeviceReplay, Event, GraphInfo, Halo, ModelReplay, OperatorInfo, Output, Parameter,
                     Plan, Replay, RunResult, Table, WorkerMemory)

__all__ = [
    "Advice", "CancelledError", "ChunkEvaluation", "Dataset", "DeviceReplay", "Error", "Event", "EventLog", "FileError", "Graph",
    "GraphInfo", "Halo", "InvalidInputError", "ModelReplay", "Node", "OperatorInfo", "OutOfMemoryError", "Output", "Parameter", "Plan",
    "Replay", "RunResult", "Table", "WorkerMemory", "__version__", "advise", "calibrate", "dataset", "graph_info", "operators", "plan", "replay", "run"
]
