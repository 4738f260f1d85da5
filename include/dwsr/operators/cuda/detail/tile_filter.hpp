#pragma once
/// \file A separable filter of up to three passes (distinct axes) computed
/// tile by tile in shared memory: the device's window filters in one launch,
/// with no cube-sized temporary between their passes.
///
/// A block of threads loads its output tile and the halo of every filtered
/// axis (scipy's reflect border), then applies the passes in order, each
/// shrinking the region along its axis to the tile: stage s + 1 holds the
/// pass's results over the tile in the axes already filtered and the tile
/// plus halo in the others. The last pass writes the cube. Two shared buffers
/// alternate (stage 0 in the first, 1 in the second, 2 in the first).
///
/// Each stage rounds to float, the taps are summed in double in ascending
/// order without fused multiply-adds: the CPU passes' arithmetic
/// (operators/detail/separable.hpp), so the bits equal the CPU's. A halo's
/// intermediate values are computed by every tile that needs them: with
/// 3-tap passes on every axis and an 8x8x32 tile, 3.4 to 3.8 pass
/// evaluations per output instead of 3. Those taps, not memory traffic,
/// bound these filters, so the path is taken only where they add little
/// (tile_max_work).
///
/// Written once for the device and the host: the kernel runs a block's
/// threads in parallel with a barrier between phases, a host test runs each
/// phase's threads in turn, so the test checks the indexing the GPU runs.

#include <cstdint>

#include "dwsr/core/host_device.hpp"
#include "dwsr/operators/cuda/detail/device_math.cuh"

#if !defined(__CUDA_ARCH__)
#include <cmath>
#endif

namespace dwsr::operators::cuda::detail {

/// How a pass combines its taps.
enum class tap_form : std::uint8_t {
  ascending,       ///< sum of w[j] x[j] in ascending j (the CPU's separable passes)
  symmetric3,      ///< x0 w1 + (x- + x+) w0: scipy's symmetric form (the GST's gradients)
  antisymmetric3,  ///< x0 * 0 + (x- - x+) * -0.5: scipy's antisymmetric form
};

/// What the last pass of a filter applies to its result (fused, saving a pass).
enum class pass_finish : std::uint8_t { none, nan_to_zero, sqrt_nan_to_zero };

/// The arithmetic of one correlation pass: `before` + 1 + `after` weights,
/// `square` squaring the source samples first (the rms's x^2, in float as
/// the CPU's), `finish` applied to the rounded result.
struct pass_math {
  const double* w = nullptr;
  int before = 0, after = 0;
  bool square = false;
  tap_form form = tap_form::ascending;
  pass_finish finish = pass_finish::none;

  /// The pass's values at P points, at(p, k) giving point p's source sample
  /// k steps along the axis. The points' sums are independent chains (each
  /// in ascending order), interleaved so that a GPU thread overlaps them.
  template <int P, class At>
  DWSR_HOST_DEVICE void values(At&& at, float* out) const {
    auto tap = [&](int p, int k) -> double {
      const float v = at(p, k);
      return square ? mul_rn(v, v) : v;
    };
    double acc[P];
    if (form == tap_form::symmetric3) {
      DWSR_UNROLL
      for (int p = 0; p < P; ++p) acc[p] = add_rn(mul_rn(tap(p, 0), w[1]), mul_rn(add_rn(tap(p, -1), tap(p, 1)), w[0]));
    } else if (form == tap_form::antisymmetric3) {
      DWSR_UNROLL
      for (int p = 0; p < P; ++p) acc[p] = add_rn(mul_rn(tap(p, 0), 0.0), mul_rn(sub_rn(tap(p, -1), tap(p, 1)), -0.5));
    } else {
      DWSR_UNROLL
      for (int p = 0; p < P; ++p) acc[p] = 0;
#if defined(__CUDA_ARCH__)
#pragma unroll 3  // a few taps' loads in flight together
#endif
      for (int k = -before; k <= after; ++k) {
        const double wk = w[k + before];
        DWSR_UNROLL
        for (int p = 0; p < P; ++p) acc[p] = add_rn(acc[p], mul_rn(wk, tap(p, k)));
      }
    }
    DWSR_UNROLL
    for (int p = 0; p < P; ++p) out[p] = finished(static_cast<float>(acc[p]));
  }

  /// The pass's value, at(k) giving the source sample k steps along the axis.
  template <class At>
  DWSR_HOST_DEVICE float value(At&& at) const {
    float y;
    values<1>([&](int, int k) { return at(k); }, &y);
    return y;
  }

