// The frequency family: reference outputs, the analytic response of the
// Butterworth filters, plan == run, exact memory, halos and parameter errors.

#include <catch2/catch.hpp>

#include <cmath>
#include <complex>
#include <cstring>
#include <numbers>

#include "dwsr/operators/cuda/detail/filtfilt_batch.hpp"
#include "dwsr/operators/cuda/detail/wavelet_direct.hpp"
#include "operator_test_support.hpp"

using namespace dwsr;
using namespace dwsr::test;

namespace {
const std::vector<std::string> frequency_ops = {"lowpass_filter", "highpass_filter", "bandpass_filter",
                                                "cwt_ricker",     "cwt_ormsby",      "rgb_blending"};

/// A float32 sine of `hz` Hz sampled at `fs` Hz (4 ms by default).
std::vector<float> sine(std::uint64_t n, double hz, double fs = 250.0) {
  std::vector<float> x(n);
  for (std::uint64_t t = 0; t < n; ++t)
    x[t] = static_cast<float>(std::sin(2 * std::numbers::pi * hz * double(t) / fs + 0.3));
  return x;
}

/// Amplitude of the `hz` component of y[begin, end), by a Blackman-Harris
/// windowed projection (sidelobes below -92 dB, so leakage from other
/// frequencies, the float32 rounding noise of the input included, is negligible).
double amplitude_at(const float* y, std::uint64_t begin, std::uint64_t end, double hz, double fs = 250.0) {
  std::complex<double> sum = 0;
  double weight = 0;
  const double n = double(end - begin);
  for (auto t = begin; t < end; ++t) {
    const double u = 2 * std::numbers::pi * double(t - begin) / (n - 1);
    const double w = 0.35875 - 0.48829 * std::cos(u) + 0.14128 * std::cos(2 * u) - 0.01168 * std::cos(3 * u);
    sum += w * double(y[t]) * std::exp(std::complex<double>(0, -2 * std::numbers::pi * hz * double(t) / fs));
    weight += w;
  }
  return 2 * std::abs(sum) / weight;
}

/// |H(f)|^2 of an order-N digital Butterworth designed by the bilinear
/// transform with prewarping (the analog response at the warped frequency
/// tan(pi f / fs)): what filtfilt's two passes apply.
double butterworth_power(const std::string& kind, double f, double f1, double f2 = 0, int order = 6,
                         double fs = 250.0) {
  const auto w = [fs](double hz) { return std::tan(std::numbers::pi * hz / fs); };
  double ratio = 0;
  if (kind == "lowpass_filter")
    ratio = w(f) / w(f1);
  else if (kind == "highpass_filter")
    ratio = w(f1) / w(f);
  else
    ratio = (w(f) * w(f) - w(f1) * w(f2)) / (w(f) * (w(f2) - w(f1)));
  return 1 / (1 + std::pow(ratio, 2 * order));
}
}  // namespace

// Tolerances, all max |diff| <= rel * max(1, max |ref|):
// - lowpass_filter, cwt_ricker, cwt_ormsby: the manifest's 1e-4. The
//   convolutions use single-precision FFTs (the reference: double): measured
//   9e-8 and 1.8e-7 of max |ref|; the lowpass differs from the reference's
//   float32 coefficients and arithmetic by 1.2e-5.
// - bandpass_filter: 5e-3 (measured 2.3e-3). The reference casts the order-12
//   polynomial's coefficients to float32 and filters in float32, which moves
//   its output by up to ~5e-3 of its range (the manifest's figure); dwsr
//   filters with double-precision sections. A test below reproduces the
//   reference exactly by filtering in float32, and the design is checked
//   against the analytic Butterworth response to 1e-5.
TEST_CASE("frequency operators match the DASF reference") {
  check_against_references({"lowpass_filter", "cwt_ricker", "cwt_ormsby"});
  check_against_reference({"bandpass_filter", "bandpass_filter", 5e-3});
}

