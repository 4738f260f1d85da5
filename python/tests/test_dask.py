"""dwsr.dask: apply equals the whole-cube run bit for bit, its refusals, and advise on a real LocalCluster."""

import json
import logging
import os
import subprocess
import sys

import numpy as np
import pytest

import dwsr

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")
dwsr_dask = pytest.importorskip("dwsr.dask")

SHAPE = (40, 36, 128)
CHUNKS = (16, 20, 64)  # uneven on the first two axes, time split in two


def make_cube(shape=SHAPE, seed=11):
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


def same_bits(a, b):
    """Equal shape, dtype and bytes (NaNs compare equal when their bits do)."""
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(
        np.ascontiguousarray(a).view(np.uint8), np.ascontiguousarray(b).view(np.uint8))


def as_dict(result, graph):
    """apply's result as a dict of outputs, named as dwsr.run names them."""
    if isinstance(result, dict):
        return result
    (name, _), = dwsr.graph_info(graph).outputs
    return {name: result}


THREE_NODES = {
    "nodes": [
        {"name": "smooth", "op": "gaussian", "params": {"sigmas": [1, 1, 1]}},
        {"name": "grad", "op": "gradient_magnitude", "inputs": ["smooth"]},
        {"name": "dips", "op": "gst_2d_dips", "inputs": ["smooth"]},
    ]
}


@pytest.mark.parametrize("graph, params, threads", [
    ("gaussian", None, 1),
    ("gaussian", {"sigmas": (2, 1, 3)}, 2),
    ("median", None, 1),
    ("first_derivative", None, 1),
    ("envelope", None, 1),  # time is read whole: its two time chunks are rechunked to one
    ("gst_2d_dips", None, 1),  # two outputs
    (THREE_NODES, None, 1),
])
def test_apply_equals_the_whole_cube_run_bit_for_bit(graph, params, threads):
    cube = make_cube()
    expected = dwsr.run(graph, cube, params=params).outputs
    outputs = as_dict(dwsr_dask.apply(da.from_array(cube, chunks=CHUNKS), graph, params=params, threads=threads),
                      graph)
    assert list(outputs) == list(expected)
    computed = dask.compute(*outputs.values())
    for (name, lazy), got in zip(outputs.items(), computed):
        assert lazy.dtype == expected[name].dtype and lazy._meta.dtype == expected[name].dtype, name
        assert same_bits(got, expected[name]), name


BLOCKWISE = [o.name for o in dwsr.operators() if o.inputs == 1 and not dwsr.graph_info(o.name).needs_reduction]


@pytest.mark.parametrize("op", BLOCKWISE)
def test_every_operator_without_reduction_equals_the_whole_cube_run(op):
    cube = make_cube(seed=3)
    expected = dwsr.run(op, cube).outputs
    outputs = as_dict(dwsr_dask.apply(da.from_array(cube, chunks=CHUNKS), op), op)
    computed = dask.compute(*outputs.values(), scheduler="sync")
    for name, got in zip(outputs, computed):
        assert same_bits(got, expected[name]), name


def test_outputs_keep_dwsr_names_and_dtypes_and_each_block_runs_once(monkeypatch):
    runs = []
    real_run = dwsr_dask.run

    def counting_run(*args, **kwargs):
        runs.append(1)
        return real_run(*args, **kwargs)

    monkeypatch.setattr(dwsr_dask, "run", counting_run)
    x = da.from_array(make_cube(), chunks=CHUNKS)
    outputs = dwsr_dask.apply(x, "gst_2d_dips")
    assert list(outputs) == ["gst_2d_dips_il", "gst_2d_dips_xl"]
    dask.compute(*outputs.values(), scheduler="sync")
    assert len(runs) == x.npartitions  # one dwsr run per block for both outputs

    hilbert = dwsr_dask.apply(x, "hilbert")
    assert hilbert.dtype == np.complex64 and hilbert.chunks[:2] == x.chunks[:2] and hilbert.chunks[2] == (128,)


def test_a_graph_file_is_read_where_apply_is_called(tmp_path):
    path = tmp_path / "graph.json"
    path.write_text(json.dumps(THREE_NODES))
    cube = make_cube()
    outputs = dwsr_dask.apply(da.from_array(cube, chunks=CHUNKS), str(path))
    expected = dwsr.run(THREE_NODES, cube).outputs
    for name, got in zip(outputs, dask.compute(*outputs.values())):
        assert same_bits(got, expected[name])
    with pytest.raises(dwsr.FileError, match="missing.json"):
        dwsr_dask.apply(da.from_array(cube, chunks=CHUNKS), str(tmp_path / "missing.json"))


