// The dip and azimuth family: the DASF reference outputs, scipy's window
// semantics on other kernels, plan == run, exact memory, halos and parameters.

#include <catch2/catch.hpp>

#include <Eigen/Eigenvalues>

#include <bit>
#include <cmath>
#include <functional>
#include <numbers>
#include <random>
#include <set>

#include "dwsr/core/simd_isa.hpp"
#include "dwsr/operators/detail/gradient_rows.hpp"

#include "ndimage_reference.hpp"
#include "operator_test_support.hpp"
#include "stream_memory.hpp"

using namespace dwsr;
using namespace dwsr::test;

namespace {
const std::vector<std::string> dip_ops = {"gradient_dips", "gradient_structure_tensor", "gst_2d_dips", "gst_3d_dip",
                                          "gst_3d_azm"};

std::uint64_t expected_peak(const std::string& name, shape3 s, std::array<std::uint64_t, 3> k, std::uint64_t threads) {
  const auto cube = s.voxels() * 4;
  if (name == "gradient_dips") return 3 * cube + dips_stream_bytes(s, k, threads);
  const std::uint64_t outputs = name == "gradient_structure_tensor" ? 6 : name == "gst_2d_dips" ? 2 : 1;
  return (1 + outputs) * cube + tensor_stream_bytes(s, k, threads);
}

ndimage::volume volume_of(const real_run& r, std::size_t k, shape3 s) {
  const float* p = r.outputs.at(k).as<float>();
  return {s, std::vector<float>(p, p + s.voxels())};
}
}  // namespace

// Tolerance: the manifest's, 1e-4 * max(1, max |ref|), everywhere, with no
// conditioning mask. dwsr reproduces scipy's pass order, its correlate1d
// arithmetic and float32 stores, so the gradient dips, the six tensor components
// and the 2-D dips are bitwise the reference's; the 3-D dip and azimuth differ
// by float32 rounding of arccos / arctan2 (max 1.1e-5 and 3.1e-5 degrees against
// tolerances of 9e-3 and 3.6e-2). No voxel of the reference cube has its two
// largest tensor eigenvalues close enough for the principal vector to flip.
TEST_CASE("dip and azimuth operators match the DASF reference") {
  check_against_reference({"gradient_dips", "gradient_dips_il", 1e-4, {}, 0});
  check_against_reference({"gradient_dips", "gradient_dips_xl", 1e-4, {}, 1});
  const std::vector<std::string> gst = {"gradient_structure_tensor_gi2",  "gradient_structure_tensor_gj2",
                                        "gradient_structure_tensor_gk2",  "gradient_structure_tensor_gigj",
                                        "gradient_structure_tensor_gigk", "gradient_structure_tensor_gjgk"};
  for (std::size_t k = 0; k < 6; ++k) check_against_reference({"gradient_structure_tensor", gst[k], 1e-4, {}, k});
  check_against_reference({"gst_2d_dips", "gst_2d_dips_il", 1e-4, {}, 0});
  check_against_reference({"gst_2d_dips", "gst_2d_dips_xl", 1e-4, {}, 1});
  check_against_reference({"gst_3d_dip", "gst_3d_dip"});
  check_against_reference({"gst_3d_azm", "gst_3d_azm"});
}

