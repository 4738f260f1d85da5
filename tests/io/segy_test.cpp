#include "dwsr/io/segy.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "dwsr/io/synthetic.hpp"
#include "io/io_test_support.hpp"

using Catch::Matchers::Contains;
using namespace dwsr;
using namespace dwsr::io;
using namespace dwsr::test;

namespace {

/// SEG-Y files byte by byte, independent of segyio: any trace order, format,
/// byte order and header values, so that readers meet files dwsr did not write.
struct segy_builder {
  int format = 5;
  bool little = false;
  int samples = 3;
  int bin_dt = 4000;
  int trace_dt = 4000;
  int ext_headers = 0;
  struct trace {
    std::int32_t il, xl;
    std::vector<std::uint32_t> words;  // raw sample words (IEEE or IBM bits)
  };
  std::vector<trace> traces;

  void put(std::string& b, std::size_t pos1, std::uint32_t v, int size) const {
    for (int i = 0; i < size; ++i) {
      const int shift = little ? 8 * i : 8 * (size - 1 - i);
      b[pos1 - 1 + static_cast<std::size_t>(i)] = static_cast<char>((v >> shift) & 0xff);
    }
  }
  void add(std::int32_t il, std::int32_t xl, const std::vector<float>& values) {
    trace t{il, xl, {}};
    for (float v : values) {
      std::uint32_t w;
      std::memcpy(&w, &v, 4);
      t.words.push_back(w);
    }
    traces.push_back(t);
  }
  std::string bytes() const {
    std::string b(3600 + 3200 * static_cast<std::size_t>(ext_headers), '\0');
    std::fill(b.begin(), b.begin() + 3200, '\x40');  // EBCDIC spaces
    put(b, 3217, static_cast<std::uint32_t>(bin_dt), 2);
    put(b, 3221, static_cast<std::uint32_t>(samples), 2);
    put(b, 3225, static_cast<std::uint32_t>(format), 2);
    put(b, 3505, static_cast<std::uint32_t>(ext_headers), 2);
    for (const auto& t : traces) {
      std::string h(240 + 4 * t.words.size(), '\0');
      put(h, 189, static_cast<std::uint32_t>(t.il), 4);
      put(h, 193, static_cast<std::uint32_t>(t.xl), 4);
      put(h, 115, static_cast<std::uint32_t>(samples), 2);
      put(h, 117, static_cast<std::uint32_t>(trace_dt), 2);
      for (std::size_t i = 0; i < t.words.size(); ++i) put(h, 241 + 4 * i, t.words[i], 4);
      b += h;
    }
    return b;
  }
};

/// A cube whose every sample names its place: il * 1000 + xl * 10 + t / 10.
std::vector<float> labelled(shape3 s) {
  std::vector<float> v(s.voxels());
  for (std::uint64_t i = 0; i < s.inlines; ++i)
    for (std::uint64_t x = 0; x < s.crosslines; ++x)
      for (std::uint64_t t = 0; t < s.samples; ++t)
        v[(i * s.crosslines + x) * s.samples + t] = static_cast<float>(i * 1000 + x * 10) + static_cast<float>(t) / 10;
  return v;
}

std::vector<float> read_all(const std::filesystem::path& p, const segy_header& h) {
  std::vector<float> v(h.shape.voxels(), -1.0f);
  read_segy_data(p, h, v.data());
  return v;
}

}  // namespace

