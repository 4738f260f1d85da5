"""Shared fixtures: a small deterministic cube and the command-line tool to compare with."""

from __future__ import annotations

import os
import pathlib
import shutil

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

# No test sees the user's time profile (the tool and the package read it by default); one that wants a profile
# passes its own. Child processes (the tool, Dask workers) inherit this.
os.environ["DWSR_TIME_PROFILE"] = str(ROOT / "build" / "no-time-profile.json")


def make_cube(shape=(12, 10, 96), seed=7) -> np.ndarray:
    """Sparse reflectivity convolved with a 25 Hz Ricker wavelet (4 ms) plus 5 % noise, float32."""
    rng = np.random.default_rng(seed)
    refl = rng.standard_normal(shape) * (rng.random(shape) < 0.1)
    t = (np.arange(-16, 17) * 0.004)
    a = (np.pi * 25.0 * t) ** 2
    ricker = (1 - 2 * a) * np.exp(-a)
    trace = np.apply_along_axis(lambda x: np.convolve(x, ricker, mode="same"), 2, refl)
    cube = trace + 0.05 * rng.standard_normal(shape)
    return np.ascontiguousarray(cube, dtype=np.float32)


@pytest.fixture(scope="session")
def cube() -> np.ndarray:
    return make_cube()


@pytest.fixture(scope="session")
def cli() -> str:
    """The dwsr tool: $DWSR_CLI, the Release build of this checkout, or `dwsr` on PATH.

    The test command sets DWSR_CLI, so these comparisons always run in CI.
    """
    candidates = [os.environ.get("DWSR_CLI"), str(ROOT / "build" / "apps" / "dwsr" / "dwsr"), shutil.which("dwsr")]
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    if os.environ.get("DWSR_REQUIRE_CLI"):
        pytest.fail("DWSR_REQUIRE_CLI is set but no dwsr tool was found (set DWSR_CLI)")
    pytest.skip("the dwsr command-line tool is not built; set DWSR_CLI")
