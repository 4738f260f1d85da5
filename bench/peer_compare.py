#!/usr/bin/env python3
"""dwsr against the NumPy/SciPy formulation of every operator, end to end, on one cube.

For each operator of dwsr's catalogue (or those named by --ops), on the same
float32 cube: the NumPy/SciPy formulation of the DASF peer's CPU path (its
`_transform_cpu`: the same library calls, parameters, axes and intermediates,
written here from the published math), end to end in this process (np.load,
compute, np.save of every output), and `dwsr run <op> --threads 1 --no-sync` end
to end in a subprocess (process start, read, compute, write; --no-sync: the
outputs renamed into place without waiting for the disk, as np.save leaves
them; --sync times dwsr's default fsync too), interleaved, best of
--repeats runs each (NumPy's runs stop early once they took 20 s in all). Prints one row per operator: MB/s of each (10^6 bytes of
float32 input per wall-clock second) and dwsr's ratio, by wall-clock and by
CPU time (the CPU-time ratio is steadier on a loaded machine).

NumPy, SciPy and OpenBLAS run on one thread (OMP/OPENBLAS/MKL_NUM_THREADS=1).
Where the peer's CPU path is a per-voxel Python loop (semblance, eig_complex,
glcm_*, lbp3d), the NumPy side runs on a sub-cube of the first inlines and
crosslines (whole traces) and its MB/s is that sub-cube's; such rows are marked.
The two-input combination operators (sweetness_from, dominant_frequency_from)
need a graph and are not compared: sweetness and dominant_frequency cover
their math.

--check first compares every NumPy output with dwsr's on the same cube (the
sub-cube for the marked rows) and exits 1 if any differs beyond its tolerance.

Needs NumPy and SciPy, and scikit-image for the texture family (Debian 12:
python3-numpy python3-scipy python3-skimage). From the repository's root:

    cmake --build build --target dwsr_cli
    python3 bench/peer_compare.py                       # 128x128x512, every operator
    python3 bench/peer_compare.py --ops complex_trace,gaussian --repeats 5
    python3 bench/peer_compare.py --markdown --threads 2 > table.md
"""

import os

# One thread everywhere: the comparison is per thread. Set before NumPy loads.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import scipy  # noqa: E402
from scipy import ndimage as ndi  # noqa: E402
from scipy import signal  # noqa: E402

SAMPLE_RATE_MS = 4.0  # the peer's default sample_rate
FS = 1000.0 / SAMPLE_RATE_MS  # samples per second
DIP_FACTOR = 10.0
DERIVATIVE = np.array([-0.5, 0.0, 0.5])
SMOOTHING = np.array([0.178947, 0.642105, 0.178947])
DERIVATIVE2 = np.array([0.232905, 0.002668, -0.471147, 0.002668, 0.232905])
SMOOTHING2 = np.array([0.030320, 0.249724, 0.439911, 0.249724, 0.030320])


# ---------------------------------------------------------------------------
# Building blocks, as the peer composes them.

def derivative(x, axis, along=DERIVATIVE, across=SMOOTHING):
    """Derivative filter along `axis`, then the smoothing filter along each other
    axis in increasing order: three ndimage.correlate1d passes (reflect)."""
    axis = axis % x.ndim
    out = ndi.correlate1d(x, weights=along, axis=axis)
    for other in (a for a in range(x.ndim) if a != axis):
        out = ndi.correlate1d(out, weights=across, axis=other)
    return out