def test_an_axis_read_whole_is_refused_when_rechunking_is_off():
    x = da.from_array(make_cube(), chunks=CHUNKS)
    with pytest.raises(dwsr.InvalidInputError, match=r"time axis \(axis 2\) is split into chunks \(64, 64\)"):
        dwsr_dask.apply(x, "envelope", rechunk=False)
    one_time_chunk = x.rechunk({2: -1})
    assert dwsr_dask.apply(one_time_chunk, "envelope", rechunk=False).chunks == one_time_chunk.chunks


@pytest.mark.parametrize("op", ["histogram_equalization", "trace_agc", "rgb_blending", "glcm_contrast"])
def test_graphs_that_reduce_over_the_cube_are_refused(op):
    x = da.from_array(make_cube(), chunks=CHUNKS)
    with pytest.raises(dwsr.InvalidInputError, match="reduces over the whole cube.*run it with dwsr.run"):
        dwsr_dask.apply(x, op)


def test_arrays_other_than_3d_float32_dask_arrays_are_refused():
    cube = make_cube()
    with pytest.raises(dwsr.InvalidInputError, match="dtype float64: expected float32.*astype"):
        dwsr_dask.apply(da.from_array(cube.astype(np.float64), chunks=CHUNKS), "gaussian")
    with pytest.raises(dwsr.InvalidInputError, match="2 dimensions"):
        dwsr_dask.apply(da.zeros((4, 4), dtype=np.float32), "gaussian")
    with pytest.raises(dwsr.InvalidInputError, match="expected a dask.array.Array.*got ndarray"):
        dwsr_dask.apply(cube, "gaussian")
    with pytest.raises(dwsr.InvalidInputError, match="no_such_operator"):
        dwsr_dask.apply(da.from_array(cube, chunks=CHUNKS), "no_such_operator")


def test_import_dwsr_does_not_import_dask_and_dwsr_dask_names_the_extra():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    check = "import sys, dwsr; print('dask' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True,
                          check=True).stdout.strip() == "False"
    without_dask = "import sys; sys.modules['dask'] = None; sys.modules['dask.array'] = None; import dwsr.dask"
    failed = subprocess.run([sys.executable, "-c", without_dask], env=env, capture_output=True, text=True)
    assert failed.returncode != 0 and "ImportError" in failed.stderr and "pip install dwsr[dask]" in failed.stderr


def test_advise_without_a_client_fits_dwsr_runs_and_held_chunks_under_the_pause_threshold():
    limit, threads, shape = 256 * 2**20, 4, (128, 128, 1000)
    advice = dwsr_dask.advise("gaussian", shape, memory="256MiB", threads=threads)
    threshold = int(0.8 * limit)
    assert advice.memory_limit == limit and advice.threads == threads and advice.reserve == 0
    assert advice.task_budget == threshold // threads
    assert advice.chunk_bytes == 4 * np.prod(advice.chunks) and advice.chunks[2] == shape[2]
    assert advice.held_chunks == threads + 1  # gaussian has a halo: one more chunk for a coming window
    assert advice.dwsr_peak_bytes == dwsr.plan("gaussian", shape, chunk=advice.chunks).peak_bytes
    assert advice.worker_peak_bytes == threads * advice.dwsr_peak_bytes + (threads + 1) * advice.chunk_bytes
    assert advice.worker_peak_bytes <= threshold
    unheld = dwsr.advise("gaussian", shape, memory=advice.task_budget, workers=1, threads=1).chunk
    assert np.prod(advice.chunks) < np.prod(unheld)  # the held chunks cost dwsr's chunk some room
    assert advice.to_dict()["chunks"] == list(advice.chunks)
    x = da.zeros(shape, dtype=np.float32, chunks=advice.chunks)  # usable as chunks=
    assert x.chunksize == advice.chunks

    reserved = dwsr_dask.advise("gaussian", shape, memory=limit, threads=threads, reserve="100MiB")
    assert reserved.task_budget == (threshold - 100 * 2**20) // threads
    assert reserved.worker_peak_bytes <= threshold and reserved.worker_peak_bytes > 100 * 2**20
    no_halo = dwsr_dask.advise("envelope", shape, memory=limit, threads=threads)
    assert no_halo.held_chunks == threads


