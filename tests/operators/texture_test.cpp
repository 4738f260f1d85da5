// The texture family (GLCM properties, 2-D and 3-D local binary patterns)
// against the DASF reference outputs and against the definitions, plan == run,
// exact memory figures, halos and the cube-wide reduction.

#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstring>
#include <numbers>

#include "operator_test_support.hpp"

using namespace dwsr;
using namespace dwsr::test;

namespace {

const std::vector<std::string> glcm_ops = {"glcm_contrast",    "glcm_dissimilarity", "glcm_asm",  "glcm_energy",
                                           "glcm_homogeneity", "glcm_correlation",   "glcm_mean", "glcm_variance",
                                           "glcm_std",         "glcm_entropy"};

std::vector<std::string> texture_ops() {
  auto all = glcm_ops;
  all.push_back("lbp2d");
  all.push_back("lbp3d");
  return all;
}

using params = std::map<std::string, std::string>;

/// GLCM properties computed straight from their definitions, the way
/// scikit-image's graycomatrix / graycoprops loops do, for one pixel.
struct direct_glcm {
  std::int64_t kh = 3, kw = 3, dr = 1, dc = 0, levels = 16;

  static std::int64_t skimage_round(double v) { return static_cast<std::int64_t>(v > 0 ? v + 0.5 : v - 0.5); }

  direct_glcm(double window_rows, double window_cols, double direction, double distance, std::int64_t l)
      : kh(std::int64_t(window_rows) / 2),
        kw(std::int64_t(window_cols) / 2),
        dr(skimage_round(std::sin(direction) * distance)),
        dc(skimage_round(std::cos(direction) * distance)),
        levels(l) {}

  /// The reference's float32 quantisation: int((x - min) / (max - min) * (levels - 1)).
  static std::vector<int> quantise(const std::vector<float>& cube, std::int64_t levels) {
    const float lo = *std::min_element(cube.begin(), cube.end());
    const float hi = *std::max_element(cube.begin(), cube.end());
    std::vector<int> q(cube.size());
    for (std::size_t i = 0; i < cube.size(); ++i) {
      const float f = (cube[i] - lo) / (hi - lo) * static_cast<float>(levels - 1);
      q[i] = f >= 0 ? static_cast<int>(f) : 0;  // a constant cube (0 / 0) is level 0
    }
    return q;
  }

  /// {contrast, dissimilarity, ASM, energy, homogeneity, correlation, mean,
  /// variance, std, entropy} of the window centred on (x, t) of slice `il`.
  std::array<double, 10> at(const std::vector<int>& q, shape3 s, std::uint64_t il, std::int64_t x,
                            std::int64_t t) const {
    const auto rows = 2 * kh + 1, cols = 2 * kw + 1;
    auto level = [&](std::int64_t r, std::int64_t c) -> std::int64_t {  // window coordinates, zero-padded
      const auto xx = x - kh + r, tt = t - kw + c;
      if (xx < 0 || tt < 0 || xx >= std::int64_t(s.crosslines) || tt >= std::int64_t(s.samples)) return 0;
      return q[(il * s.crosslines + std::uint64_t(xx)) * s.samples + std::uint64_t(tt)];
    };
    const auto L = static_cast<std::size_t>(levels);
    std::vector<double> P(L * L, 0.0);
    for (auto r = std::max<std::int64_t>(0, -dr); r < std::min(rows, rows - dr); ++r)
      for (auto c = std::max<std::int64_t>(0, -dc); c < std::min(cols, cols - dc); ++c) {
        const auto i = std::size_t(level(r, c)), j = std::size_t(level(r + dr, c + dc));
        P[i * L + j] += 1;  // symmetric: (i, j) and (j, i)
        P[j * L + i] += 1;
      }
    double total = 0;
    for (double p : P) total += p;
    for (double& p : P) p /= total == 0 ? 1 : total;
    std::array<double, 10> v{};
    double mean = 0;
    for (std::size_t i = 0; i < L; ++i)
      for (std::size_t j = 0; j < L; ++j) mean += double(i) * P[i * L + j];
    double var = 0, cov = 0;
    for (std::size_t i = 0; i < L; ++i)
      for (std::size_t j = 0; j < L; ++j) {
        const double p = P[i * L + j], d = double(i) - double(j);
        v[0] += p * d * d;
        v[1] += p * std::abs(d);
        v[2] += p * p;
        v[4] += p / (1 + d * d);
        var += p * (double(i) - mean) * (double(i) - mean);
        cov += p * (double(i) - mean) * (double(j) - mean);
        if (p > 0) v[9] -= p * std::log(p);
      }
    v[3] = std::sqrt(v[2]);
    v[5] = std::sqrt(var) < 1e-15 ? 1.0 : cov / var;
    v[6] = mean;
    v[7] = var;
    v[8] = std::sqrt(var);
    return v;
  }
};

std::vector<float> floats(const output_data& o) {
  return {o.as<float>(), o.as<float>() + o.bytes.size() / sizeof(float)};
}

}  // namespace

