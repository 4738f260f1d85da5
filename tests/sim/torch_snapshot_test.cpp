#include <catch2/catch.hpp>

#include <sstream>

#include "dwsr/sim/replay.hpp"
#include "dwsr/sim/torch_snapshot.hpp"

using namespace dwsr;
using namespace dwsr::sim;

namespace {
constexpr std::uint64_t MiB = 1 << 20;
torch_trace read(const std::string& json, std::optional<std::size_t> gpu = {}) {
  std::istringstream in(json);
  return read_torch_snapshot(in, "snap.json", gpu);
}
std::string entry(const char* action, std::uint64_t addr, std::uint64_t size) {
  return std::string("{\"action\":\"") + action + "\",\"addr\":" + std::to_string(addr) +
         ",\"size\":" + std::to_string(size) + ",\"stream\":0,\"time_us\":1}";
}
}  // namespace

TEST_CASE("a snapshot's device_traces become alloc and free events; frames and other keys are skipped") {
  const std::string json =
      "{\"segments\":[{\"address\":1,\"blocks\":[{\"size\":5}]}],\"device_traces\":[[" +
      entry("segment_alloc", 1000, 20 * MiB) + "," +
      "{\"action\":\"alloc\",\"addr\":1000,\"size\":1048577,\"stream\":0,\"frames\":[{\"filename\":\"x.py\","
      "\"line\":3,\"size\":9}]}," +
      entry("free_requested", 1000, 1048577) + "," + entry("free_completed", 1000, 1048577) + "," +
      entry("alloc", 1000, 512) + "," + entry("segment_free", 1000, 20 * MiB) + "]],\"allocator_settings\":{}}";
  const auto t = read(json);
  REQUIRE(t.events.size() == 3);
  CHECK(t.events[0] == event{0, action::alloc, device::cuda, buffer_role::temporary, 0, 1, 1048577});
  CHECK(t.events[1] == event{1, action::free, device::cuda, buffer_role::temporary, 0, 1, 1048577});
  CHECK(t.events[2].buffer == 2);  // an address reused after its free is a new buffer
  CHECK(t.entries == 6);
  CHECK(t.recorded_peak_reserved == 20 * MiB);
  CHECK(t.recorded_reserved_complete);
}

TEST_CASE("a PyTorch trace replays through the caching model: the worked example") {
  const std::string json = "[[" + entry("alloc", 0, 100 * MiB) + "," + entry("free_completed", 0, 100 * MiB) + "," +
                           entry("alloc", 0, 50 * MiB) + "," + entry("alloc", 200 * MiB, 60 * MiB) + "]]";
  const auto t = read(json);
  const std::vector<std::string> specs{"torch_cuda_caching"};
  const auto r = replay_events(t.events, specs);
  CHECK(r[0].devices[0].dev == device::cuda);
  CHECK(r[0].devices[0].stats.allocated == 110 * MiB);
  CHECK(r[0].devices[0].stats.peak_reserved == 160 * MiB);
}

TEST_CASE("snapshot errors name the entry and the fix") {
  auto fails = [](const std::string& json, const std::string& what) {
    CHECK_THROWS_AS(read(json), invalid_input);
    CHECK_THROWS_WITH(read(json), Catch::Contains(what));
  };
  fails("[[" + entry("free_completed", 64, 10) + "]]", "device_traces[0][0]: 'free_completed' of address 64");
  fails("[[" + entry("alloc", 64, 10) + "," + entry("explode", 64, 10) + "]]", "device_traces[0][1]: unknown action");
  fails("[[{\"action\":\"alloc\",\"size\":5}]]", "without 'addr'");
  fails("[[{\"action\":\"alloc\",\"addr\":-1,\"size\":5}]]", "negative");
  fails("{\"segments\":[]}", "no 'device_traces'");
  fails("[[]]", "empty");
  fails("[[" + entry("alloc", 0, 1) + "],[" + entry("alloc", 0, 1) + "]]", "GPUs 0, 1; choose one");
  fails("{\"device_traces\": [[{\"action\": ", "not a JSON document");
  // A crash of the fuzz harness (fuzz/corpus/torch_snapshot_json/crash-reserved-overflow.json):
  // the reserved total overflowed a signed 64-bit integer (undefined behaviour).
  fails(
      "[[" + entry("segment_alloc", 0, 9223372036854775807u) + "," + entry("segment_alloc", 1, 9223372036854775807u) +
          "]]",
      "device_traces[0][1]: 'segment_alloc' of 9223372036854775807 bytes takes the reserved total out of 64-bit range");
  fails("[[" + entry("segment_map", 0, 18446744073709551615u) + "]]", "out of 64-bit range");
  fails("[[" + entry("segment_free", 0, 9223372036854775807u) + "," + entry("segment_unmap", 0, 2) + "]]",
        "device_traces[0][1]: 'segment_unmap' of 2 bytes takes the reserved total out of 64-bit range");
  CHECK(read("[[" + entry("alloc", 0, 1) + "],[" + entry("alloc", 0, 2) + "]]", 1).events[0].bytes == 2);
  CHECK_THROWS_WITH(read("[[]]", 3), Catch::Contains("GPU 3 is not in the trace"));
}
