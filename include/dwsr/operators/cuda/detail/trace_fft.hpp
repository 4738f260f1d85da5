#pragma once
/// \file The Hilbert transforms of two real traces of n = 2^L samples
/// (16 <= n <= 4096) by a group of n / 16 threads, the traces never leaving
/// registers and shared memory: the fused path of the complex-trace family.
///
/// The two traces travel as one complex signal z = x1 + i x2. The Hilbert
/// filter -i sign(k) (0 at DC and Nyquist, scipy.signal.hilbert's definition)
/// is linear and maps real signals to real ones, so
/// ifft(-i sign(k) fft(z)) = H(x1) + i H(x2): one forward and one inverse
/// complex transform per pair of traces, the inverse taken as
/// conj(fft(conj(.))) / n.
///
/// Each transform is Stockham's auto-sorting FFT in passes of radix 16
/// (one pass of radix 2, 4 or 8 where L is not a multiple of 4): a thread
/// holds 16 values, applies one pass's twiddles and in-register DFTs, and
/// exchanges with its group through shared memory between passes. The
/// forward's last pass leaves each thread exactly the values the inverse's
/// first pass needs, and the first pass reads global memory directly, so a
/// pair costs 2 (L / 4 rounded up) - 2 exchanges, plus one through shared
/// memory to hand the results to the store a few at a time.
///
/// Written once for the device and the host: the kernel runs the group's
/// threads in parallel with __syncthreads, a host test runs them as threads
/// with a barrier, so the test checks the code the GPU runs.

#include <cstdint>
#include <utility>

#include "dwsr/core/host_device.hpp"

#if !defined(__CUDA_ARCH__)
#include <cmath>
#endif

