#pragma once
/// \file The dip and azimuth family (reference: dasf-seismic-extras dip_azm.py):
/// gradient dips and the gradient structure tensor (GST) with the dips, dip and
/// azimuth of its principal eigenvector. gi, gj, gk are the reference's first
/// derivatives along inline, crossline and time.
///
/// Memory: everything streams over inline slices. Gradients live in a ring of
/// kernel[0] slices, tensors only as per-thread rows, eigen-solves run per voxel
/// on the stack: input + outputs + a few slices (the NumPy reference holds
/// every gradient product and a 3x3 matrix per voxel: 11-59x its input).
///
/// Differences from the reference: none in the math. Its float32 steps (passes
/// of the separable filters, dips, the post-processing of eigenvectors) are
/// reproduced; its uniform filter's running sums are replaced by direct window
/// sums (position-independent, so chunked runs are bitwise whole-cube runs);
/// the eigen-solves are closed-form in double (symmetric_eigen.hpp: the
/// characteristic cubic, a cross product for the principal vector, Jacobi only
/// where the two largest eigenvalues nearly tie) instead of LAPACK's syevd.
///
/// Limit: arithmetic per voxel. Per voxel the tensor costs 3 gradients (~30
/// float operations), 6 products and 6 x 3 window passes (each crossline's
/// inline pass computed once per row sweep), the eigen-solve ~150 double
/// operations with 5 square roots and 8 divisions (pipelined over batches of
/// voxels), then a float acos / atan2 (detail/polar.hpp's arccos and angle on
/// the CPU, without libm's call per voxel and over batches in vector lanes:
/// principal_angles; the GPU's own acosf and atan2f).
/// Gradients, window sums and solve run in
/// the widest vector lanes the CPU has (core/simd_isa.hpp: AVX-512 gives
/// gst_3d_dip 1.7x over the SSE2 baseline, the same bits).

#include <array>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <numbers>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "dwsr/core/host_device.hpp"
#include "dwsr/core/simd_isa.hpp"
#include "dwsr/operators/detail/common.hpp"
#include "dwsr/operators/detail/gradient_dips.hpp"
#include "dwsr/operators/detail/kernel_param.hpp"
#include "dwsr/operators/detail/polar.hpp"
#include "dwsr/operators/detail/sqrt_lanes.hpp"
#include "dwsr/operators/detail/structure_tensor.hpp"
#include "dwsr/operators/detail/symmetric_eigen.hpp"
#include "dwsr/ops/operator.hpp"