namespace {
/// The filter as one polynomial pair (b, a), like scipy's butter(output='ba'):
/// the product of the sections.
std::pair<std::vector<double>, std::vector<double>> polynomials(const operators::detail::butterworth& f) {
  std::vector<double> b{1.0}, a{1.0};
  auto times = [](const std::vector<double>& p, const std::array<double, 3>& q) {
    std::vector<double> out(p.size() + 2, 0.0);
    for (std::size_t i = 0; i < p.size(); ++i)
      for (std::size_t j = 0; j < 3; ++j) out[i + j] += p[i] * q[j];
    return out;
  };
  for (std::size_t s = 0; s < f.sections(); ++s) {
    const auto& q = f.section(s);
    b = times(b, {q.b0, q.b1, q.b2});
    a = times(a, {1.0, q.a1, q.a2});
  }
  return {b, a};
}

/// scipy.signal.filtfilt(b, a, x) in the arithmetic type T, written from
/// scipy's definition (odd padding, lfilter_zi solved in double then rounded
/// to T, transposed direct form II with the reference's operation order).
template <class T>
std::vector<float> filtfilt_ba(const std::vector<double>& b64, const std::vector<double>& a64, const float* x,
                               std::size_t n) {
  const std::size_t order = a64.size() - 1, pad = 3 * a64.size();
  std::vector<T> b(b64.begin(), b64.end()), a(a64.begin(), a64.end());
  // lfilter_zi: (I - companion(a)^T) zi = b[1:] - a[1:] b[0], in T, solved in double.
  std::vector<double> m(order * order), rhs(order);
  for (std::size_t i = 0; i < order; ++i) {
    for (std::size_t j = 0; j < order; ++j) {
      const T companion_ji = j == 0 ? T(-a[i + 1]) : (i + 1 == j ? T(1) : T(0));
      m[i * order + j] = double(T((i == j ? T(1) : T(0)) - companion_ji));
    }
    rhs[i] = double(T(b[i + 1] - T(a[i + 1] * b[0])));
  }
  for (std::size_t c = 0; c < order; ++c) {  // Gaussian elimination, partial pivoting
    std::size_t p = c;
    for (std::size_t r = c + 1; r < order; ++r)
      if (std::abs(m[r * order + c]) > std::abs(m[p * order + c])) p = r;
    for (std::size_t j = 0; j < order; ++j) std::swap(m[c * order + j], m[p * order + j]);
    std::swap(rhs[c], rhs[p]);
    for (std::size_t r = c + 1; r < order; ++r) {
      const double f = m[r * order + c] / m[c * order + c];
      for (std::size_t j = c; j < order; ++j) m[r * order + j] -= f * m[c * order + j];
      rhs[r] -= f * rhs[c];
    }
  }
  std::vector<T> zi(order);
  for (std::size_t c = order; c-- > 0;) {
    double s = rhs[c];
    for (std::size_t j = c + 1; j < order; ++j) s -= m[c * order + j] * rhs[j];
    rhs[c] = s / m[c * order + c];
    zi[c] = T(rhs[c]);
  }
  std::vector<T> ext;
  for (std::size_t k = pad; k > 0; --k) ext.push_back(T(2 * T(x[0]) - T(x[k])));
  for (std::size_t i = 0; i < n; ++i) ext.push_back(T(x[i]));
  for (std::size_t k = 0; k < pad; ++k) ext.push_back(T(2 * T(x[n - 1]) - T(x[n - 2 - k])));
  auto lfilter = [&](std::vector<T>& v) {
    std::vector<T> z(order);
    for (std::size_t i = 0; i < order; ++i) z[i] = T(zi[i] * v[0]);
    for (auto& xn : v) {
      const T y = T(z[0] + T(b[0] * xn));
      for (std::size_t i = 0; i + 1 < order; ++i) z[i] = T(T(z[i + 1] + T(xn * b[i + 1])) - T(y * a[i + 1]));
      z[order - 1] = T(T(xn * b[order]) - T(y * a[order]));
      xn = y;
    }
  };
  lfilter(ext);
  std::reverse(ext.begin(), ext.end());
  lfilter(ext);
  std::reverse(ext.begin(), ext.end());
  return {ext.begin() + std::ptrdiff_t(pad), ext.begin() + std::ptrdiff_t(pad + n)};
}
}  // namespace

