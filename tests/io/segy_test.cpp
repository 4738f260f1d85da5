#include "dwsr/io/segy.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "dwsr/core/random.hpp"
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
  bool order_constant = false;  // write the rev2 byte-order constant at bytes 3297-3300
  int samples = 3;
  int bin_dt = 4000;
  int trace_dt = 4000;
  int ext_headers = 0;
  struct trace {
    std::int32_t il, xl;
    std::vector<std::uint64_t> words;  // raw sample words (IEEE or IBM bits, integers)
  };
  std::vector<trace> traces;

  /// Bytes per sample of `format` as SEG-Y rev2 defines it (4 for codes it does not assign).
  int sample_size() const {
    switch (format) {
      case 3:
      case 11: return 2;
      case 6:
      case 9:
      case 12: return 8;
      case 7:
      case 15: return 3;
      case 8:
      case 16: return 1;
      default: return 4;
    }
  }
  void put(std::string& b, std::size_t pos1, std::uint64_t v, int size) const {
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
    std::string b(3600 + 3200 * static_cast<std::size_t>(std::max(ext_headers, 0)), '\0');
    std::fill(b.begin(), b.begin() + 3200, '\x40');  // EBCDIC spaces
    put(b, 3217, static_cast<std::uint32_t>(bin_dt), 2);
    put(b, 3221, static_cast<std::uint32_t>(samples), 2);
    put(b, 3225, static_cast<std::uint32_t>(format), 2);
    if (order_constant) put(b, 3297, 0x01020304u, 4);
    put(b, 3505, static_cast<std::uint32_t>(ext_headers), 2);
    const auto size = static_cast<std::size_t>(sample_size());
    for (const auto& t : traces) {
      std::string h(240 + size * t.words.size(), '\0');
      put(h, 189, static_cast<std::uint32_t>(t.il), 4);
      put(h, 193, static_cast<std::uint32_t>(t.xl), 4);
      put(h, 115, static_cast<std::uint32_t>(samples), 2);
      put(h, 117, static_cast<std::uint32_t>(trace_dt), 2);
      for (std::size_t i = 0; i < t.words.size(); ++i) put(h, 241 + size * i, t.words[i], sample_size());
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

namespace {

/// One raw sample word and the float32 segyio's reader gives for it (compared bit for bit).
struct sample_case {
  std::uint64_t word;
  std::uint32_t float_bits;
};
std::uint32_t bits(float f) { return std::bit_cast<std::uint32_t>(f); }
std::uint64_t bits(double d) { return std::bit_cast<std::uint64_t>(d); }

/// Writes one trace of `words` in `format` and byte order `little`, reads it
/// whole and by windows, and returns the float bits.
std::vector<std::uint32_t> read_words(const std::filesystem::path& p, int format, bool little,
                                      const std::vector<std::uint64_t>& words) {
  segy_builder b;
  b.format = format;
  b.little = little;
  b.samples = static_cast<int>(words.size());
  b.traces.push_back({1, 1, words});
  write_raw(p, b.bytes());
  const auto h = read_segy_header(p);
  REQUIRE(int(h.format) == format);
  REQUIRE(h.little_endian == little);
  const auto whole = read_all(p, h);
  std::vector<std::uint32_t> out;
  for (float v : whole) out.push_back(bits(v));
  // A window from the second sample on decodes the same words.
  const dwsr::io::detail::positioned_file file(p);
  std::vector<float> tail(words.size() - 1);
  read_segy_samples(file, h, 0, 1, tail.size(), tail.data());
  CHECK(std::memcmp(tail.data(), whole.data() + 1, tail.size() * sizeof(float)) == 0);
  return out;
}

}  // namespace

TEST_CASE("segy: every format segyio reads converts to float32 as segyio does", "[io][segy][formats]") {
  temp_dir dir;
  constexpr auto i64max = std::numeric_limits<std::int64_t>::max();
  constexpr auto i64min = std::numeric_limits<std::int64_t>::min();
  // Integers are cast to float (round to nearest even), never scaled.
  const std::vector<std::pair<int, std::vector<sample_case>>> formats = {
      {8, {{0x00, bits(0.0f)}, {0x05, bits(5.0f)}, {0x7f, bits(127.0f)}, {0x80, bits(-128.0f)}, {0xff, bits(-1.0f)}}},
      {16, {{0x00, bits(0.0f)}, {0x01, bits(1.0f)}, {0x80, bits(128.0f)}, {0xff, bits(255.0f)}}},
      {3, {{0x04d2, bits(1234.0f)}, {0x7fff, bits(32767.0f)}, {0x8000, bits(-32768.0f)}, {0xffff, bits(-1.0f)}}},
      {11, {{0x04d2, bits(1234.0f)}, {0x8000, bits(32768.0f)}, {0xffff, bits(65535.0f)}}},
      {2,
       {{0x7fffffff, bits(2147483648.0f)},
        {0x80000000, bits(-2147483648.0f)},
        {0xffffffff, bits(-1.0f)},
        {16777217, bits(16777216.0f)},    // halfway: to even
        {16777219, bits(16777220.0f)}}},  // halfway: to even, upwards
      {10, {{0xffffffff, bits(4294967296.0f)}, {0x80000000, bits(2147483648.0f)}, {16777217, bits(16777216.0f)}}},
      {9,
       {{std::uint64_t(i64max), bits(9223372036854775808.0f)},
        {std::uint64_t(i64min), bits(-9223372036854775808.0f)},
        {~std::uint64_t{0}, bits(-1.0f)},
        {(std::uint64_t{1} << 53) + 1, bits(9007199254740992.0f)}}},
      {12,
       {{~std::uint64_t{0}, bits(18446744073709551616.0f)},
        {0x8000000000000001u, bits(9223372036854775808.0f)},
        {0x8000008000000000u, bits(9223372036854775808.0f)},    // halfway between floats 2^63 and 2^63 + 2^40: to even
        {0x8000008000000001u, bits(9223373136366403584.0f)}}},  // just past halfway: up (no double rounding)
      {6,
       {{bits(1.0), bits(1.0f)},
        {bits(0.1), bits(0.1f)},
        {bits(-0.0), bits(-0.0f)},
        {bits(1e300), bits(std::numeric_limits<float>::infinity())},
        {bits(-1e-300), bits(-0.0f)},
        {bits(16777217.0), bits(16777216.0f)},
        {0x7ff8000000000000u, 0x7fc00000u}}},  // quiet NaN
      {5,
       {{bits(1.5f), bits(1.5f)},
        {0x80000000u, 0x80000000u},    // -0
        {0x00000001u, 0x00000001u},    // smallest denormal
        {0xff800000u, 0xff800000u},    // -inf
        {0x7fa00001u, 0x7fa00001u}}},  // signalling NaN payload kept
      {1,
       {{0x41100000u, bits(1.0f)},
        {0xC276A000u, bits(-118.625f)},
        {0x40280000u, bits(0.15625f)},
        {0x433E8000u, bits(1000.0f)},
        {0x00000000u, bits(0.0f)},
        {0x80000000u, bits(0.0f)},   // IBM -0 gives +0, as in segyio
        {0x60ffffffu, 0x7f7fffffu},  // largest IBM below 2^128: FLT_MAX
        {0x61100000u, 0x7f800000u},  // 2^128: inf
        {0x611fffffu, 0x7ffffff8u},  // segyio's bits (a NaN)
        {0x61200000u, 0x7fffffffu},  // past segyio's largest: NaN
        {0xffffffffu, 0xffffffffu},  // ... with the sign
        {0x21200000u, 0x00000000u},  // 2^-127 and below: +0
        {0x213fffffu, 0x007ffffcu},  // segyio's denormal bits
        {0x211fffffu, 0x00000000u},
        {0x41000000u, bits(0.0f)},  // unnormalised zero (segyio: 0.5)
        {0x41080000u, bits(0.5f)},  // unnormalised 0.5 (segyio: 0.75)
        {0x42010000u, bits(1.0f)},  // two leading zero digits
        {0xC0000001u, bits(-0x1p-24f)}}}};
  for (const bool little : {false, true})
    for (const auto& [format, cases] : formats) {
      INFO("format " << format << (little ? " little-endian" : " big-endian"));
      std::vector<std::uint64_t> words;
      std::vector<std::uint32_t> expected;
      for (const auto& c : cases) words.push_back(c.word), expected.push_back(c.float_bits);
      CHECK(read_words(dir / "f.sgy", format, little, words) == expected);
    }
}

TEST_CASE("segy: IBM floats that fit a normal float are exact", "[io][segy][formats]") {
  dwsr::splitmix64 rng{2024};
  for (int k = 0; k < 200000; ++k) {
    const auto sign = static_cast<std::uint32_t>(rng.below(2)) << 31;
    const auto exponent = static_cast<std::uint32_t>(33 + rng.below(64));  // 16^-31 .. 16^32
    const auto mantissa = static_cast<std::uint32_t>(0x100000 + rng.below(0xf00000));
    const std::uint32_t word = sign | exponent << 24 | mantissa;
    const double value = std::ldexp(double(mantissa), 4 * (int(exponent) - 64) - 24) * (sign ? -1 : 1);
    if (std::abs(value) < std::numeric_limits<float>::min()) continue;  // denormal: segyio's own bits, above
    INFO("IBM word " << word);
    REQUIRE(dwsr::io::detail::ibm_to_float(word) == static_cast<float>(value));
  }
}

TEST_CASE("segy: long traces of narrow and wide samples, read whole and by windows", "[io][segy][formats]") {
  temp_dir dir;
  const int samples = 3000;  // 24 kB of 8-byte samples: several stack-buffer runs per read
  for (const int format : {12, 6, 3, 16})
    for (const bool little : {false, true}) {
      INFO("format " << format << (little ? " little-endian" : " big-endian"));
      segy_builder b;
      b.format = format;
      b.little = little;
      b.samples = samples;
      std::vector<float> expected;
      for (int il = 1; il <= 2; ++il) {
        segy_builder::trace t{il, 1, {}};
        for (int i = 0; i < samples; ++i) {
          const int v = (il * 7 + i) % 251;
          t.words.push_back(format == 6 ? bits(double(v)) : std::uint64_t(v));
          expected.push_back(float(v));
        }
        b.traces.push_back(t);
      }
      const auto p = dir / "long.sgy";
      write_raw(p, b.bytes());
      const auto h = read_segy_header(p);
      CHECK(h.shape == shape3{2, 1, 3000});
      CHECK(read_all(p, h) == expected);
      const dwsr::io::detail::positioned_file file(p);
      std::vector<float> window(2500);
      read_segy_samples(file, h, 1, 333, window.size(), window.data());
      CHECK(std::equal(window.begin(), window.end(), expected.begin() + samples + 333));
    }
}

TEST_CASE("segy: byte order from the rev2 byte-order constant", "[io][segy]") {
  temp_dir dir;
  for (const bool little : {false, true}) {
    segy_builder b;
    b.little = little;
    b.order_constant = true;
    b.format = 3;
    b.samples = 2;
    b.traces.push_back({1, 1, {0x0102, 0xfffe}});
    write_raw(dir / "o.sgy", b.bytes());
    const auto h = read_segy_header(dir / "o.sgy");
    CHECK(h.little_endian == little);
    CHECK(read_all(dir / "o.sgy", h) == std::vector<float>{258.0f, -2.0f});
  }
}

TEST_CASE("segy: a negative sample interval is refused where the interval is taken from", "[io][segy]") {
  // Regression: -2000 us used to be read unsigned, as 63.536 ms.
  temp_dir dir;
  const auto p = dir / "dt.sgy";
  const auto name = p.string();
  for (const bool little : {false, true}) {
    segy_builder b;
    b.little = little;
    b.add(1, 1, {1, 2, 3});
    b.bin_dt = -2000;
    b.trace_dt = 4000;
    write_raw(p, b.bytes());
    require_error<dwsr::io_error>([&] { read_segy_header(p); },
                                  {name, "negative sample interval -2000 us", "bytes 3217-3218", "63536 us"});
    b.bin_dt = 0;
    b.trace_dt = -25000;
    write_raw(p, b.bytes());
    require_error<dwsr::io_error>([&] { read_segy_header(p); },
                                  {name, "negative sample interval -25000 us", "trace header (bytes 117-118)"});
    b.bin_dt = 2000;  // the binary header's interval is used; the trace header's is not consulted
    write_raw(p, b.bytes());
    CHECK(read_segy_header(p).sample_interval_us == 2000);
    b.bin_dt = 32767;
    write_raw(p, b.bytes());
    CHECK(read_segy_header(p).sample_interval_us == 32767);
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
  SECTION("formats segyio does not read are refused by name, in either byte order") {
    const std::vector<std::pair<int, std::string>> refused = {
        {4, "format 4 (4-byte fixed-point with gain) is not supported"},
        {7, "format 7 (3-byte integer) is not supported"},
        {15, "format 15 (3-byte unsigned integer) is not supported"},
        {13, "format 13 (unknown) is not supported"},
        {0, "format 0 (not set) is not supported"}};
    for (const bool little : {false, true})
      for (const auto& [code, message] : refused) {
        b.format = code;
        b.little = little;
        b.order_constant = code == 13 || code == 0;  // otherwise no byte order has these codes
        write_raw(p, b.bytes());
        require_error<dwsr::io_error>([&] { read_segy_header(p); }, {name, message, "bytes 3225-3226"});
      }
  }
  SECTION("a format code that no byte order explains") {
    b.format = 0x0d0e;
    write_raw(p, b.bytes());
    require_error<dwsr::io_error>([&] { read_segy_header(p); },
                                  {name, "no SEG-Y sample format code in either byte order", "3342", "3597"});
  }
  SECTION("a variable count of extended textual headers") {
    b.ext_headers = -1;
    write_raw(p, b.bytes());
    require_error<dwsr::io_error>([&] { read_segy_header(p); }, {name, "bytes 3505-3506", "(-1)"});
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
