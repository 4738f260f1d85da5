#include "dwsr/io/npy.hpp"

#include <catch2/catch.hpp>

#include <complex>
#include <cstdint>
#include <string>
#include <vector>

#include "io/io_test_support.hpp"

using Catch::Matchers::Contains;
using namespace dwsr;
using namespace dwsr::io;
using namespace dwsr::test;

namespace {

/// A .npy file by hand: preamble of `version`, the dictionary text, padding, data.
std::string npy_bytes(int version, const std::string& dict, const std::string& data) {
  const std::size_t len_bytes = version == 1 ? 2 : 4;
  std::string header = dict;
  while ((8 + len_bytes + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(version);
  out += '\0';
  for (std::size_t b = 0; b < len_bytes; ++b) out += static_cast<char>((header.size() >> (8 * b)) & 0xff);
  return out + header + data;
}

/// `n` float32 values 0, 1, 2, ... as bytes.
std::string float_data(std::size_t n) {
  std::string s(n * 4, '\0');
  for (std::size_t i = 0; i < n; ++i) {
    const auto v = static_cast<float>(i);
    std::memcpy(s.data() + 4 * i, &v, 4);
  }
  return s;
}

const std::string f4_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 4), }";

}  // namespace

TEST_CASE("npy round trip for the three dtypes", "[io][npy]") {
  temp_dir dir;
  const shape3 s{3, 4, 5};

  SECTION("float32") {
    std::vector<float> v(s.voxels());
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.25f - 7.0f;
    write_npy(dir / "a.npy", dwsr::cube_view<const float>(v.data(), s));
    const auto h = read_npy_header(dir / "a.npy");
    CHECK(h.type == dtype::float32);
    CHECK(h.dims == std::vector<std::uint64_t>{3, 4, 5});
    CHECK(h.data_offset % 64 == 0);
    const auto back = load_npy<float>(dir / "a.npy");
    CHECK(back.shape == s);
    CHECK(back.data == v);
  }
  SECTION("complex64") {
    std::vector<std::complex<float>> v(s.voxels());
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = {static_cast<float>(i), -static_cast<float>(i) / 3.0f};
    write_npy(dir / "c.npy", dwsr::array_ref{dtype::complex64, v.data(), s});
    CHECK(read_npy_header(dir / "c.npy").type == dtype::complex64);
    const auto back = load_npy<std::complex<float>>(dir / "c.npy");
    CHECK(back.shape == s);
    CHECK(back.data == v);
  }
  SECTION("int64") {
    std::vector<std::int64_t> v(s.voxels());
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = (std::int64_t{1} << 40) - static_cast<std::int64_t>(i * i);
    write_npy(dir / "i.npy", dwsr::cube_view<std::int64_t>(v.data(), s));
    const auto back = load_npy<std::int64_t>(dir / "i.npy");
    CHECK(back.shape == s);
    CHECK(back.data == v);
  }
  CHECK(dir.entries().size() == 1);  // no temporary left behind
}

TEST_CASE("npy reads the reference input written by NumPy, and writes it back byte for byte", "[io][npy]") {
  const std::filesystem::path ref = std::filesystem::path(DWSR_REFERENCE_DIR) / "dasf" / "input.npy";
  REQUIRE(std::filesystem::exists(ref));  // fail, never skip, when the reference is missing
  const auto h = read_npy_header(ref);
  CHECK(h.type == dtype::float32);
  CHECK(h.cube_shape() == shape3{16, 24, 128});
  CHECK(h.data_offset == 128);
  const auto cube = load_npy<float>(ref);
  // Values as NumPy prints them (a[0,0,0], a[3,5,17], a[15,23,127]).
  CHECK(cube.view()(0, 0, 0) == -0.1418408f);
  CHECK(cube.view()(3, 5, 17) == 0.24923973f);
  CHECK(cube.view()(15, 23, 127) == -0.4018926f);

  temp_dir dir;
  write_npy(dir / "copy.npy", cube.view());
  CHECK(read_raw(dir / "copy.npy") == read_raw(ref));  // dwsr's header is NumPy's
}

