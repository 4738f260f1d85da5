#!/usr/bin/env python3
"""Times the CuPy formulations of seismic attributes that DASF-like code runs on GPUs.

The baseline for dwsr's CUDA operators: for each cube shape and operator it
measures the median time of a few runs (CUDA events around the call) and the
peak device memory of one run (a CuPy memory hook counting the pool's live
bytes, with the input cube already allocated), and writes one JSON document.

Shapes are ``inline x crossline x time``; time is the last, fastest (C-order)
axis. The cube is float32 standard normal noise from
``numpy.random.default_rng(seed)``, moved to the GPU once per shape.

Example::

    python3 scripts/gpu/cupy_attributes.py --shapes 256x256x256,512x512x1024 \\
        --repeats 5 --seed 7 --out cupy.json

Exit status: 0 when the JSON document was written (failed operators are
entries of its "errors"), 2 for bad arguments, 1 when the document could not
be written.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any, Callable

from gpu_common import COMPARED_OPS, ArgumentParser, UsageError, error_entry, log, run_script, write_json


#: The smoothing weights that the reference's FirstDerivative applies across inline and crossline.
SMOOTHING_WEIGHTS = (0.178947, 0.642105, 0.178947)
#: The central difference along time.
DERIVATIVE_WEIGHTS = (-0.5, 0.0, 0.5)
#: numpy.trapz over 9 samples as correlation weights (reflection_intensity).
TRAPEZOID_WEIGHTS = (0.5, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.5)
#: How the JSON names the own analytic-signal formulation.
OWN_HILBERT = "own fft/ifft (scipy.signal.hilbert's definition)"


def parse_shapes(text: str) -> list[tuple[int, int, int]]:
    """Parses ``"256x256x256,512x512x1024"`` into (inline, crossline, time) triples."""
    shapes = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        parts = item.lower().split("x")
        if len(parts) != 3 or not all(p.strip().isdigit() for p in parts):
            raise UsageError(f"shape '{item}': expected INLINExCROSSLINExTIME, e.g. 256x256x256")
        shape = tuple(int(p) for p in parts)
        if min(shape) < 1:
            raise UsageError(f"shape '{item}': every extent must be at least 1")
        shapes.append(shape)
    if not shapes:
        raise UsageError("--shapes: no shape given")
    return shapes


def parse_ops(text: str | None) -> list[str]:
    """Parses a comma-separated list of operator names (None: all of them)."""
    if text is None or not text.strip():
        return list(COMPARED_OPS)
    ops = [o.strip() for o in text.split(",") if o.strip()]
    unknown = [o for o in ops if o not in COMPARED_OPS]
    if unknown:
        raise UsageError(f"unknown op(s) {', '.join(unknown)}; expected some of {', '.join(COMPARED_OPS)}")
    return ops


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line (UsageError for values that argparse accepts but are wrong)."""
    p = ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", default="256x256x256,512x512x1024", help="INLINExCROSSLINExTIME, comma-separated")
    p.add_argument("--ops", default=None, help="comma-separated subset of: " + ",".join(COMPARED_OPS) + " (default: all)")
    p.add_argument("--repeats", type=int, default=5, help="timed runs per operator (after one warm-up run)")
    p.add_argument("--seed", type=int, default=7, help="seed of numpy's default_rng for the input cube")
    p.add_argument("--out", default="cupy.json", help="the JSON document to write")
    p.add_argument(
        "--max-op-seconds",
        type=float,
        default=60.0,
        help="fewer timed runs (at least 1) when the warm-up says the repeats would take longer than this",
    )
    p.add_argument(
        "--budget-s",
        type=float,
        default=0.0,
        help="skip the (shape, op) pairs not started after this many seconds (0: no limit); each is an error entry",
    )
    a = p.parse_args(argv)
    a.shape_list = parse_shapes(a.shapes)
    a.op_list = parse_ops(a.ops)
    if a.repeats < 1:
        raise UsageError(f"--repeats {a.repeats}: at least 1")
    out_dir = os.path.dirname(os.path.abspath(a.out))
    if not os.path.isdir(out_dir):
        raise UsageError(f"--out {a.out}: folder {out_dir} does not exist")
    return a


# ---------------------------------------------------------------------------
# The formulations
# ---------------------------------------------------------------------------