// Tolerances. GLCM: the manifest's 1e-4 * max(1, max |ref|). dwsr evaluates
// each property from exact integer counts and rounds once; the reference sums
// float64 probabilities, so the two agree to float32 rounding (measured: at
// most one float32 ulp). The quantisation reproduces the reference's float32
// arithmetic, so no pixel changes level. LBP: codes are integers and dwsr
// repeats scikit-image's interpolation operation for operation, so they must
// be identical (tolerance 0).
TEST_CASE("texture attributes match the DASF reference") {
  SECTION("GLCM properties") {
    for (const char* p : {"contrast", "dissimilarity", "asm", "energy", "homogeneity", "correlation"})
      check_against_reference({std::string("glcm_") + p, std::string("glcm_") + p});
  }
  SECTION("local binary patterns, exactly") {
    check_against_reference({"lbp2d", "lbp2d", 0.0});
    check_against_reference({"lbp3d", "lbp3d", 0.0});
  }
}

TEST_CASE("GLCM properties match their definitions computed directly on every window") {
  // The four properties without a reference file (mean, variance, std,
  // entropy) and the six with one, for several geometries: pairs along time
  // (direction 0), diagonals, distance 2 and 3, non-square windows, 8 levels.
  // Output is float32 of a double: agreement within 1e-6 relative.
  const std::vector<params> configs = {{},
                                       {{"direction", "0"}},
                                       {{"direction", "0.7853981633974483"}, {"distance", "2"}},
                                       {{"direction", "2.356194490192345"}},
                                       {{"window", "5,3"}, {"levels", "8"}},
                                       {{"window", "3,9"}, {"direction", "0"}, {"distance", "3"}, {"levels", "5"}}};
  const std::vector<shape3> shapes = {{2, 11, 17}, {1, 1, 1}, {1, 2, 3}, {3, 9, 30}};
  // Operator order of direct_glcm::at.
  const std::vector<std::string> order = {"glcm_contrast",    "glcm_dissimilarity", "glcm_asm",  "glcm_energy",
                                          "glcm_homogeneity", "glcm_correlation",   "glcm_mean", "glcm_variance",
                                          "glcm_std",         "glcm_entropy"};
  std::uint64_t seed = 11;
  for (const auto& cfg : configs) {
    const auto get = [&](const char* k, const char* fallback) {
      auto it = cfg.find(k);
      return it == cfg.end() ? std::string(fallback) : it->second;
    };
    const auto window = get("window", "7,7");
    const direct_glcm direct(std::stod(window.substr(0, window.find(','))),
                             std::stod(window.substr(window.find(',') + 1)),
                             std::stod(get("direction", "1.5707963267948966")), std::stod(get("distance", "1")),
                             std::stoll(get("levels", "16")));
    for (const auto& shape : shapes) {
      const auto cube = noise(shape, ++seed);
      const auto q = direct_glcm::quantise(cube, direct.levels);
      std::vector<std::vector<float>> got;
      for (const auto& name : order)
        got.push_back(floats(run_real(*operators::catalogue().find(name).configure(cfg), cube, shape, 2).outputs[0]));
      for (std::uint64_t il = 0; il < shape.inlines; ++il)
        for (std::int64_t x = 0; x < std::int64_t(shape.crosslines); ++x)
          for (std::int64_t t = 0; t < std::int64_t(shape.samples); ++t) {
            const auto want = direct.at(q, shape, il, x, t);
            const auto voxel = (il * shape.crosslines + std::uint64_t(x)) * shape.samples + std::uint64_t(t);
            for (std::size_t k = 0; k < order.size(); ++k) {
              INFO(order[k] << " window=" << window << " direction=" << get("direction", "pi/2")
                            << " distance=" << get("distance", "1") << " on " << to_string(shape) << " at " << il << ","
                            << x << "," << t << ": got " << got[k][voxel] << ", definition " << want[k]);
              REQUIRE(std::abs(double(got[k][voxel]) - want[k]) <= 1e-6 * std::max(1.0, std::abs(want[k])));
            }
          }
    }
  }
}