  /// `finish` applied to a pass's rounded result.
  DWSR_HOST_DEVICE float finished(float y) const {
    if (finish == pass_finish::none) return y;
    if (finish == pass_finish::nan_to_zero) return nan_to_zero(y);
#if defined(__CUDA_ARCH__)
    return nan_to_zero(sqrtf(y));
#else
    return nan_to_zero(std::sqrt(y));
#endif
  }
};

/// Threads of a tile's block.
inline constexpr int tile_threads = 256;
/// Shared memory a tile may take: the default limit of every architecture, so
/// that the choice (and the plan's events) never depend on the device.
inline constexpr int tile_shared_bytes = 48 * 1024;
/// Most tap evaluations per output the tile path may make, relative to
/// separate passes (it recomputes the halos' intermediate values). Measured
/// on an H200 against separate passes: at 1.27 (first_derivative) and 1.0
/// (rms) the tile path ran at their speed; at 1.58 (gaussian's 9-tap
/// passes) at half of it. The taps in double, not the memory traffic, bound
/// these filters, so the tile path is taken where it adds little.
inline constexpr double tile_max_work = 1.3;

/// The filter of one cube, tile by tile. Axes: 0 inline, 1 crossline, 2 time.
struct tile_filter {
  int passes = 0;              ///< 1 to 3
  int axis[3] = {};            ///< the passes' axes, in order, distinct
  pass_math math[3];           ///< the passes' arithmetic
  int lo[3] = {}, hi[3] = {};  ///< halo before and after, per axis
  int tile[3] = {};            ///< output tile extents
  int n[3] = {};               ///< the cube's extents

  /// Whether stage s still carries axis a's halo (its pass comes at s or later).
  DWSR_HOST_DEVICE bool haloed(int s, int a) const {
    for (int p = s; p < passes; ++p)
      if (axis[p] == a) return true;
    return false;
  }
  /// Extent of stage s's region along axis a.
  DWSR_HOST_DEVICE int extent(int s, int a) const { return tile[a] + (haloed(s, a) ? lo[a] + hi[a] : 0); }
  /// Voxels of stage s's region.
  DWSR_HOST_DEVICE int count(int s) const { return extent(s, 0) * extent(s, 1) * extent(s, 2); }
  /// Floats of the two shared buffers.
  DWSR_HOST_DEVICE int first_floats() const { return count(0); }
  DWSR_HOST_DEVICE int second_floats() const { return passes >= 2 ? count(1) : 0; }
  int shared_bytes() const { return (first_floats() + second_floats()) * int(sizeof(float)); }
  /// Tiles along axis a.
  int tiles(int a) const { return (n[a] + tile[a] - 1) / tile[a]; }
  /// Tap evaluations per output voxel over those of separate passes.
  double work() const {
    double tile_taps = 0, pass_taps = 0;
    for (int s = 0; s < passes; ++s) {
      const int taps = lo[axis[s]] + hi[axis[s]] + 1;
      tile_taps += double(count(s + 1)) * taps;
      pass_taps += taps;
    }
    return tile_taps / (double(tile[0]) * tile[1] * tile[2]) / pass_taps;
  }

  // A block filters a tile in phases separated by its barrier: the load,
  // then one phase per pass. Within a phase no thread reads what another
  // writes, so a host may run a phase's threads in any order. A warp works
  // on rows of constant inline and crossline, its 32 lanes on consecutive
  // samples of time (coalesced loads and stores, shared memory without bank
  // conflicts), `rows` rows at a time in the passes (that many sums in
  // flight per lane): a division costs one per row, not one per voxel.
  static constexpr int rows = 4;

  /// The load: thread t of `threads` (a multiple of 32) fills its part of
  /// `first` with the tile at `origin` (its first output voxel) and the
  /// halo, copy(dst, i, x, t) copying the source voxel at in-cube
  /// coordinates to dst (on the device, asynchronously: every copy of the
  /// phase in flight at once).
  template <class Copy>
  DWSR_HOST_DEVICE void load_phase(int t, int threads, const int origin[3], float* first, Copy&& copy) const {
    const int e1 = extent(0, 1), e2 = extent(0, 2), total = extent(0, 0) * e1;
    int start[3];
    for (int a = 0; a < 3; ++a) start[a] = origin[a] - (haloed(0, a) ? lo[a] : 0);
    for (int r = t / 32; r < total; r += threads / 32) {
      const int c0 = r / e1;
      const int i0 = int(reflect(start[0] + c0, n[0])), i1 = int(reflect(start[1] + r - c0 * e1, n[1]));
      for (int c2 = t % 32; c2 < e2; c2 += 32) copy(first + r * e2 + c2, i0, i1, int(reflect(start[2] + c2, n[2])));
    }
  }