def hilbert_own(cp: Any, x: Any) -> Any:
    """The analytic signal along the last axis, as scipy.signal.hilbert defines it, in single precision.

    X = fft(x); h = 1 at 0, 2 on the positive frequencies, 1 at Nyquist (even
    n), 0 on the negative ones; a = ifft(X * h). cupy.fft keeps float32 input
    in complex64, and a float32 h keeps the product complex64.
    """
    n = x.shape[-1]
    h = cp.zeros(n, dtype=cp.float32)
    h[0] = 1.0
    if n % 2 == 0:
        h[1 : n // 2] = 2.0
        h[n // 2] = 1.0
    else:
        h[1 : (n + 1) // 2] = 2.0
    spectrum = cp.fft.fft(x, axis=-1)
    return cp.fft.ifft(spectrum * h, axis=-1)


class Formulations:
    """The CuPy formulation of each operator, bound to one CuPy module.

    `hilbert_source` says which analytic signal is used: "cupyx.scipy.signal.hilbert"
    when it exists and keeps complex64, else "own fft/ifft (scipy.signal.hilbert's definition)".
    """

    def __init__(self, cp: Any, ndimage: Any, signal: Any | None):
        self.cp = cp
        self.ndimage = ndimage
        self.signal = signal
        has_hilbert = signal is not None and hasattr(signal, "hilbert")
        self.hilbert_source = "cupyx.scipy.signal.hilbert" if has_hilbert else OWN_HILBERT
        self.hilbert_note = ""
        self._derivative = cp.asarray(DERIVATIVE_WEIGHTS, dtype=cp.float32)
        self._smoothing = cp.asarray(SMOOTHING_WEIGHTS, dtype=cp.float32)
        self._trapezoid = cp.asarray(TRAPEZOID_WEIGHTS, dtype=cp.float32)

    def check_hilbert(self, x: Any) -> None:
        """Falls back to the own formulation when cupyx's hilbert fails or leaves single precision on `x`."""
        if not self.hilbert_source.startswith("cupyx"):
            return
        try:
            a = self.signal.hilbert(x[:1, :1, :], axis=-1)
            dtype = str(a.dtype)
            del a
        except Exception as exc:  # noqa: BLE001 - any failure means: use the own formulation
            self.hilbert_note = f"cupyx.scipy.signal.hilbert failed ({type(exc).__name__}: {exc}); own formulation used"
            self.hilbert_source = OWN_HILBERT
            return
        if dtype != "complex64":
            self.hilbert_note = f"cupyx.scipy.signal.hilbert returned {dtype} on float32; own formulation used"
            self.hilbert_source = OWN_HILBERT

    def hilbert(self, x: Any) -> Any:
        """The analytic signal along time (complex64)."""
        if self.hilbert_source.startswith("cupyx"):
            return self.signal.hilbert(x, axis=-1)
        return hilbert_own(self.cp, x)

    def envelope(self, x: Any) -> Any:
        """abs(analytic signal)."""
        return self.cp.abs(self.hilbert(x))

    def instantaneous_phase(self, x: Any) -> Any:
        """The analytic signal's angle in degrees."""
        return self.cp.rad2deg(self.cp.angle(self.hilbert(x)))

    def cosine_instantaneous_phase(self, x: Any) -> Any:
        """cos of the analytic signal's angle."""
        return self.cp.cos(self.cp.angle(self.hilbert(x)))

    def gaussian(self, x: Any) -> Any:
        """A Gaussian filter, sigma 1 on each axis, reflected borders, truncated at 4 sigma."""
        return self.ndimage.gaussian_filter(x, sigma=1.0, mode="reflect", truncate=4.0)

    def median(self, x: Any) -> Any:
        """The median of each 3x3x3 neighbourhood, reflected borders."""
        return self.ndimage.median_filter(x, size=(3, 3, 3), mode="reflect")

    def rms(self, x: Any) -> Any:
        """The root mean square over 9 samples along time."""
        return self.cp.sqrt(self.ndimage.uniform_filter1d(x * x, size=9, axis=-1, mode="reflect"))

    def first_derivative(self, x: Any, axis: int = 2) -> Any:
        """The central difference along `axis` (time by default), smoothed along the two others."""
        nd = self.ndimage
        d = nd.correlate1d(x, self._derivative, axis=axis, mode="reflect")
        for other in range(3):
            if other != axis:
                d = nd.correlate1d(d, self._smoothing, axis=other, mode="reflect")
        return d

    def relative_amplitude_change(self, x: Any) -> Any:
        """clip(first_derivative(envelope) / envelope, -1, 1), NaN -> 0."""
        cp = self.cp
        env = self.envelope(x)
        return cp.clip(cp.nan_to_num(self.first_derivative(env) / env, nan=0.0), -1.0, 1.0)

    def instantaneous_frequency(self, x: Any, fs: float = 250.0) -> Any:
        """|first_derivative(unwrap(phase))| / 2 pi * fs (fs: dwsr's default, 4 ms)."""
        cp = self.cp
        phase = cp.unwrap(cp.angle(self.hilbert(x)), axis=-1)
        return cp.abs(self.first_derivative(phase) / (2 * cp.pi) * fs)

    def sweetness(self, x: Any) -> Any:
        """envelope / max(instantaneous frequency, 5)."""
        cp = self.cp
        f = self.instantaneous_frequency(x)
        return self.envelope(x) / cp.maximum(f, 5.0)

    def semblance(self, x: Any) -> Any:
        """Over 3x3 traces and 9 samples: sum_t (sum of traces)^2 / sum_t (sum of squares) / 9, NaN -> 0."""
        nd = self.ndimage
        traces = nd.uniform_filter(x, size=(3, 3, 1), mode="reflect")
        squares = nd.uniform_filter(x * x, size=(3, 3, 1), mode="reflect")
        num = nd.uniform_filter1d(traces * traces, size=9, axis=-1, mode="reflect")
        den = nd.uniform_filter1d(squares, size=9, axis=-1, mode="reflect")
        return self.cp.nan_to_num(num / den)

    def reflection_intensity(self, x: Any) -> Any:
        """The trapezoid integral over the 9 samples around each along time, NaN -> 0."""
        return self.cp.nan_to_num(self.ndimage.correlate1d(x, self._trapezoid, axis=-1, mode="reflect"))

    def time_gain(self, x: Any) -> Any:
        """x (1 + cumsum(ones along time))^1.5, as the reference writes it."""
        cp = self.cp
        return x * (1 + cp.cumsum(cp.ones_like(x), axis=-1)) ** cp.float32(1.5)

    def gradient_magnitude(self, x: Any) -> Any:
        """The gaussian gradient magnitude, sigma 1 on each axis, reflected borders, truncated at 4 sigma."""
        return self.ndimage.gaussian_gradient_magnitude(x, sigma=1.0, mode="reflect", truncate=4.0)

    def gradient_dips(self, x: Any) -> tuple:
        """-gi/gk * 10 and -gj/gk * 10 (NaN -> 0), each 3x3x3-median-filtered."""
        cp, nd = self.cp, self.ndimage
        gi, gj, gk = (self.first_derivative(x, a) for a in range(3))
        il = cp.nan_to_num(-gi / gk * cp.float32(10), nan=0.0, posinf=cp.inf, neginf=-cp.inf)
        xl = cp.nan_to_num(-gj / gk * cp.float32(10), nan=0.0, posinf=cp.inf, neginf=-cp.inf)
        del gi, gj, gk
        return nd.median_filter(il, size=(3, 3, 3), mode="reflect"), nd.median_filter(xl, size=(3, 3, 3), mode="reflect")

    def gradient_structure_tensor(self, x: Any) -> tuple:
        """The six products of the three gradients, each smoothed by a 3x3x3 uniform filter."""
        nd = self.ndimage
        g = [self.first_derivative(x, a) for a in range(3)]
        pairs = ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))
        return tuple(nd.uniform_filter(g[a] * g[b], size=3, mode="reflect") for a, b in pairs)

    def lowpass_filter(self, x: Any) -> Any:
        """Order-6 Butterworth lowpass at 30 Hz (4 ms samples), zero-phase along time: the reference's filtfilt
        with float32 coefficients."""
        b, a = self.signal.butter(6, 30.0 / 125.0, btype="low")
        return self.signal.filtfilt(b.astype(x.dtype), a.astype(x.dtype), x, axis=-1)

    def bandpass_filter(self, x: Any) -> Any:
        """Order-6 Butterworth bandpass 10-60 Hz (4 ms samples), zero-phase along time: the reference's filtfilt
        with float32 coefficients."""
        b, a = self.signal.butter(6, [10.0 / 125.0, 60.0 / 125.0], btype="band")
        return self.signal.filtfilt(b.astype(x.dtype), a.astype(x.dtype), x, axis=-1)

    def wavelet_convolution(self, x: Any, wavelet: Callable[[Any], Any]) -> Any:
        """Every trace convolved (mode 'same') with wavelet(t) on the reference's axis numpy.arange(-0.256, 0.256,
        0.004), the taps in x's type: fftconvolve along time."""
        w = wavelet(self.cp.arange(-0.256, 0.256, 0.004)).astype(x.dtype)
        return self.signal.fftconvolve(x, w[None, None, :], mode="same", axes=-1)

    def cwt_ricker(self, x: Any) -> Any:
        """The 25 Hz Ricker wavelet (1 - 2 (pi f t)^2) exp(-(pi f t)^2)."""
        cp = self.cp

        def ricker(t: Any) -> Any:
            a = (cp.pi * 25.0 * t) ** 2
            return (1 - 2 * a) * cp.exp(-a)

        return self.wavelet_convolution(x, ricker)

    def cwt_ormsby(self, x: Any) -> Any:
        """The reference's Ormsby wavelet for 5, 10, 40, 60 Hz: (pi f)^2 / (pi df) sinc(pi f t)^2 terms."""
        cp = self.cp
        p1, p2, p3, p4 = (cp.pi * f for f in (5.0, 10.0, 40.0, 60.0))

        def ormsby(t: Any) -> Any:
            def term(pf: float, width: float) -> Any:
                return pf * pf / width * cp.sinc(pf * t) ** 2

            return (term(p4, p4 - p3) - term(p3, p4 - p3)) - (term(p2, p2 - p1) - term(p1, p2 - p1))

        return self.wavelet_convolution(x, ormsby)

    def function(self, op: str) -> Callable[[Any], Any]:
        """The formulation of `op`."""
        return getattr(self, op)

    def formulation(self, op: str) -> str:
        """A sentence naming what `op` runs."""
        h = self.hilbert_source
        return {
            "hilbert": h,
            "envelope": f"cupy.abs({h})",
            "instantaneous_phase": f"cupy.rad2deg(cupy.angle({h}))",
            "cosine_instantaneous_phase": f"cupy.cos(cupy.angle({h}))",
            "gaussian": "cupyx.scipy.ndimage.gaussian_filter(x, sigma=1.0, mode='reflect', truncate=4.0)",
            "median": "cupyx.scipy.ndimage.median_filter(x, size=(3,3,3), mode='reflect')",
            "rms": "cupy.sqrt(cupyx.scipy.ndimage.uniform_filter1d(x*x, size=9, axis=-1, mode='reflect'))",
            "first_derivative": "correlate1d(x, [-0.5,0,0.5], axis=-1), then correlate1d with "
            "[0.178947,0.642105,0.178947] along axis 0 and axis 1 (mode='reflect', float32 weights)",
            "relative_amplitude_change": f"cupy.clip(nan_to_num(first_derivative(env) / env), -1, 1), env = cupy.abs({h})",
            "instantaneous_frequency": f"cupy.abs(first_derivative(cupy.unwrap(cupy.angle({h}))) / (2 pi) * 250)",
            "sweetness": "envelope(x) / cupy.maximum(instantaneous_frequency(x), 5), each its own analytic signal",
            "reflection_intensity": "nan_to_num(correlate1d(x, [0.5,1,1,1,1,1,1,1,0.5], axis=-1, mode='reflect'))",
            "time_gain": "x * (1 + cupy.cumsum(cupy.ones_like(x), axis=-1)) ** 1.5",
            "gradient_magnitude": "cupyx.scipy.ndimage.gaussian_gradient_magnitude(x, sigma=1.0, mode='reflect', "
            "truncate=4.0)",
            "gradient_dips": "g_a = first_derivative along axis a; median_filter(nan_to_num(-g_0 / g_2 * 10), 3x3x3) "
            "and the same of -g_1 / g_2 * 10",
            "gradient_structure_tensor": "g_a = first_derivative along axis a; uniform_filter(g_a * g_b, size=3) for "
            "the six pairs (mode='reflect')",
            "lowpass_filter": "b, a = cupyx.scipy.signal.butter(6, 30/125); filtfilt(b, a, x, axis=-1), b and a float32 as the "
            "reference casts them",
            "bandpass_filter": "b, a = cupyx.scipy.signal.butter(6, [10/125, 60/125], btype='band'); filtfilt(b, a, x, axis=-1), b and a "
            "float32",
            "cwt_ricker": "cupyx.scipy.signal.fftconvolve(x, w, mode='same', axes=-1), w the 25 Hz Ricker wavelet on "
            "arange(-0.256, 0.256, 0.004), float32",
            "cwt_ormsby": "cupyx.scipy.signal.fftconvolve(x, w, mode='same', axes=-1), w the reference's 5-10-40-60 Hz "
            "Ormsby wavelet on arange(-0.256, 0.256, 0.004), float32",
            "semblance": "m = uniform_filter(x, (3,3,1)), q = uniform_filter(x*x, (3,3,1)), then "
            "nan_to_num(uniform_filter1d(m*m, 9) / uniform_filter1d(q, 9)) (mode='reflect'; the 9s cancel)",
        }[op]


# ---------------------------------------------------------------------------
# Memory measurement
# ---------------------------------------------------------------------------


def memory_hook_base(cp: Any) -> type | None:
    """CuPy's MemoryHook class, or None when this CuPy has none."""
    module = getattr(cp.cuda, "memory_hook", None)
    base = getattr(module, "MemoryHook", None) if module is not None else None
    return base if base is not None else getattr(cp.cuda, "MemoryHook", None)


def make_peak_hook(cp: Any, pool: Any) -> Any | None:
    """A memory hook counting the pool's live bytes (rounded and requested) and their peaks, or None.

    Live rounded bytes rise by mem_size at each successful malloc from the
    pool and fall by mem_size at each free to it, as pool.used_bytes() does;
    the pool's total_bytes() is sampled after each malloc, the only time it grows.
    """
    base = memory_hook_base(cp)
    if base is None or not all(hasattr(base, m) for m in ("malloc_postprocess", "free_postprocess")):
        return None

    class PeakHook(base):  # type: ignore[misc, valid-type]
        """Live and peak bytes of one pool while registered (``with hook:``)."""

        name = "dwsr_cupy_attributes_peak"

        def __init__(self) -> None:
            self.live = 0
            self.peak = 0
            self.live_requested = 0
            self.peak_requested = 0
            self.peak_total = pool.total_bytes()
            self.mallocs = 0
            self.frees = 0
            self._requested: dict[int, int] = {}

        def malloc_postprocess(self, **kw: Any) -> None:
            ptr = kw.get("mem_ptr", 0)
            if not ptr:
                return  # the malloc failed
            size = int(kw.get("mem_size", kw.get("size", 0)))
            requested = int(kw.get("size", size))
            self.mallocs += 1
            self.live += size
            self.live_requested += requested
            self._requested[ptr] = requested
            self.peak = max(self.peak, self.live)
            self.peak_requested = max(self.peak_requested, self.live_requested)
            self.peak_total = max(self.peak_total, pool.total_bytes())

        def free_postprocess(self, **kw: Any) -> None:
            self.frees += 1
            self.live -= int(kw.get("mem_size", 0))
            self.live_requested -= self._requested.pop(kw.get("mem_ptr", 0), 0)

    return PeakHook()


def clear_fft_plans(cp: Any) -> None:
    """Empties CuPy's cuFFT plan cache (its work areas live in the memory pool)."""
    try:
        cp.fft.config.get_plan_cache().clear()
    except Exception:  # noqa: BLE001 - an old CuPy without a plan cache holds nothing to clear
        pass


def mem_get_info(cp: Any) -> dict:
    """cudaMemGetInfo: free and total device bytes."""
    free, total = cp.cuda.runtime.memGetInfo()
    return {"free": int(free), "total": int(total), "used": int(total - free)}


def as_outputs(out: Any) -> tuple:
    """An operator's outputs as a tuple (the multi-output formulations return one)."""
    return out if isinstance(out, tuple) else (out,)


def measure_memory(cp: Any, pool: Any, fn: Callable[[Any], Any], x: Any) -> dict:
    """Peak device memory of one run of fn(x), starting from an emptied pool holding only x.

    The FFT plan cache is emptied first, so a plan's work area counts in the
    run that creates it. Peaks include the input cube ("includes_input": true).
    """
    cp.cuda.Device().synchronize()
    clear_fft_plans(cp)
    pool.free_all_blocks()
    baseline_used, baseline_total = pool.used_bytes(), pool.total_bytes()
    before = mem_get_info(cp)
    hook = make_peak_hook(cp, pool)
    out_dtype = out_shape = None
    if hook is not None:
        with hook:
            out = fn(x)
            cp.cuda.Device().synchronize()
            out_dtype, out_shape = str(as_outputs(out)[0].dtype), list(as_outputs(out)[0].shape)
            after_call_used = pool.used_bytes()
            del out
            cp.cuda.Device().synchronize()
        peak_used = baseline_used + hook.peak
        peak_requested = baseline_used + hook.peak_requested
        peak_total = hook.peak_total
        method = "memory_hook"
        hook_counts = {"mallocs": hook.mallocs, "frees": hook.frees, "live_after": hook.live}
    else:
        out = fn(x)
        cp.cuda.Device().synchronize()
        out_dtype, out_shape = str(as_outputs(out)[0].dtype), list(as_outputs(out)[0].shape)
        after_call_used = pool.used_bytes()
        del out
        peak_used = after_call_used
        peak_requested = None
        peak_total = pool.total_bytes()
        method = "poll: pool.used_bytes() after the call, output alive (a lower bound of the peak)"
        hook_counts = None
    after = mem_get_info(cp)
    return {
        "peak_used_bytes": int(peak_used),
        "peak_requested_bytes": None if peak_requested is None else int(peak_requested),
        "peak_total_bytes": int(peak_total),
        "baseline_used_bytes": int(baseline_used),
        "baseline_total_bytes": int(baseline_total),
        "used_bytes_after_call": int(after_call_used),
        "includes_input": True,
        "peak_method": method,
        "hook_counts": hook_counts,
        "memgetinfo_before": before,
        "memgetinfo_after": after,
        "memgetinfo_used_delta_bytes": after["used"] - before["used"],
        "output_dtype": out_dtype,
        "output_shape": out_shape,
    }


# ---------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------


def time_runs(cp: Any, fn: Callable[[Any], Any], x: Any, repeats: int) -> list[float]:
    """Seconds of `repeats` runs of fn(x), each between two CUDA events on the current stream."""
    seconds = []
    for _ in range(repeats):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        out = fn(x)
        end.record()
        end.synchronize()
        seconds.append(cp.cuda.get_elapsed_time(start, end) / 1000.0)
        del out
    return seconds


def warm_up(cp: Any, fn: Callable[[Any], Any], x: Any) -> tuple[float, bool]:
    """Runs fn(x) once (kernel compilation, FFT plans): its wall seconds, and whether every output value is finite."""
    t0 = time.perf_counter()
    out = fn(x)
    cp.cuda.Device().synchronize()
    seconds = time.perf_counter() - t0
    finite = all(bool(cp.isfinite(o).all()) for o in as_outputs(out))
    del out
    return seconds, finite


def run_op(cp: Any, pool: Any, forms: Formulations, op: str, x: Any, args: argparse.Namespace) -> dict:
    """Warm-up, one memory run, then the timed runs of one operator on cube x: its result entry."""
    fn = forms.function(op)
    warm_s, finite = warm_up(cp, fn, x)
    memory = measure_memory(cp, pool, fn, x)
    repeats = args.repeats
    if warm_s * repeats > args.max_op_seconds:
        repeats = max(1, int(args.max_op_seconds / max(warm_s, 1e-9)))
    seconds = time_runs(cp, fn, x, repeats)
    voxels = int(x.size)
    median = statistics.median(seconds)
    return {
        "op": op,
        "shape": list(x.shape),
        "voxels": voxels,
        "seconds_median": median,
        "seconds_all": seconds,
        "voxels_per_s": voxels / median if median > 0 else None,
        "repeats": repeats,
        "warmup_wall_seconds": warm_s,
        "all_finite": finite,
        "input_bytes": int(x.nbytes),
        "formulation": forms.formulation(op),
        **memory,
    }


def make_input(cp: Any, np: Any, shape: tuple[int, int, int], seed: int) -> Any:
    """The float32 standard normal cube of `shape` from default_rng(seed), on the GPU."""
    host = np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)
    x = cp.asarray(host)
    del host
    cp.cuda.Device().synchronize()
    return x