TEST_CASE("GLCM on degenerate data: constant cubes and non-finite samples") {
  const shape3 shape{2, 8, 12};
  SECTION("a constant cube is one grey level: no contrast, full energy, correlation 1") {
    const std::vector<float> cube(shape.voxels(), 0.25f);
    const std::map<std::string, float> expected = {
        {"glcm_contrast", 0.0f},    {"glcm_dissimilarity", 0.0f}, {"glcm_asm", 1.0f},  {"glcm_energy", 1.0f},
        {"glcm_homogeneity", 1.0f}, {"glcm_correlation", 1.0f},   {"glcm_mean", 0.0f}, {"glcm_variance", 0.0f},
        {"glcm_std", 0.0f},         {"glcm_entropy", 0.0f}};
    for (const auto& [name, value] : expected) {
      const auto y = floats(run_real(*operators::catalogue().find(name).configure(), cube, shape).outputs[0]);
      INFO(name);
      CHECK(std::all_of(y.begin(), y.end(), [v = value](float f) { return f == v; }));
    }
  }
  SECTION("NaN samples are left out of min/max and quantised to level 0") {
    auto cube = noise(shape, 3);
    const auto lowest = *std::min_element(cube.begin(), cube.end());
    auto with_nan = cube;
    with_nan[37] = std::numeric_limits<float>::quiet_NaN();
    with_nan[100] = -std::numeric_limits<float>::infinity();
    cube[37] = cube[100] = lowest;  // level 0, and min/max unchanged
    for (const auto& name : glcm_ops) {
      const auto op = operators::catalogue().find(name).configure();
      INFO(name);
      CHECK(run_real(*op, with_nan, shape).outputs[0].bytes == run_real(*op, cube, shape).outputs[0].bytes);
    }
  }
}

