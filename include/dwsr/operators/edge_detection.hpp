#pragma once
/// \file The edge-detection family (reference: dasf-seismic-extras
/// edge_detection.py): semblance, the eigenstructure of analytic-trace
/// covariances, attributes of the gradient structure tensor's eigenvalues, and
/// volume curvature of the gradient dips.
///
/// Memory: every operator streams over inline slices. Windows are read from the
/// input (or from rings of a few slices of gradients) and per-voxel matrices
/// exist only on the stack of the thread solving them: input + outputs + a few
/// slices + per-thread rows (the NumPy reference materialises a window or a
/// 3x3 matrix per voxel: 20-101x its input).

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dwsr/core/host_device.hpp"
#include "dwsr/operators/detail/analytic_signal.hpp"
#include "dwsr/operators/detail/common.hpp"
#include "dwsr/operators/detail/curvature.hpp"
#include "dwsr/operators/detail/gradient_dips.hpp"
#include "dwsr/operators/detail/kernel_param.hpp"
#include "dwsr/operators/detail/largest_eigenvalue.hpp"
#include "dwsr/operators/detail/largest_eigenvalue_lanes.hpp"
#include "dwsr/operators/detail/structure_tensor.hpp"
#include "dwsr/operators/detail/symmetric_eigen.hpp"
#include "dwsr/operators/detail/window_stream.hpp"
#include "dwsr/ops/operator.hpp"

