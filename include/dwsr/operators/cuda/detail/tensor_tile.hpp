#pragma once
/// \file The structure tensor's window means (gi2, gj2, gk2, gigj, gigk,
/// gjgk over a k0 x k1 x k2 window, reflect borders) of three gradient
/// cubes: the arithmetic of one voxel, and a tile path that computes an
/// output tile per block in shared memory.
///
/// Each mean is the CPU's (operators/detail/structure_tensor.hpp's uniform
/// passes): the float products summed in double in ascending order along
/// inline, divided by k0 and rounded to float; those summed along crossline
/// likewise; then along time. The tile path computes each such partial mean
/// once per tile instead of once per voxel that needs it, in the same order,
/// so its bits equal a voxel-by-voxel evaluation.
///
/// Why: a thread per voxel made 6 k0 k1 k2 double sums and 6 (k1 k2 + k2 + 1)
/// double divisions (162 and 78 for 3x3x3). Double arithmetic, not memory,
/// bounded the structure-tensor operators on an H200
/// (gradient_structure_tensor at 3.9 Gvoxel/s, CuPy's formulation's speed;
/// 4.7 with only the loads tiled). The stages make about 61 and 20.
///
/// Written once for the device and the host: a host test runs each phase's
/// threads in turn (the barrier between the phases), so it checks the
/// indexing the GPU runs.

#include <cstdint>

#include "dwsr/core/host_device.hpp"
#include "dwsr/core/shape.hpp"
#include "dwsr/operators/cuda/detail/device_math.cuh"
#include "dwsr/operators/cuda/detail/tile_filter.hpp"

namespace dwsr::operators::cuda::detail {

/// The six window means of one voxel into tensor[6]; load(a, b, t, g) writes
/// the three gradients of the tap a along inline, b crossline, t time.
template <class Load>
DWSR_HOST_DEVICE void window_means(const int k[3], Load&& load, float* tensor) {
  double s3[6] = {0, 0, 0, 0, 0, 0};
  for (int t = 0; t < k[2]; ++t) {
    double s2[6] = {0, 0, 0, 0, 0, 0};
    for (int b = 0; b < k[1]; ++b) {
      double s1[6] = {0, 0, 0, 0, 0, 0};
      for (int a = 0; a < k[0]; ++a) {
        float g[3];
        load(a, b, t, g);
        const float p[6] = {mul_rn(g[0], g[0]), mul_rn(g[1], g[1]), mul_rn(g[2], g[2]),
                            mul_rn(g[0], g[1]), mul_rn(g[0], g[2]), mul_rn(g[1], g[2])};
        for (int q = 0; q < 6; ++q) s1[q] = add_rn(s1[q], double(p[q]));
      }
      for (int q = 0; q < 6; ++q) s2[q] = add_rn(s2[q], double(static_cast<float>(s1[q] / double(k[0]))));
    }
    for (int q = 0; q < 6; ++q) s3[q] = add_rn(s3[q], double(static_cast<float>(s2[q] / double(k[1]))));
  }
  for (int q = 0; q < 6; ++q) tensor[q] = static_cast<float>(s3[q] / double(k[2]));
}

/// The window means of a cube, tile by tile, in three stages as the CPU's
/// passes (window_means' sums, shared by the voxels whose windows overlap):
/// stage 1 means the products along inline over the tile's inlines and the
/// halo region's crosslines and times, stage 2 those along crossline, stage 3
/// along time. Axes: 0 inline, 1 crossline, 2 time.
///
/// Shared memory: buffer A holds the three gradients' region (tile and halo),
/// later stage 2's six means; buffer B stage 1's six means.
struct tensor_tile {
  int tile[3] = {};  ///< output tile extents (tile[0] == 0: the path does not apply)
  int k[3] = {};     ///< the window
  int n[3] = {};     ///< the cube's extents

  /// Extent of the loaded region (tile and halo) along axis a.
  DWSR_HOST_DEVICE int region(int a) const { return tile[a] + k[a] - 1; }
  /// Floats of one gradient's region.
  DWSR_HOST_DEVICE int region_floats() const { return region(0) * region(1) * region(2); }
  /// Points of stage 1 (tile x region x region) and of stage 2 (tile x tile x region).
  DWSR_HOST_DEVICE int stage1_points() const { return tile[0] * region(1) * region(2); }
  DWSR_HOST_DEVICE int stage2_points() const { return tile[0] * tile[1] * region(2); }
  /// Floats of buffers A and B.
  DWSR_HOST_DEVICE int a_floats() const {
    return 3 * region_floats() > 6 * stage2_points() ? 3 * region_floats() : 6 * stage2_points();
  }
  DWSR_HOST_DEVICE int b_floats() const { return 6 * stage1_points(); }
  int shared_bytes() const { return (a_floats() + b_floats()) * int(sizeof(float)); }
  /// Tiles along axis a.
  int tiles(int a) const { return (n[a] + tile[a] - 1) / tile[a]; }

  // A block works in four phases separated by its barrier. Within a phase
  // no thread reads what another writes, so a host may run a phase's threads
  // in any order. Points run time fastest, so a warp reads consecutive slots.