TEST_CASE("dip operators follow scipy's windows on kernels the reference does not cover") {
  // Even and unequal window sizes exercise the ring of slices and scipy's
  // placement of even windows (size / 2 before the centre).
  const shape3 s{7, 6, 23};
  const ndimage::volume x{s, noise(s, 11)};
  SECTION("structure tensor: bitwise the whole-cube computation") {
    const std::array<std::uint64_t, 3> k{2, 4, 5};
    const auto op = operators::catalogue().find("gradient_structure_tensor").configure(kernel_param(k));
    const auto run = run_real(*op, x.v, s, 2);
    const auto expected = ndimage::structure_tensor(x, k);
    for (std::size_t c = 0; c < 6; ++c) CHECK(volume_of(run, c, s).v == expected[c].v);
  }
  SECTION("gradient dips: bitwise the whole-cube median of the raw dips") {
    const std::array<std::uint64_t, 3> k{4, 2, 3};
    const auto run = run_real(*configured("gradient_dips", dip_param(k, "2.5")), x.v, s, 3);
    const auto expected = ndimage::gradient_dips(x, k, 2.5f);
    CHECK(volume_of(run, 0, s).v == expected[0].v);
    CHECK(volume_of(run, 1, s).v == expected[1].v);
  }
  SECTION("principal vector attributes from an independent eigen-solver") {
    // Eigen's QR-based solver on the whole-cube tensor; agreement within 1e-5
    // of each output's scale except where the two largest eigenvalues are
    // within 1e-6 of each other (the principal vector is then undetermined).
    const std::array<std::uint64_t, 3> k{3, 2, 4};
    const auto tensor = ndimage::structure_tensor(x, k);
    const auto params = kernel_param(k);
    const auto dips = run_real(*operators::catalogue().find("gst_2d_dips").configure(params), x.v, s, 2);
    const auto dip = run_real(*operators::catalogue().find("gst_3d_dip").configure(params), x.v, s, 2);
    const auto azm = run_real(*operators::catalogue().find("gst_3d_azm").configure(params), x.v, s, 2);
    std::uint64_t checked = 0;
    for (std::uint64_t v = 0; v < s.voxels(); ++v) {
      auto c = [&](std::size_t i) { return double(tensor[i].v[v]); };
      Eigen::Matrix3d m;
      m << c(0), c(3), c(4), c(3), c(1), c(5), c(4), c(5), c(2);
      const Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d> es(m);
      const auto e = es.eigenvalues();
      if (e[2] - e[1] <= 1e-6 * e[2]) continue;
      ++checked;
      Eigen::Vector3d p = es.eigenvectors().col(2);
      if (p[2] < 0) p = -p;
      INFO("voxel " << v);
      const double il = -p[0] / p[2] * 10, xl = -p[1] / p[2] * 10;
      CHECK(std::abs(dips.outputs[0].as<float>()[v] - il) <= 1e-5 * std::max(1.0, std::abs(il)));
      CHECK(std::abs(dips.outputs[1].as<float>()[v] - xl) <= 1e-5 * std::max(1.0, std::abs(xl)));
      CHECK(std::abs(dip.outputs[0].as<float>()[v] - std::acos(p[2]) * 180 / std::numbers::pi) <= 1e-3);
      double a = std::atan2(p[0], p[1]) * 180 / std::numbers::pi;
      if (a < 0) a += 360;
      CHECK(std::abs(azm.outputs[0].as<float>()[v] - a) <= 1e-3);
    }
    CHECK(checked * 100 >= s.voxels() * 99);
  }
}

TEST_CASE("gradient rows walked in order from any first row are scipy's first derivatives, bit for bit") {
  // A thread keeps two intermediates of its last window's crosslines for the
  // next row; every first row, every border (reflected crosslines that repeat
  // in a window) and 1 to 6 crosslines must give the same bits as scipy.
  for (const shape3 s : {shape3{1, 1, 5}, shape3{2, 2, 1}, shape3{3, 3, 7}, shape3{2, 5, 17}, shape3{4, 6, 33}}) {
    INFO(to_string(s));
    const ndimage::volume x{s, noise(s, 5)};
    const ndimage::volume g[3] = {ndimage::first_derivative(x, 0), ndimage::first_derivative(x, 1),
                                  ndimage::first_derivative(x, 2)};
    const operators::detail::gradient_rows rows{s};
    const auto nt = s.samples;
    std::vector<float> scratch(operators::detail::gradient_rows::scratch_rows * nt), out(3 * nt);
    float* rows_of_scratch[operators::detail::gradient_rows::scratch_rows];
    for (std::size_t r = 0; r < std::size(rows_of_scratch); ++r) rows_of_scratch[r] = scratch.data() + r * nt;
    auto slice = [&](std::uint64_t il) { return x.v.data() + il * s.crosslines * nt; };
    std::uint64_t wrong = 0, rows_checked = 0;
    for (std::uint64_t i = 0; i < s.inlines; ++i)
      for (std::uint64_t first = 0; first < s.crosslines; ++first)
        for (std::uint64_t j = first; j < s.crosslines; ++j, ++rows_checked) {
          rows(slice, std::identity{}, i, j, j > first, rows_of_scratch, out.data(), out.data() + nt,
               out.data() + 2 * nt);
          for (std::size_t a = 0; a < 3; ++a)
            for (std::uint64_t t = 0; t < nt; ++t)
              wrong += std::bit_cast<std::uint32_t>(out[a * nt + t]) !=
                       std::bit_cast<std::uint32_t>(g[a].v[(i * s.crosslines + j) * nt + t]);
        }
    CHECK(rows_checked == s.inlines * s.crosslines * (s.crosslines + 1) / 2);
    CHECK(wrong == 0);
  }
}

