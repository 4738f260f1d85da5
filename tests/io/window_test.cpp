// Input windows: every source's read_window gives the same bytes as the same
// voxels of its whole cube (generate_synthetic, read_segy_data), reads them
// concurrently, and allocates nothing (the window goes straight into the
// caller's buffer, so the buffers dwsr plans are all the input memory there is).

#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <numeric>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "counting_new.hpp"  // read_window is checked to allocate nothing
#include "dwsr/core/random.hpp"
#include "dwsr/io/source.hpp"
#include "io/io_test_support.hpp"

using dwsr::shape3;
using dwsr::io::cube_source;
using dwsr::io::segy_sorting;
using dwsr::io::segy_source;
using dwsr::io::synthetic_source;
using dwsr::test::allocations_during;
using dwsr::test::require_error;
using dwsr::test::temp_dir;

namespace {

using point = std::array<std::uint64_t, 3>;

struct window {
  point lo, hi;
};

std::string text(const window& w) {
  std::string t = "[";
  for (std::size_t a = 0; a < 3; ++a) t += std::to_string(w.lo[a]) + (a < 2 ? "," : ") to (");
  for (std::size_t a = 0; a < 3; ++a) t += std::to_string(w.hi[a]) + (a < 2 ? "," : ")");
  return t;
}

/// The whole cube, windows one sample thick along each axis, windows of whole
/// crosslines and of whole traces,
/// single voxels at the corners, an empty window, and `random` random windows.
std::vector<window> windows(shape3 s, std::uint64_t seed, std::size_t random) {
  const point end = s.as_array();
  std::vector<window> w = {{{0, 0, 0}, end}};
  dwsr::splitmix64 rng{seed};
  for (std::size_t a = 0; a < 3; ++a) {
    window thin{{0, 0, 0}, end};
    thin.lo[a] = rng.below(end[a]);
    thin.hi[a] = thin.lo[a] + 1;
    w.push_back(thin);
  }
  // Whole crosslines and samples of a few inlines (contiguous in a file), and
  // whole samples of a few crosslines (contiguous per inline).
  const auto i0 = rng.below(end[0]), x0 = rng.below(end[1]);
  w.push_back({{i0, 0, 0}, {i0 + 1 + rng.below(end[0] - i0), end[1], end[2]}});
  w.push_back({{i0, x0, 0}, {i0 + 1 + rng.below(end[0] - i0), x0 + 1 + rng.below(end[1] - x0), end[2]}});
  w.push_back({{0, 0, 0}, {1, 1, 1}});
  w.push_back({{end[0] - 1, end[1] - 1, end[2] - 1}, end});
  w.push_back({{0, 0, end[2]}, end});  // empty: nothing is read or written
  for (std::size_t k = 0; k < random; ++k) {
    window r;
    for (std::size_t a = 0; a < 3; ++a) {
      r.lo[a] = rng.below(end[a]);
      r.hi[a] = r.lo[a] + 1 + rng.below(end[a] - r.lo[a]);
    }
    w.push_back(r);
  }
  return w;
}

/// The voxels of `w` in `cube` (of shape s), C order.
std::vector<float> cut(const std::vector<float>& cube, shape3 s, const window& w) {
  std::vector<float> out;
  for (auto i = w.lo[0]; i < w.hi[0]; ++i)
    for (auto x = w.lo[1]; x < w.hi[1]; ++x) {
      const auto* trace = cube.data() + (i * s.crosslines + x) * s.samples;
      out.insert(out.end(), trace + w.lo[2], trace + w.hi[2]);
    }
  return out;
}

constexpr float sentinel = -12345.5f;

/// read_window into a buffer one float longer than the window (a sentinel
/// there shows nothing is written past it); the extra float is dropped.
std::vector<float> read_window(const cube_source& src, const window& w) {
  std::uint64_t n = 1;
  for (std::size_t a = 0; a < 3; ++a) n *= w.hi[a] - w.lo[a];
  std::vector<float> v(n + 1, sentinel);
  src.read_window(w.lo, w.hi, v.data());
  if (v.back() != sentinel) v.push_back(0.0f);  // makes the sizes differ
  v.pop_back();
  return v;
}

bool same_bytes(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

/// Checks every window of `ws` against `whole`, one by one.
void check_windows(const cube_source& src, const std::vector<float>& whole, const std::vector<window>& ws) {
  const auto s = src.shape();
  for (const auto& w : ws) {
    INFO(src.describe() << " window " << text(w));
    CHECK(same_bytes(read_window(src, w), cut(whole, s, w)));
  }
}

/// Reads the windows of `ws` on 4 threads at once (each thread all of them,
/// from a different start); returns how many differ from `whole`.
std::uint64_t concurrent_mismatches(const cube_source& src, const std::vector<float>& whole,
                                    const std::vector<window>& ws) {
  std::atomic<std::uint64_t> bad{0};
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (std::size_t k = 0; k < ws.size(); ++k) {
        const auto& w = ws[(k + t * ws.size() / 4) % ws.size()];
        if (!same_bytes(read_window(src, w), cut(whole, src.shape(), w))) ++bad;
      }
    });
  for (auto& th : threads) th.join();
  return bad.load();
}