namespace dwsr::operators {

namespace detail {

/// Semblance (both reference variants): over the window around each voxel,
/// sum_t (sum of traces)^2 / sum of squares / traces, in double; NaN -> 0.
/// Limit: adds per voxel: the window's traces summed (and squared) per
/// sample, then 2 x kernel[2] window taps per output in a chain (their order
/// is the reference's); about 500 MB/s per thread in memory on a 64x64x512
/// cube, far from memory bandwidth.
template <class Ctx>
void semblance(Ctx& ctx, cube_view<const float> in, const std::array<std::uint64_t, 3>& kernel, cube_view<float> out) {
  const auto shape = in.shape();
  const auto nt = shape.samples;
  const window_extent w[3] = {window_extent::of(kernel[0]), window_extent::of(kernel[1]), window_extent::of(kernel[2])};
  const auto traces = static_cast<double>(kernel[0] * kernel[1]);
  // Per thread: the window's trace sums and sums of squares per sample.
  thread_rows<double, Ctx> rows(ctx, 2, nt);
  if constexpr (!Ctx::computes) return;
  ctx.parallel_for(shape.traces(), [&](std::uint64_t b, std::uint64_t e, std::size_t slot) {
    double* sum = rows.row(slot, 0);
    double* squares = rows.row(slot, 1);
    for (auto tr = b; tr < e; ++tr) {
      const auto i = tr / shape.crosslines, j = tr % shape.crosslines;
      std::fill(sum, sum + nt, 0.0);
      std::fill(squares, squares + nt, 0.0);
      for_each_in_window(i, w[0], shape.inlines, [&](std::uint64_t, std::uint64_t il) {
        for_each_in_window(j, w[1], shape.crosslines, [&](std::uint64_t, std::uint64_t xl) {
          const float* x = in.trace(il, xl).data();
          for (std::uint64_t t = 0; t < nt; ++t) {
            const double v = x[t];
            sum[t] += v;
            squares[t] += v * v;
          }
        });
      });
      float* y = out.trace(tr).data();
      for (std::uint64_t t = 0; t < nt; ++t) sum[t] *= sum[t];  // now the squared sums
      for (std::uint64_t t = 0; t < nt; ++t) {
        // The window's taps in window order, reflected only near the ends.
        double num = 0, den = 0;
        if (t >= w[2].before && t + w[2].after < nt) {
          for (std::uint64_t s = t - w[2].before; s <= t + w[2].after; ++s) num += sum[s], den += squares[s];
        } else {
          for_each_in_window(t, w[2], nt, [&](std::uint64_t, std::uint64_t s) { num += sum[s], den += squares[s]; });
        }
        const double v = num / den / traces;
        y[t] = std::isnan(v) ? 0.0f : static_cast<float>(v);
      }
    }
  });
}

/// The covariances sum_s re_p re_q + im_p im_q (in double) over the time
/// window w of samples [t0, t0 + m) of n traces (rows[p]: nt real parts, then
/// nt imaginary parts): the covariance of traces q <= p at sample t0 + u in
/// sums[(p (p + 1) / 2 + q) * stride + u], u < m <= stride. Each pair's products
/// are formed once per sample of the block's reach, then summed over each
/// window in window order (so every sum is the one a per-voxel loop forms, bit
/// for bit), vectorised over the block.
inline void window_covariance_block(const float* const* rows, std::uint64_t n, std::uint64_t nt, window_extent w,
                                    std::uint64_t t0, std::uint64_t m, double* sums, std::uint64_t stride) {
  constexpr std::uint64_t reach = 1024;  // doubles of products on the stack
  const auto chunk = reach + 1 - m;      // window taps per pass over the products
  double products[reach];
  std::uint64_t pair = 0;
  for (std::uint64_t p = 0; p < n; ++p)
    for (std::uint64_t q = 0; q <= p; ++q, ++pair) {
      const float *rp = rows[p], *ip = rp + nt, *rq = rows[q], *iq = rq + nt;
      double* acc = sums + pair * stride;
      std::fill(acc, acc + m, 0.0);
      for (std::uint64_t k0 = 0; k0 < w.size(); k0 += chunk) {
        const auto taps = std::min(chunk, w.size() - k0);
        const auto span = m + taps - 1;
        // products[x]: the sample at window position k0 + x of output t0.
        const auto first = static_cast<std::int64_t>(t0 + k0) - static_cast<std::int64_t>(w.before);
        if (first >= 0 && std::uint64_t(first) + span <= nt) {
          const auto s0 = std::uint64_t(first);
          for (std::uint64_t x = 0; x < span; ++x)
            products[x] = double(rp[s0 + x]) * double(rq[s0 + x]) + double(ip[s0 + x]) * double(iq[s0 + x]);
        } else {
          for (std::uint64_t x = 0; x < span; ++x) {
            const auto s = reflect_index(first + static_cast<std::int64_t>(x), nt);
            products[x] = double(rp[s]) * double(rq[s]) + double(ip[s]) * double(iq[s]);
          }
        }
        for (std::uint64_t k = 0; k < taps; ++k)
          for (std::uint64_t u = 0; u < m; ++u) acc[u] += products[k + u];
      }
    }
}

/// window_covariance_block over every sample, in order of t: f(t, sums,
/// stride) with the covariance of traces q <= p at sums[(p (p + 1) / 2 + q) *
/// stride].
template <class F>
void window_covariances(const float* const* rows, std::uint64_t n, std::uint64_t nt, window_extent w, F&& f) {
  constexpr std::uint64_t budget = 4096;  // doubles of covariances on the stack
  const auto block = std::clamp<std::uint64_t>(budget / (n * (n + 1) / 2), 1, 32);
  double sums[budget];
  for (std::uint64_t t0 = 0; t0 < nt; t0 += block) {
    const auto m = std::min(block, nt - t0);
    window_covariance_block(rows, n, nt, w, t0, m, sums, block);
    for (std::uint64_t u = 0; u < m; ++u) f(t0 + u, static_cast<const double*>(sums + u), block);
  }
}

/// Writes f(e1, e2, e3) (the tensor's eigenvalues, largest first, as float32
/// like the reference's) of every voxel into `out`.
template <class Ctx, class F>
void per_voxel_eigenvalues(Ctx& ctx, cube_view<const float> in, const std::array<std::uint64_t, 3>& kernel,
                           cube_view<float> out, F&& f) {
  const auto nt = in.shape().samples;
  detail::for_each_tensor_row(
      ctx, in, kernel, [&](std::uint64_t i, std::uint64_t j, const float* const* c, std::size_t) {
        float* y = out.trace(i, j).data();
        detail::eigen_rows e;
        for (std::uint64_t t0 = 0; t0 < nt; t0 += detail::eigen_batch) {
          const auto n = std::min<std::uint64_t>(detail::eigen_batch, nt - t0);
          detail::eigen_rows_of<false>(c, t0, n, e);
          for (std::size_t k = 0; k < n; ++k)
            y[t0 + k] = f(static_cast<float>(e.values[2][k]), static_cast<float>(e.values[1][k]),
                          static_cast<float>(e.values[0][k]));
        }
      });
}

/// The family's protocol for operator Derived: Params (`kernel`, default 3 x 3
/// x 9, or `dip_factor` and `kernel`) bound under its name, one float32 output.
template <class Derived, class Params = kernel_params_of<3, 3, 9>>
struct edge_op : bound_params<Derived, Params>, float32_output {
  static constexpr std::string_view family = "edge_detection";
  using bound_params<Derived, Params>::bound_params;
};

/// Semblance over the window of `kernel` (the reference has two
/// implementations of the same math, generic_filter-based and patch-based;
/// dwsr computes both alike).
template <class Derived>
struct semblance_op : edge_op<Derived> {
  using edge_op<Derived>::edge_op;
  dwsr::halo halo() const { return window_halo(this->kernel); }
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    semblance(ctx, in, this->kernel, out[0].as<float>());
  }
};

/// An attribute Derived::of(e1, e2, e3) of the eigenvalues e1 >= e2 >= e3 of
/// the structure tensor smoothed over `kernel` (float32 arithmetic as in the
/// reference; NaN where it divides 0 by 0, as the reference does).
template <class Derived>
struct eigenvalue_attribute : edge_op<Derived> {
  using edge_op<Derived>::edge_op;
  dwsr::halo halo() const { return window_halo(this->kernel, 1); }
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    per_voxel_eigenvalues(ctx, in, this->kernel, out[0].as<float>(), Derived::of);
  }
};

}  // namespace detail