namespace dwsr::operators {

namespace detail {

/// A derivative (radius 1) feeding a window of `kernel`: radius 1 + kernel / 2 per axis.
inline dwsr::halo derivative_then_window(const std::array<std::uint64_t, 3>& kernel) {
  return {.radius = {1 + kernel[0] / 2, 1 + kernel[1] / 2, 1 + kernel[2] / 2}};
}

/// float32 outputs with the reference's file suffixes.
inline std::vector<output_spec> float_outputs(std::initializer_list<const char*> suffixes) {
  std::vector<output_spec> out;
  for (const char* s : suffixes) out.push_back({s, dtype::float32});
  return out;
}

/// The principal eigenvector as the reference post-processes it in float32:
/// cast, normalised, and flipped so that its time component is >= 0 (a zero
/// time component zeroes it, like numpy's sign).
DWSR_HOST_DEVICE inline std::array<float, 3> oriented_principal(const detail::tensor_eigen& e) {
  std::array<float, 3> v{static_cast<float>(e.principal[0]), static_cast<float>(e.principal[1]),
                         static_cast<float>(e.principal[2])};
  float norm = v[0] * v[0];
  norm += v[1] * v[1];
  norm += v[2] * v[2];
  norm = std::sqrt(norm);
  const float sign = static_cast<float>((v[2] > 0) - (v[2] < 0));
  for (auto& x : v) x = x / norm * sign;
  return v;
}

/// Solves the tensors of every voxel in batches and hands each to
/// g(eigensystems, n, y): y[m] points at output m's first sample of the batch.
template <std::size_t N, class Ctx, class G>
void per_voxel_eigen_batches(Ctx& ctx, cube_view<const float> in, const std::array<std::uint64_t, 3>& kernel,
                             std::span<const array_ref> out, G&& g) {
  const auto nt = in.shape().samples;
  detail::for_each_tensor_row(ctx, in, kernel,
                              [&](std::uint64_t i, std::uint64_t j, const float* const* c, std::size_t) {
                                std::array<float*, N> y;
                                for (std::size_t k = 0; k < N; ++k) y[k] = out[k].as<float>().trace(i, j).data();
                                detail::eigen_rows e;
                                for (std::uint64_t t0 = 0; t0 < nt; t0 += detail::eigen_batch) {
                                  const auto n = std::min<std::uint64_t>(detail::eigen_batch, nt - t0);
                                  detail::eigen_rows_of<true>(c, t0, n, e);
                                  std::array<float*, N> at;
                                  for (std::size_t m = 0; m < N; ++m) at[m] = y[m] + t0;
                                  g(std::as_const(e), std::size_t(n), at);
                                }
                              });
}

/// Writes f(tensor eigensystem) of every voxel, N floats, into outputs 0..N-1.
template <std::size_t N, class Ctx, class F>
void per_voxel_eigensystem(Ctx& ctx, cube_view<const float> in, const std::array<std::uint64_t, 3>& kernel,
                           std::span<const array_ref> out, F&& f) {
  per_voxel_eigen_batches<N>(ctx, in, kernel, out,
                             [&](const eigen_rows& e, std::size_t n, const std::array<float*, N>& y) {
                               for (std::size_t k = 0; k < n; ++k) {
                                 const std::array<float, N> v = f(e.at(k));
                                 for (std::size_t m = 0; m < N; ++m) y[m][k] = v[m];
                               }
                             });
}

/// Derived::angles of the oriented principal vectors (oriented_principal's,
/// operation for operation) of voxels 0..n-1 of `e`, NaN -> 0, into y: in
/// stages over the batch, each a loop without branches that vectorises in
/// Isa's lanes (square roots by sqrt_each), instead of a voxel at a time.
template <class Derived, simd_isa Isa>
void principal_angles(const eigen_rows& e, std::size_t n, float* y) {
  float v0[eigen_batch], v1[eigen_batch], v2[eigen_batch], norm[eigen_batch];
  for (std::size_t k = 0; k < n; ++k) {
    v0[k] = static_cast<float>(e.principal[0][k]);
    v1[k] = static_cast<float>(e.principal[1][k]);
    v2[k] = static_cast<float>(e.principal[2][k]);
    float s = v0[k] * v0[k];
    s += v1[k] * v1[k];
    s += v2[k] * v2[k];
    norm[k] = s;
  }
  sqrt_each<Isa>(norm, n);
  for (std::size_t k = 0; k < n; ++k) {
    const float sign =
        static_cast<float>(int(std::isgreater(v2[k], 0.0f)) - int(std::isless(v2[k], 0.0f)));  // as (v > 0) - (v < 0)
    v0[k] = v0[k] / norm[k] * sign;
    v1[k] = v1[k] / norm[k] * sign;
    v2[k] = v2[k] / norm[k] * sign;
  }
  Derived::template angles<Isa>(v0, v1, v2, n, y);
  for (std::size_t k = 0; k < n; ++k) y[k] = nan_to_zero(y[k]);
}

/// The family's protocol for operator Derived: Params (`dip_factor` and
/// `kernel`, or `kernel` only) bound under its name, and the halo of a first
/// derivative (radius 1) feeding a window of `kernel`.
template <class Derived, class Params = dip_params>
struct dip_azimuth_op : bound_params<Derived, Params> {
  static constexpr std::string_view family = "dip_azimuth";
  using bound_params<Derived, Params>::bound_params;
  dwsr::halo halo() const { return derivative_then_window(this->kernel); }
};

/// An attribute of the GST's principal eigenvector at every voxel, in N
/// outputs: Derived's of(eigensystem) gives the voxel's N values.
template <class Derived, std::size_t N>
struct principal_vector_op : dip_azimuth_op<Derived> {
  using dip_azimuth_op<Derived>::dip_azimuth_op;
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    per_voxel_eigensystem<N>(ctx, in, this->kernel, out,
                             [this](const tensor_eigen& e) { return static_cast<const Derived&>(*this).of(e); });
  }
};

/// An angle in degrees of the GST's principal unit vector v (oriented and in
/// float32 as the reference post-processes it), Derived::angle(v), NaN -> 0:
/// of() for a voxel (the GPU's), run() a batch at a time on the CPU
/// (principal_angles with Derived::angles, the same bits).
template <class Derived>
struct principal_angle : principal_vector_op<Derived, 1>, float32_output {
  using principal_vector_op<Derived, 1>::principal_vector_op;
  DWSR_HOST_DEVICE std::array<float, 1> of(const tensor_eigen& e) const {
    return {nan_to_zero(Derived::angle(oriented_principal(e)))};
  }
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    const auto isa = simd_isa_in_use();
    per_voxel_eigen_batches<1>(
        ctx, in, this->kernel, out, [isa](const eigen_rows& e, std::size_t n, const std::array<float*, 1>& y) {
          with_simd_isa(isa, [&](auto lanes) { principal_angles<Derived, lanes()>(e, n, y[0]); });
        });
  }
};

}  // namespace detail