TEST_CASE("local binary patterns wrap periodically at the cube's faces") {
  // The reference pads with numpy's 'wrap': a cyclic shift of the cube shifts
  // the codes (lbp2d within each inline slice, lbp3d along all three axes).
  const shape3 shape{3, 5, 9};  // smaller than lbp2d's 7x7 circle: wraps more than once
  const auto cube = noise(shape, 5);
  const std::array<std::uint64_t, 3> shift = {1, 2, 4};
  auto roll = [&](const std::vector<float>& v, bool inlines) {
    std::vector<float> out(v.size());
    for (std::uint64_t i = 0; i < shape.inlines; ++i)
      for (std::uint64_t x = 0; x < shape.crosslines; ++x)
        for (std::uint64_t t = 0; t < shape.samples; ++t) {
          const auto ii = inlines ? (i + shift[0]) % shape.inlines : i;
          const auto xx = (x + shift[1]) % shape.crosslines, tt = (t + shift[2]) % shape.samples;
          out[(ii * shape.crosslines + xx) * shape.samples + tt] = v[(i * shape.crosslines + x) * shape.samples + t];
        }
    return out;
  };
  for (const auto& [name, inlines] : {std::pair{"lbp2d", false}, std::pair{"lbp3d", true}}) {
    const auto op = operators::catalogue().find(name).configure();
    const auto codes = floats(run_real(*op, cube, shape).outputs[0]);
    INFO(name);
    CHECK(floats(run_real(*op, roll(cube, inlines), shape).outputs[0]) == roll(codes, inlines));
  }
  SECTION("lbp3d with ties: numpy's argmax / argmin pick the first corner") {
    // Three grey values: most voxels have tied corners. Direct definition:
    // corners in (inline, crossline, sample) order -,-,- / -,-,+ / ... / +,+,+.
    std::vector<float> grey = noise(shape, 8);
    for (auto& g : grey) g = std::floor(g * 1.5f);
    const auto codes = floats(run_real(*operators::catalogue().find("lbp3d").configure(), grey, shape).outputs[0]);
    const auto n = [&](std::uint64_t i, std::uint64_t x, std::uint64_t t) {
      return grey[(i % shape.inlines * shape.crosslines + x % shape.crosslines) * shape.samples + t % shape.samples];
    };
    std::uint64_t tied = 0;
    for (std::uint64_t i = 0; i < shape.inlines; ++i)
      for (std::uint64_t x = 0; x < shape.crosslines; ++x)
        for (std::uint64_t t = 0; t < shape.samples; ++t) {
          std::array<float, 8> v;
          for (int k = 0; k < 8; ++k)
            v[k] = n(k & 4 ? i + 1 : i + shape.inlines - 1, k & 2 ? x + 1 : x + shape.crosslines - 1,
                     k & 1 ? t + 1 : t + shape.samples - 1);
          const auto hi = std::max_element(v.begin(), v.end()) - v.begin();  // first largest
          const auto lo = std::min_element(v.begin(), v.end()) - v.begin();  // first smallest
          tied += std::count(v.begin(), v.end(), v[hi]) > 1;
          const float c = n(i, x, t);
          const float want = float((v[hi] > c ? 1 << hi : 0) | (v[lo] < c ? 1 << lo : 0));
          INFO("voxel " << i << "," << x << "," << t);
          REQUIRE(codes[(i * shape.crosslines + x) * shape.samples + t] == want);
        }
    CHECK(tied * 2 > shape.voxels());
  }
  SECTION("a flat cube: every neighbour ties with the centre") {
    const std::vector<float> zero(shape.voxels(), 0.0f);
    const auto lbp2 = floats(run_real(*operators::catalogue().find("lbp2d").configure(), zero, shape).outputs[0]);
    const auto lbp3 = floats(run_real(*operators::catalogue().find("lbp3d").configure(), zero, shape).outputs[0]);
    CHECK(std::all_of(lbp2.begin(), lbp2.end(), [](float f) { return f == 16777215.0f; }));  // 24 bits set (>=)
    CHECK(std::all_of(lbp3.begin(), lbp3.end(), [](float f) { return f == 0.0f; }));         // neither > nor <
  }
}

TEST_CASE("meta execution emits exactly the real execution's events for every texture operator") {
  // The edge shapes and random ones (fixed seed) of up to 8 inlines, 16 crosslines, 90 samples.
  auto shapes = edge_shapes();
  for (std::uint64_t i = 0, seed = 0x7e47; i < 6; ++i) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    shapes.push_back({1 + (seed >> 61), 1 + ((seed >> 50) & 15), 1 + ((seed >> 33) % 90)});
  }
  // The same bytes for every thread count.
  for (const auto& name : texture_ops())
    for (const auto& cfg : {params{}, name == "lbp2d" ? params{{"radius", "2"}} : params{{"window", "5,9"}}})
      if (name != "lbp3d" || cfg.empty()) check_plan_matches_run(*configured(name, cfg), shapes, true);
}

namespace {
/// The texture operators' scratch, in bytes, for the default parameters on T threads.
std::uint64_t texture_scratch(const std::string& name, shape3 s, std::uint64_t threads) {
  auto up = [](std::uint64_t n, std::uint64_t multiple) { return (n + multiple - 1) / multiple * multiple; };
  if (name == "lbp3d") return 0;  // reads neighbours in place
  if (name == "lbp2d")            // 7 rows of samples + 6, then one row of codes (double)
    return threads * (up(7 * (s.samples + 6), 8) + up(s.samples, 8)) * 8;
  // GLCM 7x7: a ring of 2 x 7 quantised rows of samples + 6 (uint8, rows padded
  // to 64 B); a 16x16 pair matrix + 16 level differences (int32); shared tables
  // c ln c (c <= 84, int64) and 16 homogeneity weights (double). The
  // reduction's per-thread min/max (64 B) is freed before these exist.
  return threads * (14 * up(s.samples + 6, 64) + up(256 + 16, 16) * 4) + (85 + 16) * 8;
}
}  // namespace