/// SEG-Y files byte by byte, for the orders, formats and byte orders that
/// write_segy does not write. Samples are encoded by segyio (IBM or IEEE,
/// big-endian), then byte-swapped for little-endian files.
struct segy_file_maker {
  int format = 5;  ///< 1: IBM float, 5: IEEE float
  bool little = false;
  int ext_headers = 0;

  void put(std::string& b, std::size_t byte1, std::uint32_t v, int size) const {
    for (int i = 0; i < size; ++i)
      b[byte1 - 1 + std::size_t(i)] = char((v >> (little ? 8 * i : 8 * (size - 1 - i))) & 0xff);
  }
  /// The file of `cube` (shape s) whose k-th trace is the cube's trace order[k];
  /// inline numbers 100 + i, crossline numbers 50 + 2 x.
  std::string bytes(const std::vector<float>& cube, shape3 s, const std::vector<std::uint64_t>& order) const {
    std::string b(3600 + 3200 * std::size_t(ext_headers), '\0');
    std::fill(b.begin(), b.begin() + 3200, '\x40');
    put(b, 3217, 4000, 2);
    put(b, 3221, std::uint32_t(s.samples), 2);
    put(b, 3225, std::uint32_t(format), 2);
    put(b, 3505, std::uint32_t(ext_headers), 2);
    for (const auto pos : order) {
      std::string h(240, '\0');
      put(h, 189, std::uint32_t(100 + pos / s.crosslines), 4);
      put(h, 193, std::uint32_t(50 + 2 * (pos % s.crosslines)), 4);
      put(h, 115, std::uint32_t(s.samples), 2);
      put(h, 117, 4000, 2);
      std::vector<float> words(cube.begin() + std::ptrdiff_t(pos * s.samples),
                               cube.begin() + std::ptrdiff_t((pos + 1) * s.samples));
      segy_from_native(format, static_cast<long long>(words.size()), words.data());
      std::string data(words.size() * 4, '\0');
      std::memcpy(data.data(), words.data(), data.size());
      if (little)
        for (std::size_t w = 0; w < data.size(); w += 4)
          std::swap(data[w], data[w + 3]), std::swap(data[w + 1], data[w + 2]);
      b += h + data;
    }
    return b;
  }
};

}  // namespace

TEST_CASE("window: synthetic windows are generate_synthetic's voxels", "[io][window][synthetic]") {
  // 1 trace; fewer traces than the 256 sum blocks; more (300, 323, 360 traces).
  const std::vector<shape3> shapes = {{1, 1, 1},   {1, 1, 130},  {3, 1, 7},   {2, 3, 77},
                                      {1, 300, 5}, {17, 19, 33}, {9, 40, 60}, {16, 16, 64}};
  const std::vector<std::uint64_t> seeds = {1, 7, 0xffffffffffffffffULL};
  for (const auto s : shapes)
    for (const auto seed : seeds) {
      INFO("shape " << dwsr::to_string(s) << " seed " << seed);
      std::vector<float> whole(s.voxels());
      dwsr::io::generate_synthetic(s, seed, whole.data(), 1);
      std::vector<float> parallel(s.voxels());
      dwsr::io::generate_synthetic(s, seed, parallel.data(), 3);
      REQUIRE(same_bytes(whole, parallel));

      const double noise = dwsr::io::synthetic_noise_std(s, seed);
      for (std::size_t threads : {2, 5}) CHECK(dwsr::io::synthetic_noise_std(s, seed, threads) == noise);
      const synthetic_source src(s, seed);
      check_windows(src, whole, windows(s, seed ^ 0x5eed, 40));
      CHECK(src.noise_std() == noise);
    }
}