  /// Phase 1: load(slot, voxel) copies each gradient's value at cube index
  /// `voxel` to slot `slot` of A (gradient g's at g * region_floats()).
  template <class Load>
  DWSR_HOST_DEVICE void load_phase(int thread, int threads, const int origin[3], Load&& load) const {
    const int r1 = region(1), r2 = region(2), count = region_floats();
    for (int r = thread; r < count; r += threads) {
      const int t = r % r2, rest = r / r2, x = rest % r1, i = rest / r1;
      const auto il = reflect(origin[0] + i - k[0] / 2, n[0]);
      const auto xl = reflect(origin[1] + x - k[1] / 2, n[1]);
      const auto tt = reflect(origin[2] + t - k[2] / 2, n[2]);
      load(r, std::uint64_t((il * n[1] + xl) * n[2] + tt));
    }
  }

  /// Phase 2: the products' means along inline, A's gradients to B.
  DWSR_HOST_DEVICE void inline_phase(int thread, int threads, const float* a, float* b) const {
    const int r1 = region(1), r2 = region(2), count = region_floats(), points = stage1_points();
    for (int p = thread; p < points; p += threads) {
      const int t = p % r2, rest = p / r2, x = rest % r1, u0 = rest / r1;
      double s[6] = {0, 0, 0, 0, 0, 0};
      for (int d = 0; d < k[0]; ++d) {
        const int at = ((u0 + d) * r1 + x) * r2 + t;
        const float gi = a[at], gj = a[count + at], gk = a[2 * count + at];
        const float prod[6] = {mul_rn(gi, gi), mul_rn(gj, gj), mul_rn(gk, gk),
                               mul_rn(gi, gj), mul_rn(gi, gk), mul_rn(gj, gk)};
        for (int q = 0; q < 6; ++q) s[q] = add_rn(s[q], double(prod[q]));
      }
      for (int q = 0; q < 6; ++q) b[q * points + p] = static_cast<float>(s[q] / double(k[0]));
    }
  }

  /// Phase 3: the means along crossline, B to A.
  DWSR_HOST_DEVICE void crossline_phase(int thread, int threads, const float* b, float* a) const {
    const int r1 = region(1), r2 = region(2), from = stage1_points(), points = stage2_points();
    for (int p = thread; p < points; p += threads) {
      const int t = p % r2, rest = p / r2, u1 = rest % tile[1], u0 = rest / tile[1];
      double s[6] = {0, 0, 0, 0, 0, 0};
      for (int d = 0; d < k[1]; ++d) {
        const int at = (u0 * r1 + u1 + d) * r2 + t;
        for (int q = 0; q < 6; ++q) s[q] = add_rn(s[q], double(b[q * from + at]));
      }
      for (int q = 0; q < 6; ++q) a[q * points + p] = static_cast<float>(s[q] / double(k[1]));
    }
  }

  /// Phase 4: the means along time from A, emit(voxel, tensor) for each
  /// voxel of the tile inside the cube.
  template <class Emit>
  DWSR_HOST_DEVICE void time_phase(int thread, int threads, const int origin[3], const float* a, Emit&& emit) const {
    const int r2 = region(2), from = stage2_points();
    for (int v = thread; v < tile[0] * tile[1] * tile[2]; v += threads) {
      const int u2 = v % tile[2], rest = v / tile[2], u1 = rest % tile[1], u0 = rest / tile[1];
      const std::int64_t c0 = origin[0] + u0, c1 = origin[1] + u1, c2 = origin[2] + u2;
      if (c0 >= n[0] || c1 >= n[1] || c2 >= n[2]) continue;
      double s[6] = {0, 0, 0, 0, 0, 0};
      for (int d = 0; d < k[2]; ++d) {
        const int at = (u0 * tile[1] + u1) * r2 + u2 + d;
        for (int q = 0; q < 6; ++q) s[q] = add_rn(s[q], double(a[q * from + at]));
      }
      float tensor[6];
      for (int q = 0; q < 6; ++q) tensor[q] = static_cast<float>(s[q] / double(k[2]));
      emit(std::uint64_t((c0 * n[1] + c1) * n[2] + c2), tensor);
    }
  }
};

/// Candidate output tiles, largest first (32 samples of time keep the loads coalesced).
inline constexpr int tensor_tile_candidates[][3] = {{4, 8, 32}, {2, 8, 32}, {1, 8, 32},
                                                    {1, 4, 32}, {1, 2, 32}, {1, 1, 32}};

/// The tile path for window k over a cube of shape s: the largest candidate
/// whose buffers fit tile_shared_bytes; tile[0] == 0 where none does,
/// or the cube needs 64-bit region arithmetic or more than 65535 tiles along
/// inline or crossline (the launch grid).
inline tensor_tile plan_tensor_tile(shape3 s, const std::uint64_t k[3]) {
  tensor_tile f;
  constexpr std::uint64_t limit = std::uint64_t{1} << 30;
  if (s.voxels() == 0 || s.inlines >= limit || s.crosslines >= limit || s.samples >= limit) return f;
  for (int a = 0; a < 3; ++a) {
    if (k[a] < 1 || k[a] > 1024) return f;
    f.k[a] = int(k[a]);
  }
  f.n[0] = int(s.inlines), f.n[1] = int(s.crosslines), f.n[2] = int(s.samples);
  for (const auto& c : tensor_tile_candidates) {
    for (int a = 0; a < 3; ++a) f.tile[a] = c[a];
    if (f.shared_bytes() <= tile_shared_bytes && f.tiles(0) <= 65535 && f.tiles(1) <= 65535) return f;
  }
  f.tile[0] = 0;
  return f;
}

}  // namespace dwsr::operators::cuda::detail