TEST_CASE("segy: write then read gives the cube back", "[io][segy]") {
  temp_dir dir;
  const shape3 s{3, 4, 50};
  const auto cube = labelled(s);
  const auto p = dir / "c.sgy";

  SECTION("defaults") {
    write_segy(p, {cube.data(), s}, 4000);
    CHECK(std::filesystem::file_size(p) == 3600 + 12 * (240 + 200));
    const auto h = read_segy_header(p);
    CHECK(h.shape == s);
    CHECK(h.sample_interval_us == 4000);
    CHECK(h.sample_interval_in_file);
    CHECK(h.format == dwsr::io::segy_sample_format::ieee_float);
    CHECK_FALSE(h.little_endian);
    CHECK(h.sorting == segy_sorting::inline_sorted);
    CHECK(h.inlines == std::vector<std::int32_t>{1, 2, 3});
    CHECK(h.crosslines == std::vector<std::int32_t>{1, 2, 3, 4});
    CHECK(read_all(p, h) == cube);
    // The bytes the standard fixes: EBCDIC 'C' first, format 5 and the line
    // numbers big-endian at their positions.
    const auto b = read_raw(p);
    CHECK(static_cast<unsigned char>(b[0]) == 0xC3);
    CHECK(b.substr(3224, 2) == std::string("\0\x05", 2));
    CHECK(b.substr(3220, 2) == std::string("\0\x32", 2));
    const std::size_t second = 3600 + 240 + 200;
    CHECK(b.substr(second + 188, 8) == std::string("\0\0\0\x01\0\0\0\x02", 8));
  }
  SECTION("other header bytes and first line numbers") {
    dwsr::io::segy_write_options w;
    w.inline_byte = 9;
    w.crossline_byte = 21;
    w.first_inline = 100;
    w.first_crossline = -2;
    write_segy(p, {cube.data(), s}, 2000, w);
    dwsr::io::segy_options r;
    r.inline_byte = 9;
    r.crossline_byte = 21;
    const auto h = read_segy_header(p, r);
    CHECK(h.sample_interval_us == 2000);
    CHECK(h.inlines == std::vector<std::int32_t>{100, 101, 102});
    CHECK(h.crosslines == std::vector<std::int32_t>{-2, -1, 0, 1});
    CHECK(read_all(p, h) == cube);
    // At the standard bytes this file has no line numbers: one location, 12 traces.
    require_error<dwsr::io_error>([&] { read_segy_header(p); }, {"both have inline 0, crossline 0"});
  }
  SECTION("one trace, one sample") {
    const std::vector<float> one{2.5f};
    write_segy(p, {one.data(), {1, 1, 1}}, 1);
    const auto h = read_segy_header(p);
    CHECK(h.shape == shape3{1, 1, 1});
    CHECK(read_all(p, h) == one);
  }
  CHECK(dir.entries().size() == 1);
}

TEST_CASE("segy: trace order, byte order and sample formats", "[io][segy]") {
  temp_dir dir;
  const auto p = dir / "b.sgy";
  const shape3 s{3, 2, 3};
  const auto cube = labelled(s);
  auto trace = [&](std::size_t i, std::size_t x) {
    const auto* t = cube.data() + (i * s.crosslines + x) * s.samples;
    return std::vector<float>(t, t + s.samples);
  };
  segy_builder b;

  SECTION("crossline-sorted") {
    for (std::size_t x = 0; x < 2; ++x)
      for (std::size_t i = 0; i < 3; ++i) b.add(static_cast<int>(10 + i), static_cast<int>(20 + x), trace(i, x));
    write_raw(p, b.bytes());
    const auto h = read_segy_header(p);
    CHECK(h.sorting == segy_sorting::crossline_sorted);
    CHECK(h.shape == s);
    CHECK(h.inlines == std::vector<std::int32_t>{10, 11, 12});
    CHECK(read_all(p, h) == cube);
  }
  SECTION("any order, descending numbers in the file") {
    const std::vector<std::pair<int, int>> order = {{2, 1}, {0, 0}, {1, 1}, {2, 0}, {0, 1}, {1, 0}};
    for (auto [i, x] : order)
      b.add(30 - i, 7 - x, trace(static_cast<std::size_t>(2 - i), static_cast<std::size_t>(1 - x)));
    write_raw(p, b.bytes());
    const auto h = read_segy_header(p);
    CHECK(h.sorting == segy_sorting::unsorted);
    CHECK(h.inlines == std::vector<std::int32_t>{28, 29, 30});
    CHECK(h.crosslines == std::vector<std::int32_t>{6, 7});
    CHECK(read_all(p, h) == cube);  // axes ascend in line number whatever the file order
  }
  SECTION("little-endian (SEG-Y rev2 allows it)") {
    b.little = true;
    for (std::size_t i = 0; i < 3; ++i)
      for (std::size_t x = 0; x < 2; ++x) b.add(static_cast<int>(i + 1), static_cast<int>(x + 1), trace(i, x));
    write_raw(p, b.bytes());
    const auto h = read_segy_header(p);
    CHECK(h.little_endian);
    CHECK(h.sample_interval_us == 4000);
    CHECK(h.sorting == segy_sorting::inline_sorted);
    CHECK(read_all(p, h) == cube);
  }
  SECTION("extended textual headers move the first trace") {
    b.ext_headers = 2;
    for (std::size_t i = 0; i < 3; ++i)
      for (std::size_t x = 0; x < 2; ++x) b.add(static_cast<int>(i + 1), static_cast<int>(x + 1), trace(i, x));
    write_raw(p, b.bytes());
    const auto h = read_segy_header(p);
    CHECK(h.trace0 == 3600 + 6400);
    CHECK(read_all(p, h) == cube);
  }
  SECTION("IBM float is decoded") {
    b.format = 1;
    b.samples = 5;
    // IBM System/360 words: 1.0, -118.625, 0.15625, 1000.0, 0.0
    b.traces.push_back({1, 1, {0x41100000u, 0xC276A000u, 0x40280000u, 0x433E8000u, 0u}});
    write_raw(p, b.bytes());
    const auto h = read_segy_header(p);
    CHECK(h.format == dwsr::io::segy_sample_format::ibm_float);
    CHECK(read_all(p, h) == std::vector<float>{1.0f, -118.625f, 0.15625f, 1000.0f, 0.0f});
  }
  SECTION("sample interval from the trace header, or the fallback") {
    b.bin_dt = 0;
    b.trace_dt = 2000;
    b.add(1, 1, {1, 2, 3});
    write_raw(p, b.bytes());
    CHECK(read_segy_header(p).sample_interval_us == 2000);
    b.trace_dt = 0;
    write_raw(p, b.bytes());
    const auto h = read_segy_header(p);
    CHECK(h.sample_interval_us == 4000);
    CHECK_FALSE(h.sample_interval_in_file);
  }
}