TEST_CASE("window: a synthetic trace alone, any sample range", "[io][window][synthetic]") {
  const shape3 s{2, 2, 90};
  std::vector<float> whole(s.voxels());
  dwsr::io::generate_synthetic(s, 3, whole.data());
  const double noise = dwsr::io::synthetic_noise_std(s, 3);
  for (std::uint64_t trace = 0; trace < s.traces(); ++trace)
    for (std::uint64_t t0 = 0; t0 < s.samples; t0 += 7)
      for (std::uint64_t t1 = t0 + 1; t1 <= s.samples; t1 += 11) {
        std::vector<float> part(t1 - t0);
        dwsr::io::synthetic_trace(3, s.samples, noise, trace, t0, part);
        const auto* expected = whole.data() + trace * s.samples + t0;
        CHECK(std::memcmp(part.data(), expected, part.size() * sizeof(float)) == 0);
      }
}

TEST_CASE("window: .npy windows are the cube's voxels, read trace by trace or in runs", "[io][window][npy]") {
  temp_dir dir;
  for (const shape3 s : {shape3{1, 1, 1}, shape3{1, 1, 130}, shape3{3, 1, 7}, shape3{6, 5, 23}, shape3{9, 40, 60}}) {
    std::vector<float> cube(s.voxels());
    dwsr::io::generate_synthetic(s, 6, cube.data());
    dwsr::io::write_npy(dir / "c.npy", dwsr::cube_view<const float>(cube.data(), s));
    const dwsr::io::npy_source src(dir / "c.npy");
    check_windows(src, cube, windows(s, 13, 60));
    CHECK(concurrent_mismatches(src, cube, windows(s, 14, 40)) == 0);
  }
}

TEST_CASE("window: SEG-Y windows are read_segy_data's voxels", "[io][window][segy]") {
  SECTION("datasets/tiny.sgy") {
    const auto tiny = std::filesystem::path(DWSR_SOURCE_DIR) / "datasets" / "tiny.sgy";
    const segy_source src(tiny);
    std::vector<float> whole(src.shape().voxels());
    src.read(whole.data(), 1);
    check_windows(src, whole, windows(src.shape(), 11, 200));
  }

  temp_dir dir;
  const shape3 s{5, 7, 23};
  std::vector<float> cube(s.voxels());
  dwsr::io::generate_synthetic(s, 4, cube.data());
  for (auto& v : cube) v *= 1000;  // IBM floats of all magnitudes
  cube[3] = 0.0f, cube[4] = -1.0f, cube[5] = 0.15625f, cube[6] = 1e-20f, cube[7] = -3e20f;

  SECTION("written by write_segy") {
    dwsr::io::write_segy(dir / "w.sgy", {cube.data(), s}, 4000);
    const segy_source src(dir / "w.sgy");
    std::vector<float> whole(s.voxels());
    src.read(whole.data(), 1);
    CHECK(whole == cube);
    check_windows(src, whole, windows(s, 12, 100));
  }
  SECTION("both sample formats, both byte orders, every trace order") {
    std::vector<std::uint64_t> inline_order(s.traces()), crossline_order, shuffled(s.traces());
    std::iota(inline_order.begin(), inline_order.end(), 0);
    for (std::uint64_t x = 0; x < s.crosslines; ++x)
      for (std::uint64_t i = 0; i < s.inlines; ++i) crossline_order.push_back(i * s.crosslines + x);
    std::iota(shuffled.begin(), shuffled.end(), 0);
    dwsr::splitmix64 rng{99};
    for (std::size_t k = shuffled.size() - 1; k > 0; --k) std::swap(shuffled[k], shuffled[rng.below(k + 1)]);
    const std::vector<std::pair<std::vector<std::uint64_t>, dwsr::io::segy_sorting>> orders = {
        {inline_order, segy_sorting::inline_sorted},
        {crossline_order, segy_sorting::crossline_sorted},
        {shuffled, segy_sorting::unsorted}};

    for (const int format : {1, 5})
      for (const bool little : {false, true})
        for (const auto& [order, sorting] : orders) {
          segy_file_maker maker{format, little, sorting == segy_sorting::unsorted ? 1 : 0};
          std::string name = little ? "le-" : "be-";
          name += std::to_string(format);
          name += dwsr::io::name_of(sorting);
          const auto p = dir / (name + ".sgy");
          dwsr::test::write_raw(p, maker.bytes(cube, s, order));
          const segy_source src(p);
          INFO(src.describe());
          REQUIRE(src.shape() == s);
          CHECK(src.header().sorting == sorting);
          CHECK(src.header().little_endian == little);
          CHECK(int(src.header().format) == format);
          std::vector<float> whole(s.voxels());
          dwsr::io::read_segy_data(p, src.header(), whole.data());
          if (format == 5) CHECK(whole == cube);
          check_windows(src, whole, windows(s, std::uint64_t(format * 10 + little), 60));
        }
  }
}