def patches(x, kernel):
    """Every voxel's window as a strided view of shape x.shape + kernel, over the
    cube padded symmetrically by kernel // 2 (a copy of the padded cube only)."""
    half = [k // 2 for k in kernel]
    padded = np.pad(x, [(h, h) for h in half], mode="symmetric")
    view = np.lib.stride_tricks.as_strided(
        padded, shape=padded.shape + tuple(kernel), strides=padded.strides * 2)
    return view[: x.shape[0], : x.shape[1], : x.shape[2]]


def zero_nan(x):
    x[np.isnan(x)] = 0
    return x


def analytic(x):
    return signal.hilbert(x)  # along time, complex64 for float32 input


def envelope(x):
    return np.absolute(analytic(x))


def phase_degrees(x):
    return np.rad2deg(np.angle(analytic(x)))


def relative_amplitude_change(x):
    env = envelope(x)
    return np.clip(derivative(env, -1) / env, -1, 1)


def instantaneous_frequency(x):
    phase = np.unwrap(np.deg2rad(phase_degrees(x)))
    return np.absolute(derivative(phase, -1) / (2.0 * np.pi) * FS)


def instantaneous_bandwidth(x):
    return np.absolute(relative_amplitude_change(x)) / (2.0 * np.pi)


def lobes(env):
    """Per trace, the lobe of each sample: the count of envelope troughs (strictly
    below both time neighbours, edges clipped) at or before it."""
    t = np.arange(env.shape[-1])
    before = env.take(t - 1, axis=-1, mode="clip")
    after = env.take(t + 1, axis=-1, mode="clip")
    return ((env < before) & (env < after)).cumsum(axis=-1)


def at_lobe_peaks(env, lobe, values):
    """For every sample, `values` at the envelope's first maximum within its lobe.
    The peer runs this as a Numba-compiled loop over traces; here it is vectorised:
    runs of equal lobe number within a trace are segments of the flattened cube."""
    flat_env, flat_lobe = env.reshape(-1), lobe.reshape(-1)
    n = env.shape[-1]
    start = np.ones(flat_env.size, dtype=bool)
    start[1:] = flat_lobe[1:] != flat_lobe[:-1]
    start[::n] = True
    segment = np.cumsum(start) - 1
    first = np.flatnonzero(start)
    peak_value = np.maximum.reduceat(flat_env, first)
    candidates = np.flatnonzero(flat_env == peak_value[segment])
    _, first_candidate = np.unique(segment[candidates], return_index=True)
    peak = candidates[first_candidate]
    return values.reshape(-1)[peak][segment].reshape(env.shape)


def butterworth(x, wn, btype):
    """Order-6 Butterworth, coefficients cast to the cube's dtype (as the peer does),
    zero-phase with filtfilt along time."""
    b, a = signal.butter(6, wn, btype=btype, analog=False)
    return signal.filtfilt(b.astype(x.dtype), a.astype(x.dtype), x=x)


def per_trace_fftconvolve(x, wavelet):
    out = np.zeros_like(x)
    for i, j in np.ndindex(x.shape[:-1]):
        out[i, j] = signal.fftconvolve(x[i, j], wavelet, mode="same")
    return out


def wavelet_times():
    return np.arange(-0.512 / 2, 0.512 / 2, SAMPLE_RATE_MS / 1000)


def ricker(freq=25.0):
    a = (np.pi * freq * wavelet_times()) ** 2
    return (1 - 2 * a) * np.exp(-a)


def ormsby(f1=5.0, f2=10.0, f3=40.0, f4=60.0):
    # The peer's definition, including np.sinc(pi f t) (np.sinc already has the pi).
    t = wavelet_times()

    def lobe(f, lo, hi):
        return (np.pi * f) ** 2 / (np.pi * hi - np.pi * lo) * np.sinc(np.pi * f * t) ** 2

    return (lobe(f4, f3, f4) - lobe(f3, f3, f4)) - (lobe(f2, f1, f2) - lobe(f1, f1, f2))


def gradients(x):
    return derivative(x, 0), derivative(x, 1), derivative(x, 2)


def structure_tensor(x, kernel):
    gi, gj, gk = gradients(x)
    box = lambda v: ndi.uniform_filter(v, size=kernel)  # noqa: E731
    return (box(gi * gi), box(gj * gj), box(gk * gk), box(gi * gj), box(gi * gk), box(gj * gk))


def tensor_matrices(t):
    """(voxels, 3, 3) matrices from the six products, as the peer stacks them."""
    gi2, gj2, gk2, gigj, gigk, gjgk = t
    m = np.array([[gi2, gigj, gigk], [gigj, gj2, gjgk], [gigk, gjgk, gk2]])
    return np.moveaxis(m, [0, 1], [-2, -1]).reshape((-1, 3, 3))


def principal_vectors(t):
    """Eigenvector of the largest eigenvalue per voxel (numpy.linalg.eigh)."""
    m = tensor_matrices(t)
    values, vectors = np.linalg.eigh(m)
    order = values.argsort()
    return vectors[np.arange(m.shape[0]), :, order[:, 2]]


def unit_upward(v):
    v = v / np.linalg.norm(v, axis=-1)[:, None]
    return v * np.sign(v[:, 2]).reshape(-1, 1)


def sorted_eigenvalues(x, kernel=(3, 3, 9)):
    e = np.sort(np.linalg.eigvalsh(tensor_matrices(structure_tensor(x, kernel))))
    shape = x.shape
    return e[:, 2].reshape(shape), e[:, 1].reshape(shape), e[:, 0].reshape(shape)


def gradient_dips(x):
    gi, gj, gk = gradients(x)
    il = zero_nan(-(gi / gk) * DIP_FACTOR)
    xl = zero_nan(-(gj / gk) * DIP_FACTOR)
    return ndi.median_filter(il, size=(3, 3, 3)), ndi.median_filter(xl, size=(3, 3, 3))


# ---------------------------------------------------------------------------
# The operators: each maps the cube to {output file stem: array}.

def complex_trace_ops():
    def response(x, values_of):
        env = envelope(x)
        return at_lobe_peaks(env, lobes(env), values_of(x))

    def polarity(x):
        env = envelope(x)
        return at_lobe_peaks(env, lobes(env), env * np.sign(x))

    def sweetness(x):
        freq = instantaneous_frequency(x)
        freq[freq < 5] = 5
        return envelope(x) / freq

    def phase_rotation(x, rotation=90.0):
        phi = np.deg2rad(rotation, dtype=x.dtype)
        a = analytic(x)
        return zero_nan(a.real * np.cos(phi) - a.imag * np.sin(phi))

    return {
        "hilbert": analytic,
        "envelope": envelope,
        "instantaneous_phase": phase_degrees,
        "cosine_instantaneous_phase": lambda x: np.cos(np.angle(analytic(x))),
        "relative_amplitude_change": relative_amplitude_change,
        "amplitude_acceleration": lambda x: derivative(relative_amplitude_change(x), -1),
        "instantaneous_frequency": instantaneous_frequency,
        "instantaneous_bandwidth": instantaneous_bandwidth,
        "dominant_frequency": lambda x: np.hypot(instantaneous_frequency(x), instantaneous_bandwidth(x)),
        "frequency_change": lambda x: derivative(instantaneous_frequency(x), -1),
        "sweetness": sweetness,
        "quality_factor": lambda x: (np.pi * instantaneous_frequency(x)) / relative_amplitude_change(x),
        "response_phase": lambda x: response(x, phase_degrees),
        "response_frequency": lambda x: response(x, instantaneous_frequency),
        "response_amplitude": lambda x: response(x, lambda y: y),
        "apparent_polarity": polarity,
        "phase_rotation": phase_rotation,
    }


def signal_ops():
    def histogram_equalization(x):
        edges = np.linspace(x.min(), x.max(), 256, dtype=x.dtype)
        hist, edges = np.histogram(x, bins=edges)
        cdf = hist.cumsum()
        cdf = cdf / cdf[-1]
        centres = (edges[:-1] + edges[1:]) / 2
        return np.interp(x.ravel(), centres, cdf).astype(x.dtype).reshape(x.shape)

    def time_gain(x, gain=1.5):
        return x * (1 + np.ones_like(x).cumsum(axis=-1)) ** gain

    def rms(x, kernel=(1, 1, 9)):
        return zero_nan(np.sqrt(np.mean(patches(x, kernel) ** 2, axis=(-3, -2, -1))))

    def trace_agc(x):
        r = rms(x)
        return zero_nan(x * (1.5 - r / r.max()))

    def reflection_intensity(x, kernel=(1, 1, 9)):
        p = patches(x, (1, 1, kernel[-1]))
        return zero_nan(np.trapz(p).reshape(p.shape[:3]))

    return {
        "first_derivative": lambda x: derivative(x, -1),
        "second_derivative": lambda x: derivative(x, -1, DERIVATIVE2, SMOOTHING2),
        "histogram_equalization": histogram_equalization,
        "time_gain": time_gain,
        "rescale_amplitude_range": lambda x: np.clip(x, -0.5, 0.5),
        "rms": rms,
        "rms2": rms,
        "trace_agc": trace_agc,
        "gradient_magnitude": lambda x: zero_nan(ndi.gaussian_gradient_magnitude(x, sigma=(1, 1, 1))),
        "reflection_intensity": reflection_intensity,
    }


def frequency_ops():
    nyquist = FS / 2

    def grey(v):
        # The peer's scaling: (v - min) / max, not / (max - min).
        return ((v - v.min()) / v.max() * 255).astype(int)

    def rgb_blending(x):
        r = grey(envelope(x))
        g = np.left_shift(grey(np.cos(np.angle(analytic(x)))), 8)
        b = np.left_shift(grey(instantaneous_frequency(x)), 16)
        return r + g + b

    return {
        "lowpass_filter": lambda x: butterworth(x, 30 / nyquist, "lowpass"),
        # The peer's HighpassFilter computes a lowpass (a name-mangled attribute);
        # this is the highpass it means, at the same cost.
        "highpass_filter": lambda x: butterworth(x, 30 / nyquist, "highpass"),
        "bandpass_filter": lambda x: butterworth(x, (10 / nyquist, 60 / nyquist), "bandpass"),
        "cwt_ricker": lambda x: per_trace_fftconvolve(x, ricker()),
        "cwt_ormsby": lambda x: per_trace_fftconvolve(x, ormsby()),
        "rgb_blending": rgb_blending,
    }


def noise_reduction_ops():
    return {
        "gaussian": lambda x: zero_nan(ndi.gaussian_filter(x, sigma=(1, 1, 1), truncate=4.0)),
        "median": lambda x: zero_nan(ndi.median_filter(x, size=(3, 3, 3))),
        "convolution": lambda x: zero_nan(ndi.uniform_filter(x, size=(3, 3, 3))),
    }


def dip_azimuth_ops():
    def dips(x):
        il, xl = gradient_dips(x)
        return {"il": il, "xl": xl}

    def tensor(x):
        return dict(zip(("gi2", "gj2", "gk2", "gigj", "gigk", "gjgk"), structure_tensor(x, (3, 3, 3))))

    def gst_2d_dips(x):
        t = structure_tensor(x, (3, 3, 3))
        out = {}
        for name, axis in (("il", 0), ("xl", 1)):  # the peer solves once per output
            v = principal_vectors(t)
            out[name] = zero_nan((-v[:, axis] / v[:, 2]).reshape(x.shape) * DIP_FACTOR)
        return out

    def gst_3d_dip(x):
        v = unit_upward(principal_vectors(structure_tensor(x, (3, 3, 3))))
        dip = np.arccos(np.dot(v, np.array([0, 0, 1], dtype=v.dtype)))
        return zero_nan(np.rad2deg(dip.reshape(x.shape)))

    def gst_3d_azm(x):
        v = unit_upward(principal_vectors(structure_tensor(x, (3, 3, 3))))
        azm = np.rad2deg(np.arctan2(v[:, 0], v[:, 1]).reshape(x.shape))
        azm[azm < 0] += 360
        return zero_nan(azm)

    return {
        "gradient_dips": dips,
        "gradient_structure_tensor": tensor,
        "gst_2d_dips": gst_2d_dips,
        "gst_3d_dip": gst_3d_dip,
        "gst_3d_azm": gst_3d_azm,
    }


def edge_detection_ops():
    kernel = (3, 3, 9)

    def semblance(x):
        def window(values):  # called by generic_filter once per voxel, in Python
            region = values.reshape(kernel).reshape(-1, kernel[-1])
            return (region.sum(axis=0) ** 2).sum() / (region**2).sum(axis=0).sum() / region.shape[0]

        return zero_nan(ndi.generic_filter(x, window, size=kernel))

    def semblance2(x):
        p = patches(x, kernel)
        s = (p.sum(axis=(-3, -2)) ** 2).sum(axis=-1) / (p**2).sum(axis=(-3, -2)).sum(axis=-1)
        return zero_nan(s / (kernel[0] * kernel[1]))

    def eig_complex(x):
        ki, kj, kk = kernel
        big, small = np.finfo(np.float32).max, np.finfo(np.float32).min

        def covariance(window):  # called by apply_along_axis once per voxel
            traces = window.reshape((ki * kj, kk))
            traces = np.hstack([traces.real, traces.imag])
            c = traces.dot(traces.T)
            c[c == np.inf], c[c == -np.inf] = big, small
            c[np.isnan(c)] = 0
            return c

        p = patches(analytic(x), kernel)
        rows = []
        for i in range(p.shape[0]):
            c = np.apply_along_axis(covariance, 1, p[i].reshape(-1, ki * kj * kk))
            values = np.linalg.eigvals(c)
            rows.append(np.abs(values.max(axis=1) / values.sum(axis=1)))
        return zero_nan(np.asarray(rows).reshape(x.shape))

    def chaos(x):
        e1, e2, e3 = sorted_eigenvalues(x)
        return (2 * e2) / (e1 + e3)

    def coherence(x):
        e1, e2, _ = sorted_eigenvalues(x)
        return (e1 - e2) / (e1 + e2)

    def structured_semblance(x):
        e1, e2, e3 = sorted_eigenvalues(x)
        return (((e2 + e3) * (e2 + e3)) * e1) / (((e2 * e2) + (e3 * e3)) * e1)

    def volume_curvature(x):
        il, xl = gradient_dips(x)
        u, v = -il / DIP_FACTOR, -xl / DIP_FACTOR
        box = lambda g: ndi.uniform_filter(g, size=(3, 3, 3))  # noqa: E731
        ux, uy, uz = (box(g) for g in gradients(u))
        vx, vy, vz = (box(g) for g in gradients(v))
        w = np.ones_like(u)
        wx = wy = wz = np.zeros_like(ux)
        uv, vw, u2, v2, w2 = u * v, v * w, u * u, v * v, w * w
        u2pv2, v2pw2 = u2 + v2, v2 + w2
        s = np.sqrt(u2pv2 + w2)
        e = g = np.ones_like(u)
        f = -(u * w) / (np.sqrt(u2pv2) * np.sqrt(v2pw2))
        d = -(-uv * vx + u2 * vy + v2 * ux - uv * uy) / (u2pv2 * s)
        di = -(vw * (uy + vx) - 2 * u * w * vy - v2 * (uz + wx) + uv * (vz + wy)) / (
            2 * np.sqrt(u2pv2) * np.sqrt(v2pw2) * s)
        dii = -(-vw * wy + v2 * wz + w2 * vy - vw * vz) / (v2pw2 * s)
        h = (e * dii - 2 * f * di + g * d) / (2 * (e * g - f * f))
        k = (d * dii - di * di) / (e * g - f * f)
        kmin = h - np.sqrt(h * h - k)
        kmax = h + np.sqrt(h * h - k)
        h, k, kmax, kmin = (zero_nan(a) for a in (h, k, kmax, kmin))
        return {"H": h, "K": k, "Kmax": kmax, "Kmin": kmin,
                "KMPos": np.maximum(kmax, kmin), "KMNeg": np.minimum(kmax, kmin)}

    return {
        "semblance": semblance,
        "semblance2": semblance2,
        "eig_complex": eig_complex,
        "chaos": chaos,
        "coherence": coherence,
        "structured_semblance": structured_semblance,
        "volume_curvature": volume_curvature,
    }


def texture_ops():
    levels, window, distance, direction = 16, (7, 7), 1, np.pi / 2

    def glcm_property(name):
        def prop(p):
            from skimage.feature import graycoprops

            if name in ("mean", "variance", "std", "entropy"):
                # graycoprops has these from scikit-image 0.25 on.
                p = p[:, :, 0, 0]
                i = np.arange(levels).reshape(-1, 1)
                mean = (i * p).sum()
                if name == "mean":
                    return mean
                if name == "entropy":
                    nz = p[p > 0]
                    return -(nz * np.log(nz)).sum()
                variance = (p * (i - mean) ** 2).sum()
                return variance if name == "variance" else np.sqrt(variance)
            return graycoprops(p, "ASM" if name == "asm" else name)[0, 0]

        def op(x):
            from skimage.feature import graycomatrix

            kh, kw = window[0] // 2, window[1] // 2
            lo, hi = np.min(x), np.max(x)
            grey = ((x - lo) / (hi - lo) * (levels - 1)).astype(int)
            grey = np.pad(grey, ((0, 0), (kh, kh), (kw, kw)), constant_values=0)
            out = np.zeros(grey.shape, dtype=np.float32)
            _, h, w = grey.shape
            for k in range(grey.shape[0]):  # per pixel, in Python, as the peer does
                for i in range(kh, h - kh):
                    for j in range(kw, w - kw):
                        p = graycomatrix(grey[k, i - kh:i + kh + 1, j - kw:j + kw + 1], [distance], [direction],
                                         levels=levels, symmetric=True, normed=True)
                        out[k, i, j] = prop(p)
            return out[:, kh:-kh, kw:-kw].astype(x.dtype)

        return op

    def lbp2d(x, radius=3, neighbours=8):
        from skimage.feature import local_binary_pattern

        padded = np.pad(x, ((0, 0), (radius, radius), (radius, radius)), mode="wrap")
        out = np.asarray([local_binary_pattern(s, neighbours * radius, radius, "default") for s in padded],
                         dtype=x.dtype)
        return out[:, radius:-radius, radius:-radius]

    def lbp3d(x):
        padded = np.pad(x, 2, mode="wrap")
        out = np.zeros_like(padded)
        corners = [0, 2, 6, 8, 18, 20, 24, 26]  # of the flattened 3x3x3 neighbourhood
        weights = 2 ** np.arange(len(corners), dtype=np.uint64)
        d, h, w = padded.shape
        for a in range(d - 2):  # per voxel, in Python, as the peer does
            for b in range(h - 2):
                for c in range(w - 2):
                    cell = padded[a:a + 3, b:b + 3, c:c + 3]
                    centre = cell[1, 1, 1]
                    v = cell.flatten()[corners]
                    bits = np.zeros(len(v), dtype=np.int8)
                    hi, lo = v.argmax(), v.argmin()
                    if v[hi] > centre:
                        bits[hi] = 1
                    if v[lo] < centre:
                        bits[lo] = 1
                    out[a + 1, b + 1, c + 1] = np.sum(weights * bits)
        return out[2:-2, 2:-2, 2:-2]

    ops = {f"glcm_{name}": glcm_property(name)
           for name in ("contrast", "dissimilarity", "asm", "energy", "homogeneity", "correlation",
                        "mean", "variance", "std", "entropy")}
    ops["lbp2d"] = lbp2d
    ops["lbp3d"] = lbp3d
    return ops


FAMILIES = {
    "complex_trace": complex_trace_ops(),
    "signal": signal_ops(),
    "frequency": frequency_ops(),
    "noise_reduction": noise_reduction_ops(),
    "dip_azimuth": dip_azimuth_ops(),
    "edge_detection": edge_detection_ops(),
    "texture": texture_ops(),
}

# NumPy runs of an operator stop once they took this long in all: run-to-run
# noise is small against such times, and the slowest formulations would
# otherwise dominate the run.
NUMPY_ENOUGH_SECONDS = 20.0

# Per-voxel Python loops: the NumPy side runs on a sub-cube of at most this many
# inlines x crosslines (whole traces).
SUBCUBE = {"semblance": (2, 16), "eig_complex": (2, 8), "lbp3d": (1, 8)}
SUBCUBE.update({name: (1, 8) for name in FAMILIES["texture"] if name.startswith("glcm_")})

# --check tolerances: max |NumPy - dwsr| <= rel * max(1, max |NumPy|) over finite
# values, with the same non-finite mask, at all but `allowed` of the voxels.
# The family tests' tolerances (1e-4 relative) everywhere, except:
# - the phase and everything derived from it is ill-conditioned where the
#   envelope nearly vanishes (a few voxels in 10^4 move by more); the lobe
#   operators (response_*, apparent_polarity) move a lobe's boundary, and with it
#   the value spread over the lobe, where two envelope samples nearly tie;
# - bandpass_filter: the peer rounds its coefficients to float32 (5e-3, as in
#   frequency_test);
# - rgb_blending packs integer grey levels: a value at a level's edge may round
#   the other way (one level of a 2^16 or 2^8 channel);
# - eigenvectors (gst_2d_dips/3d_*) and curvatures are undetermined where two
#   eigenvalues (or a denominator) nearly coincide.
TOLERANCE = {name: (1e-4, 0.0) for family in FAMILIES.values() for name in family}
for _name in ("instantaneous_phase", "cosine_instantaneous_phase", "instantaneous_frequency",
              "dominant_frequency", "frequency_change", "sweetness", "quality_factor", "response_phase",
              "response_frequency", "relative_amplitude_change", "amplitude_acceleration",
              "instantaneous_bandwidth", "response_amplitude", "apparent_polarity"):
    TOLERANCE[_name] = (1e-4, 2e-3)
TOLERANCE["bandpass_filter"] = (5e-3, 0.0)
TOLERANCE["rgb_blending"] = (1.0 / 256, 2e-3)
for _name in ("gst_2d_dips", "gst_3d_dip", "gst_3d_azm", "volume_curvature"):
    TOLERANCE[_name] = (1e-4, 1e-3)


# ---------------------------------------------------------------------------
# Running and timing.

def progress(message):
    print(message, file=sys.stderr, flush=True)


def as_outputs(name, result):
    """{file stem: array}, named as dwsr names its outputs."""
    if isinstance(result, dict):
        return {f"{name}_{suffix}": array for suffix, array in result.items()}
    return {name: result}


def run_numpy(name, fn, cube_path, out_dir):
    """np.load, compute, np.save: wall and CPU seconds."""
    start, start_cpu = time.perf_counter(), time.process_time()
    cube = np.load(cube_path)
    with np.errstate(all="ignore"):
        outputs = as_outputs(name, fn(cube))
    for stem, array in outputs.items():
        np.save(os.path.join(out_dir, stem + ".npy"), array)
    return time.perf_counter() - start, time.process_time() - start_cpu


def run_dwsr(dwsr, name, cube_path, out_dir, threads, sync=False):
    """`dwsr run` in a subprocess (--no-sync unless `sync`): wall and CPU (user + system) seconds."""
    command = [dwsr, "run", name, "--input", cube_path, "--output", out_dir, "--threads", str(threads)]
    if not sync:
        command.append("--no-sync")
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    stderr = process.stderr.read().decode(errors="replace")
    process.stderr.close()
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({process.returncode}): {stderr.strip()}")
    return wall, usage.ru_utime + usage.ru_stime


def clear(directory):
    for entry in os.listdir(directory):
        os.remove(os.path.join(directory, entry))


def compare(name, numpy_dir, dwsr_dir):
    """Mismatch descriptions (empty when every output agrees within tolerance), and
    the largest fraction of voxels beyond the tolerance among the outputs."""
    rel, allowed = TOLERANCE[name]
    problems, worst_fraction = [], 0.0
    for file in sorted(os.listdir(numpy_dir)):
        ours = os.path.join(dwsr_dir, file)
        if not os.path.exists(ours):
            problems.append(f"{file}: dwsr wrote no such output")
            continue
        ref, got = np.load(os.path.join(numpy_dir, file)), np.load(ours)
        if ref.shape != got.shape:
            problems.append(f"{file}: shape {got.shape}, NumPy's is {ref.shape}")
            continue
        ref = ref.astype(np.complex128 if np.iscomplexobj(ref) else np.float64)
        got = got.astype(ref.dtype)
        finite_ref, finite_got = np.isfinite(ref), np.isfinite(got)
        both = finite_ref & finite_got
        scale = max(1.0, float(np.abs(ref[finite_ref]).max(initial=0.0)))
        bad = (finite_ref != finite_got) | (both & (np.abs(ref - got) > rel * scale))
        fraction = bad.mean()
        worst_fraction = max(worst_fraction, fraction)
        if fraction > allowed:
            diff = np.abs(ref[both] - got[both])
            worst = float(diff.max(initial=0.0))
            problems.append(f"{file}: {bad.sum()} of {bad.size} voxels ({fraction:.2%}) differ by more than "
                            f"{rel:g} x {scale:.4g} (allowed {allowed:.2%}); max |diff| {worst:.4g}, "
                            f"non-finite mismatches {int((finite_ref != finite_got).sum())}")
    return problems, worst_fraction


def catalogue(dwsr):
    listing = json.loads(subprocess.run([dwsr, "ops", "--json"], check=True, capture_output=True).stdout)
    return [(op["family"], op["name"], op["inputs"]) for op in listing]


def machine():
    model, cores = "unknown CPU", os.cpu_count()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model}, {cores} cores"