TEST_CASE("npy accepts format versions 1.0, 2.0 and 3.0 and NumPy's header variants", "[io][npy]") {
  temp_dir dir;
  for (int version : {1, 2, 3}) {
    write_raw(dir / "v.npy", npy_bytes(version, f4_dict, float_data(24)));
    const auto h = read_npy_header(dir / "v.npy");
    CHECK(h.dims == std::vector<std::uint64_t>{2, 3, 4});
    CHECK(h.data_offset == 128);
    const auto c = load_npy<float>(dir / "v.npy");
    CHECK(c.view()(1, 2, 3) == 23.0f);
  }
  SECTION("double quotes, no spaces, no trailing comma, keys in another order") {
    write_raw(dir / "q.npy", npy_bytes(1, R"({"shape":(2,3,4),"fortran_order":False,"descr":"<f4"})", float_data(24)));
    CHECK(read_npy_header(dir / "q.npy").cube_shape() == shape3{2, 3, 4});
  }
  SECTION("1-D and 2-D arrays are cubes 1x1xn and 1xaxb") {
    write_raw(dir / "1.npy", npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (7,), }", float_data(7)));
    CHECK(load_npy<float>(dir / "1.npy").shape == shape3{1, 1, 7});
    write_raw(dir / "2.npy",
              npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 5), }", float_data(15)));
    const auto c = load_npy<float>(dir / "2.npy");
    CHECK(c.shape == shape3{1, 3, 5});
    CHECK(c.view()(0, 2, 4) == 14.0f);
  }
  SECTION("bytes after the data are ignored, as NumPy does") {
    write_raw(dir / "t.npy", npy_bytes(1, f4_dict, float_data(24) + "trailing"));
    CHECK(load_npy<float>(dir / "t.npy").data.back() == 23.0f);
  }
  SECTION("native byte order '=' is little-endian") {
    write_raw(dir / "n.npy",
              npy_bytes(1, "{'descr': '=f4', 'fortran_order': False, 'shape': (2, 3, 4), }", float_data(24)));
    CHECK(read_npy_header(dir / "n.npy").type == dtype::float32);
  }
}

