// The separable-filter machinery of operators/detail: scipy-style 1-D
// correlation along any axis (in place or not), scipy's gaussian kernels, the
// slice-by-slice stream, and rank selection; and the CUDA tile paths that
// build on it, run on the host.

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "dwsr/core/simd_isa.hpp"
#include "dwsr/exec/host_context.hpp"
#include "dwsr/exec/meta_context.hpp"
#include "dwsr/io/synthetic.hpp"
#include "dwsr/memory/recorder.hpp"
#include "dwsr/operators/cuda/detail/tensor_tile.hpp"
#include "dwsr/operators/cuda/detail/window_passes.hpp"
#include "dwsr/operators/detail/rank_filter.hpp"
#include "dwsr/operators/detail/separable.hpp"
#include "dwsr/operators/detail/slice_stream.hpp"
#include "dwsr/operators/dip_azimuth.hpp"
#include "dwsr/operators/noise_reduction.hpp"
#include "dwsr/operators/signal.hpp"
#include "operator_test_support.hpp"

using namespace dwsr;
using namespace dwsr::operators::detail;

namespace {

// scipy.ndimage.correlate1d(mode="reflect") written out directly, summing in
// the same order (ascending tap, double) so that results compare bit for bit.
std::vector<float> naive_correlate(const std::vector<float>& x, shape3 s, int axis, const std::vector<double>& w) {
  std::vector<float> out(x.size());
  const auto before = static_cast<std::int64_t>(w.size() / 2);
  for (std::uint64_t i = 0; i < s.inlines; ++i)
    for (std::uint64_t j = 0; j < s.crosslines; ++j)
      for (std::uint64_t t = 0; t < s.samples; ++t) {
        double acc = 0;
        for (std::size_t k = 0; k < w.size(); ++k) {
          std::array<std::uint64_t, 3> at{i, j, t};
          at[std::size_t(axis)] =
              reflect_index(std::int64_t(at[std::size_t(axis)]) + std::int64_t(k) - before, s[std::size_t(axis)]);
          acc += w[k] * x[(at[0] * s.crosslines + at[1]) * s.samples + at[2]];
        }
        out[(i * s.crosslines + j) * s.samples + t] = static_cast<float>(acc);
      }
  return out;
}

std::vector<double> weights_of(const kernel_recipe& r) {
  std::vector<double> w(r.size());
  r.fill(w.data());
  return w;
}

}  // namespace

TEST_CASE("reflect_index is scipy's half-sample symmetric extension, repeated") {
  // d c b a | a b c d | d c b a | a b c d
  const std::vector<std::uint64_t> expected = {0, 1, 2, 3, 3, 2, 1, 0, 0, 1, 2, 3, 3, 2, 1, 0};
  for (std::int64_t i = -8; i < 8; ++i) CHECK(reflect_index(i, 4) == expected[std::size_t(i + 8)]);
  for (std::int64_t i = -5; i < 5; ++i) CHECK(reflect_index(i, 1) == 0);
}

