"""EventLog.write_trace: a log becomes a dwsr trace that replay reads with the same numbers."""

import numpy as np
import pytest

import dwsr


def _cube():
    return np.random.default_rng(3).standard_normal((16, 16, 128)).astype(np.float32)


def test_a_run_log_replays_to_its_measured_peak(tmp_path):
    log = dwsr.EventLog()
    result = dwsr.run("gst_3d_dip", _cube(), events=log)
    path = tmp_path / "run.csv"
    log.write_trace(path)
    lines = path.read_text().splitlines()
    assert lines[0] == "action,id,bytes,device,node,role"
    assert len(lines) == len(log) + 1
    exact = dwsr.replay(path, ["exact"]).model("exact").devices[0]
    assert exact.peak_reserved == result.measured_peak_bytes


def test_a_plan_log_replays_to_the_planned_peak(tmp_path):
    log = dwsr.EventLog()
    plan = dwsr.plan("envelope", (40, 30, 64), chunk=(16, 16, 64), events=log)
    log.write_trace(tmp_path / "plan.csv")
    assert dwsr.replay(tmp_path / "plan.csv").models[0].peak_reserved == plan.planned_workers[0].peak_bytes


def test_runs_one_after_another_are_numbered_apart(tmp_path):
    log = dwsr.EventLog()
    cube = _cube()
    first = dwsr.run("envelope", cube, events=log)
    del first  # its output is freed: the second run may reuse its buffer ids
    second = dwsr.run("envelope", cube, events=log)
    log.write_trace(tmp_path / "two.csv")
    ids = [int(line.split(",")[1]) for line in (tmp_path / "two.csv").read_text().splitlines()[1:]
           if line.startswith("alloc")]
    assert ids == list(range(1, len(ids) + 1))
    assert second.output.shape == cube.shape


def test_overlapping_runs_in_one_log_are_refused_and_nothing_is_written(tmp_path):
    log = dwsr.EventLog()
    cube = _cube()
    kept = [dwsr.run("envelope", cube, events=log), dwsr.run("envelope", cube, events=log)]
    with pytest.raises(dwsr.InvalidInputError, match="own EventLog"):
        log.write_trace(tmp_path / "both.csv")
    assert list(tmp_path.iterdir()) == []
    assert len(kept) == 2


def test_an_unwritable_path_is_a_file_error(tmp_path):
    log = dwsr.EventLog()
    dwsr.plan("envelope", (8, 8, 64), events=log)
    with pytest.raises(dwsr.FileError, match="cannot write"):
        log.write_trace(tmp_path / "missing" / "t.csv")