namespace dwsr::operators::cuda::detail {

/// The shortest and longest traces of the fused path (shared memory bounds the longest).
inline constexpr int fused_min_log2 = 4, fused_max_log2 = 12;

/// log2(n) where n is a power of two in the fused path's range, else -1.
DWSR_HOST_DEVICE constexpr int fused_log2(std::uint64_t n) {
  for (int l = fused_min_log2; l <= fused_max_log2; ++l)
    if (n == (std::uint64_t{1} << l)) return l;
  return -1;
}

struct cfloat {
  float re, im;
};

DWSR_HOST_DEVICE inline cfloat cadd(cfloat a, cfloat b) { return {a.re + b.re, a.im + b.im}; }
DWSR_HOST_DEVICE inline cfloat csub(cfloat a, cfloat b) { return {a.re - b.re, a.im - b.im}; }
/// a b, with fused multiply-adds on the device: the CUDA operators are
/// compiled with -fmad=false so that the filters match the CPU bit for bit,
/// but these transforms have no CPU counterpart to match bit for bit.
DWSR_HOST_DEVICE inline cfloat cmul(cfloat a, cfloat b) {
#if defined(__CUDA_ARCH__)
  return {__fmaf_rn(a.re, b.re, -a.im * b.im), __fmaf_rn(a.re, b.im, a.im * b.re)};
#else
  return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
#endif
}

/// exp(-2 pi i k / 16) for k in [0, 8): the in-register DFTs' twiddles.
DWSR_HOST_DEVICE constexpr cfloat root16(int k) {
  // cos(2 pi m / 16) for m in [0, 4]; sin(2 pi k / 16) = cos(2 pi (4 - k) / 16).
  constexpr float c[5] = {1.0f, 0.923879532511286756f, 0.707106781186547524f, 0.382683432365089772f, 0.0f};
  const float cosine = k <= 4 ? c[k] : -c[8 - k];
  const float sine = c[k <= 4 ? 4 - k : k - 4];
  return {cosine, -sine};
}

/// a exp(-2 pi i k / 16) for k in [0, 8); k is a constant once the DFTs are
/// unrolled, so the trivial factors (1, -i) fold to no multiplication at all.
DWSR_HOST_DEVICE inline cfloat times_root16(cfloat a, int k) {
  if (k == 0) return a;
  if (k == 4) return {a.im, -a.re};
  return cmul(a, root16(k));
}

/// exp(2 pi i turns).
DWSR_HOST_DEVICE inline cfloat unit_root(float turns) {
#if defined(__CUDA_ARCH__)
  float s, c;
  sincospif(2.0f * turns, &s, &c);
  return {c, s};
#else
  const double a = 2.0 * 3.14159265358979323846 * double(turns);
  return {static_cast<float>(std::cos(a)), static_cast<float>(std::sin(a))};
#endif
}

/// One radix-2 decimation-in-frequency stage of an R-point DFT in registers
/// (sub-DFTs of 2 Half points), then the stages below it.
template <int R, int Half>
DWSR_HOST_DEVICE inline void dif_stages(cfloat* v) {
  DWSR_UNROLL
  for (int base = 0; base < R; base += 2 * Half) {
    DWSR_UNROLL
    for (int i = 0; i < Half; ++i) {
      const cfloat a = v[base + i], b = v[base + i + Half];
      v[base + i] = cadd(a, b);
      v[base + i + Half] = times_root16(csub(a, b), i * (8 / Half));
    }
  }
  if constexpr (Half > 1) dif_stages<R, Half / 2>(v);
}

template <int R>
DWSR_HOST_DEVICE constexpr int bit_reverse(int k) {
  int r = 0;
  for (int bit = 1; bit < R; bit <<= 1) r = (r << 1) | ((k & bit) ? 1 : 0);
  return r;
}

/// The R-point DFT (R in {2, 4, 8, 16}) of v, in natural order.
template <int R>
DWSR_HOST_DEVICE inline void dft(cfloat* v) {
  dif_stages<R, R / 2>(v);
  // Decimation in frequency leaves X[k] at v[bit_reverse(k)].
  cfloat x[R];
  DWSR_UNROLL
  for (int k = 0; k < R; ++k) x[k] = v[bit_reverse<R>(k)];
  DWSR_UNROLL
  for (int k = 0; k < R; ++k) v[k] = x[k];
}

/// Shared-memory index of element i of a group's buffer: one pad word per 16
/// elements keeps the strided stores of the passes off a single bank.
DWSR_HOST_DEVICE constexpr int padded(int i) { return i + (i >> 4); }

/// Floats of shared memory per group and component (real or imaginary) for n samples.
DWSR_HOST_DEVICE constexpr int group_floats(int n) { return n + n / 16; }

/// Stockham pass of radix R and span Ns over n points, in the thread's
/// registers: each of its 16 / R butterflies j = t + b n / 16 twiddles its
/// inputs by exp(-2 pi i (j mod Ns) r / (Ns R)) and takes their DFT.
template <int N, int R, int Ns>
DWSR_HOST_DEVICE inline void butterflies(cfloat* v, int t) {
  constexpr int threads = N / 16;
  DWSR_UNROLL
  for (int b = 0; b < 16 / R; ++b) {
    cfloat* u = v + b * R;
    if constexpr (Ns > 1) {
      const int j = t + b * threads;
      const cfloat w = unit_root(-float(j % Ns) / float(Ns * R));
      cfloat wr = w;
      DWSR_UNROLL
      for (int r = 1; r < R; ++r) {
        u[r] = cmul(u[r], wr);
        wr = cmul(wr, w);
      }
    }
    dft<R>(u);
  }
}

/// Hands the results of a pass (radix Rp, span Nsp) to the next pass (radix
/// R) through the group's shared memory.
template <int N, int Rp, int Nsp, int R, class Sync>
DWSR_HOST_DEVICE inline void exchange(cfloat* v, int t, float* re, float* im, Sync& sync) {
  constexpr int threads = N / 16;
  DWSR_UNROLL
  for (int b = 0; b < 16 / Rp; ++b) {
    const int j = t + b * threads;
    const int d = (j / Nsp) * Nsp * Rp + j % Nsp;
    DWSR_UNROLL
    for (int r = 0; r < Rp; ++r) {
      const int p = padded(d + r * Nsp);
      re[p] = v[b * Rp + r].re;
      im[p] = v[b * Rp + r].im;
    }
  }
  sync();
  DWSR_UNROLL
  for (int b = 0; b < 16 / R; ++b) {
    const int j = t + b * threads;
    DWSR_UNROLL
    for (int r = 0; r < R; ++r) {
      const int p = padded(j + r * (N / R));
      v[b * R + r] = {re[p], im[p]};
    }
  }
  sync();  // every read done before the next exchange writes
}

/// The radix of the pass that follows span Ns in the forward transform.
template <int N, int Ns>
inline constexpr int forward_radix = N / Ns >= 16 ? 16 : N / Ns;

/// The forward passes after the first (span Ns onwards; every earlier pass had radix 16).
template <int N, int Ns, class Sync>
DWSR_HOST_DEVICE inline void forward_passes(cfloat* v, int t, float* re, float* im, Sync& sync) {
  if constexpr (Ns < N) {
    constexpr int R = forward_radix<N, Ns>;
    exchange<N, 16, Ns / 16, R>(v, t, re, im, sync);
    butterflies<N, R, Ns>(v, t);
    forward_passes<N, Ns * R>(v, t, re, im, sync);
  }
}

/// The inverse's passes of radix 16 after a pass of radix Rp (span Ns onwards).
template <int N, int Rp, int Ns, class Sync>
DWSR_HOST_DEVICE inline void radix16_passes(cfloat* v, int t, float* re, float* im, Sync& sync) {
  if constexpr (Ns < N) {
    exchange<N, Rp, Ns / Rp, 16>(v, t, re, im, sync);
    butterflies<N, 16, Ns>(v, t);
    radix16_passes<N, 16, Ns * 16>(v, t, re, im, sync);
  }
}

/// Thread t (of n / 16) of a group computes H(x1) and H(x2) for two traces of
/// n = 2^L samples. load(k) gives {x1[k], x2[k]}; store(k, H(x1)[k],
/// H(x2)[k]) receives every k once across the group (thread t: k = t + r n / 16);
/// re and im are the group's shared buffers (group_floats(n) each) and sync()
/// a barrier of the group. Every thread of the group must call it.
template <int L, class Load, class Store, class Sync>
DWSR_HOST_DEVICE inline void hilbert_pair(int t, float* re, float* im, Load&& load, Store&& store, Sync&& sync) {
  static_assert(L >= fused_min_log2 && L <= fused_max_log2);
  constexpr int N = 1 << L, threads = N / 16, last = L % 4 ? 1 << (L % 4) : 16;
  cfloat v[16];
  DWSR_UNROLL
  for (int r = 0; r < 16; ++r) v[r] = load(t + r * threads);
  butterflies<N, 16, 1>(v, t);
  forward_passes<N, 16>(v, t, re, im, sync);
  // v[b last + r] holds Z[k], k = t + b n/16 + r n/last: apply -i sign(k),
  // conjugated for the inverse (conj(-i s Z) = s (Im Z, Re Z)).
  DWSR_UNROLL
  for (int b = 0; b < 16 / last; ++b) {
    DWSR_UNROLL
    for (int r = 0; r < last; ++r) {
      const int k = t + b * threads + r * (N / last);
      const float s = (k == 0 || k == N / 2) ? 0.0f : (k < N / 2 ? 1.0f : -1.0f);
      const cfloat z = v[b * last + r];
      v[b * last + r] = {s * z.im, s * z.re};
    }
  }
  butterflies<N, last, 1>(v, t);
  radix16_passes<N, last, last>(v, t, re, im, sync);
  // Out through shared memory, a few samples at a time: storing all 16 from
  // registers at once would hold their addresses and reloaded inputs live
  // together and double the kernel's registers.
  constexpr float scale = 1.0f / float(N);
  DWSR_UNROLL
  for (int r = 0; r < 16; ++r) {
    const int p = padded(t + r * threads);
    re[p] = v[r].re * scale;
    im[p] = -v[r].im * scale;
  }
  sync();
#if defined(__CUDA_ARCH__)
#pragma unroll 2
#endif
  for (int r = 0; r < 16; ++r) {
    const int k = t + r * threads, p = padded(k);
    store(k, re[p], im[p]);
  }
  sync();  // the buffers are free again when the group returns
}

}  // namespace dwsr::operators::cuda::detail