TEST_CASE("texture peaks are input + output + per-thread scratch, exactly") {
  const std::size_t threads = 2;
  SECTION("real runs on 64x64x128") {
    const shape3 shape{64, 64, 128};
    const auto input = noise(shape, 1);
    const std::uint64_t in_bytes = shape.voxels() * 4;
    for (const auto& name : texture_ops()) {
      const auto op = operators::catalogue().find(name).configure();
      const auto run = run_real(*op, input, shape, threads);
      INFO(name << ": peak " << run.peak << " = " << double(run.peak) / double(in_bytes) << " x input");
      CHECK(run.peak == 2 * in_bytes + texture_scratch(name, shape, threads));
    }
  }
  SECTION("plans on the README's 128x128x512 (NumPy: glcm 5.4x, lbp2d 5.2x)") {
    const shape3 shape{128, 128, 512};
    const std::uint64_t in_bytes = shape.voxels() * 4;
    for (const auto& name : texture_ops()) {
      const auto report = plan(*operators::catalogue().find(name).configure(), shape, threads);
      const double ratio = double(report.peak_bytes) / double(in_bytes);
      INFO(name << ": peak " << report.peak_bytes << " = " << ratio << " x input");
      CHECK(report.peak_bytes == 2 * in_bytes + texture_scratch(name, shape, threads));
      CHECK(ratio < 2.01);  // input + output + under 1% of scratch
    }
  }
}

TEST_CASE("texture operators declare their halos") {
  for (const auto& name : glcm_ops) {
    INFO(name);
    CHECK(operators::catalogue().find(name).configure()->halo() == halo{.radius = {0, 3, 3}});
    CHECK(operators::catalogue().find(name).configure({{"window", "5,9"}})->halo() == halo{.radius = {0, 2, 4}});
    CHECK(operators::catalogue().find(name).configure()->reduction_passes() == 1);
  }
  CHECK(operators::catalogue().find("lbp2d").configure()->halo() ==
        halo{.radius = {0, 3, 3}, .whole_traces = true, .whole_crosslines = true});
  CHECK(operators::catalogue().find("lbp2d").configure({{"radius", "2"}})->halo() ==
        halo{.radius = {0, 2, 2}, .whole_traces = true, .whole_crosslines = true});
  CHECK(operators::catalogue().find("lbp3d").configure()->halo() ==
        halo{.radius = {1, 1, 1}, .whole_traces = true, .whole_inlines = true, .whole_crosslines = true});
}

TEST_CASE("a texture operator run on a block extended by its halo gives the whole-cube values inside") {
  // What chunked execution relies on: block [2, 5) x [6, 13) x [9, 30) of a
  // 7x20x41 cube, extended by the declared radius on every axis; GLCM blocks
  // use the whole cube's min/max. A radius one smaller on any axis must not be
  // enough (the declared halos are tight).
  const shape3 shape{7, 20, 41};
  const auto cube = noise(shape, 42);
  const std::array<std::uint64_t, 3> lo = {2, 6, 9}, hi = {5, 13, 30};
  for (const auto& cfg : {params{}, params{{"window", "3,5"}, {"direction", "0"}, {"radius", "2"}}}) {
    for (const auto& name : texture_ops()) {
      std::map<std::string, std::string> own;  // the parameters this operator takes
      for (const auto& spec : operators::catalogue().find(name).params)
        if (cfg.count(spec.name)) own[spec.name] = cfg.at(spec.name);
      const auto op = operators::catalogue().find(name).configure(own);
      const auto whole = floats(run_real(*op, cube, shape).outputs[0]);
      const auto r = reduce_real(*op, cube, shape);
      auto interior_matches = [&](std::array<std::uint64_t, 3> radius) {
        std::array<std::uint64_t, 3> b0{}, b1{};
        for (int a = 0; a < 3; ++a) b0[a] = lo[a] - radius[a], b1[a] = hi[a] + radius[a];
        const shape3 block{b1[0] - b0[0], b1[1] - b0[1], b1[2] - b0[2]};
        const auto part = floats(run_block(*op, sub_cube(cube, shape, b0, b1), block, r, 2)[0]);
        for (auto i = lo[0]; i < hi[0]; ++i)
          for (auto x = lo[1]; x < hi[1]; ++x)
            for (auto t = lo[2]; t < hi[2]; ++t) {
              const float w = whole[(i * shape.crosslines + x) * shape.samples + t];
              const float p = part[((i - b0[0]) * block.crosslines + (x - b0[1])) * block.samples + (t - b0[2])];
              if (std::memcmp(&w, &p, sizeof w) != 0) return false;
            }
        return true;
      };
      const auto radius = op->halo().radius;
      INFO(name << " with radius " << radius[0] << "," << radius[1] << "," << radius[2]);
      CHECK(interior_matches(radius));
      for (int a = 0; a < 3; ++a) {
        if (radius[a] == 0) continue;
        auto smaller = radius;
        --smaller[a];
        INFO("radius one smaller along axis " << a);
        CHECK_FALSE(interior_matches(smaller));
      }
    }
  }
}

