// Fuzzes the SEG-Y reader as the tool opens an input: the binary header
// (format code, byte order, sample count, extended textual headers), every
// trace header's line numbers and the geometry they form, then the samples,
// whole and as a window (their count is bounded by the file's size).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "dwsr/error.hpp"
#include "dwsr/io/segy.hpp"
#include "dwsr/io/source.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const dwsr::fuzz::input_file file(".sgy");
  const auto& path = file.write(data, size);
  try {
    const auto source = dwsr::io::open_source(path.string());
    const auto shape = source->shape();
    std::vector<float> cube(shape.voxels());
    source->read(cube.data(), 1);
    source->read_window({0, 0, 0}, {1, 1, shape.samples}, cube.data());
    const auto last = shape.as_array();
    source->read_window({last[0] - 1, last[1] - 1, 0}, last, cube.data());
  } catch (const dwsr::error&) {
    // A malformed file is reported to the user: expected.
  }
  return 0;
}