def device_name(cp: Any) -> str:
    """The current GPU's name."""
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    name = props.get("name", b"?")
    return name.decode(errors="replace") if isinstance(name, bytes) else str(name)


def free_pool(cp: Any, pool: Any) -> None:
    """Returns the pool's cached blocks and the FFT plans to the device."""
    try:
        cp.cuda.Device().synchronize()
        clear_fft_plans(cp)
        pool.free_all_blocks()
    except Exception:  # noqa: BLE001 - best effort between operators
        pass


def run_shape(cp: Any, np: Any, pool: Any, forms: Formulations, shape: tuple, args: argparse.Namespace,
              document: dict, started: float) -> None:
    """Every requested operator on one shape; results and errors go into `document` (rewritten after each)."""
    label = "x".join(map(str, shape))
    log(f"shape {label}: making the input cube (seed {args.seed})")
    try:
        x = make_input(cp, np, shape, args.seed)
    except Exception as exc:  # noqa: BLE001 - e.g. out of memory: every op of this shape fails
        document["errors"].append(error_entry({"shape": list(shape), "op": None, "stage": "input"}, exc))
        log(f"shape {label}: input failed: {type(exc).__name__}: {exc}")
        free_pool(cp, pool)
        return
    if forms.hilbert_note == "" and forms.hilbert_source.startswith("cupyx"):
        forms.check_hilbert(x)
        if forms.hilbert_note:
            log(forms.hilbert_note)
    for op in args.op_list:
        where = {"shape": list(shape), "op": op}
        if args.budget_s > 0 and time.perf_counter() - started > args.budget_s:
            document["errors"].append({**where, "type": "skipped", "message": f"--budget-s {args.budget_s} spent"})
            log(f"shape {label} {op}: skipped (budget spent)")
            continue
        try:
            r = run_op(cp, pool, forms, op, x, args)
            document["results"].append(r)
            log(
                f"shape {label} {op}: {r['seconds_median'] * 1e3:.2f} ms median of {r['repeats']}, "
                f"{r['voxels_per_s'] / 1e9:.3f} Gvoxel/s, peak used {r['peak_used_bytes'] / 2**20:.1f} MiB "
                f"(input {r['input_bytes'] / 2**20:.1f} MiB), {r['output_dtype']}, finite {r['all_finite']}"
            )
        except Exception as exc:  # noqa: BLE001 - recorded; the other operators go on
            document["errors"].append(error_entry(where, exc))
            log(f"shape {label} {op}: FAILED {type(exc).__name__}: {str(exc)[:300]}")
        free_pool(cp, pool)
        write_json(args.out, document)
    del x
    free_pool(cp, pool)


