// libFuzzer harness for the PyTorch snapshot pickle reader: any bytes go
// through the pickle parser and the snapshot conversion (start-state rebuild
// included). A user error (dwsr::error) is a correct answer; anything else (a
// crash, a sanitizer report, a hang, an allocation beyond the input's size) is
// a bug.

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "dwsr/error.hpp"
#include "dwsr/sim/torch_snapshot.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Start with the PROTO opcode so that every input takes the pickle path.
  std::string bytes;
  bytes.reserve(size + 1);
  if (size == 0 || data[0] != 0x80) bytes.push_back(static_cast<char>(0x80));
  bytes.append(reinterpret_cast<const char*>(data), size);
  std::istringstream in(bytes);
  try {
    const auto t = dwsr::sim::read_torch_snapshot(in, "fuzz.pickle", std::size_t{0});
    (void)t;
  } catch (const dwsr::error&) {
  }
  return 0;
}