TEST_CASE("segy: read errors name the file and the problem", "[io][segy]") {
  temp_dir dir;
  const auto p = dir / "bad.sgy";
  const auto name = p.string();
  segy_builder b;
  for (int i = 1; i <= 2; ++i)
    for (int x = 1; x <= 3; ++x) b.add(i, x, {1, 2, 3});

  SECTION("missing file") {
    require_error<dwsr::io_error>([&] { read_segy_header(dir / "none.sgy"); }, {"none.sgy", "not found"});
  }
  SECTION("shorter than the headers") {
    write_raw(p, std::string(1000, 'x'));
    require_error<dwsr::io_error>([&] { read_segy_header(p); }, {name, "1000 bytes", "3600"});
  }
  SECTION("unknown sample format") {
    b.format = 2;
    write_raw(p, b.bytes());
    require_error<dwsr::io_error>([&] { read_segy_header(p); },
                                  {name, "format code 2 (4-byte integer)", "supported: 1 (4-byte IBM float), 5"});
    b.format = 0;
    write_raw(p, b.bytes());
    require_error<dwsr::io_error>([&] { read_segy_header(p); }, {name, "format code 0"});
  }
  SECTION("zero samples") {
    b.samples = 0;
    b.traces.clear();
    write_raw(p, b.bytes() + std::string(240, '\0'));
    require_error<dwsr::io_error>([&] { read_segy_header(p); }, {name, "0 samples"});
  }
  SECTION("truncated trace data") {
    write_raw(p, b.bytes().substr(0, 3600 + 6 * 252 - 5));
    require_error<dwsr::io_error>([&] { read_segy_header(p); },
                                  {name, "not a whole number of 252-byte traces", "5 whole traces and 247 bytes"});
  }
  SECTION("headers only") {
    b.traces.clear();
    write_raw(p, b.bytes());
    require_error<dwsr::io_error>([&] { read_segy_header(p); }, {name, "no traces"});
  }
  SECTION("missing trace") {
    b.traces.erase(b.traces.begin() + 4);  // inline 2, crossline 2
    write_raw(p, b.bytes());
    require_error<dwsr::io_error>(
        [&] { read_segy_header(p); },
        {name, "irregular geometry", "5 traces cover 2 inlines x 3 crosslines", "inline 2, crossline 2", "byte 189"});
  }
  SECTION("duplicate trace") {
    b.traces[5].il = 1;
    b.traces[5].xl = 2;
    write_raw(p, b.bytes());
    require_error<dwsr::io_error>([&] { read_segy_header(p); },
                                  {name, "traces 2 and 6 both have inline 1, crossline 2"});
  }
  SECTION("file truncated after its header was read") {
    write_raw(p, b.bytes());
    const auto h = read_segy_header(p);
    write_raw(p, b.bytes().substr(0, 3600 + 3 * 252));
    std::vector<float> dst(h.shape.voxels());
    require_error<dwsr::io_error>([&] { read_segy_data(p, h, dst.data()); }, {name, "reading trace 4", "truncated"});
  }
  SECTION("header byte options that are not 4-byte fields") {
    write_raw(p, b.bytes());
    dwsr::io::segy_options o;
    o.inline_byte = 190;
    require_error<dwsr::invalid_input>([&] { read_segy_header(p, o); }, {"inline header byte 190", "189"});
    o.inline_byte = 189;
    o.crossline_byte = 115;  // a 2-byte field (sample count)
    require_error<dwsr::invalid_input>([&] { read_segy_header(p, o); }, {"crossline header byte 115", "193"});
    o.crossline_byte = 0;
    CHECK_THROWS_AS(read_segy_header(p, o), dwsr::invalid_input);
  }
}