TEST_CASE("a flat region has a zero tensor: time-axis principal vector, like numpy's eigh") {
  const shape3 s{4, 5, 12};
  const std::vector<float> flat(s.voxels(), 0.25f);
  CHECK(run_real(*operators::catalogue().find("gst_3d_dip").configure(), flat, s).outputs[0].as<float>()[37] == 0.0f);
  CHECK(run_real(*operators::catalogue().find("gst_3d_azm").configure(), flat, s).outputs[0].as<float>()[37] == 0.0f);
  const auto dips = run_real(*operators::catalogue().find("gst_2d_dips").configure(), flat, s);
  CHECK(dips.outputs[0].as<float>()[37] == 0.0f);
  // gradient dips: 0 / 0 is NaN, which the reference maps to 0.
  CHECK(run_real(*operators::catalogue().find("gradient_dips").configure(), flat, s).outputs[1].as<float>()[37] ==
        0.0f);
}

TEST_CASE("meta execution emits exactly the real execution's events for every dip and azimuth operator") {
  // Results do not depend on the thread count either.
  for (const auto& name : dip_ops)
    for (const auto& p : {std::map<std::string, std::string>{}, kernel_param({2, 5, 4})})
      check_plan_matches_run(*configured(name, p), test_shapes(0xd1b), true);
}

TEST_CASE("dip and azimuth peaks are input + outputs + a ring of slices + per-thread rows, exactly") {
  SECTION("real runs") {
    const auto kernels = [](const std::string&) {
      return std::vector<std::array<std::uint64_t, 3>>{{3, 3, 3}, {2, 5, 4}};
    };
    check_kernel_peaks(dip_ops, kernels, expected_peak);
  }
  SECTION("the README's cube: 128 x 128 x 512 float32, 2 threads (planned)") {
    // NumPy reference (tracemalloc): gradient_dips 8x, gradient_structure_tensor
    // 11x, gst_2d_dips 59x, gst_3d_dip / gst_3d_azm 58x.
    check_readme_plans(dip_ops, [](const std::string& name, shape3 shape, const memory_report& planned) {
      CHECK(planned.peak_bytes == expected_peak(name, shape, {3, 3, 3}, 2));
      // Outputs aside, the workspace is under 8% of the input.
      CHECK(double(planned.peak_bytes - planned.input_bytes - planned.output_bytes) <=
            0.08 * double(planned.input_bytes));
    });
  }
}

TEST_CASE("dip and azimuth operators declare their halos") {
  // A first derivative (1 sample) feeding a window of kernel / 2.
  for (const auto& name : dip_ops) {
    INFO(name);
    CHECK(operators::catalogue().find(name).configure()->halo() == halo{.radius = {2, 2, 2}});
    CHECK(operators::catalogue().find(name).configure({{"kernel", "2,5,9"}})->halo() == halo{.radius = {2, 3, 5}});
  }
}

TEST_CASE("a dip operator run on a block extended by its halo gives the whole-cube values inside") {
  for (const auto& name : dip_ops) {
    check_halo(*operators::catalogue().find(name).configure());
    check_halo(*operators::catalogue().find(name).configure({{"kernel", "4,1,6"}}));
  }
}