TEST_CASE("the bandpass reference is the float32 filtfilt of the same design") {
  // Why bandpass_filter needs a 5e-3 tolerance: the reference rounds the
  // order-12 polynomials to float32 and filters in float32. Doing exactly that
  // to dwsr's design reproduces the reference file (measured: bit for bit), and
  // the same filtfilt in double precision reproduces dwsr's sections (measured:
  // 7e-9): the difference, 3.5e-3 = 2.3e-3 of max |ref|, is the reference's
  // float32 arithmetic, not the design or the filtfilt semantics (padding,
  // initial conditions).
  const auto dir = reference_dir();
  const auto input = io::load_npy<float>(dir / "input.npy");
  const auto ref = reference_values("bandpass_filter");
  const auto run = run_real(*operators::catalogue().find("bandpass_filter").configure(), input.data, input.shape, 2);
  const auto [b, a] =
      polynomials(operators::detail::butterworth(operators::detail::band_kind::bandpass, 6, 10.0 / 125, 60.0 / 125));
  const auto n = input.shape.samples;
  double single_vs_ref = 0, double_vs_dwsr = 0, dwsr_vs_ref = 0;
  for (std::uint64_t tr = 0; tr < input.shape.traces(); ++tr) {
    const float* x = input.data.data() + tr * n;
    const auto y32 = filtfilt_ba<float>(b, a, x, n);
    const auto y64 = filtfilt_ba<double>(b, a, x, n);
    for (std::uint64_t t = 0; t < n; ++t) {
      const auto i = tr * n + t;
      single_vs_ref = std::max(single_vs_ref, std::abs(double(y32[t]) - ref[i]));
      double_vs_dwsr = std::max(double_vs_dwsr, std::abs(double(y64[t]) - run.outputs[0].as<float>()[i]));
      dwsr_vs_ref = std::max(dwsr_vs_ref, std::abs(double(run.outputs[0].as<float>()[i]) - ref[i]));
    }
  }
  INFO("float32 emulation vs reference " << single_vs_ref << ", double emulation vs dwsr " << double_vs_dwsr
                                         << ", dwsr vs reference " << dwsr_vs_ref);
  CHECK(single_vs_ref <= 1e-6);
  CHECK(double_vs_dwsr <= 1e-6);
  CHECK(dwsr_vs_ref >= 1e-3);  // the float32 effect is real, and what the 5e-3 tolerance covers
}

TEST_CASE("rgb_blending matches the DASF reference except where a grey level may truncate either way") {
  // The reference blends its own envelope, cosine of phase and instantaneous
  // frequency, each ((x - min) / max) * 255 truncated. dwsr's attributes match
  // those within the complex-trace tests' tolerances: 1e-4 * max, i.e. 0.0255
  // grey levels of every channel, and 0.02 for cosines where the envelope is
  // under 1e-3 of its maximum (the phase is ill-conditioned there), i.e. 5.1
  // levels. A channel whose reference scaled value lies within that distance of
  // an integer may truncate to the neighbouring level(s); every other voxel must
  // be equal, and the differing ones must be under 0.1% of the cube.
  const auto dir = reference_dir();
  const auto input = io::load_npy<float>(dir / "input.npy");
  const auto op = operators::catalogue().find("rgb_blending").configure();
  const auto run = run_real(*op, input.data, input.shape, 2);
  const auto ref = io::load_npy<std::int64_t>(dir / "rgb_blending.npy").data;
  const std::vector<float> channels[3] = {reference_values("envelope"), reference_values("cosine_instantaneous_phase"),
                                          reference_values("instantaneous_frequency")};
  float lo[3], hi[3];
  for (int c = 0; c < 3; ++c) {
    lo[c] = *std::min_element(channels[c].begin(), channels[c].end());
    hi[c] = *std::max_element(channels[c].begin(), channels[c].end());
  }
  // The reference's own blend of its attributes is the file, exactly.
  const auto* got = run.outputs.at(0).as<std::int64_t>();
  std::uint64_t differing = 0;
  for (std::uint64_t i = 0; i < ref.size(); ++i) {
    std::int64_t levels[3], slack[3];  // grey level and allowed deviation per channel
    for (int c = 0; c < 3; ++c) {
      const float scaled = ((channels[c][i] - lo[c]) / hi[c]) * 255.0f;
      levels[c] = static_cast<std::int64_t>(scaled);
      const bool ill_conditioned = c == 1 && channels[0][i] < 1e-3f * hi[0];
      const double tolerance = ill_conditioned ? 0.02 * 255 : 1e-4 * 255;
      slack[c] = static_cast<std::int64_t>(std::floor(scaled + tolerance)) -
                 static_cast<std::int64_t>(std::floor(scaled - tolerance));
    }
    REQUIRE(ref[i] == levels[0] + (levels[1] << 8) + (levels[2] << 16));
    if (got[i] == ref[i]) continue;
    ++differing;
    bool explained = false;
    for (std::int64_t r = -slack[0]; r <= slack[0]; ++r)
      for (std::int64_t g = -slack[1]; g <= slack[1]; ++g)
        for (std::int64_t b = -slack[2]; b <= slack[2]; ++b)
          explained = explained || got[i] - ref[i] == r + (g << 8) + (b << 16);
    INFO("voxel " << i << ": dwsr " << got[i] << ", reference " << ref[i]);
    CHECK(explained);
  }
  INFO(differing << " of " << ref.size() << " voxels differ");
  CHECK(differing * 1000 <= ref.size());
}