/// semblance: sum over the window of (sum of traces)^2 / sum of squares / traces.
DWSR_DECLARE_OPERATOR(semblance, "windowed semblance: sum (sum of traces)^2 / sum of squares / traces",
                      detail::semblance_op<semblance>)
/// semblance2: the reference's patch-based semblance, the same math as semblance.
DWSR_DECLARE_OPERATOR(semblance2, "windowed semblance (the reference's patch-based variant)",
                      detail::semblance_op<semblance2>)

/// eig_complex: per voxel, the covariance C = Re(A A^H) of the window's analytic
/// traces A (kernel[0] * kernel[1] traces of kernel[2] samples), then
/// |lambda_max / sum lambda| = lambda_max / trace(C), NaN -> 0. The reference
/// sums numpy.linalg.eigvals; for this symmetric matrix that is the trace.
/// Limit: arithmetic per voxel: the covariance's 45 x 9 double adds and a
/// warm-started 9 x 9 eigen-solve (3 power steps, about one inverse-iteration
/// step, a certificate). One solve at a time is bound by latency (chains of
/// dependent sums, about 0.6 us per voxel); the default 3 x 3 traces solve
/// eight segments of a trace at once in vector lanes (about 0.4 us per voxel
/// with AVX2, a quarter of it the covariances). Other windows solve one voxel
/// at a time.
struct eig_complex : detail::edge_op<eig_complex> {
  static constexpr std::string_view name = "eig_complex";
  static constexpr bool fft_based = true;  ///< the window's analytic traces
  static constexpr std::string_view summary = "largest eigenvalue share of the window's analytic-trace covariance";
  explicit eig_complex(const param_values& p = param_values::bind(name, params())) : edge_op(p) {
    if (kernel[0] * kernel[1] > detail::largest_eigenvalue_solver::max_size)
      throw invalid_input("parameter 'kernel' of 'eig_complex': " + std::to_string(kernel[0]) + " x " +
                          std::to_string(kernel[1]) + " traces per window exceed the supported " +
                          std::to_string(detail::largest_eigenvalue_solver::max_size) +
                          "; use a smaller inline x crossline window");
  }
  /// The analytic signal needs whole traces; the time window lies inside them.
  dwsr::halo halo() const { return {.radius = {kernel[0] / 2, kernel[1] / 2, 0}, .whole_traces = true}; }
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    const auto shape = in.shape();
    const auto nt = shape.samples;
    const auto n = kernel[0] * kernel[1];
    using detail::window_extent;
    const window_extent w[3] = {window_extent::of(kernel[0]), window_extent::of(kernel[1]),
                                window_extent::of(kernel[2])};
    detail::analytic_workspace<Ctx> analytic(ctx, nt);
    // Per thread: the window's n analytic traces (each row nt real parts, then
    // nt imaginary parts), one n x n covariance and the solver's scratch.
    using solver = detail::largest_eigenvalue_solver;
    detail::thread_rows<float, Ctx> traces(ctx, n, 2 * nt);
    detail::thread_rows<double, Ctx> covariance(ctx, 2, std::max(n * n, solver::scratch_size(n)));
    if constexpr (!Ctx::computes) return;
    auto y = out[0].as<float>();
    // The window's analytic traces around trace tr, in slot's rows.
    auto window_traces = [&](std::uint64_t tr, std::size_t slot) {
      const auto i = tr / shape.crosslines, j = tr % shape.crosslines;
      detail::for_each_in_window(i, w[0], shape.inlines, [&](std::uint64_t a, std::uint64_t il) {
        detail::for_each_in_window(j, w[1], shape.crosslines, [&](std::uint64_t k, std::uint64_t xl) {
          const auto* s = analytic.analytic(slot, in.trace(il, xl).data());
          float* row = traces.row(slot, a * kernel[1] + k);
          for (std::uint64_t t = 0; t < nt; ++t) row[t] = s[t].real(), row[nt + t] = s[t].imag();
        });
      });
    };
    ctx.parallel_for(shape.traces(), [&](std::uint64_t b, std::uint64_t e, std::size_t slot) {
      const float* rows[solver::max_size];
      for (std::uint64_t p = 0; p < n; ++p) rows[p] = traces.row(slot, p);
      if (n == 9) {
        detail::largest_eigenvalue_lanes<9> largest(covariance.row(slot, 1));
        for (auto tr = b; tr < e; ++tr) {
          window_traces(tr, slot);
          with_simd_isa(simd_isa_in_use(),
                        [&](auto isa) { segments_in_lanes<isa()>(largest, rows, nt, w[2], y.trace(tr).data()); });
        }
        return;
      }
      solver largest(n, covariance.row(slot, 1));
      double* c = covariance.row(slot, 0);
      for (auto tr = b; tr < e; ++tr) {
        largest.reset();
        window_traces(tr, slot);
        float* out_trace = y.trace(tr).data();
        detail::window_covariances(rows, n, nt, w[2], [&](std::uint64_t t, const double* sums, std::uint64_t stride) {
          double trace = 0;
          for (std::uint64_t p = 0, pq = 0; p < n; ++p) {
            for (std::uint64_t q = 0; q <= p; ++q, ++pq) c[p * n + q] = c[q * n + p] = sums[pq * stride];
            trace += c[p * n + p];
          }
          out_trace[t] = trace > 0 ? share(largest(c, trace), trace) : 0.0f;
        });
      }
    });
  }

 private:
  // A window of zero traces is 0 / 0, which the reference maps to 0.
  static float share(double largest, double trace) { return static_cast<float>(std::abs(largest / trace)); }

  // The default 3 x 3 traces: one trace's samples (its window in `rows`) in
  // eight segments solved together in the lanes of Isa, each segment
  // warm-started from its own previous sample.
  template <simd_isa Isa>
  static void segments_in_lanes(detail::largest_eigenvalue_lanes<9>& largest, const float* const* rows,
                                std::uint64_t nt, detail::window_extent w, float* out) {
    constexpr auto lanes = detail::largest_eigenvalue_lanes<9>::lanes;
    // Each pass takes `block` samples of every segment: 92 KiB of covariances
    // on the stack (smaller blocks vectorise the window sums less well).
    constexpr std::uint64_t pairs = 45, block = 32;
    const auto segment = (nt + lanes - 1) / lanes;
    double sums[lanes][pairs * block];
    double c[81 * lanes], trace[lanes], rho[lanes];
    std::uint64_t count[lanes];
    bool usable[lanes];
    largest.reset();
    for (std::uint64_t s0 = 0; s0 < segment; s0 += block) {
      const auto m = std::min(block, segment - s0);
      for (std::uint64_t l = 0; l < lanes; ++l) {
        const auto t0 = l * segment + s0;
        count[l] = t0 < nt ? std::min(m, nt - t0) : 0;
        if (count[l] > 0) detail::window_covariance_block(rows, 9, nt, w, t0, count[l], sums[l], block);
      }
      for (std::uint64_t u = 0; u < m; ++u) {
        // Lanes past their segment's end, or on a window of zero traces,
        // solve the identity; their results are not used.
        for (std::uint64_t l = 0; l < lanes; ++l) {
          double t = 0;
          if (u < count[l])
            for (std::uint64_t p = 0; p < 9; ++p) t += sums[l][(p * (p + 1) / 2 + p) * block + u];
          usable[l] = t > 0;
          trace[l] = usable[l] ? t : 9.0;
        }
        for (std::uint64_t p = 0, pq = 0; p < 9; ++p)
          for (std::uint64_t q = 0; q <= p; ++q, ++pq)
            for (std::uint64_t l = 0; l < lanes; ++l)
              c[(p * 9 + q) * lanes + l] = c[(q * 9 + p) * lanes + l] =
                  usable[l] ? sums[l][pq * block + u] : (p == q ? 1.0 : 0.0);
        largest.solve<Isa>(c, trace, rho);
        for (std::uint64_t l = 0; l < lanes; ++l)
          if (u < count[l]) out[l * segment + s0 + u] = usable[l] ? share(rho[l], trace[l]) : 0.0f;
      }
    }
  }
};

