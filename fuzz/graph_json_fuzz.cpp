// Fuzzes graph documents as the tool reads --graph FILE.json: the JSON syntax,
// the document's shape, then the graph's validation against the operator
// catalogue (operator names, parameters, inputs, cycles). Graphs are built,
// never run.
#include <cstddef>
#include <cstdint>

#include "dwsr/error.hpp"
#include "dwsr/graph/graph_json.hpp"
#include "dwsr/operators/catalogue.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const dwsr::fuzz::input_file file(".json");
  static const dwsr::registry& operators = dwsr::operators::catalogue();
  const auto& path = file.write(data, size);
  try {
    const auto g = dwsr::resolve_graph(path.string(), operators);
    (void)g.input_halo();
    (void)g.outputs();
  } catch (const dwsr::error&) {
    // A malformed graph is reported to the user: expected.
  }
  return 0;
}