TEST_CASE("Butterworth filters have the analytic Butterworth response after both passes") {
  // Sines of 2000 samples at 4 ms; the amplitude is measured over the middle
  // 1000 samples, where filtfilt's edge transients have decayed. Expected gain:
  // |H(f)|^2 of the order-6 (bandpass: order-6 prototype) design, computed here
  // from the analog Butterworth formula, independently of dwsr's design code.
  // Measured: within 2e-7 relative at every point. Tolerance 1e-5 relative,
  // 1e-3 at the highpass's 5 Hz point (gain 2.6e-10), where the input's
  // float32 rounding noise is 100x larger than the filtered signal and only
  // the window's sidelobe rejection separates them.
  const std::uint64_t n = 2000;
  struct point {
    std::string op;
    double hz;
    double rel;
  };
  const std::vector<point> points = {
      {"highpass_filter", 5, 1e-3},  {"highpass_filter", 20, 1e-5}, {"highpass_filter", 30, 1e-5},
      {"highpass_filter", 60, 1e-5}, {"lowpass_filter", 5, 1e-5},   {"lowpass_filter", 30, 1e-5},
      {"lowpass_filter", 45, 1e-5},  {"bandpass_filter", 6, 1e-5},  {"bandpass_filter", 10, 1e-5},
      {"bandpass_filter", 25, 1e-5}, {"bandpass_filter", 60, 1e-5}, {"bandpass_filter", 80, 1e-5}};
  for (const auto& p : points) {
    const auto op = operators::catalogue().find(p.op).configure();
    const auto x = sine(n, p.hz);
    const auto run = run_real(*op, x, {1, 1, n});
    const double expected =
        p.op == "bandpass_filter" ? butterworth_power(p.op, p.hz, 10, 60) : butterworth_power(p.op, p.hz, 30);
    const double measured = amplitude_at(run.outputs[0].as<float>(), n / 4, 3 * n / 4, p.hz);
    INFO(p.op << " at " << p.hz << " Hz: gain " << measured << ", expected |H|^2 = " << expected << ", relative error "
              << measured / expected - 1);
    CHECK(std::abs(measured / expected - 1) <= p.rel);
  }
  SECTION("the highpass passes 60 Hz and removes 5 Hz sample by sample") {
    const auto op = operators::catalogue().find("highpass_filter").configure();
    const auto pass = sine(n, 60), stop = sine(n, 5);
    const auto y_pass = run_real(*op, pass, {1, 1, n}).outputs[0];
    const auto y_stop = run_real(*op, stop, {1, 1, n}).outputs[0];
    double pass_err = 0, stop_max = 0;
    for (auto t = n / 4; t < 3 * n / 4; ++t) {
      pass_err = std::max(pass_err, std::abs(double(y_pass.as<float>()[t]) - pass[t]));
      stop_max = std::max(stop_max, std::abs(double(y_stop.as<float>()[t])));
    }
    // 60 Hz: |H|^2 = 0.99997. 5 Hz: what is left is the highpassed float32
    // rounding noise of the input (~3e-8), far below the 5 Hz amplitude of 1.
    CHECK(pass_err <= 1e-4);
    CHECK(stop_max <= 1e-6);
  }
}

TEST_CASE("filters keep a constant trace's steady state at every length") {
  // filtfilt's initial conditions are the filter's steady state: a constant
  // passes the lowpass unchanged and vanishes from the highpass and bandpass,
  // also on traces no longer than the padding (which dwsr limits to n - 1).
  for (std::uint64_t n : {1, 2, 3, 20, 21, 22, 39, 40, 300}) {
    const std::vector<float> x(n, 0.75f);
    for (const std::string name : {"lowpass_filter", "highpass_filter", "bandpass_filter"}) {
      const auto y = run_real(*operators::catalogue().find(name).configure(), x, {1, 1, n}).outputs[0];
      const float expected = name == "lowpass_filter" ? 0.75f : 0.0f;
      for (std::uint64_t t = 0; t < n; ++t) {
        INFO(name << ", " << n << " samples, sample " << t);
        REQUIRE(std::abs(y.as<float>()[t] - expected) <= 1e-6f);
      }
    }
  }
}