def vector_instructions(dwsr):
    """dwsr's `--version` line names the vector instructions its kernels run with."""
    line = subprocess.run([dwsr, "--version"], check=True, capture_output=True, text=True).stdout
    found = re.search(r"vector instructions: (\w+)", line)
    return found.group(1) if found else "unknown"


def library_versions():
    try:
        import skimage

        skimage_version = skimage.__version__
    except ImportError:
        skimage_version = "absent"
    return f"numpy {np.__version__}, scipy {scipy.__version__}, scikit-image {skimage_version}"


def parse_shape(text):
    try:
        shape = tuple(int(n) for n in text.lower().split("x"))
    except ValueError:
        shape = ()
    if len(shape) != 3 or min(shape) < 1:
        raise argparse.ArgumentTypeError(f"shape '{text}': expected IxXxT, three positive integers")
    return shape


def select(requested, available, parser):
    """Operators named, or families named, in catalogue order."""
    if not requested:
        return available
    chosen = set()
    for word in requested.split(","):
        matches = [op for op in available if word in (op[0], op[1])]
        if not matches:
            names = ", ".join(sorted({f for f, _, _ in available} | {n for _, n, _ in available}))
            parser.error(f"--ops: '{word}' is neither an operator nor a family compared here; expected one of {names}")
        chosen.update(matches)
    return [op for op in available if op in chosen]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--dwsr", default=os.path.join(root, "build", "apps", "dwsr", "dwsr"),
                        help="the dwsr executable (default: build/apps/dwsr/dwsr of this checkout)")
    parser.add_argument("--input", help="a float32 .npy cube (default: dwsr generate --shape --seed)")
    parser.add_argument("--shape", type=parse_shape, default=(128, 128, 512), help="cube shape IxXxT (128x128x512)")
    parser.add_argument("--seed", type=int, default=1, help="generator seed (1)")
    parser.add_argument("--ops", help="comma-separated operators or families (default: all)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each side, interleaved; best kept (3)")
    parser.add_argument("--threads", type=int, default=1, help="also time dwsr with this many threads (scaling column)")
    parser.add_argument("--sync", action="store_true",
                        help="time dwsr's default durable writes (fsync before the rename) instead of --no-sync")
    parser.add_argument("--check", action="store_true", help="first compare every output with dwsr's; exit 1 on a mismatch")
    parser.add_argument("--markdown", action="store_true", help="print the README's table, with date and machine")
    parser.add_argument("--workdir", help="directory for the cube and outputs (default: a temporary one, removed)")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats: expected at least 1")
    if args.threads < 1:
        parser.error("--threads: expected at least 1")
    if not os.access(args.dwsr, os.X_OK):
        parser.error(f"--dwsr: '{args.dwsr}' is not an executable; build it (cmake --build build --target dwsr_cli)")

    compared = {name: family for family, ops in FAMILIES.items() for name in ops}
    listing = catalogue(args.dwsr)
    available = [op for op in listing if op[1] in compared and op[2] == 1]
    # dwsr's own interpretation operators (geobodies) have no peer to compare with.
    skipped = [name for family, name, _ in listing if name not in compared and family != "interpretation"]
    chosen = select(args.ops, available, parser)

    work = args.workdir or tempfile.mkdtemp(prefix="peer_compare.")
    os.makedirs(work, exist_ok=True)
    numpy_dir, dwsr_dir = os.path.join(work, "numpy_out"), os.path.join(work, "dwsr_out")
    os.makedirs(numpy_dir, exist_ok=True)
    os.makedirs(dwsr_dir, exist_ok=True)
    try:
        if args.input:
            cube_path = os.path.abspath(args.input)
            cube = np.load(cube_path, mmap_mode="r")
            if cube.dtype != np.float32 or cube.ndim != 3:
                parser.error(f"--input: {args.input} is {cube.ndim}-D {cube.dtype}; expected a 3-D float32 cube")
            shape, origin = cube.shape, os.path.basename(args.input)
        else:
            shape = args.shape
            cube_path = os.path.join(work, "cube.npy")
            text = "x".join(map(str, shape))
            progress(f"generating {text} (seed {args.seed})")
            subprocess.run([args.dwsr, "generate", "--shape", text, "--seed", str(args.seed), "--output", cube_path],
                           check=True, stdout=subprocess.DEVNULL)
            origin = f"dwsr generate, seed {args.seed}"
        full_mb = np.prod(shape) * 4 / 1e6

        sub_paths = {}

        def subcube(name):
            """The cube NumPy runs `name` on: a sub-cube for the per-voxel loops."""
            if name not in SUBCUBE:
                return cube_path, full_mb
            ni, nx = min(SUBCUBE[name][0], shape[0]), min(SUBCUBE[name][1], shape[1])
            key = (ni, nx)
            if key not in sub_paths:
                path = os.path.join(work, f"sub_{ni}x{nx}x{shape[2]}.npy")
                np.save(path, np.ascontiguousarray(np.load(cube_path, mmap_mode="r")[:ni, :nx]))
                sub_paths[key] = path
            return sub_paths[key], ni * nx * shape[2] * 4 / 1e6

        failures = []
        if args.check:
            for n, (family, name, _) in enumerate(chosen, 1):
                path, _ = subcube(name)
                run_numpy(name, FAMILIES[family][name], path, numpy_dir)
                run_dwsr(args.dwsr, name, path, dwsr_dir, 1)
                problems, fraction = compare(name, numpy_dir, dwsr_dir)
                progress(f"[check {n}/{len(chosen)}] {name}: " + ("differs" if problems else "agrees")
                         + (f" ({fraction:.2e} of the voxels beyond {TOLERANCE[name][0]:g} relative)" if fraction else ""))
                for p in problems:
                    print(f"MISMATCH {name}: {p}", file=sys.stderr, flush=True)
                failures += [name] if problems else []
                clear(numpy_dir)
                clear(dwsr_dir)
            if failures:
                print(f"peer_compare: {len(failures)} operator(s) differ from their NumPy formulation: "
                      f"{', '.join(failures)}", file=sys.stderr)
                return 1
            progress(f"check: all {len(chosen)} operators agree with their NumPy formulations")

        rows = []
        for n, (family, name, _) in enumerate(chosen, 1):
            path, numpy_mb = subcube(name)
            best, numpy_seconds = {}, 0.0
            for _ in range(args.repeats):  # interleaved, so load changes hit every side alike
                sides = [("dwsr", lambda: run_dwsr(args.dwsr, name, cube_path, dwsr_dir, 1, args.sync))]
                if numpy_seconds < NUMPY_ENOUGH_SECONDS:
                    sides.insert(0, ("numpy", lambda: run_numpy(name, FAMILIES[family][name], path, numpy_dir)))
                if args.threads > 1:
                    sides.append(("dwsr_t",
                                  lambda: run_dwsr(args.dwsr, name, cube_path, dwsr_dir, args.threads, args.sync)))
                for side, run in sides:
                    wall, cpu = run()
                    numpy_seconds += wall if side == "numpy" else 0.0
                    old = best.get(side, (float("inf"), float("inf")))
                    best[side] = (min(old[0], wall), min(old[1], cpu))
                    clear(numpy_dir)
                    clear(dwsr_dir)
            row = {"family": family, "name": name, "sub": name in SUBCUBE,
                   "numpy": numpy_mb / best["numpy"][0], "dwsr": full_mb / best["dwsr"][0],
                   "numpy_cpu": numpy_mb / best["numpy"][1], "dwsr_cpu": full_mb / best["dwsr"][1]}
            if args.threads > 1:
                row["dwsr_t"] = full_mb / best["dwsr_t"][0]
            rows.append(row)
            progress(f"[{n}/{len(chosen)}] {name}: NumPy {row['numpy']:.1f} MB/s, dwsr {row['dwsr']:.1f} MB/s, "
                     f"{row['dwsr'] / row['numpy']:.1f}x")
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)

    print_table(rows, args, shape, origin, skipped)
    return 0