/// chaos: 2 e2 / (e1 + e3) of the structure tensor smoothed over `kernel`.
struct chaos : detail::eigenvalue_attribute<chaos> {
  static constexpr std::string_view name = "chaos";
  static constexpr std::string_view summary = "structure-tensor chaos 2 e2 / (e1 + e3)";
  using eigenvalue_attribute::eigenvalue_attribute;
  DWSR_HOST_DEVICE static float of(float e1, float e2, float e3) { return (2 * e2) / (e1 + e3); }
};

/// coherence: (e1 - e2) / (e1 + e2) of the structure tensor smoothed over `kernel`.
struct coherence : detail::eigenvalue_attribute<coherence> {
  static constexpr std::string_view name = "coherence";
  static constexpr std::string_view summary = "structure-tensor coherence (e1 - e2) / (e1 + e2)";
  using eigenvalue_attribute::eigenvalue_attribute;
  DWSR_HOST_DEVICE static float of(float e1, float e2, float) { return (e1 - e2) / (e1 + e2); }
};

/// structured_semblance: ((e2 + e3)^2 e1) / ((e2^2 + e3^2) e1) of the smoothed structure tensor.
struct structured_semblance : detail::eigenvalue_attribute<structured_semblance> {
  static constexpr std::string_view name = "structured_semblance";
  static constexpr std::string_view summary = "structure-tensor semblance ((e2 + e3)^2 e1) / ((e2^2 + e3^2) e1)";
  using eigenvalue_attribute::eigenvalue_attribute;
  DWSR_HOST_DEVICE static float of(float e1, float e2, float e3) {
    return (((e2 + e3) * (e2 + e3)) * e1) / (((e2 * e2) + (e3 * e3)) * e1);
  }
};