TEST_CASE("meta execution emits exactly the real execution's events for every frequency operator") {
  // Outputs are identical for every thread count.
  for (const auto& name : frequency_ops) check_plan_matches_run(*configured(name), test_shapes(0xf4e9), true);
}

TEST_CASE("frequency peaks are input + output + per-thread traces, exactly") {
  const shape3 shape{128, 128, 512};
  const std::size_t threads = 2;
  // Filters: per thread, four odd-extended traces of doubles filtered together
  // (padding 21 samples per side for the order-6 filters, 39 for the order-12
  // bandpass), rounded up to 64 bytes.
  const auto padded = [](std::uint64_t samples) { return (samples * 4 * 8 + 63) / 64 * 64; };
  // Convolutions: 128-tap wavelet (double, freed before the traces run), FFT
  // length 640 >= 512 + 127: the wavelet's spectrum (321 bins) and per thread a
  // real trace of 640 floats and a spectrum of 321 -> 328 (64-byte) bins.
  const std::uint64_t conv = 128 * 8 + 321 * 8 + threads * (640 * 4 + 328 * 8);
  // rgb_blending: int64 output (2x), per thread a real and a complex trace
  // (the analytic signal), the frequency stream's six inline slices plus one
  // frequency slice, and 6 floats of extremes per thread during the reduction.
  const std::uint64_t slice = shape.crosslines * shape.samples * 4;
  const std::uint64_t rgb = threads * (512 * 4 + 512 * 8) + 7 * slice + threads * 6 * 4;
  const std::map<std::string, std::uint64_t> scratch = {{"lowpass_filter", threads * padded(512 + 42)},
                                                        {"highpass_filter", threads * padded(512 + 42)},
                                                        {"bandpass_filter", threads * padded(512 + 78)},
                                                        {"cwt_ricker", conv},
                                                        {"cwt_ormsby", conv},
                                                        {"rgb_blending", rgb}};
  // NumPy: filters 4.3-4.5x, rgb_blending 13x; dwsr: 2.0x and 3.05x.
  check_measured_peaks(
      frequency_ops, noise(shape, 3), shape, threads, [&](const std::string& name) { return scratch.at(name); }, 1.06);
}

TEST_CASE("frequency operators declare their halos") {
  for (const auto& name : frequency_ops) {
    const auto h = operators::catalogue().find(name).configure()->halo();
    INFO(name);
    if (name == "rgb_blending") {
      CHECK(h == halo{.radius = {1, 1, 0}, .whole_traces = true});
      CHECK(operators::catalogue().find(name).configure()->reduction_passes() > 0);  // a cube-wide reduction
    } else
      CHECK(h == halo{.radius = {0, 0, 0}, .whole_traces = true});
  }
}

TEST_CASE("a frequency operator run on a block extended by its halo gives the whole-cube values inside") {
  // rgb_blending runs the block with the whole cube's reduction, as chunked execution does.
  for (const auto& name : frequency_ops) check_trace_block_halo(*configured(name), 2);
}

TEST_CASE("rgb_blending's reduction does not depend on block order or thread count") {
  const shape3 shape{6, 5, 33}, half{3, 5, 33};
  const auto cube = noise(shape, 9);
  const std::vector<float> a(cube.begin(), cube.begin() + std::ptrdiff_t(half.voxels())),
      b(cube.begin() + std::ptrdiff_t(half.voxels()), cube.end());
  const auto op = operators::catalogue().find("rgb_blending").configure();
  event_bus bus;
  host_context one(bus, {.threads = 1}), three(bus, {.threads = 3});
  reduction ab, ba;
  op->reduce(one, cube_view<const float>(a.data(), half), 0, ab);
  op->reduce(one, cube_view<const float>(b.data(), half), 0, ab);
  op->reduce(three, cube_view<const float>(b.data(), half), 0, ba);
  op->reduce(three, cube_view<const float>(a.data(), half), 0, ba);
  REQUIRE(ab.values.size() == 6);
  CHECK(ab == ba);
  // Envelope and cosine are per trace, so their extremes over the blocks are the whole cube's.
  const auto whole = reduce_real(*op, cube, shape);
  for (std::size_t k = 0; k < 4; ++k) CHECK(ab.values[k] == whole.values[k]);
}

