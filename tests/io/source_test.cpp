#include "dwsr/io/source.hpp"

#include <catch2/catch.hpp>

#include <complex>
#include <string>
#include <vector>

#include "io/io_test_support.hpp"

using Catch::Matchers::Contains;
using dwsr::shape3;
using dwsr::io::open_source;
using dwsr::test::require_error;
using dwsr::test::temp_dir;

namespace {

std::vector<float> read(const dwsr::io::cube_source& src, std::size_t threads = 1) {
  std::vector<float> v(src.shape().voxels(), -1.0f);
  src.read(v.data(), threads);
  return v;
}

}  // namespace

TEST_CASE("source: synthetic specs", "[io][source]") {
  SECTION("default seed 1") {
    const auto src = open_source("synthetic:4x5x60");
    CHECK(src->shape() == shape3{4, 5, 60});
    CHECK(src->describe() == "synthetic 4x5x60 seed 1");
    CHECK(src->sample_interval_ms() == 4.0);
    std::vector<float> expected(src->shape().voxels());
    dwsr::io::generate_synthetic({4, 5, 60}, 1, expected.data());
    CHECK(read(*src) == expected);
    CHECK(read(*src, 2) == expected);
  }
  SECTION("explicit seed") {
    const auto src = open_source("synthetic:2x3x8:18446744073709551615");
    CHECK(src->describe() == "synthetic 2x3x8 seed 18446744073709551615");
    CHECK(read(*src) != read(*open_source("synthetic:2x3x8")));
  }
  SECTION("malformed") {
    require_error<dwsr::invalid_input>([] { open_source("synthetic:4x5"); }, {"shape '4x5'"});
    require_error<dwsr::invalid_input>([] { open_source("synthetic:"); }, {"shape ''"});
    require_error<dwsr::invalid_input>([] { open_source("synthetic:0x5x5"); }, {"zero"});
    for (const char* spec : {"synthetic:4x5x6:abc", "synthetic:4x5x6:-1", "synthetic:4x5x6:", "synthetic:4x5x6:1:2",
                             "synthetic:4x5x6:18446744073709551616"}) {
      INFO(spec);
      require_error<dwsr::invalid_input>([&] { open_source(spec); }, {"seed", spec});
    }
  }
}

TEST_CASE("source: files by extension", "[io][source]") {
  temp_dir dir;
  const shape3 s{3, 4, 20};
  std::vector<float> cube(s.voxels());
  dwsr::io::generate_synthetic(s, 5, cube.data());

  SECTION(".npy, float32 only") {
    dwsr::io::write_npy(dir / "c.npy", dwsr::cube_view<const float>(cube.data(), s));
    const auto src = open_source((dir / "c.npy").string());
    CHECK(src->shape() == s);
    CHECK_THAT(src->describe(), Contains("c.npy") && Contains("3x4x20 float32"));
    CHECK_FALSE(src->sample_interval_ms().has_value());
    CHECK(read(*src) == cube);

    std::vector<std::complex<float>> c(s.voxels());
    dwsr::io::write_npy(dir / "z.npy", dwsr::cube_view<const std::complex<float>>(c.data(), s));
    require_error<dwsr::invalid_input>([&] { open_source((dir / "z.npy").string()); },
                                       {"z.npy", "complex64", "float32"});
    dwsr::io::write_npy(dir / "e.npy", dwsr::cube_view<const float>(nullptr, {0, 4, 20}));
    require_error<dwsr::invalid_input>([&] { open_source((dir / "e.npy").string()); }, {"e.npy", "empty"});
  }
  SECTION(".sgy and .segy in any case") {
    for (const char* name : {"c.sgy", "c.SGY", "c.segy", "c.SeGy"}) {
      INFO(name);
      dwsr::io::write_segy(dir / name, {cube.data(), s}, 2000);
      const auto src = open_source((dir / name).string());
      CHECK(src->shape() == s);
      CHECK_THAT(src->describe(), Contains(name) && Contains("IEEE float, inline-sorted, 2 ms"));
      CHECK(src->sample_interval_ms() == 2.0);
      CHECK(read(*src) == cube);
    }
  }
  SECTION("headers are validated when the source is opened") {
    require_error<dwsr::io_error>([&] { open_source((dir / "missing.npy").string()); }, {"missing.npy", "not found"});
    require_error<dwsr::io_error>([&] { open_source((dir / "missing.sgy").string()); }, {"missing.sgy", "not found"});
    dwsr::test::write_raw(dir / "short.sgy", std::string(100, '\0'));
    require_error<dwsr::io_error>([&] { open_source((dir / "short.sgy").string()); }, {"short.sgy", "3600"});
  }
  SECTION("the samples are read by read(), not by open_source()") {
    dwsr::io::write_npy(dir / "c.npy", dwsr::cube_view<const float>(cube.data(), s));
    const auto src = open_source((dir / "c.npy").string());
    std::vector<float> other(s.voxels(), 0.5f);
    dwsr::io::write_npy(dir / "c.npy", dwsr::cube_view<const float>(other.data(), s));
    CHECK(read(*src) == other);
  }
  SECTION("unknown kinds say what is accepted") {
    for (const char* spec : {"cube.txt", "cube", "cube.npz", "Synthetic:4x4x4"}) {
      INFO(spec);
      require_error<dwsr::invalid_input>([&] { open_source(spec); },
                                         {spec, "unknown kind", ".npy", ".sgy/.segy", "synthetic:IxXxT[:SEED]"});
    }
  }
}