def run(args: argparse.Namespace) -> dict:
    """Runs every (shape, op) pair; the JSON document (also written to args.out as it grows)."""
    document: dict = {"device": None, "cupy": None, "numpy": None, "seed": args.seed, "repeats": args.repeats,
                      "hilbert": None, "results": [], "errors": []}
    started = time.perf_counter()
    try:
        import cupy as cp
        import cupyx.scipy.ndimage as ndimage
        import numpy as np
    except Exception as exc:  # noqa: BLE001 - recorded, nothing else can run
        document["errors"].append(error_entry({"stage": "import"}, exc))
        log(f"cannot import cupy/numpy: {exc}")
        return document
    try:
        import cupyx.scipy.signal as signal
    except Exception:  # noqa: BLE001 - the own hilbert formulation is used
        signal = None
    document["cupy"], document["numpy"] = cp.__version__, np.__version__
    try:
        document["device"] = device_name(cp)
        document["cuda_runtime"] = int(cp.cuda.runtime.runtimeGetVersion())
        pool = cp.get_default_memory_pool()
        forms = Formulations(cp, ndimage, signal)
    except Exception as exc:  # noqa: BLE001 - no usable GPU
        document["errors"].append(error_entry({"stage": "device"}, exc))
        log(f"no usable GPU: {exc}")
        return document
    log(f"device {document['device']}, cupy {cp.__version__}, numpy {np.__version__}")
    for shape in args.shape_list:
        run_shape(cp, np, pool, forms, shape, args, document, started)
        document["hilbert"] = {"source": forms.hilbert_source, "note": forms.hilbert_note}
    document["hilbert"] = {"source": forms.hilbert_source, "note": forms.hilbert_note}
    document["wall_seconds"] = time.perf_counter() - started
    return document


def main(argv: list[str] | None = None) -> int:
    """Parses the arguments, runs, writes the JSON document; the exit status."""
    return run_script("cupy_attributes.py", argv, parse_args, run,
                      lambda args, document: f"wrote {args.out}: {len(document['results'])} results, "
                                             f"{len(document['errors'])} errors")


if __name__ == "__main__":
    sys.exit(main())