TEST_CASE("frequency parameters are validated with messages naming the value") {
  check_rejected("lowpass_filter", {{"freq", "125"}},
                 "'freq' = 125 Hz: expected a frequency between 0 and the Nyquist");
  check_rejected("highpass_filter", {{"freq", "0"}}, "'freq' = 0 Hz");
  check_rejected("highpass_filter", {{"freq", "30"}, {"sample_rate", "20"}},
                 "Nyquist frequency 25 Hz (sample_rate 20 ms)");
  check_rejected("lowpass_filter", {{"sample_rate", "0"}}, "'sample_rate' = 0");
  check_rejected("bandpass_filter", {{"freq_lp", "60"}, {"freq_hp", "10"}}, "expected freq_lp < freq_hp");
  check_rejected("bandpass_filter", {{"freq_hp", "200"}}, "'freq_hp' = 200 Hz");
  check_rejected("cwt_ricker", {{"freq", "-5"}}, "'freq' = -5 Hz: expected a positive peak frequency");
  check_rejected("cwt_ormsby", {{"freqs", "5,10,60,40"}}, "'freqs' = 5,10,60,40: expected four corner frequencies");
  check_rejected("cwt_ormsby", {{"freqs", "5,10,40"}}, "a list of 4 comma-separated numbers");
  check_rejected("rgb_blending", {{"sample_rate", "-4"}}, "'sample_rate' = -4");
  CHECK_NOTHROW(operators::catalogue().find("bandpass_filter").configure({{"freq_lp", "1"}, {"freq_hp", "124"}}));
}

// The CUDA filters' per-trace kernel (operators/cuda/detail/filtfilt_batch.hpp),
// run on the host thread by thread in the device's batches: the CPU's bits.
namespace {
template <class Op>
void check_filtfilt_kernel(const param_overrides& params) {
  namespace cu = dwsr::operators::cuda::detail;
  const Op op(param_values::bind(Op::name, Op::params(), params));
  for (const shape3 s : {shape3{3, 5, 300}, {2, 2, 21}, {1, 3, 22}, {4, 1, 2}, {2, 3, 1}, {1, 1, 1000}}) {
    INFO(Op::name << " on " << to_string(s));
    const auto x = noise(s, 3);
    const auto cpu = run_real(*operators::catalogue().find(std::string(Op::name)).configure(params), x, s).outputs[0];
    const auto pad = operators::detail::filtfilt_padlen(op.filter, s.samples), len = s.samples + 2 * pad;
    const auto batch = cu::filtfilt_batch(s, len);
    std::vector<double> ext(batch * len);
    std::vector<float> y(s.voxels(), NAN);
    cu::filtfilt_batch_kernel k{x.data(), y.data(), ext.data(), s.samples,
                                pad,      0,        batch,      cu::device_sections::of(op.filter)};
    for (k.first = 0; k.first < s.traces(); k.first += batch)
      for (std::uint64_t j = 0; j < std::min(batch, s.traces() - k.first); ++j) k(j, j + 1, 0);
    CHECK(std::memcmp(y.data(), cpu.as<float>(), y.size() * sizeof(float)) == 0);
  }
}
}  // namespace

TEST_CASE("the CUDA filtfilt kernel gives the CPU Butterworth filters' bits, on every trace length") {
  check_filtfilt_kernel<operators::lowpass_filter>({});
  check_filtfilt_kernel<operators::highpass_filter>({});
  check_filtfilt_kernel<operators::bandpass_filter>({});
  check_filtfilt_kernel<operators::lowpass_filter>({{"freq", "80"}, {"sample_rate", "2"}});
}