/// volume_curvature: curvature attributes of the gradient dips (computed with
/// the same dip_factor and kernel, median-filtered): u, v = -(il, xl) /
/// dip_factor, their first derivatives uniform-filtered over `kernel`, then H,
/// K, Kmax, Kmin (NaN -> 0, +-inf kept where a denominator vanishes, as in the
/// reference), KMPos = max(Kmax, Kmin), KMNeg = min(Kmax, Kmin).
///
/// Memory: u and v are computed into the KMPos and KMNeg outputs (the last
/// outputs written), which then serve as the source of the curvature stream;
/// each of their slices is overwritten once no later slice needs it.
struct volume_curvature : detail::edge_op<volume_curvature, detail::dip_params> {
  static constexpr std::string_view name = "volume_curvature";
  static constexpr std::string_view summary = "mean, Gaussian and principal curvatures of the gradient dips";
  using edge_op::edge_op;
  /// Dips (1 + kernel / 2), their derivatives (1) and the uniform filter (kernel / 2).
  dwsr::halo halo() const {
    std::array<std::uint64_t, 3> r{};
    for (std::size_t a = 0; a < 3; ++a) r[a] = 2 + 2 * (kernel[a] / 2);
    return {r, false, false};
  }
  std::vector<output_spec> outputs() const {
    return {{"H", dtype::float32},    {"K", dtype::float32},     {"Kmax", dtype::float32},
            {"Kmin", dtype::float32}, {"KMPos", dtype::float32}, {"KMNeg", dtype::float32}};
  }
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    const auto shape = in.shape();
    // u and v, mapped once from each dip (every tap of their gradients reads them).
    auto us = out[4].as<float>();
    auto vs = out[5].as<float>();
    {
      detail::dips_stream<Ctx> dips(ctx, shape, kernel, dip_factor);
      const float factor = static_cast<float>(dip_factor);
      if constexpr (Ctx::computes)
        for (std::uint64_t i = 0; i < shape.inlines; ++i)
          dips.slice(in, i, us.trace(i, 0).data(), vs.trace(i, 0).data(), [factor](float x) { return (-x) / factor; });
    }
    curvatures(ctx, shape, us, vs, out);
  }

 private:
  template <class Ctx>
  void curvatures(Ctx& ctx, shape3 shape, cube_view<float> us, cube_view<float> vs,
                  std::span<const array_ref> out) const {
    namespace d = dwsr::operators::detail;
    const auto nt = shape.samples;
    const auto slice = shape.crosslines * nt;
    const d::kernel_extents w{d::window_extent::of(kernel[0]), d::window_extent::of(kernel[1]),
                              d::window_extent::of(kernel[2])};
    // Ring of the derivatives (ux, uy, uz, vx, vy, vz) of the last kernel[0] slices.
    d::slice_ring<Ctx> ring(ctx, kernel[0], 6 * slice);
    constexpr std::uint64_t filtered = d::gradient_rows::scratch_rows;  // the first of the filtered derivatives
    d::thread_rows<float, Ctx> rows(ctx, filtered + 6, nt);             // gradient scratch, filtered derivatives
    d::uniform_scratch<Ctx> scratch(ctx, 6, kernel[1], nt);
    if constexpr (!Ctx::computes) return;
    const d::gradient_rows gradients{shape};
    auto produce = [&](std::uint64_t s, float* dst) {
      ctx.parallel_for(shape.crosslines, [&](std::uint64_t b, std::uint64_t e, std::size_t slot) {
        float* g[d::gradient_rows::scratch_rows];
        for (std::uint64_t r = 0; r < d::gradient_rows::scratch_rows; ++r) g[r] = rows.row(slot, r);
        for (std::uint64_t c = 0; c < 2; ++c) {
          const float* source = (c == 0 ? us : vs).data();
          for (auto j = b; j < e; ++j) {
            float* o = dst + j * nt;
            gradients([&](std::uint64_t il) { return source + il * slice; }, std::identity{}, s, j, j > b, g,
                      o + 3 * c * slice, o + (3 * c + 1) * slice, o + (3 * c + 2) * slice);
          }
        }
      });
    };
    auto field = [&](std::size_t k) { return out[k].as<float>(); };
    // KMPos / KMNeg of slice i from Kmax / Kmin, once u and v of slice i are no longer read.
    auto finish = [&](std::uint64_t i) {
      float *pos = field(4).trace(i, 0).data(), *neg = field(5).trace(i, 0).data();
      const float *kmax = field(2).trace(i, 0).data(), *kmin = field(3).trace(i, 0).data();
      for (std::uint64_t k = 0; k < slice; ++k) {
        pos[k] = std::max(kmax[k], kmin[k]);
        neg[k] = std::min(kmax[k], kmin[k]);
      }
    };
    const auto value = [slice](std::size_t c, const float* g, std::uint64_t t) { return g[c * slice + t]; };
    for (std::uint64_t i = 0; i < shape.inlines; ++i) {
      ring.produce_to(std::min(i + w[0].after, shape.inlines - 1), produce);
      ctx.parallel_for(
          shape.crosslines,
          [&](std::uint64_t b, std::uint64_t e, std::size_t slot) {
            for (auto j = b; j < e; ++j) {
              d::uniform_rows<6>(ring, shape, w, i, j, j > b, value, scratch, slot,
                                 [&](std::size_t c) { return rows.row(slot, filtered + c); });
              const float* f[6];
              for (std::size_t c = 0; c < 6; ++c) f[c] = rows.row(slot, filtered + c);
              const float* u = us.trace(i, j).data();
              const float* v = vs.trace(i, j).data();
              float* y[4];
              for (std::size_t k = 0; k < 4; ++k) y[k] = field(k).trace(i, j).data();
              with_simd_isa(simd_isa_in_use(), [&](auto lanes) { d::curvature_row<lanes()>(u, v, f, y, nt); });
            }
          },
          d::row_run_grain(shape.crosslines, ctx.threads()));
      if (i > 0) finish(i - 1);
    }
    finish(shape.inlines - 1);
  }
};

}  // namespace dwsr::operators
