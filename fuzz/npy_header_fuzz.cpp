// Fuzzes the .npy reader as the tool opens an input: the preamble, the header
// dictionary, the dtype and shape checks, then the data the header announces
// (which the header check bounds by the file's size).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "dwsr/error.hpp"
#include "dwsr/io/npy.hpp"
#include "dwsr/io/source.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const dwsr::fuzz::input_file file(".npy");
  const auto& path = file.write(data, size);
  try {
    const auto header = dwsr::io::read_npy_header(path);
    std::vector<unsigned char> bytes(header.data_bytes());
    dwsr::io::read_npy_data(path, header, bytes.data());
    const auto source = dwsr::io::open_source(path.string());
    const auto shape = source->shape();
    std::vector<float> cube(shape.voxels());
    source->read(cube.data(), 1);
    source->read_window({0, 0, 0}, {1, 1, shape.samples}, cube.data());
  } catch (const dwsr::error&) {
    // A malformed file is reported to the user: expected.
  }
  return 0;
}