// The CUDA wavelet convolutions (operators/cuda/detail/wavelet_direct.hpp),
// run on the host for every output sample in both of the GPU's forms (the
// tile, a block at a time, and a thread an output): the CPU's float spectra
// within a tenth of the GPU tests' tolerance, and NaN over a trace with a NaN
// or an infinity on both sides.
namespace {

/// The GPU's outputs of trace x (n samples), as the tile kernel makes them: tiles of 256 R outputs,
/// 256 threads of R outputs 256 apart.
template <unsigned R>
std::vector<float> tiled(const float* x, std::uint64_t n, const std::vector<float>& w) {
  namespace cu = dwsr::operators::cuda::detail;
  const std::uint64_t m = w.size(), tile = 256 * R;
  std::vector<float> y(n), row(tile + m - 1);
  for (std::uint64_t t0 = 0; t0 < n; t0 += tile) {
    for (std::uint64_t k = 0; k < row.size(); ++k) row[k] = cu::tile_sample(x, n, m, t0, k);
    for (unsigned u = 0; u < 256; ++u) {
      float acc[R];
      cu::tile_outputs(w.data(), row.data(), unsigned(m), u, 256, acc);
      for (unsigned r = 0; r < R; ++r)
        if (t0 + u + 256 * r < n) y[t0 + u + 256 * r] = acc[r];
    }
  }
  return y;
}

template <class Op>
void check_wavelet_forms(const param_overrides& params) {
  namespace cu = dwsr::operators::cuda::detail;
  const Op op(param_values::bind(Op::name, Op::params(), params));
  const operators::detail::wavelet_axis axis(op.sample_rate);
  std::vector<float> w(axis.taps);
  for (std::uint64_t i = 0; i < axis.taps; ++i) w[i] = static_cast<float>(op.wavelet(axis[i]));
  for (const shape3 s :
       {shape3{3, 5, 300}, {2, 2, 1}, {1, 3, 64}, {2, 1, 127}, {1, 2, 128}, {1, 1, 1000}, {1, 3, 2500}}) {
    INFO(Op::name << " on " << to_string(s) << ", " << axis.taps << " taps");
    auto x = noise(s, 3);
    if (s.traces() > 2) {
      x[s.samples + s.samples / 2] = NAN;  // trace 1
      x[2 * s.samples] = INFINITY;         // trace 2
    }
    const auto cpu = run_real(*operators::catalogue().find(std::string(Op::name)).configure(params), x, s).outputs[0];
    const float* c = cpu.as<float>();
    double largest = 0;
    for (std::uint64_t i = 0; i < s.voxels(); ++i)
      if (std::isfinite(c[i])) largest = std::max(largest, double(std::fabs(c[i])));
    const double tolerance = 1e-5 * std::max(1.0, largest);
    std::uint64_t beyond = 0, nan_both = 0, nan_one = 0;
    double worst = 0;
    auto compare = [&](float g, float r) {
      if (std::isnan(g) || std::isnan(r)) {
        (std::isnan(g) && std::isnan(r) ? nan_both : nan_one) += 1;
        return;
      }
      worst = std::max(worst, std::fabs(double(g) - double(r)));
      beyond += std::fabs(double(g) - double(r)) > tolerance;
    };
    for (std::uint64_t tr = 0; tr < s.traces(); ++tr) {
      const float* trace = x.data() + tr * s.samples;
      const float* r = c + tr * s.samples;
      const bool finite = std::all_of(trace, trace + s.samples, [](float v) { return std::isfinite(v); });
      // Every tile size on every length (the kernel writes NaN itself where not finite).
      const auto one = tiled<1>(trace, s.samples, w), two = tiled<2>(trace, s.samples, w),
                 four = tiled<4>(trace, s.samples, w);
      for (std::uint64_t t = 0; t < s.samples; ++t) {
        compare(cu::wavelet_sample(trace, s.samples, w.data(), axis.taps, t, finite), r[t]);
        for (const auto* tile : {&one, &two, &four}) compare(finite ? (*tile)[t] : NAN, r[t]);
      }
    }
    INFO("largest |gpu - cpu| " << worst << ", tolerance " << tolerance);
    CHECK(beyond == 0);
    CHECK(nan_one == 0);
    CHECK(nan_both == (s.traces() > 2 ? 8 * s.samples : 0));
  }
}

}  // namespace

TEST_CASE("the CUDA wavelet convolutions give the CPU's cwt within rounding, and NaN over a non-finite trace") {
  check_wavelet_forms<operators::cwt_ricker>({});
  check_wavelet_forms<operators::cwt_ricker>({{"freq", "40"}, {"sample_rate", "2"}});
  check_wavelet_forms<operators::cwt_ormsby>({});
  check_wavelet_forms<operators::cwt_ormsby>({{"freqs", "2,8,30,70"}, {"sample_rate", "1"}});
}