TEST_CASE("kernel recipes build scipy's weights") {
  SECTION("gaussian: radius int(truncate sigma + 0.5), normalised, symmetric") {
    CHECK(kernel_recipe::gaussian(1, 0, 4).size() == 9);
    CHECK(kernel_recipe::gaussian(3, 0, 4).size() == 25);
    CHECK(kernel_recipe::gaussian(0.3, 0, 4).size() == 3);
    CHECK(kernel_recipe::gaussian(1.2, 0, 4).size() == 11);
    const auto w = weights_of(kernel_recipe::gaussian(1, 0, 4));
    double sum = 0;
    for (double v : w) sum += v;
    CHECK(sum == Approx(1.0).epsilon(1e-15));
    for (std::size_t j = 0; j < w.size(); ++j) CHECK(w[j] == w[w.size() - 1 - j]);
    // exp(-x^2 / 2) / sum over x = -4..4, at x = 0 and x = 1
    CHECK(w[4] == Approx(0.3989434694).epsilon(1e-9));
    CHECK(w[5] == Approx(0.2419714457).epsilon(1e-9));
  }
  SECTION("gaussian derivative: weight at offset x is x / sigma^2 * phi(x), so a ramp's slope comes out") {
    const auto phi = weights_of(kernel_recipe::gaussian(2, 0, 4));
    const auto d = weights_of(kernel_recipe::gaussian(2, 1, 4));
    REQUIRE(d.size() == phi.size());
    double slope = 0;
    for (std::size_t j = 0; j < d.size(); ++j) {
      const double x = double(j) - double(d.size() / 2);
      CHECK(d[j] == Approx(x / 4 * phi[j]).margin(1e-17));
      slope += d[j] * x;
    }
    CHECK(slope == Approx(1.0).epsilon(1e-3));
  }
  SECTION("uniform, trapezoid and fixed") {
    CHECK(weights_of(kernel_recipe::uniform(4)) == std::vector<double>{0.25, 0.25, 0.25, 0.25});
    CHECK(weights_of(kernel_recipe::trapezoid(4)) == std::vector<double>{0.5, 1, 1, 0.5});
    CHECK(weights_of(kernel_recipe::trapezoid(1)) == std::vector<double>{0});
    CHECK(weights_of(kernel_recipe::fixed({-0.5, 0, 0.5})) == std::vector<double>{-0.5, 0, 0.5});
    CHECK_THROWS(kernel_recipe::fixed({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  }
}

TEST_CASE(
    "correlate_axis equals scipy's correlate1d along every axis, in place or not, on any thread count, in every "
    "vector instruction set") {
  // Shapes with full panels (16 columns) and remainders, and contiguous lines
  // (time; crossline when one sample) with blocks of 16 and of 64 outputs
  // (the AVX2 clone's) and a tail: the clones must give the scalar sum's bits.
  const std::vector<shape3> shapes = {{1, 1, 1},   {2, 3, 1},   {3, 2, 19},  {5, 17, 3}, {6, 7, 40},
                                      {4, 33, 18}, {3, 20, 37}, {2, 3, 150}, {2, 83, 1}};
  const std::vector<std::vector<double>> kernels = {{1.0},
                                                    {0.2, 0.5, 0.3},
                                                    {0.1, -0.2, 0.4, 0.3},
                                                    weights_of(kernel_recipe::gaussian(1.5, 1, 4)),
                                                    weights_of(kernel_recipe::gaussian(1, 0, 4))};
  auto bits = [](const std::vector<float>& v) {
    std::vector<std::uint32_t> b(v.size());
    std::memcpy(b.data(), v.data(), v.size() * sizeof(float));
    return b;
  };
  for (const auto& s : shapes)
    for (int axis = 0; axis < 3; ++axis)
      for (const auto& w : kernels) {
        const auto x = dwsr::test::noise(s, s.voxels() + std::uint64_t(axis));
        const auto expected = bits(naive_correlate(x, s, axis, w));
        const line_kernel k{w.data(), w.size()};
        for (const auto isa : {simd_isa::baseline, simd_isa::avx2, simd_isa::avx512}) {
          if (isa > cpu_simd_isa()) continue;
          for (std::size_t threads : {1, 3}) {
            event_bus bus;
            host_context ctx(bus, {.threads = threads});
            line_scratch<host_context> scratch(ctx, 1, panel_floats(s, axis, w.size()));
            std::vector<float> out(x.size());
            correlate_axis(ctx, x.data(), out.data(), s, axis, k, scratch, isa);
            auto in_place = x;
            correlate_axis(ctx, in_place.data(), in_place.data(), s, axis, k, scratch, isa);
            INFO(to_string(s) << " axis " << axis << ", " << w.size() << " taps, " << threads << " threads, "
                              << name(isa));
            CHECK(bits(out) == expected);
            CHECK(bits(in_place) == expected);
          }
        }
      }
}

TEST_CASE("separable_stream gives separable_filter's bits (passes time, crossline, inline) with a small ring") {
  const auto g = weights_of(kernel_recipe::gaussian(1, 0, 2));  // 5 taps
  const auto u = weights_of(kernel_recipe::uniform(4));         // even size
  const auto d = weights_of(kernel_recipe::fixed({-0.5, 0, 0.5}));
  const line_kernel kg{g.data(), g.size()}, ku{u.data(), u.size()}, kd{d.data(), d.size()};
  struct setup {
    shape3 shape;
    std::optional<line_kernel> il, xl, t;
  };
  const std::vector<setup> setups = {{{11, 5, 9}, kg, ku, kd},  // ring of 5 of 11 slices
                                     {{3, 4, 20}, kg, kd, ku},  // fewer slices than the inline kernel
                                     {{9, 6, 13}, ku, std::nullopt, kg},
                                     {{7, 3, 10}, std::nullopt, kg, kd}};  // no inline pass: no ring
  for (const auto& c : setups) {
    const auto x = dwsr::test::noise(c.shape, 5);
    event_bus bus;
    host_context ctx(bus, {.threads = 2});
    std::vector<filter_pass> passes;
    if (c.t) passes.push_back({2, *c.t});
    if (c.xl) passes.push_back({1, *c.xl});
    if (c.il) passes.push_back({0, *c.il});
    std::vector<float> whole(x.size());
    separable_filter(ctx, x.data(), whole.data(), c.shape, passes);
    // the stream's source squares nothing: it copies slice il of x
    const auto slice = c.shape.crosslines * c.shape.samples;
    separable_stream<host_context> stream(ctx, c.shape, {c.il, c.xl, c.t}, [&](std::uint64_t il, float* dst) {
      std::copy_n(x.data() + il * slice, slice, dst);
    });
    std::vector<float> streamed(x.size());
    for (std::uint64_t il = 0; il < c.shape.inlines; ++il) stream.next(il, streamed.data() + il * slice);
    INFO(to_string(c.shape));
    CHECK(streamed == whole);
  }
}

TEST_CASE("separable_stream's ring holds min(inlines, inline kernel size) slices, and plans like it runs") {
  const auto g = weights_of(kernel_recipe::gaussian(1, 0, 2));
  for (const shape3 s : {shape3{11, 5, 9}, shape3{3, 4, 20}}) {
    auto events = [&](auto& ctx) {
      separable_stream stream(ctx, s, {line_kernel{g.data(), 5}, std::nullopt, std::nullopt},
                              [](std::uint64_t, float*) {});
      return 0;
    };
    recorder real_rec, meta_rec;
    event_bus real_bus(real_rec), meta_bus(meta_rec);
    host_context real(real_bus, {.threads = 2});
    meta_context meta(meta_bus, {.threads = 2});
    events(real);
    events(meta);
    REQUIRE(real_rec.events() == meta_rec.events());
    std::uint64_t ring = 0;
    for (const auto& e : real_rec.events())
      if (e.act == action::alloc) ring = std::max(ring, e.bytes);
    CHECK(ring == std::min<std::uint64_t>(s.inlines, 5) * s.crosslines * s.samples * 4);
  }
}

TEST_CASE("rank selection orders NaN after every number") {
  std::vector<float> v = {3, std::nanf(""), -1, 2, std::nanf(""), 0};
  std::sort(v.begin(), v.end(), nan_last_less);
  CHECK(v[0] == -1);
  CHECK(v[3] == 3);
  CHECK(std::isnan(v[4]));
  CHECK(std::isnan(v[5]));
}

TEST_CASE("the 3x3x3 median network selects what a full sort selects, ties, infinities and NaN traces included") {
  const float inf = std::numeric_limits<float>::infinity();
  for (const shape3 s : {shape3{3, 4, 37}, shape3{2, 3, 1}, shape3{1, 2, 2}, shape3{4, 1, 5}}) {
    auto x = dwsr::test::noise(s, s.voxels());
    for (std::uint64_t i = 0; i < x.size(); ++i) {
      x[i] = std::round(x[i] * 4);  // few levels: many ties
      if (i % 11 == 3) x[i] = (i % 2 ? inf : -inf);
    }
    if (s.samples > 2) x[5] = std::nanf("");  // traces around trace 0 take the sorting path
    event_bus bus;
    host_context ctx(bus, {.threads = 2});
    std::vector<float> out(x.size());
    const window3 w{3, 3, 3};
    rank_filter(ctx, x.data(), out.data(), s, w, 13);
    std::uint64_t wrong = 0;
    for (std::uint64_t il = 0; il < s.inlines; ++il)
      for (std::uint64_t xl = 0; xl < s.crosslines; ++xl)
        for (std::uint64_t t = 0; t < s.samples; ++t) {
          std::vector<float> v;
          for (std::int64_t a = -1; a <= 1; ++a)
            for (std::int64_t b = -1; b <= 1; ++b)
              for (std::int64_t c = -1; c <= 1; ++c)
                v.push_back(x[(reflect_index(std::int64_t(il) + a, s.inlines) * s.crosslines +
                               reflect_index(std::int64_t(xl) + b, s.crosslines)) *
                                  s.samples +
                              reflect_index(std::int64_t(t) + c, s.samples)]);
          std::sort(v.begin(), v.end(), nan_last_less);
          const float got = out[(il * s.crosslines + xl) * s.samples + t];
          wrong += !(got == v[13] || (std::isnan(got) && std::isnan(v[13])));
        }
    INFO(to_string(s));
    CHECK(wrong == 0);
  }
}

TEST_CASE("the 3x3x3 median network gives the same bits in every vector instruction set, zeros' signs included") {
  // Ties between -0 and +0 are where a min or max may pick either operand:
  // every lane width, and the scalar tail, must pick the same one.
  const float levels[] = {-1.0f, -0.0f, 0.0f, 1.0f, 0.0f, -0.0f, 2.0f};
  std::uint64_t negative_zeros = 0;
  for (const std::uint64_t nt : {1, 2, 3, 15, 64, 65, 66, 130, 203}) {
    std::vector<float> x(9 * nt);
    for (std::uint64_t i = 0; i < x.size(); ++i) x[i] = levels[(i * 7919 + i / 5) % 7];
    std::array<const float*, 9> traces{};
    for (std::size_t m = 0; m < 9; ++m) traces[m] = x.data() + m * nt;
    std::vector<float> sorted(9 * nt);
    auto median = [&](simd_isa isa) {
      std::vector<float> out(nt);
      median27::trace(traces.data(), nt, sorted.data(), out.data(), isa);
      return std::vector<std::uint32_t>(reinterpret_cast<const std::uint32_t*>(out.data()),
                                        reinterpret_cast<const std::uint32_t*>(out.data()) + nt);
    };
    INFO(nt << " samples");
    const auto baseline = median(simd_isa::baseline);
    negative_zeros += std::uint64_t(std::count(baseline.begin(), baseline.end(), 0x80000000u));
    if (cpu_simd_isa() >= simd_isa::avx2) CHECK(median(simd_isa::avx2) == baseline);
    if (cpu_simd_isa() >= simd_isa::avx512) CHECK(median(simd_isa::avx512) == baseline);
  }
  CHECK(negative_zeros > 0);  // the ties were there to break
}

// The CUDA window filters' tile path (operators/cuda/detail/tile_filter.hpp),
// run on the host: every tile, each phase's threads in turn, as the device
// runs them between barriers.
namespace {

namespace cuda = dwsr::operators::cuda::detail;

/// The tile path's output, taken whatever its work; `writes` counts the stores per voxel.
std::vector<float> tile_path(const cuda::separable_spec& spec, const std::vector<float>& x, shape3 s,
                             std::vector<int>& writes) {
  const auto w = spec.weights();
  const auto f = spec.tile(s, w.data(), std::numeric_limits<double>::infinity());
  REQUIRE(f.passes == int(spec.passes.size()));
  REQUIRE(f.shared_bytes() <= cuda::tile_shared_bytes);
  std::vector<float> y(s.voxels(), NAN);
  writes.assign(s.voxels(), 0);
  std::vector<float> first(std::size_t(f.first_floats()), NAN), second(std::size_t(f.second_floats()), NAN);
  const int n1 = int(s.crosslines), n2 = int(s.samples);
  auto load = [&](float* d, int i, int j, int t) { *d = x[std::size_t((i * n1 + j) * n2 + t)]; };
  auto store = [&](int i, int j, int t, float v) {
    const auto at = std::size_t((i * n1 + j) * n2 + t);
    y[at] = v;
    ++writes[at];
  };
  for (int b0 = 0; b0 < f.tiles(0); ++b0)
    for (int b1 = 0; b1 < f.tiles(1); ++b1)
      for (int b2 = 0; b2 < f.tiles(2); ++b2) {
        const int origin[3] = {b0 * f.tile[0], b1 * f.tile[1], b2 * f.tile[2]};
        for (int t = 0; t < cuda::tile_threads; ++t) f.load_phase(t, cuda::tile_threads, origin, first.data(), load);
        for (int p = 0; p < f.passes; ++p)
          for (int t = 0; t < cuda::tile_threads; ++t)
            f.pass_phase(p, t, cuda::tile_threads, origin, first.data(), second.data(), store);
      }
  return y;
}

/// The same passes one after the other over the whole cube (the device's fallback).
std::vector<float> separate_passes(const cuda::separable_spec& spec, const std::vector<float>& x, shape3 s) {
  const auto w = spec.weights();
  std::vector<float> src = x, dst(x.size());
  const std::int64_t n[3] = {std::int64_t(s.inlines), std::int64_t(s.crosslines), std::int64_t(s.samples)};
  for (std::size_t k = 0; k < spec.passes.size(); ++k) {
    const auto m = spec.math(k, w.data());
    const int a = spec.passes[k].axis;
    for (std::int64_t i = 0; i < n[0]; ++i)
      for (std::int64_t j = 0; j < n[1]; ++j)
        for (std::int64_t t = 0; t < n[2]; ++t) {
          const std::int64_t c[3] = {i, j, t};
          dst[std::size_t((i * n[1] + j) * n[2] + t)] = m.value([&](int d) {
            std::int64_t at[3] = {i, j, t};
            at[a] = cuda::reflect(c[a] + d, n[a]);
            return src[std::size_t((at[0] * n[1] + at[1]) * n[2] + at[2])];
          });
        }
    std::swap(src, dst);
  }
  return src;
}

template <class Op>
std::vector<float> cpu_output(const Op& op, const std::vector<float>& x, shape3 s) {
  std::vector<float> y(s.voxels());
  event_bus bus;
  host_context ctx(bus);
  const array_ref out[] = {{dtype::float32, y.data(), s}};
  op.run(ctx, cube_view<const float>(x.data(), s), out);
  return y;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("the CUDA tile path gives the CPU window operators' bits, each voxel written once") {
  // Partial tiles on every axis, axes shorter than the halo (the reflection repeats), one voxel.
  for (const shape3 s : {shape3{7, 9, 200}, {9, 17, 70}, {3, 2, 37}, {2, 3, 5}, {1, 1, 1}}) {
    std::vector<float> x(s.voxels());
    io::generate_synthetic(s, 5, x.data());
    struct filter_case {
      const char* op;
      const char* param;
      cuda::separable_spec spec;
      std::vector<float> cpu;
    };
    std::vector<filter_case> cases;
    auto add = [&](const char* op, const char* param, cuda::separable_spec spec, std::vector<float> cpu) {
      cases.push_back({op, param, std::move(spec), std::move(cpu)});
    };
    for (const auto& [text, sigmas] : {std::pair{"1,1,1", std::array{1.0, 1.0, 1.0}},
                                       {"2,1,0.5", std::array{2.0, 1.0, 0.5}},
                                       {"0,1.5,0", std::array{0.0, 1.5, 0.0}}}) {
      operators::gaussian op;
      op.sigmas = sigmas;
      add("gaussian", text, cuda::gaussian_spec(op), cpu_output(op, x, s));
    }
    using window = std::array<std::uint64_t, 3>;
    for (const auto& [text, k] : {std::pair{"3,3,3", window{3, 3, 3}}, {"5,1,3", window{5, 1, 3}}}) {
      operators::convolution op;
      op.kernel = k;
      add("convolution", text, cuda::convolution_spec(op.kernel), cpu_output(op, x, s));
    }
    for (const auto& [text, k] : {std::pair{"1,1,9", window{1, 1, 9}}, {"3,3,9", window{3, 3, 9}}}) {
      operators::rms op;
      op.kernel = k;
      add("rms", text, cuda::rms_spec(op.kernel), cpu_output(op, x, s));
    }
    for (const auto& [text, axis] : {std::pair{"0", 0}, {"1", 1}, {"2", 2}}) {
      operators::first_derivative first;
      first.axis = axis;
      add("first_derivative", text, cuda::derivative_spec<first_stencil>(axis), cpu_output(first, x, s));
      operators::second_derivative second;
      second.axis = axis;
      add("second_derivative", text, cuda::derivative_spec<second_stencil>(axis), cpu_output(second, x, s));
    }
    for (const auto& c : cases) {
      INFO(c.op << " " << c.param << " on " << to_string(s));
      std::vector<int> writes;
      const auto y = tile_path(c.spec, x, s, writes);
      CHECK(std::all_of(writes.begin(), writes.end(), [](int n) { return n == 1; }));
      CHECK(same_bits(y, c.cpu));
      CHECK(same_bits(separate_passes(c.spec, x, s), c.cpu));
    }
    // The structure tensor's gradients: scipy's symmetric forms, against the separate passes.
    for (int a = 0; a < 3; ++a) {
      INFO("gradient along " << a << " on " << to_string(s));
      const auto spec =
          cuda::derivative_spec<first_stencil>(a, cuda::tap_form::antisymmetric3, cuda::tap_form::symmetric3);
      std::vector<int> writes;
      CHECK(same_bits(tile_path(spec, x, s, writes), separate_passes(spec, x, s)));
    }
  }
}

TEST_CASE("the CUDA tile path's plan: the largest tile within 48 KiB, where it adds few taps") {
  const shape3 s{64, 64, 256};
  const auto w = std::vector<double>(64, 0.0);
  // 3 taps on every axis: 8x8x32, 10x10x34 loaded; 27 % more taps than separate passes.
  operators::first_derivative first;
  auto f = cuda::derivative_spec<first_stencil>(first.axis).tile(s, w.data());
  REQUIRE(f.passes == 3);
  CHECK(f.tile[0] == 8);
  CHECK(f.tile[1] == 8);
  CHECK(f.tile[2] == 32);
  CHECK(f.shared_bytes() == (10 * 10 * 34 + 10 * 10 * 32) * 4);
  CHECK(f.work() == Approx((10 * 10 * 32 + 8 * 10 * 32 + 8 * 8 * 32) * 3.0 / (8 * 8 * 32) / 9));
  // A trace-only window: one pass, no second buffer, no extra taps.
  f = cuda::rms_spec({1, 1, 9}).tile(s, w.data());
  CHECK(f.passes == 1);
  CHECK(f.tile[0] == 8);
  CHECK(f.second_floats() == 0);
  CHECK(f.work() == 1.0);
  // 9 taps on every axis: 8x8x32 would take 60 KiB, 4x8x32 fits but makes 58 % more taps.
  const auto gaussian = cuda::gaussian_spec(operators::gaussian{});
  f = gaussian.tile(s, w.data(), 2.0);
  REQUIRE(f.passes == 3);
  CHECK(f.tile[0] == 4);
  CHECK(f.shared_bytes() == (12 * 16 * 40 + 4 * 16 * 40) * 4);
  CHECK(f.work() == Approx(4.75 / 3));
  CHECK(gaussian.tile(s, w.data()).passes == 0);
  // Too wide for any tile (sigma 20: 161 taps), an axis twice, a cube of 2^31 voxels: not the tile path.
  operators::gaussian wide;
  wide.sigmas = {20, 20, 20};
  CHECK(cuda::gaussian_spec(wide).tile(s, w.data(), 100.0).passes == 0);
  const cuda::separable_spec twice({{0, kernel_recipe::uniform(3)}, {0, kernel_recipe::uniform(3)}}, false,
                                   cuda::pass_finish::none);
  CHECK(twice.tile(s, w.data()).passes == 0);
  CHECK(cuda::convolution_spec({3, 3, 3}).tile({2048, 1024, 1024}, w.data()).passes == 0);
  CHECK(cuda::convolution_spec({3, 3, 3}).tile({2048, 1024, 1023}, w.data()).passes == 3);
  // No axis filtered: the identity pass still squares and finishes.
  const auto identity = cuda::rms_spec({1, 1, 1});
  REQUIRE(identity.passes.size() == 1);
  CHECK(identity.tile(s, w.data()).passes == 1);
}

// The structure tensor's tile path (operators/cuda/detail/tensor_tile.hpp), run
// on the host as above, from the device's gradients: the CPU operator's bits.
TEST_CASE("the CUDA structure tensor's tile path gives gradient_structure_tensor's bits, each voxel once") {
  using window = std::array<std::uint64_t, 3>;
  for (const shape3 s : {shape3{7, 9, 200}, {9, 17, 70}, {3, 2, 37}, {2, 3, 5}, {1, 1, 1}}) {
    std::vector<float> x(s.voxels());
    io::generate_synthetic(s, 5, x.data());
    std::vector<float> g[3];
    for (int a = 0; a < 3; ++a)
      g[a] = separate_passes(
          cuda::derivative_spec<first_stencil>(a, cuda::tap_form::antisymmetric3, cuda::tap_form::symmetric3), x, s);
    for (const window k : {window{3, 3, 3}, window{3, 5, 3}, window{1, 1, 9}, window{2, 4, 6}, window{9, 9, 9}}) {
      INFO("kernel " << k[0] << "," << k[1] << "," << k[2] << " on " << to_string(s));
      operators::gradient_structure_tensor op;
      op.kernel = k;
      std::vector<std::vector<float>> cpu(6, std::vector<float>(s.voxels()));
      {
        event_bus bus;
        host_context ctx(bus);
        std::vector<array_ref> out;
        for (auto& c : cpu) out.push_back({dtype::float32, c.data(), s});
        op.run(ctx, cube_view<const float>(x.data(), s), out);
      }
      const auto f = cuda::plan_tensor_tile(s, k.data());
      REQUIRE(f.tile[0] > 0);
      REQUIRE(f.shared_bytes() <= cuda::tile_shared_bytes);
      std::vector<std::vector<float>> y(6, std::vector<float>(s.voxels(), NAN));
      std::vector<int> writes(s.voxels(), 0);
      std::vector<float> a(std::size_t(f.a_floats()), NAN), b(std::size_t(f.b_floats()), NAN);
      const auto count = std::size_t(f.region_floats());
      const int threads = cuda::tile_threads;
      for (int b0 = 0; b0 < f.tiles(0); ++b0)
        for (int b1 = 0; b1 < f.tiles(1); ++b1)
          for (int b2 = 0; b2 < f.tiles(2); ++b2) {
            const int origin[3] = {b0 * f.tile[0], b1 * f.tile[1], b2 * f.tile[2]};
            for (int t = 0; t < threads; ++t)
              f.load_phase(t, threads, origin, [&](int r, std::uint64_t voxel) {
                for (std::size_t q = 0; q < 3; ++q) a[q * count + std::size_t(r)] = g[q][voxel];
              });
            for (int t = 0; t < threads; ++t) f.inline_phase(t, threads, a.data(), b.data());
            for (int t = 0; t < threads; ++t) f.crossline_phase(t, threads, b.data(), a.data());
            for (int t = 0; t < threads; ++t)
              f.time_phase(t, threads, origin, a.data(), [&](std::uint64_t voxel, const float* m) {
                for (std::size_t q = 0; q < 6; ++q) y[q][voxel] = m[q];
                ++writes[voxel];
              });
          }
      CHECK(std::all_of(writes.begin(), writes.end(), [](int n) { return n == 1; }));
      for (std::size_t q = 0; q < 6; ++q) CHECK(same_bits(y[q], cpu[q]));
    }
  }
}

TEST_CASE("the CUDA structure tensor's tile plan: the largest tile whose buffers fit 48 KiB") {
  const std::uint64_t k3[3] = {3, 3, 3}, k9[3] = {9, 9, 9}, wide[3] = {1, 1, 4000};
  // 3x3x3: 4x8x32 would take 57 KiB; 2x8x32 loads 4x10x34 (A) and means 2x10x34 along inline (B).
  auto f = cuda::plan_tensor_tile({64, 64, 256}, k3);
  CHECK(f.tile[0] == 2);
  CHECK(f.tile[1] == 8);
  CHECK(f.tile[2] == 32);
  CHECK(f.a_floats() == 3 * 4 * 10 * 34);
  CHECK(f.b_floats() == 6 * 2 * 10 * 34);
  // 9x9x9: 1x2x32 would take 52 KiB; 1x1x32 loads 9x9x40.
  f = cuda::plan_tensor_tile({64, 64, 256}, k9);
  CHECK(f.tile[0] == 1);
  CHECK(f.tile[1] == 1);
  CHECK(f.shared_bytes() == (3 * 9 * 9 * 40 + 6 * 9 * 40) * 4);
  // A window within one trace: stage 2's six means outgrow the three gradients in A.
  const std::uint64_t trace[3] = {1, 1, 9};
  f = cuda::plan_tensor_tile({64, 64, 256}, trace);
  CHECK(f.a_floats() == 6 * f.tile[0] * f.tile[1] * 40);
  // Not the tile path: a window beyond 1024, more than 65535 tiles along inline, no voxel.
  CHECK(cuda::plan_tensor_tile({64, 64, 8192}, wide).tile[0] == 0);
  CHECK(cuda::plan_tensor_tile({65536 * 4 + 1, 1, 1}, k3).tile[0] == 0);
  CHECK(cuda::plan_tensor_tile({0, 4, 4}, k3).tile[0] == 0);
}