TEST_CASE("the GLCM reduction folds blocks in any order to the same min and max") {
  const shape3 shape{6, 10, 33};
  const auto cube = noise(shape, 9);
  const auto op = operators::catalogue().find("glcm_entropy").configure();
  const shape3 half{3, 10, 33};
  const std::vector<float> first(cube.begin(), cube.begin() + std::ptrdiff_t(half.voxels()));
  const std::vector<float> second(cube.begin() + std::ptrdiff_t(half.voxels()), cube.end());
  event_bus bus;
  host_context ctx(bus, {.threads = 3});
  reduction ab, ba;
  op->reduce(ctx, cube_view<const float>(first.data(), half), 0, ab);
  op->reduce(ctx, cube_view<const float>(second.data(), half), 0, ab);
  op->reduce(ctx, cube_view<const float>(second.data(), half), 0, ba);
  op->reduce(ctx, cube_view<const float>(first.data(), half), 0, ba);
  CHECK(ab == ba);
  CHECK(ab == reduce_real(*op, cube, shape));
  REQUIRE(ab.values.size() == 2);
  CHECK(ab.values[0] == double(*std::min_element(cube.begin(), cube.end())));
  CHECK(ab.values[1] == double(*std::max_element(cube.begin(), cube.end())));
  // The halves, each run with the folded reduction, are the whole-cube run's halves
  // (GLCM windows do not cross inline slices).
  const auto whole = run_real(*op, cube, shape).outputs[0].bytes;
  auto top = run_block(*op, first, half, ab)[0].bytes;
  const auto bottom = run_block(*op, second, half, ab)[0].bytes;
  top.insert(top.end(), bottom.begin(), bottom.end());
  CHECK(top == whole);
}

TEST_CASE("texture parameters are validated with messages naming the value") {
  SECTION("GLCM levels, pair and window") {
    check_rejected("glcm_contrast", {{"levels", "0"}}, "levels");
    check_rejected("glcm_contrast", {{"levels", "257"}}, "[1, 256]");
    check_rejected("glcm_entropy", {{"levels", "2.5"}}, "whole number");
    check_rejected("glcm_asm", {{"distance", "0"}}, "positive whole number");
    check_rejected("glcm_mean", {{"window", "6,7"}}, "odd");
    check_rejected("glcm_mean", {{"window", "7,257"}}, "[1, 255]");
    check_rejected("glcm_mean", {{"window", "7"}}, "list of 2");
    check_rejected("glcm_std", {{"distance", "7"}}, "pair offset (7, 0)");
    check_rejected("glcm_std", {{"direction", "north"}}, "a number");
    CHECK_NOTHROW(configured("glcm_std", {{"distance", "6"}}));
  }
  SECTION("local binary patterns") {
    check_rejected("lbp2d", {{"radius", "0"}}, "radius");
    check_rejected("lbp2d", {{"neighboors", "11"}}, "<= 31");
    check_rejected("lbp2d", {{"method", "uniform"}}, "one of: default");
    check_rejected("lbp3d", {{"method", "default"}}, "one of: diagonal");
    CHECK_NOTHROW(configured("lbp2d", {{"radius", "1"}, {"neighboors", "31"}}));
  }
}