def test_advise_refusals_name_the_budget():
    with pytest.raises(dwsr.InvalidInputError, match="needs a client, or both memory"):
        dwsr_dask.advise("gaussian", (64, 64, 64), memory="1GiB")
    with pytest.raises(dwsr.InvalidInputError, match="too small.*memory limit 104857600 bytes, pause threshold 80% "
                       r"= 83886080 bytes, less 0 reserved, shared by 2 task\(s\) at once: 41943040 bytes per task"):
        dwsr_dask.advise("gaussian", (64, 64, 10**8), memory="100MiB", threads=2)
    with pytest.raises(dwsr.InvalidInputError, match="reserve of .* expected less than the pause threshold"):
        dwsr_dask.advise("gaussian", (64, 64, 64), memory="100MiB", threads=2, reserve="90MiB")
    with pytest.raises(dwsr.InvalidInputError, match="memory 'lots'"):
        dwsr_dask.advise("gaussian", (64, 64, 64), memory="lots", threads=2)


# --- a real cluster: 2 worker processes with memory limits ---------------------------------------------------

LIMIT = 300 * 2**20  # a worker: ~70 MiB idle with NumPy, Dask and dwsr loaded, tasks in the rest
CLUSTER_SHAPE = (256, 128, 1024)  # 64 MiB of float32: more than a task's budget, so advise cuts it


def _vm(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _warm_worker():
    """An idle worker's footprint: NumPy, Dask's arrays and dwsr loaded and run once."""
    import dask.array  # noqa: F401
    import dwsr.dask  # noqa: F401
    dwsr.run("gaussian", np.zeros((4, 4, 16), np.float32))
    return _vm("VmHWM")


def _reset_peak():
    """Starts VmHWM again from the current resident size (False where the kernel does not allow it)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak():
    return _vm("VmHWM")


def _random_block(zeros, seed, block_info=None):
    """A block of the test cube, drawn from its own seed: workers make the cube without holding it whole."""
    corner = [start for start, _ in block_info[0]["array-location"]]
    return np.random.default_rng([seed, *corner]).standard_normal(zeros.shape, dtype=np.float32)


def random_cube(shape, chunks, seed):
    """The test cube as a Dask array made in the workers, and the same cube made here."""
    x = da.zeros(shape, dtype=np.float32, chunks=chunks).map_blocks(_random_block, seed, dtype=np.float32)
    cube = np.empty(shape, np.float32)
    for block in np.ndindex(*x.numblocks):
        corner = [sum(c[:k]) for c, k in zip(x.chunks, block)]
        sizes = [c[k] for c, k in zip(x.chunks, block)]
        region = tuple(slice(a, a + n) for a, n in zip(corner, sizes))
        cube[region] = np.random.default_rng([seed, *corner]).standard_normal(sizes, dtype=np.float32)
    return x, cube


class NpyTarget:
    """A .npy file that Dask's store writes block by block, trace by trace, so no worker keeps its results."""

    def __init__(self, path, shape, dtype):
        self.path, self.shape, self.dtype = str(path), tuple(shape), np.dtype(dtype)
        np.lib.format.open_memmap(self.path, mode="w+", dtype=self.dtype, shape=self.shape).flush()
        with open(self.path, "rb") as f:
            fmt = np.lib.format
            header = fmt.read_array_header_1_0 if fmt.read_magic(f) == (1, 0) else fmt.read_array_header_2_0
            header(f)
            self.offset = f.tell()

    def __setitem__(self, key, block):
        i0, x0 = key[0].start or 0, key[1].start or 0
        assert block.shape[2] == self.shape[2], "blocks must keep time whole"
        trace_bytes = self.shape[2] * self.dtype.itemsize
        fd = os.open(self.path, os.O_WRONLY)
        try:
            for i in range(block.shape[0]):
                for x in range(block.shape[1]):
                    at = self.offset + ((i0 + i) * self.shape[1] + x0 + x) * trace_bytes
                    os.pwrite(fd, np.ascontiguousarray(block[i, x]).tobytes(), at)
        finally:
            os.close(fd)


@pytest.fixture(scope="module")
def client():
    # Worker processes import dwsr and this module (NpyTarget) from the same places as this process.
    here = os.path.dirname(os.path.abspath(__file__))
    package = os.path.dirname(os.path.dirname(os.path.abspath(dwsr.__file__)))
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (package, here, old) if p)
    try:
        with distributed.LocalCluster(n_workers=2, threads_per_worker=2, processes=True, memory_limit=LIMIT,
                                      dashboard_address=None, silence_logs=logging.ERROR) as cluster, \
                distributed.Client(cluster) as c:
            yield c
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