TEST_CASE("dip and azimuth parameters are validated") {
  const auto& entry = operators::catalogue().find("gst_3d_dip");
  CHECK_THROWS_WITH(entry.configure({{"kernel", "3,0,3"}}),
                    Catch::Contains("kernel") && Catch::Contains("whole number"));
  CHECK_THROWS_WITH(entry.configure({{"kernel", "3,2.5,3"}}), Catch::Contains("(2.5)"));
  CHECK_THROWS_WITH(entry.configure({{"kernel", "3,3"}}), Catch::Contains("list of 3"));
  CHECK_THROWS_WITH(entry.configure({{"kernel", "3,3,5000"}}), Catch::Contains("[1, 4096]"));
  CHECK_THROWS_WITH(entry.configure({{"dip_factor", "0"}}),
                    Catch::Contains("dip_factor") && Catch::Contains("non-zero"));
  CHECK_THROWS_AS(entry.configure({{"sigma", "1"}}), invalid_input);
  CHECK_THROWS_AS(operators::catalogue().find("gradient_structure_tensor").configure({{"dip_factor", "10"}}),
                  invalid_input);
  CHECK(operators::catalogue().find("gradient_dips").configure({{"dip_factor", "-4"}})->outputs().size() == 2);
}

TEST_CASE("the CPU's batched dip and azimuth angles equal the per-voxel ones bit for bit in every instruction set") {
  // Principal vectors as the eigen-solve leaves them: random directions and
  // lengths, each axis alone, zero and negative-zero time components, ties
  // of |v0| and |v1|, a zero vector (NaN after normalising: 0 out) and NaN.
  using operators::detail::eigen_batch;
  operators::detail::eigen_rows e{};
  std::mt19937_64 rng(41);
  std::uniform_real_distribution<double> u(-1, 1);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<std::array<double, 3>> special{
      {1, 0, 0},         {0, 1, 0},        {0, 0, 1},           {0, 0, -1}, {1, 1, 0},
      {-1, 1, -0.0},     {0.5, -0.5, 0.5}, {-0.3, -0.3, 1e-30}, {0, 0, 0},  {nan, 0, 1},
      {0.6, 0.8, -1e-7}, {-0.0, -0.0, 2},  {1e-20, -1e-20, -1}};
  for (std::size_t k = 0; k < eigen_batch; ++k) {
    const auto v = k < special.size() ? special[k] : std::array<double, 3>{u(rng), u(rng), u(rng) * double(k % 3)};
    const double scale = k < special.size() ? 1 : std::ldexp(1.0, int(k % 40) - 20);
    for (std::size_t m = 0; m < 3; ++m) e.principal[m][k] = v[m] * scale;
  }
  auto per_voxel = [&](auto angle) {
    std::vector<std::uint32_t> bits;
    for (std::size_t k = 0; k < eigen_batch; ++k)
      bits.push_back(std::bit_cast<std::uint32_t>(
          operators::detail::nan_to_zero(angle(operators::detail::oriented_principal(e.at(k))))));
    return bits;
  };
  const auto dip = per_voxel([](const std::array<float, 3>& v) { return operators::gst_3d_dip::angle(v); });
  const auto azm = per_voxel([](const std::array<float, 3>& v) { return operators::gst_3d_azm::angle(v); });
  CHECK(std::set<std::uint32_t>(azm.begin(), azm.end()).size() > eigen_batch / 2);  // angles, not zeros
  for (const auto isa : {simd_isa::baseline, simd_isa::avx2, simd_isa::avx512}) {
    if (isa > cpu_simd_isa()) continue;
    INFO(name(isa));
    for (std::size_t n : {eigen_batch, std::size_t(13), std::size_t(1)}) {
      std::vector<float> y(eigen_batch, -1.0f);
      auto batch = [&](auto op, const std::vector<std::uint32_t>& want) {
        with_simd_isa(isa, [&](auto lanes) {
          operators::detail::principal_angles<decltype(op), lanes()>(std::as_const(e), n, y.data());
        });
        for (std::size_t k = 0; k < n; ++k) CHECK(std::bit_cast<std::uint32_t>(y[k]) == want[k]);
        CHECK(y[n % eigen_batch] == (n == eigen_batch ? y[0] : -1.0f));  // nothing written past n
      };
      batch(operators::gst_3d_dip{}, dip);
      batch(operators::gst_3d_azm{}, azm);
    }
  }
}