def print_table(rows, args, shape, origin, skipped):
    text = "x".join(map(str, shape))
    sub_note = ("†: the peer's CPU path is a per-voxel Python loop; NumPy ran on a sub-cube of "
                + ", ".join(f"{name} {min(s[0], shape[0])}x{min(s[1], shape[1])}x{shape[2]}"
                            for name, s in SUBCUBE.items() if any(r["name"] == name for r in rows))
                + " (its MB/s is that sub-cube's), dwsr on the whole cube.")
    header = ["family", "operator", "NumPy/SciPy MB/s", "dwsr MB/s", "ratio", "ratio (CPU time)"]
    if args.threads > 1:
        header += [f"dwsr {args.threads} threads MB/s", "scaling"]
    def ratio(v):
        return f"{v:.2g}x" if v < 100 else f"{v:.0f}x"

    def rate(v):  # three significant digits, never an exponent
        return f"{v:.3g}" if v < 1000 else f"{v:.0f}"

    table = []
    for r in rows:
        line = [r["family"], r["name"] + (" †" if r["sub"] else ""), rate(r["numpy"]), rate(r["dwsr"]),
                ratio(r["dwsr"] / r["numpy"]), ratio(r["dwsr_cpu"] / r["numpy_cpu"])]
        if args.threads > 1:
            line += [rate(r["dwsr_t"]), f"{r['dwsr_t'] / r['dwsr']:.2f}x"]
        table.append(line)
    today = datetime.date.today().isoformat()
    summary = (f"{today}, {machine()}; cube {text} float32 ({origin}); {library_versions()}; "
               f"dwsr's vector instructions: {vector_instructions(args.dwsr)}; "
               f"one thread each, end to end (NumPy: np.load, compute, np.save; "
               f"dwsr: `dwsr run{'' if args.sync else ' --no-sync'}`, {'fsync' if args.sync else 'no fsync'} "
               f"before the rename{'' if args.sync else ', as np.save'}), "
               f"best of {args.repeats} interleaved runs; MB/s = 10^6 bytes of float32 input per second.")
    notes = [sub_note] if any(r["sub"] for r in rows) else []
    if skipped:
        notes.append(f"Not compared: {', '.join(skipped)} (two-input operators of a graph; "
                     "sweetness and dominant_frequency cover their math).")
    notes.append("highpass_filter: the peer's class computes a lowpass; "
                 "the NumPy column is the highpass it means, at the same cost."
                 if any(r["name"] == "highpass_filter" for r in rows) else "")
    notes.append("response_*, apparent_polarity: the peer's per-lobe loop is Numba-compiled; "
                 "the NumPy column is a vectorised NumPy equivalent."
                 if any(r["name"].startswith("response_") or r["name"] == "apparent_polarity" for r in rows) else "")
    notes = [n for n in notes if n]
    if args.markdown:
        print(summary)
        print()
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for line in table:
            print("| " + " | ".join(line) + " |")
        print()
        for n in notes:
            print(n)
            print()
        return
    print(summary)
    widths = [max(len(h), *(len(line[i]) for line in table)) if table else len(h) for i, h in enumerate(header)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    for line in table:
        print("  ".join(c.ljust(w) for c, w in zip(line, widths)))
    for n in notes:
        print(n)


if __name__ == "__main__":
    sys.exit(main())
