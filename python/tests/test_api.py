"""dwsr from Python: every public function, the errors, zero-copy input, output
ownership, the GIL and Ctrl-C, and equality with the command-line tool."""

from __future__ import annotations

import _thread
import gc
import inspect
import json
import signal
import subprocess
import threading
import time

import numpy as np
import pytest

import dwsr
from conftest import make_cube


def bits(a: np.ndarray) -> np.ndarray:
    """The array's bytes, so that equality is bit for bit (NaNs included)."""
    return np.ascontiguousarray(a).view(np.uint8)


def cli_json(cli: str, *args: str) -> dict:
    out = subprocess.run([cli, *args, "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def without_seconds(d: dict) -> dict:
    return {k: v for k, v in d.items() if k != "seconds"}


# --- the catalogue -----------------------------------------------------------------------------------------------


def test_operators_describe_the_catalogue_as_the_tool_does(cli):
    ops = dwsr.operators()
    assert [o.to_dict() for o in ops] == cli_json(cli, "ops")
    gaussian = next(o for o in ops if o.name == "gaussian")
    assert gaussian.family == "noise_reduction"
    assert gaussian.halo.radius == (4, 4, 4) and gaussian.halo.whole_axes == (False, False, False)
    assert [(p.name, p.default) for p in gaussian.parameters] == [("sigmas", "1,1,1"), ("truncate", "4")]
    assert [o.dtype for o in next(o for o in ops if o.name == "hilbert").outputs] == ["complex64"]


def test_graph_info_gives_outputs_halo_and_whole_axes():
    g = dwsr.Graph()
    env = g.add("envelope", name="env")
    freq = g.add("instantaneous_frequency", name="freq")
    g.add("sweetness_from", env, freq, name="sweet")
    info = dwsr.graph_info(g)
    assert info.outputs == [("sweet", "float32")]
    assert info.whole_axes == (False, False, True)
    assert info.nodes == 3 and not info.needs_reduction
    assert dwsr.graph_info("gaussian", params={"sigmas": (2, 2, 2)}).halo == (8, 8, 8)
    assert dwsr.graph_info("trace_agc").needs_reduction


# --- run ---------------------------------------------------------------------------------------------------------


def test_run_equals_the_tool_bit_for_bit_for_every_operator(cli, tmp_path):
    cube = make_cube((6, 5, 64), seed=3)
    np.save(tmp_path / "cube.npy", cube)
    for op in dwsr.operators():
        out = tmp_path / op.name
        ran = subprocess.run([cli, "run", op.name, "-i", str(tmp_path / "cube.npy"), "-o", str(out)],
                             capture_output=True, text=True)
        if op.inputs > 1:  # combinations of attributes: both refuse one cube, with the same message
            with pytest.raises(dwsr.InvalidInputError) as e:
                dwsr.run(op.name, cube)
            assert ran.returncode == 2 and ran.stderr.strip() == f"dwsr: {e.value}", op.name
            continue
        assert ran.returncode == 0, ran.stderr
        result = dwsr.run(op.name, cube)
        assert len(result) == len(op.outputs) + len(op.tables), op.name
        for name, array in result.outputs.items():
            expected = np.load(out / f"{name}.npy")
            table = name in {t.name[:-len(".npy")] for t in op.tables}
            assert array.dtype == expected.dtype, (op.name, name)
            assert array.shape == (expected.shape if table else cube.shape), (op.name, name)
            assert np.array_equal(bits(array), bits(expected)), (op.name, name)


def test_run_reads_the_cube_in_place_and_plans_its_peak_exactly(cube):
    log = dwsr.EventLog()
    address = cube.__array_interface__["data"][0]
    before = cube.copy()
    result = dwsr.run("envelope", cube, events=log)
    assert cube.__array_interface__["data"][0] == address
    assert np.array_equal(bits(cube), bits(before))
    events = log.events
    assert all(e.role != "input" for e in events)  # the caller's cube is the input; nothing copies it
    assert result.measured_peak_bytes == result.planned_peak_bytes == log.peak_bytes
    # The output, and per thread one real and one complex trace of scratch (README's memory table).
    assert result.planned_peak_bytes == cube.nbytes + 96 * 4 + 96 * 8
    assert result.input_bytes == cube.nbytes and result.shape == cube.shape


def test_run_refuses_arrays_it_would_have_to_copy(cube):
    with pytest.raises(dwsr.InvalidInputError, match="float64 array of shape \\(12, 10, 96\\)"):
        dwsr.run("envelope", cube.astype(np.float64))
    with pytest.raises(dwsr.InvalidInputError, match="non-contiguous float32"):
        dwsr.run("envelope", cube[:, :, ::2])
    with pytest.raises(dwsr.InvalidInputError, match="3 dimensions"):
        dwsr.run("envelope", cube[0])
    with pytest.raises(dwsr.InvalidInputError, match="numpy.ndarray"):
        dwsr.run("envelope", cube.tolist())


def test_outputs_outlive_the_call_and_their_free_events_come_when_they_are_freed(cube):
    log = dwsr.EventLog()
    result = dwsr.run("gst_2d_dips", cube, events=log)
    outputs = dict(result.outputs)
    del result
    gc.collect()
    live = [e for e in log.events if e.action == "alloc" and e.role == "output"]
    assert len(live) == len(outputs) == 2
    assert log.live_bytes()[-1] == sum(a.nbytes for a in outputs.values())  # only the outputs are held
    total = float(sum(float(np.nansum(a)) for a in outputs.values()))  # still readable
    assert np.isfinite(total)
    first = outputs.pop(next(iter(outputs)))
    del first
    gc.collect()
    assert log.events[-1].action == "free" and log.events[-1].role == "output"
    outputs.clear()
    gc.collect()
    assert log.live_bytes()[-1] == 0
    assert sum(1 for e in log.events if e.action == "free") == sum(1 for e in log.events if e.action == "alloc")


def test_run_takes_graphs_as_dicts_files_and_builders(cube, tmp_path):
    doc = {"nodes": [{"name": "env", "op": "envelope"}, {"name": "freq", "op": "instantaneous_frequency"},
                     {"name": "sweet", "op": "sweetness_from", "inputs": ["env", "freq"], "keep": False}]}
    (tmp_path / "g.json").write_text(json.dumps(doc))
    g = dwsr.Graph()
    env = g.add("envelope", name="env")
    freq = g.add("instantaneous_frequency", name="freq")
    g.add("sweetness_from", env, freq, name="sweet")
    a = dwsr.run(doc, cube)
    b = dwsr.run(tmp_path / "g.json", cube)
    c = dwsr.run(g, cube, threads=2)
    assert list(a.outputs) == list(b.outputs) == list(c.outputs) == ["sweet"]
    assert np.array_equal(bits(a.output), bits(b.output)) and np.array_equal(bits(a.output), bits(c.output))
    assert dwsr.Graph.load(tmp_path / "g.json").to_dict() == doc
    smoothed = dwsr.run("gaussian", cube, params={"sigmas": (2, 2, 2)})
    assert not np.array_equal(bits(smoothed.output), bits(dwsr.run("gaussian", cube).output))


def test_run_is_deterministic_across_thread_counts(cube):
    one = dwsr.run("gst_3d_dip", cube, threads=1).output
    two = dwsr.run("gst_3d_dip", cube, threads=2).output
    assert np.array_equal(bits(one), bits(two))


def test_a_budget_too_small_raises_out_of_memory_with_the_figures(cube):
    log = dwsr.EventLog()
    with pytest.raises(dwsr.OutOfMemoryError) as e:
        dwsr.run("envelope", cube, memory=4096, events=log)
    assert e.value.budget == 4096 and e.value.requested == cube.nbytes
    assert "exceeds the budget of 4096 bytes" in str(e.value)
    assert isinstance(e.value, MemoryError)
    assert len(log) == 0  # refused before anything was allocated


def test_the_gil_is_released_while_computing():
    cube = make_cube((32, 32, 512), seed=1)  # eig_complex: some 0.4 s on one thread
    ticks = 0
    running = threading.Event()
    done = threading.Event()

    def count():
        nonlocal ticks
        running.set()
        while not done.is_set():
            ticks += 1
            time.sleep(0.001)

    t = threading.Thread(target=count)
    t.start()
    running.wait()
    start = ticks
    result = dwsr.run("eig_complex", cube)
    during = ticks - start
    done.set()
    t.join()
    assert result.seconds > 0.05  # long enough for the counter to run
    assert during >= 10  # the other thread kept running: the GIL was free


def test_ctrl_c_stops_a_run_and_frees_its_buffers():
    cube = make_cube((48, 48, 512), seed=2)
    log = dwsr.EventLog()
    # A process started in the background inherits SIGINT ignored, and then
    # Python installs no handler and interrupt_main does nothing: install it.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        timer = threading.Timer(0.2, _thread.interrupt_main)
        timer.start()
        started = time.perf_counter()
        with pytest.raises(KeyboardInterrupt):
            dwsr.run("eig_complex", cube, events=log)  # several seconds uninterrupted
        stopped = time.perf_counter() - started
        timer.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert len(log) > 0 and log.live_bytes()[-1] == 0  # everything allocated was freed
    assert stopped < 10


# --- plan, advise, replay: the tool's numbers ------------------------------------------------------------------


def test_plan_has_the_numbers_of_the_tool(cli):
    p = dwsr.plan("gaussian", (64, 48, 128), chunk=(32, 24, 128), workers=2, threads=2, memory="64MiB")
    expected = cli_json(cli, "plan", "gaussian", "--shape", "64x48x128", "--chunk", "32x24x128", "--workers", "2",
                        "--threads", "2", "--memory", "64MiB")
    assert without_seconds(p.to_dict()) == without_seconds(expected)
    assert p.chunk == (32, 24, 128) and p.blocks == 4 and p.fits is True and p.budget_bytes == 64 << 20
    assert p.peak_bytes == max(w.peak_bytes for w in p.planned_workers)
    q = dwsr.plan("envelope", np.zeros((8, 8, 64), np.float32), allocator="host_malloc")
    assert q.shape == (8, 8, 64) and q.fits is None and q.allocator == "host_malloc"


def test_plan_of_a_dask_style_run_has_the_numbers_of_the_tool(cli):
    p = dwsr.plan("gaussian", (32, 24, 128), chunk=(16, 12, 128), workers=2, threads=2, memory="16MiB",
                  execution="dask", tasks="unfused")
    expected = cli_json(cli, "plan", "gaussian", "--shape", "32x24x128", "--chunk", "16x12x128", "--workers", "2",
                        "--threads", "2", "--memory", "16MiB", "--exec", "dask", "--tasks", "unfused")
    assert without_seconds(p.to_dict()) == without_seconds(expected)
    assert p.dask["tasks"] == "unfused" and p.dask["bound_bytes"] >= p.dask["schedule_peak_bytes"]
    assert dwsr.plan("gaussian", (8, 8, 64)).dask is None
    assert dwsr.plan("event_picks", (8, 8, 64)).peak_is_bound and not dwsr.plan("gaussian", (8, 8, 64)).peak_is_bound
    with pytest.raises(dwsr.InvalidInputError, match="needs execution 'dask'"):
        dwsr.plan("gaussian", (8, 8, 64), tasks="unfused")
    with pytest.raises(dwsr.InvalidInputError, match="expected 'dwsr' or 'dask'"):
        dwsr.plan("gaussian", (8, 8, 64), execution="spark")


def test_plan_events_are_worker_zeros_events():
    log = dwsr.EventLog()
    p = dwsr.plan("envelope", (16, 16, 128), chunk=(8, 16, 128), workers=2, events=log)
    assert len(log) == p.planned_workers[0].events
    assert log.peak_bytes == p.planned_workers[0].peak_bytes
    assert log.events[0].role == "input" and log.events[0].bytes == 8 * 16 * 128 * 4


def test_advise_has_the_numbers_of_the_tool(cli):
    a = dwsr.advise("envelope", (651, 951, 462), memory="2GiB", workers=4, threads=2)
    expected = cli_json(cli, "advise", "envelope", "--shape", "651x951x462", "--memory", "2GiB", "--workers", "4",
                        "--threads", "2")
    assert without_seconds(a.to_dict()) == without_seconds(expected)
    assert a.chunk == a.advice.chunk and a.advice.peak_bytes <= 2 << 30
    assert all(n.peak_bytes > 2 << 30 for n in a.next_larger)


def test_replay_has_the_numbers_of_the_tool(cli, tmp_path, cube):
    np.save(tmp_path / "cube.npy", cube)
    trace = tmp_path / "run.csv"
    subprocess.run([cli, "run", "gaussian", "-i", str(tmp_path / "cube.npy"), "-o", str(tmp_path / "out"),
                    "--chunk", "6x5x96", "--trace", str(trace)], check=True, capture_output=True)
    models = ["exact", "host_malloc", "torch_cuda_caching:expandable_segments:True"]
    r = dwsr.replay(trace, models, capacity="1GiB")
    expected = cli_json(cli, "replay", str(trace), *sum((["-a", m] for m in models), []), "--capacity", "1GiB")
    assert r.to_dict() == expected
    assert [m.spec for m in r.models] == models
    assert r.model("exact").peak_reserved == r.model("exact").devices[0].peak_allocated
    assert r.model("torch_cuda_caching").peak_reserved >= r.model("exact").peak_reserved


# --- errors ------------------------------------------------------------------------------------------------------


def test_errors_carry_the_libraries_messages(cube, tmp_path):
    with pytest.raises(dwsr.InvalidInputError, match="unknown operator 'envelop'"):
        dwsr.run("envelop", cube)
    with pytest.raises(dwsr.InvalidInputError, match="has no parameter"):
        dwsr.run("gaussian", cube, params={"sigma": 2})
    with pytest.raises(dwsr.InvalidInputError, match='unexpected key "colour"'):
        dwsr.run({"nodes": [{"name": "a", "op": "envelope", "colour": 1}]}, cube)
    with pytest.raises(dwsr.InvalidInputError, match="shape"):
        dwsr.plan("envelope", (0, 4, 4))
    with pytest.raises(dwsr.InvalidInputError, match="too small"):
        dwsr.advise("envelope", (64, 64, 512), memory="1KiB")
    with pytest.raises(dwsr.FileError):
        dwsr.replay(tmp_path / "missing.csv")
    (tmp_path / "bad.csv").write_text("action,id,bytes\nalloc,1,-5\n")
    with pytest.raises(dwsr.InvalidInputError, match="bad.csv"):
        dwsr.replay(tmp_path / "bad.csv")
    assert issubclass(dwsr.InvalidInputError, dwsr.Error) and issubclass(dwsr.InvalidInputError, ValueError)
    assert issubclass(dwsr.FileError, OSError) and issubclass(dwsr.OutOfMemoryError, MemoryError)


# --- the package -------------------------------------------------------------------------------------------------


def test_every_public_name_is_documented():
    for name in dwsr.__all__:
        obj = getattr(dwsr, name)
        if name == "__version__":
            assert obj.count(".") == 2
            continue
        assert inspect.getdoc(obj), name
    for fn in (dwsr.run, dwsr.plan, dwsr.advise, dwsr.replay, dwsr.operators, dwsr.graph_info):
        assert len(inspect.getdoc(fn)) > 80 and inspect.signature(fn).return_annotation != inspect.Signature.empty


def test_the_version_is_the_projects():
    from conftest import ROOT

    text = (ROOT / "CMakeLists.txt").read_text()
    assert f"project(dwsr VERSION {dwsr.__version__} " in text


# --- time: calibrate, and plan and advise with a profile ----------------------------------------------------------


def test_calibrate_writes_a_profile_that_plan_and_advise_predict_time_from(cli, tmp_path):
    path = tmp_path / "profile.json"
    doc = dwsr.calibrate(quick=True, ops=["envelope", "gaussian"], threads=[1], output=path)
    assert doc["path"] == str(path) and set(doc["operators"]) == {"envelope", "gaussian"}
    assert json.loads(path.read_text())["operators"] == doc["operators"]
    p = dwsr.plan("envelope", (64, 64, 256), chunk=(16, 64, 256), workers=2, profile=path)
    assert p.predicted_seconds > 0 and p.idle_workers == 0
    expected = cli_json(cli, "plan", "envelope", "--shape", "64x64x256", "--chunk", "16x64x256", "--workers", "2",
                        "--profile", str(path))
    assert without_seconds(p.to_dict()) == without_seconds(expected)
    # Four workers with a core each: the whole cube fits, but one block would leave three of them idle.
    a = dwsr.advise("envelope", (64, 64, 256), memory="64MiB", workers=4, profile=path, cores=4)
    assert a.objective == "time" and a.advice.idle_workers == 0 and a.advice.blocks >= 4
    assert a.largest.blocks < 4 and a.advice.predicted_seconds < a.largest.predicted_seconds
    expected = cli_json(cli, "advise", "envelope", "--shape", "64x64x256", "--memory", "64MiB", "--workers", "4",
                        "--profile", str(path), "--cores", "4")
    assert without_seconds(a.to_dict()) == without_seconds(expected)
    assert dwsr.advise("envelope", (64, 64, 256), memory="64MiB", workers=4, profile=path, cores=4,
                       objective="largest").advice == a.largest
    with pytest.raises(dwsr.InvalidInputError, match="has no figures for operator 'median'"):
        dwsr.plan("median", (8, 8, 64), profile=path)
    with pytest.raises(dwsr.FileError, match="needs a time profile"):
        dwsr.advise("envelope", (64, 64, 256), memory="64MiB", objective="time")  # no profile by default in tests


# --- tables ------------------------------------------------------------------------------------------------------


def test_event_picks_returns_its_table_as_a_structured_array_of_the_pick_rule():
    cube = make_cube((5, 4, 80), seed=9)
    picks = dwsr.run("event_picks", cube, params={"threshold": 0.2})["event_picks_picks"]
    assert picks.dtype.names == ("inline", "crossline", "sample", "value")
    # The rule on noise (no plateaus): a sample above the threshold, above both neighbours.
    v = cube[:, :, 1:-1]
    hit = (v > 0.2) & (cube[:, :, :-2] < v) & (cube[:, :, 2:] < v)
    i, x, t = np.nonzero(hit)
    assert len(picks) == len(i) > 50
    assert np.array_equal(picks["inline"], i) and np.array_equal(picks["crossline"], x)
    assert np.array_equal(picks["sample"], t + 1)
    assert np.array_equal(picks["value"], v[hit])
    info = {o.name: o for o in dwsr.operators()}["event_picks"]
    assert info.outputs == [] and info.tables[0].columns[3] == ("value", "<f4")


def test_geobodies_table_counts_the_voxels_of_each_label():
    cube = make_cube((6, 6, 40), seed=2)
    result = dwsr.run("geobodies", cube, params={"threshold": 0.5})
    labels, bodies = result["geobodies"], result["geobodies_bodies"]
    assert len(bodies) == labels.max() > 3
    assert np.array_equal(np.bincount(labels.ravel())[1:], bodies["voxels"])
    first = [np.argwhere(labels == k + 1)[0] for k in range(len(bodies))]
    assert np.array_equal(np.stack([bodies["inline"], bodies["crossline"], bodies["sample"]], axis=1), first)
    assert result.measured_peak_bytes <= result.planned_peak_bytes