@pytest.mark.cluster
def test_cluster_advised_chunks_run_bit_for_bit_and_each_worker_stays_under_its_limit(client, tmp_path):
    idle = client.run(_warm_worker)
    assert len(idle) == 2 and max(idle.values()) < LIMIT // 2, idle  # the limit leaves room for the process
    reserve = max(idle.values())
    op = "gst_2d_dips"
    # By default advise measures the idle workers now: their resident memory, at most their high-water mark so far
    # (plus what Dask's own threads allocated since), never a heartbeat taken while tasks ran.
    measured = dwsr_dask.advise(op, CLUSTER_SHAPE, client=client).reserve
    assert 0 < measured <= reserve + 16 * 2**20, (measured, idle)

    advice = dwsr_dask.advise(op, CLUSTER_SHAPE, client=client, reserve=reserve)
    assert advice.memory_limit == LIMIT and advice.threads == 2 and advice.workers == 2
    assert advice.chunks[2] == CLUSTER_SHAPE[2] and advice.advice.advice.blocks > 2  # chunked, time whole
    assert advice.worker_peak_bytes <= 0.8 * LIMIT and advice.reserve == reserve

    x, cube = random_cube(CLUSTER_SHAPE, advice.chunks, seed=5)
    expected = dwsr.run(op, cube).outputs

    client.run(_reset_peak)
    outputs = dwsr_dask.apply(x, op)
    targets = [NpyTarget(tmp_path / f"{name}.npy", CLUSTER_SHAPE, out.dtype) for name, out in outputs.items()]
    da.store(list(outputs.values()), targets, lock=False)
    peaks = client.run(_peak)

    mib = 2**20
    print(f"\n{op} on {CLUSTER_SHAPE}, chunks {advice.chunks} ({advice.advice.advice.blocks} blocks), worker limit "
          f"{LIMIT / mib:.0f} MiB, {advice.threads} threads, pause threshold {0.8 * LIMIT / mib:.0f} MiB")
    print(f"predicted per worker {advice.worker_peak_bytes / mib:.1f} MiB = idle {reserve / mib:.1f} MiB + "
          f"{advice.threads} x dwsr {advice.dwsr_peak_bytes / mib:.1f} MiB + {advice.held_chunks} x chunk "
          f"{advice.chunk_bytes / mib:.1f} MiB")
    for address, peak in sorted(peaks.items()):
        print(f"  {address}: idle VmHWM {idle[address] / mib:.1f} MiB, VmHWM during the run {peak / mib:.1f} MiB")
    for address, peak in peaks.items():
        assert peak < LIMIT, f"{address} peaked at {peak} bytes, over its limit {LIMIT}"
    for name, target in zip(outputs, targets):
        assert same_bits(np.load(target.path), expected[name]), name


@pytest.mark.cluster
def test_cluster_budget_too_small_fails_before_any_task_runs(client):
    def transitions(dask_scheduler):
        return dask_scheduler.transition_counter

    # The reserve is given: what the workers hold right after another test's run is not this test's business.
    before = client.run_on_scheduler(transitions)
    with pytest.raises(dwsr.InvalidInputError, match=r"too small.*Dask worker memory limit 314572800 bytes, pause "
                       r"threshold 80% = 251658240 bytes, less 104857600 reserved, shared by 2 task\(s\) at once"):
        dwsr_dask.advise("gaussian", (64, 64, 10**8), client=client, reserve="100MiB")
    assert client.run_on_scheduler(transitions) == before  # nothing was submitted

    one = sorted(client.scheduler_info()["workers"])[:1]
    assert dwsr_dask.advise("gaussian", (32, 32, 64), client=client, workers=one, reserve="100MiB").workers == 1
    with pytest.raises(dwsr.InvalidInputError, match="not workers of this client"):
        dwsr_dask.advise("gaussian", (32, 32, 64), client=client, workers=["tcp://nowhere:1"])