TEST_CASE("npy read errors name the file and the problem", "[io][npy]") {
  temp_dir dir;
  const auto p = dir / "bad.npy";
  const auto name = p.string();

  SECTION("missing file") {
    require_error<io_error>([&] { read_npy_header(dir / "none.npy"); }, {"none.npy", "not found"});
  }
  SECTION("a directory") {
    require_error<io_error>([&] { read_npy_header(dir.path()); }, {dir.path().string(), "directory"});
  }
  SECTION("not an npy file") {
    write_raw(p, "P5\n2 2\n255\nabcdefgh");
    require_error<io_error>([&] { read_npy_header(p); }, {name, "not a .npy file", "magic"});
  }
  SECTION("file shorter than the preamble") {
    write_raw(p, std::string("\x93NUM", 4));
    require_error<io_error>([&] { read_npy_header(p); }, {name, "truncated .npy header"});
  }
  SECTION("header shorter than its declared length") {
    write_raw(p, npy_bytes(1, f4_dict, "").substr(0, 40));
    require_error<io_error>([&] { read_npy_header(p); }, {name, "truncated .npy header", "declares 118 bytes"});
  }
  SECTION("data shorter than the shape says") {
    write_raw(p, npy_bytes(1, f4_dict, float_data(23)));
    require_error<io_error>([&] { read_npy_header(p); }, {name, "truncated .npy data", "96 bytes", "has 92"});
  }
  SECTION("file truncated after the header was read") {
    write_raw(p, npy_bytes(1, f4_dict, float_data(24)));
    const auto h = read_npy_header(p);
    write_raw(p, npy_bytes(1, f4_dict, float_data(10)));
    std::vector<float> dst(24);
    require_error<io_error>([&] { dwsr::io::read_npy_data(p, h, dst.data()); }, {name, "truncated file"});
  }
  SECTION("unsupported version") {
    auto bytes = npy_bytes(1, f4_dict, float_data(24));
    bytes[6] = 4;
    write_raw(p, bytes);
    require_error<io_error>([&] { read_npy_header(p); }, {name, "version 4.0", "1.0, 2.0, 3.0"});
  }
  SECTION("unsupported dtype lists the supported ones") {
    write_raw(p, npy_bytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", std::string(24, '\0')));
    require_error<io_error>([&] { read_npy_header(p); },
                            {name, "unsupported dtype '<f8'", "'<f4'", "'<c8'", "'<i8'", "'<i4'"});
  }
  SECTION("big-endian") {
    write_raw(p, npy_bytes(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3, 4), }", float_data(24)));
    require_error<io_error>([&] { read_npy_header(p); }, {name, "big-endian", "'>f4'"});
  }
  SECTION("Fortran order") {
    write_raw(p, npy_bytes(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3, 4), }", float_data(24)));
    require_error<io_error>([&] { read_npy_header(p); }, {name, "Fortran", "C order"});
  }
  SECTION("more than 3 dimensions") {
    write_raw(p, npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 3, 4), }", float_data(24)));
    require_error<io_error>([&] { read_npy_header(p); }, {name, "4 dimensions", "1, 2 or 3"});
  }
  SECTION("malformed dictionaries") {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"not a dict", "expected '{'"},
        {"{'descr': '<f4', 'fortran_order': False}", "missing key 'shape'"},
        {"{'descr': '<f4', 'shape': (2, 3, 4)}", "missing key 'fortran_order'"},
        {"{'fortran_order': False, 'shape': (2, 3, 4)}", "missing key 'descr'"},
        {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2, 3, 4)}", "'fortran_order' is not True or False"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3, 4)}", "'shape' is not a tuple"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3, 4]}", "'shape' is not a tuple"},
        {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}", "structured dtypes"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 4), 'extra': 1}", "unexpected key 'extra'"},
        {"{'descr': '<f4' 'fortran_order': False, 'shape': (2, 3, 4)}", "expected ',' or '}'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 4)} x", "after '}'"},
    };
    for (const auto& [dict, why] : cases) {
      INFO(dict);
      write_raw(p, npy_bytes(1, dict, float_data(24)));
      require_error<io_error>([&] { read_npy_header(p); }, {name, "malformed .npy header dictionary", why});
    }
  }
  SECTION("load_npy names both dtypes on a mismatch") {
    write_raw(p, npy_bytes(1, f4_dict, float_data(24)));
    require_error<io_error>([&] { load_npy<std::int64_t>(p); }, {name, "float32", "int64"});
  }
}

TEST_CASE("npy writes are atomic and report unwritable paths", "[io][npy]") {
  temp_dir dir;
  std::vector<float> v(24, 1.5f);
  const dwsr::cube_view<const float> cube(v.data(), {2, 3, 4});

  SECTION("missing directory") {
    const auto p = dir / "no-such-dir" / "out.npy";
    require_error<io_error>([&] { write_npy(p, cube); }, {p.string()});
    CHECK(dir.entries().empty());
  }
  SECTION("the target is a directory: nothing is left behind") {
    std::filesystem::create_directory(dir / "d.npy");
    CHECK_THROWS_AS(write_npy(dir / "d.npy", cube), dwsr::io_error);
    CHECK(dir.entries() == std::vector<std::string>{"d.npy"});
    CHECK(std::filesystem::is_empty(dir / "d.npy"));
  }
  SECTION("an existing file is replaced whole") {
    write_raw(dir / "o.npy", "old");
    write_npy(dir / "o.npy", cube);
    CHECK(load_npy<float>(dir / "o.npy").data == v);
    CHECK(dir.entries().size() == 1);
  }
  SECTION("a meta output (no data) is refused before anything is written") {
    CHECK_THROWS_AS(write_npy(dir / "m.npy", dwsr::array_ref{dtype::float32, nullptr, {2, 3, 4}}), dwsr::invalid_input);
    CHECK(dir.entries().empty());
  }
}