TEST_CASE("window: concurrent reads from several workers", "[io][window]") {
  SECTION("synthetic: the first calls race to compute the noise std") {
    const shape3 s{12, 30, 40};
    std::vector<float> whole(s.voxels());
    dwsr::io::generate_synthetic(s, 21, whole.data());
    for (int round = 0; round < 3; ++round) {
      const synthetic_source src(s, 21);
      CHECK(concurrent_mismatches(src, whole, windows(s, std::uint64_t(round), 60)) == 0);
    }
  }
  SECTION("SEG-Y, crossline-sorted IBM") {
    temp_dir dir;
    const shape3 s{6, 5, 31};
    std::vector<float> cube(s.voxels());
    dwsr::io::generate_synthetic(s, 22, cube.data());
    std::vector<std::uint64_t> order;
    for (std::uint64_t x = 0; x < s.crosslines; ++x)
      for (std::uint64_t i = 0; i < s.inlines; ++i) order.push_back(i * s.crosslines + x);
    dwsr::test::write_raw(dir / "c.sgy", segy_file_maker{1, false, 0}.bytes(cube, s, order));
    const segy_source src(dir / "c.sgy");
    std::vector<float> whole(s.voxels());
    src.read(whole.data(), 1);
    CHECK(concurrent_mismatches(src, whole, windows(s, 5, 120)) == 0);
  }
}

/// The synthetic cube of `s` and `seed`, also written as c.npy and c.sgy in `dir`.
std::vector<float> cube_files(const std::filesystem::path& dir, shape3 s, std::uint64_t seed) {
  std::vector<float> cube(s.voxels());
  dwsr::io::generate_synthetic(s, seed, cube.data());
  dwsr::io::write_npy(dir / "c.npy", dwsr::cube_view<const float>(cube.data(), s));
  dwsr::io::write_segy(dir / "c.sgy", {cube.data(), s}, 4000);
  return cube;
}

TEST_CASE("window: reading a window allocates nothing, the first read included", "[io][window]") {
  temp_dir dir;
  const shape3 s{6, 8, 50};
  const auto cube = cube_files(dir.path(), s, 2);
  std::vector<std::uint64_t> order(s.traces());
  std::iota(order.rbegin(), order.rend(), 0);  // reversed: unsorted
  dwsr::test::write_raw(dir / "u.sgy", segy_file_maker{1, true, 0}.bytes(cube, s, order));

  for (const char* spec : {"synthetic:6x8x50:2", "c.npy", "c.sgy", "u.sgy"}) {
    const std::string path = spec[0] == 's' ? std::string(spec) : (dir / spec).string();
    const auto src = dwsr::io::open_source(path);
    INFO(src->describe());
    std::vector<float> dst(s.voxels());
    const window w{{1, 2, 3}, {5, 8, 49}};
    CHECK(allocations_during([&] { src->read_window(w.lo, w.hi, dst.data()); }) == 0);
    CHECK(allocations_during([&] { src->read_window({0, 0, 0}, s.as_array(), dst.data()); }) == 0);
  }
}

TEST_CASE("window: windows outside the cube and truncated files are errors", "[io][window]") {
  temp_dir dir;
  const shape3 s{3, 4, 20};
  const auto cube = cube_files(dir.path(), s, 5);
  std::vector<float> dst(s.voxels() * 2);
  for (const std::string& spec :
       {std::string("synthetic:3x4x20:5"), (dir / "c.npy").string(), (dir / "c.sgy").string()}) {
    INFO(spec);
    const auto src = dwsr::io::open_source(spec);
    require_error<dwsr::invalid_input>(
        [&] {
          src->read_window({0, 0, 0}, {3, 4, 21}, dst.data());
        },
        {"window [(0, 0, 0), (3, 4, 21))", "expected lo <= hi <= (3, 4, 20)"});
    require_error<dwsr::invalid_input>(
        [&] {
          src->read_window({2, 0, 0}, {1, 4, 20}, dst.data());
        },
        {"window [(2, 0, 0), (1, 4, 20))"});
  }
  SECTION("a SEG-Y file cut short after it was opened") {
    const segy_source src(dir / "c.sgy");
    const auto bytes = dwsr::test::read_raw(dir / "c.sgy");
    dwsr::test::write_raw(dir / "c.sgy", bytes.substr(0, bytes.size() - 100));
    CHECK_NOTHROW(src.read_window({0, 0, 0}, {2, 4, 20}, dst.data()));
    require_error<dwsr::io_error>(
        [&] {
          src.read_window({2, 3, 0}, {3, 4, 20}, dst.data());
        },
        {"c.sgy", "truncated", "SEG-Y trace samples"});
  }
}
