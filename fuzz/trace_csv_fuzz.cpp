// Fuzzes dwsr's CSV traces (docs/trace-format.md): the header, every line's
// fields and the alloc/free consistency checks.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "dwsr/error.hpp"
#include "dwsr/sim/trace_csv.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    (void)dwsr::sim::read_trace_csv(in, "fuzz.csv");
  } catch (const dwsr::error&) {
    // A malformed trace is reported to the user: expected.
  }
  return 0;
}