/// gradient_dips: -gi/gk * dip_factor (inline) and -gj/gk * dip_factor
/// (crossline), NaN -> 0, each median-filtered over `kernel`. Outputs _il, _xl.
struct gradient_dips : detail::dip_azimuth_op<gradient_dips> {
  static constexpr std::string_view name = "gradient_dips";
  static constexpr std::string_view summary = "inline and crossline dips -g/gk * dip_factor, median-filtered";
  using dip_azimuth_op::dip_azimuth_op;
  std::vector<output_spec> outputs() const { return detail::float_outputs({"il", "xl"}); }
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::dips_stream<Ctx> dips(ctx, in.shape(), kernel, dip_factor);
    if constexpr (!Ctx::computes) return;
    auto il = out[0].as<float>();
    auto xl = out[1].as<float>();
    for (std::uint64_t i = 0; i < in.shape().inlines; ++i)
      dips.slice(in, i, il.trace(i, 0).data(), xl.trace(i, 0).data());
  }
};

/// gradient_structure_tensor: the six gradient products, each smoothed by a
/// uniform filter of `kernel`. Outputs _gi2, _gj2, _gk2, _gigj, _gigk, _gjgk.
struct gradient_structure_tensor : detail::dip_azimuth_op<gradient_structure_tensor, detail::kernel_params> {
  static constexpr std::string_view name = "gradient_structure_tensor";
  static constexpr std::string_view summary = "gradient products gi2, gj2, gk2, gigj, gigk, gjgk, uniform-filtered";
  using dip_azimuth_op::dip_azimuth_op;
  std::vector<output_spec> outputs() const {
    return detail::float_outputs({"gi2", "gj2", "gk2", "gigj", "gigk", "gjgk"});
  }
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    const auto nt = in.shape().samples;
    detail::for_each_tensor_row(ctx, in, kernel,
                                [&](std::uint64_t i, std::uint64_t j, const float* const* c, std::size_t) {
                                  for (std::size_t k = 0; k < 6; ++k)
                                    std::copy(c[k], c[k] + nt, out[k].as<float>().trace(i, j).data());
                                });
  }
};