  /// Pass s, from stage s's buffer to stage s + 1's (`first` holds the even
  /// stages, `second` the odd ones); the last pass calls store(i, x, t, v)
  /// for the tile's voxels inside the cube instead.
  template <class Store>
  DWSR_HOST_DEVICE void pass_phase(int s, int t, int threads, const int origin[3], float* first, float* second,
                                   Store&& store) const {
    const float* src = s % 2 == 0 ? first : second;
    float* dst = s % 2 == 0 ? second : first;
    const int a = axis[s];
    const pass_math m = math[s];
    // The source region's strides; the result region's extents.
    const int stride[3] = {extent(s, 1) * extent(s, 2), extent(s, 2), 1};
    const int e1 = extent(s + 1, 1), e2 = extent(s + 1, 2), total = extent(s + 1, 0) * e1;
    const int shift = lo[a] * stride[a], step = stride[a];
    const bool last = s + 1 == passes;
    for (int r0 = t / 32 * rows; r0 < total; r0 += threads / 32 * rows) {
      // The rows' first voxels in the source region, shifted by the halo
      // along the pass's axis (rows past the end repeat the first).
      int c0[rows], c1[rows], base[rows];
      DWSR_UNROLL
      for (int q = 0; q < rows; ++q) {
        const int r = r0 + q < total ? r0 + q : r0;
        c0[q] = r / e1;
        c1[q] = r - c0[q] * e1;
        base[q] = c0[q] * stride[0] + c1[q] * stride[1] + shift;
      }
      for (int c2 = t % 32; c2 - t % 32 < e2; c2 += 32) {
        const int at = c2 < e2 ? c2 : 0;
        float v[rows];
        m.values<rows>([&](int q, int k) { return src[base[q] + at + k * step]; }, v);
        DWSR_UNROLL
        for (int q = 0; q < rows; ++q) {
          if (r0 + q >= total || c2 >= e2) continue;
          if (!last) {
            dst[(r0 + q) * e2 + c2] = v[q];
            continue;
          }
          // The last region is the tile itself.
          const int o0 = origin[0] + c0[q], o1 = origin[1] + c1[q], o2 = origin[2] + c2;
          if (o0 < n[0] && o1 < n[1] && o2 < n[2]) store(o0, o1, o2, v[q]);
        }
      }
    }
  }
};

/// Candidate output tiles, largest first: 32 samples of time keep the loads
/// and stores coalesced; the first that fits tile_shared_bytes is taken.
inline constexpr int tile_candidates[][3] = {{8, 8, 32}, {4, 8, 32}, {4, 4, 32}, {2, 4, 32},
                                             {2, 2, 32}, {1, 2, 32}, {1, 1, 32}};

/// The tile filter of passes along axis[p] with size[p] weights over a cube
/// of extents n, its passes' arithmetic (math) left for the caller; passes == 0
/// where the tile path does not apply: no pass or more than 3, an axis
/// filtered twice, a cube of 2^31 voxels or more or of more than 65535 tiles
/// along inline or crossline (the launch grid), no candidate tile within
/// tile_shared_bytes, or more than max_work times the separate passes' taps
/// with the largest tile that fits.
inline tile_filter plan_tile(const std::int64_t n[3], int passes, const int axis[], const std::uint64_t size[],
                             double max_work = tile_max_work) {
  tile_filter f;
  if (passes < 1 || passes > 3) return f;
  if (n[0] * n[1] * n[2] >= (std::int64_t{1} << 31)) return f;
  bool seen[3] = {};
  for (int p = 0; p < passes; ++p) {
    const int a = axis[p];
    if (a < 0 || a > 2 || size[p] < 1 || size[p] > 1024 || seen[a]) return f;
    seen[a] = true;
    f.axis[p] = a;
    f.lo[a] = int(size[p] / 2);
    f.hi[a] = int(size[p] - 1 - size[p] / 2);
  }
  for (int a = 0; a < 3; ++a) f.n[a] = int(n[a]);
  f.passes = passes;
  for (const auto& c : tile_candidates) {
    for (int a = 0; a < 3; ++a) f.tile[a] = c[a];
    if (f.shared_bytes() <= tile_shared_bytes && f.tiles(0) <= 65535 && f.tiles(1) <= 65535) {
      if (f.work() > max_work) break;  // smaller tiles would recompute more
      return f;
    }
  }
  f.passes = 0;
  return f;
}

}  // namespace dwsr::operators::cuda::detail
