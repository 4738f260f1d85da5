// The fused Hilbert path of the CUDA complex-trace family (trace_fft.hpp),
// run on the host: each thread of a group is a std::thread and the group's
// barrier a std::barrier, so this checks the code the GPU runs (its indexing,
// passes and exchanges) for every trace length of the path, with no GPU.
#include <catch2/catch.hpp>

#include <barrier>
#include <cmath>
#include <complex>
#include <cstdint>
#include <numbers>
#include <random>
#include <thread>
#include <vector>

#include "dwsr/operators/cuda/detail/trace_fft.hpp"

namespace fft = dwsr::operators::cuda::detail;

namespace {

/// H(x) by direct DFTs in double: ifft(-i sign(k) fft(x)), sign 0 at DC and Nyquist.
std::vector<double> hilbert_reference(const std::vector<float>& x) {
  const auto n = x.size();
  const double w = -2 * std::numbers::pi / double(n);
  std::vector<std::complex<double>> spectrum(n);
  for (std::size_t k = 0; k < n; ++k) {
    std::complex<double> acc = 0;
    for (std::size_t m = 0; m < n; ++m) acc += double(x[m]) * std::polar(1.0, w * double((k * m) % n));
    const double s = (k == 0 || 2 * k == n) ? 0.0 : (2 * k < n ? 1.0 : -1.0);
    spectrum[k] = std::complex<double>(0, -s) * acc;
  }
  std::vector<double> h(n);
  for (std::size_t m = 0; m < n; ++m) {
    std::complex<double> acc = 0;
    for (std::size_t k = 0; k < n; ++k) acc += spectrum[k] * std::polar(1.0, -w * double((k * m) % n));
    h[m] = acc.real() / double(n);
  }
  return h;
}

struct pair_result {
  std::vector<float> h1, h2;
  std::vector<int> stores;  ///< how often each k was stored
};

/// Runs the group of n / 16 threads on traces x1 and x2 (x2 empty: zeros).
template <int L>
pair_result run_group(const std::vector<float>& x1, const std::vector<float>& x2) {
  constexpr int n = 1 << L, threads = n / 16;
  std::vector<float> re(fft::group_floats(n), NAN), im(fft::group_floats(n), NAN);
  pair_result out{std::vector<float>(n, NAN), std::vector<float>(n, NAN), std::vector<int>(n, 0)};
  std::barrier group(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      fft::hilbert_pair<L>(
          t, re.data(), im.data(),
          [&](int k) {
            return fft::cfloat{x1[std::size_t(k)], x2.empty() ? 0.0f : x2[std::size_t(k)]};
          },
          [&](int k, float h1, float h2) {
            out.h1[std::size_t(k)] = h1;
            out.h2[std::size_t(k)] = h2;
            ++out.stores[std::size_t(k)];  // each k belongs to one thread: no race
          },
          [&] { group.arrive_and_wait(); });
    });
  for (auto& th : pool) th.join();
  return out;
}

std::vector<float> random_trace(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, 100.0f);
  std::vector<float> x(n);
  for (auto& v : x) v = d(gen);
  return x;
}

double max_abs(const std::vector<float>& x) {
  double m = 0;
  for (float v : x) m = std::max(m, double(std::fabs(v)));
  return m;
}

template <int L>
void check_length() {
  constexpr std::size_t n = std::size_t{1} << L;
  INFO("n = " << n);
  const auto x1 = random_trace(n, 7 + L), x2 = random_trace(n, 70 + L);
  const auto r1 = hilbert_reference(x1), r2 = hilbert_reference(x2);
  const auto both = run_group<L>(x1, x2);
  const auto alone = run_group<L>(x1, {});  // an odd trace count's last pair
  // float32 transforms: errors of a few ulps of the trace's scale, growing with log2 n.
  const double tol = 2e-6 * L * max_abs(x1);
  double worst = 0;
  for (std::size_t k = 0; k < n; ++k) {
    CHECK(both.stores[k] == 1);
    worst = std::max({worst, std::fabs(both.h1[k] - r1[k]), std::fabs(both.h2[k] - r2[k]),
                      std::fabs(alone.h1[k] - r1[k]), std::fabs(double(alone.h2[k]))});
  }
  CHECK(worst <= tol);
}

}  // namespace

TEST_CASE("fused Hilbert path: the in-register DFTs equal the definition") {
  auto check = []<int R>() {
    fft::cfloat v[R];
    std::complex<double> x[R];
    for (int k = 0; k < R; ++k) {
      x[k] = {double(k * k % 7) - 3.0, double(k % 5)};
      v[k] = {float(x[k].real()), float(x[k].imag())};
    }
    fft::dft<R>(v);
    for (int k = 0; k < R; ++k) {
      std::complex<double> want = 0;
      for (int m = 0; m < R; ++m) want += x[m] * std::polar(1.0, -2 * std::numbers::pi * k * m / R);
      CHECK(std::abs(std::complex<double>(v[k].re, v[k].im) - want) < 1e-5);
    }
  };
  check.operator()<2>();
  check.operator()<4>();
  check.operator()<8>();
  check.operator()<16>();
}

TEST_CASE("fused Hilbert path: H(x1) + i H(x2) for every length 16..4096, each sample stored once") {
  check_length<4>();
  check_length<5>();
  check_length<6>();
  check_length<7>();
  check_length<8>();
  check_length<9>();
  check_length<10>();
  check_length<11>();
  check_length<12>();
}

TEST_CASE("fused Hilbert path: which lengths take it") {
  CHECK(fft::fused_log2(16) == 4);
  CHECK(fft::fused_log2(1024) == 10);
  CHECK(fft::fused_log2(4096) == 12);
  CHECK(fft::fused_log2(8) == -1);     // below: too few threads to be worth a group
  CHECK(fft::fused_log2(8192) == -1);  // above: the group's buffers exceed 48 KiB of shared memory
  CHECK(fft::fused_log2(1000) == -1);
  CHECK(fft::fused_log2(0) == -1);
}