/// gst_2d_dips: the GST's principal eigenvector v per voxel; -v0/v2 * dip_factor
/// (inline) and -v1/v2 * dip_factor (crossline), float32 as in the reference,
/// NaN -> 0 (+-inf kept where v2 = 0). Outputs _il, _xl.
struct gst_2d_dips : detail::principal_vector_op<gst_2d_dips, 2> {
  static constexpr std::string_view name = "gst_2d_dips";
  static constexpr std::string_view summary = "inline and crossline dips of the structure tensor's principal vector";
  using principal_vector_op::principal_vector_op;
  std::vector<output_spec> outputs() const { return detail::float_outputs({"il", "xl"}); }
  DWSR_HOST_DEVICE std::array<float, 2> of(const detail::tensor_eigen& e) const {
    const auto factor = static_cast<float>(dip_factor);
    auto dip = [factor](double v, double vt) {
      const float d = -static_cast<float>(v) / static_cast<float>(vt) * factor;
      return std::isnan(d) ? 0.0f : d;
    };
    return {dip(e.principal[0], e.principal[2]), dip(e.principal[1], e.principal[2])};
  }
};

/// gst_3d_dip: arccos(|v2|) of the GST's principal unit vector, in degrees
/// [0, 90], NaN -> 0 (the reference's float32 post-processing).
struct gst_3d_dip : detail::principal_angle<gst_3d_dip> {
  static constexpr std::string_view name = "gst_3d_dip";
  static constexpr std::string_view summary = "dip of the structure tensor's principal vector, degrees";
  using principal_angle::principal_angle;
  DWSR_HOST_DEVICE static float angle(const std::array<float, 3>& v) {
#ifdef __CUDA_ARCH__
    const float a = acosf(v[2]);
#else
    const float a = detail::arccos(v[2]);       // no libm call per voxel (within 2 ulp)
#endif
    return a * static_cast<float>(180.0 / std::numbers::pi);
  }
  /// angle() of n unit vectors (components v0, v1, v2) into y, in Isa's lanes.
  template <simd_isa Isa>
  static void angles(const float*, const float*, const float* v2, std::size_t n, float* y) {
    float z[detail::eigen_batch], root[detail::eigen_batch];
    for (std::size_t k = 0; k < n; ++k) z[k] = root[k] = detail::arccos_square(v2[k]);
    detail::sqrt_each<Isa>(root, n);
    for (std::size_t k = 0; k < n; ++k)
      y[k] = detail::arccos_from(v2[k], z[k], root[k]) * static_cast<float>(180.0 / std::numbers::pi);
  }
};

/// gst_3d_azm: arctan2(v0, v1) of the GST's oriented principal unit vector, in
/// degrees [0, 360), NaN -> 0 (the reference's float32 post-processing).
struct gst_3d_azm : detail::principal_angle<gst_3d_azm> {
  static constexpr std::string_view name = "gst_3d_azm";
  static constexpr std::string_view summary = "azimuth of the structure tensor's principal vector, degrees";
  using principal_angle::principal_angle;
  DWSR_HOST_DEVICE static float angle(const std::array<float, 3>& v) {
#ifdef __CUDA_ARCH__
    const float r = atan2f(v[0], v[1]);
#else
    const float r = detail::angle(v[0], v[1]);  // no libm call per voxel (within 3 ulp)
#endif
    return degrees(r);
  }
  /// angle() of n unit vectors (components v0, v1, v2) into y, in Isa's lanes.
  template <simd_isa Isa>
  static void angles(const float* v0, const float* v1, const float*, std::size_t n, float* y) {
    for (std::size_t k = 0; k < n; ++k) y[k] = degrees(detail::angle(v0[k], v1[k]));
  }
  /// Radians r in (-pi, pi] as degrees in [0, 360).
  DWSR_HOST_DEVICE static float degrees(float r) {
    const float a = r * static_cast<float>(180.0 / std::numbers::pi);
    const float wrapped = a + 360.0f;
    return std::isless(a, 0.0f) ? wrapped : a;
  }
};

}  // namespace dwsr::operators