// Found writing the fuzz harness: the grid check kept a table of
// every (inline, crossline) location, and n traces with distinct line numbers
// claim n * n of them (200 000 traces: 320 GB). Kept in fuzz/corpus/segy_headers.
TEST_CASE("segy: line numbers that cannot form a grid are an error at any trace count", "[io][segy][fuzz]") {
  constexpr std::int32_t n = 200000;
  std::vector<std::int32_t> il(n), xl(n);
  std::iota(il.begin(), il.end(), 0);
  std::iota(xl.begin(), xl.end(), 0);
  auto g = dwsr::io::detail::segy_grid::from(il, xl);
  CHECK_THAT(g.problem, Contains("200000 traces cover 200000 inlines x 200000 crosslines = 40000000000 locations") &&
                            Contains("missing traces, e.g. inline 0, crossline 1"));
  // A duplicate is named first, as in a full-size grid: the earliest trace whose location an earlier one has.
  g = dwsr::io::detail::segy_grid::from({1, 2, 1, 1, 2}, {5, 6, 7, 7, 6});
  CHECK_THAT(g.problem, Contains("traces 3 and 4 both have inline 1, crossline 7"));
  g = dwsr::io::detail::segy_grid::from({1, 1, 2}, {5, 6, 6});
  CHECK_THAT(g.problem, Contains("3 traces cover 2 inlines x 2 crosslines = 4 locations") &&
                            Contains("e.g. inline 2, crossline 5"));
}

TEST_CASE("segy: write errors leave no file behind", "[io][segy]") {
  temp_dir dir;
  const std::vector<float> v(8, 1.0f);
  const dwsr::cube_view<const float> cube(v.data(), {2, 2, 2});
  CHECK_THROWS_AS(write_segy(dir / "a.sgy", cube, 0), dwsr::invalid_input);
  CHECK_THROWS_AS(write_segy(dir / "a.sgy", cube, 4000.5), dwsr::invalid_input);
  CHECK_THROWS_AS(write_segy(dir / "a.sgy", cube, 70000), dwsr::invalid_input);
  const std::vector<float> long_trace(70000, 0.0f);
  CHECK_THROWS_AS(write_segy(dir / "a.sgy", {long_trace.data(), {1, 1, 70000}}, 4000), dwsr::invalid_input);
  CHECK_THROWS_AS(write_segy(dir / "a.sgy", {nullptr, {2, 2, 2}}, 4000), dwsr::invalid_input);
  require_error<dwsr::io_error>([&] { write_segy(dir / "nodir" / "a.sgy", cube, 4000); }, {"nodir"});
  std::filesystem::create_directory(dir / "d.sgy");
  CHECK_THROWS_AS(write_segy(dir / "d.sgy", cube, 4000), dwsr::io_error);
  CHECK(dir.entries() == std::vector<std::string>{"d.sgy"});
}

TEST_CASE("segy: datasets/tiny.sgy is the generator's cube 4x5x64 seed 7", "[io][segy][datasets]") {
  const std::filesystem::path tiny = std::filesystem::path(DWSR_SOURCE_DIR) / "datasets" / "tiny.sgy";
  REQUIRE(std::filesystem::exists(tiny));
  const auto h = read_segy_header(tiny);
  CHECK(h.shape == shape3{4, 5, 64});
  CHECK(h.sample_interval_us == 4000);
  CHECK(h.sorting == segy_sorting::inline_sorted);
  CHECK(h.inlines == std::vector<std::int32_t>{1, 2, 3, 4});
  CHECK(h.crosslines == std::vector<std::int32_t>{1, 2, 3, 4, 5});
  std::vector<float> expected(h.shape.voxels());
  dwsr::io::generate_synthetic(h.shape, 7, expected.data());
  CHECK(read_all(tiny, h) == expected);
  // `dwsr generate --shape 4x5x64 --seed 7 --output datasets/tiny.sgy` remakes it byte for byte.
  temp_dir dir;
  dwsr::io::segy_write_options w;
  w.text = "dwsr synthetic cube 4x5x64 seed 7";
  write_segy(dir / "tiny.sgy", {expected.data(), h.shape}, 4000, w);
  CHECK(read_raw(dir / "tiny.sgy") == read_raw(tiny));
}
