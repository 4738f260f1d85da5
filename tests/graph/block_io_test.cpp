// Block sources and sinks: for blocks of every class (whole cube, whole
// crosslines, whole samples, single traces, halos on any axis), a block read
// from a .npy file or from memory is the same voxels of the cube, and a sink
// writes the block's interior, nothing else, at its place in the output.

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "dwsr/exec/host_context.hpp"
#include "dwsr/graph/block_io.hpp"
#include "dwsr/graph/chunked.hpp"
#include "dwsr/io/synthetic.hpp"
#include "io/temp_dir.hpp"
#include "operators/operator_test_support.hpp"

using namespace dwsr;

namespace {

bool inside(const block& b, std::uint64_t i, std::uint64_t x, std::uint64_t t) {
  return b.begin[0] <= i && i < b.end[0] && b.begin[1] <= x && x < b.end[1] && b.begin[2] <= t && t < b.end[2];
}

/// The cube with b's interior from `cube` and `fill` everywhere else.
std::vector<float> only_interior(const std::vector<float>& cube, shape3 s, const block& b, float fill) {
  std::vector<float> out(cube.size(), fill);
  for (std::uint64_t i = 0; i < s.inlines; ++i)
    for (std::uint64_t x = 0; x < s.crosslines; ++x)
      for (std::uint64_t t = 0; t < s.samples; ++t) {
        const auto k = (i * s.crosslines + x) * s.samples + t;
        if (inside(b, i, x, t)) out[k] = cube[k];
      }
  return out;
}

struct blocking {
  shape3 chunk;
  std::array<std::uint64_t, 3> halo;
};

// Chunks that span the whole cube, whole crosslines, whole samples, single
// traces and single voxels, with and without halos on each axis.
const std::vector<blocking> blockings = {
    {{5, 6, 7}, {0, 0, 0}}, {{2, 6, 7}, {0, 0, 0}}, {{2, 6, 7}, {1, 0, 0}}, {{2, 6, 7}, {0, 2, 0}},
    {{2, 4, 7}, {0, 0, 0}}, {{3, 2, 7}, {1, 1, 0}}, {{1, 1, 7}, {0, 0, 0}}, {{1, 1, 7}, {1, 1, 0}},
    {{5, 6, 3}, {0, 0, 0}}, {{2, 6, 4}, {0, 0, 2}}, {{2, 3, 3}, {1, 1, 1}}, {{1, 1, 1}, {0, 0, 0}},
};

}  // namespace

TEST_CASE("block sources: every block's extended window is the cube's voxels, from memory and from .npy",
          "[graph][block_io]") {
  test::temp_dir dir;
  const shape3 s{5, 6, 7};
  std::vector<float> cube(s.voxels());
  io::generate_synthetic(s, 3, cube.data());
  io::write_npy(dir / "c.npy", cube_view<const float>(cube.data(), s));
  const memory_block_source memory(cube_view<const float>(cube.data(), s));
  const npy_block_source file(dir / "c.npy");
  for (const auto& [chunk, halo] : blockings) {
    const chunking c(s, chunk, halo);
    for (std::uint64_t k = 0; k < c.count(); ++k) {
      const auto b = c.at(k);
      INFO("chunk " << to_string(chunk) << " halo " << halo[0] << "," << halo[1] << "," << halo[2] << " block " << k);
      const auto expected = test::sub_cube(cube, s, b.ext_begin, b.ext_end);
      std::vector<float> got(b.extended().voxels());
      memory.read(b, got.data());
      CHECK(got == expected);
      std::fill(got.begin(), got.end(), 0.0f);
      file.read(b, got.data());
      CHECK(got == expected);
    }
  }
}

TEST_CASE("a large window is read by all of a worker's threads: the same voxels, from .npy and synthetic",
          "[graph][block_io]") {
  test::temp_dir dir;
  const shape3 s{12, 16, 16384};  // 1 MiB an inline: the blocks' 9-inline windows pass parallel_read_bytes
  std::vector<float> cube(s.voxels());
  io::generate_synthetic(s, 5, cube.data());
  io::write_npy(dir / "c.npy", cube_view<const float>(cube.data(), s));
  const npy_block_source file(dir / "c.npy");
  const auto synthetic = open_blocks("synthetic:12x16x16384:5");
  const chunking c(s, {6, 16, 16384}, {3, 0, 0});
  event_bus bus;
  for (std::size_t threads : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{4}})
    for (std::uint64_t k = 0; k < c.count(); ++k) {
      host_context ctx(bus, {.threads = threads});
      const auto b = c.at(k);
      INFO(threads << " threads, block " << k);
      REQUIRE(b.extended().voxels() * sizeof(float) >= detail::parallel_read_bytes);
      const auto expected = test::sub_cube(cube, s, b.ext_begin, b.ext_end);
      for (const block_source* source :
           {static_cast<const block_source*>(&file), static_cast<const block_source*>(synthetic.get())}) {
        std::vector<float> got(b.extended().voxels(), -1.0f);
        detail::read_window(ctx, *source, b, got.data());
        const auto differ = std::mismatch(got.begin(), got.end(), expected.begin()).first - got.begin();
        CHECK(std::uint64_t(differ) == got.size());  // the first voxel that differs, if any
      }
    }
}

TEST_CASE("block sinks: each block writes its interior alone, at its place, to memory and to .npy",
          "[graph][block_io]") {
  test::temp_dir dir;
  const shape3 s{5, 6, 7};
  std::vector<float> cube(s.voxels());
  io::generate_synthetic(s, 4, cube.data());
  for (const auto& [chunk, halo] : blockings) {
    const chunking c(s, chunk, halo);
    for (std::uint64_t k = 0; k < c.count(); ++k) {
      const auto b = c.at(k);
      INFO("chunk " << to_string(chunk) << " halo " << halo[0] << "," << halo[1] << "," << halo[2] << " block " << k);
      auto data = test::sub_cube(cube, s, b.ext_begin, b.ext_end);
      const array_ref ref{dtype::float32, data.data(), b.extended()};

      std::vector<float> memory_out(s.voxels(), -1.0f);
      memory_block_sink memory({array_ref{dtype::float32, memory_out.data(), s}});
      memory.write(0, b, ref);
      CHECK(memory_out == only_interior(cube, s, b, -1.0f));

      npy_block_sink file({{dir / "o.npy", dtype::float32}}, s);
      file.write(0, b, ref);
      file.commit();
      CHECK(io::load_npy<float>(dir / "o.npy").data == only_interior(cube, s, b, 0.0f));
    }
  }
}
