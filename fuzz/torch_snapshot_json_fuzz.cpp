// Fuzzes the JSON export of PyTorch memory snapshots: the streamed JSON
// syntax, the device_traces structure and each entry's action, addr and size.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "dwsr/error.hpp"
#include "dwsr/sim/torch_snapshot.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    (void)dwsr::sim::read_torch_snapshot(in, "fuzz.json");
  } catch (const dwsr::error&) {
    // A malformed snapshot is reported to the user: expected.
  }
  return 0;
}
