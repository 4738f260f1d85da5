#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "dwsr/sim/replay.hpp"
#include "dwsr/sim/torch_snapshot.hpp"
#include "dwsr/sim/torch_what_if.hpp"
#include "sim/torch_snapshot_files.hpp"

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
torch_trace snapshot(const std::string& file) { return read_torch_snapshot(test::torch_snapshots() / file); }
bool same_trace(const torch_trace& a, const torch_trace& b) {
  return a.events == b.events && a.start_events == b.start_events && a.releases == b.releases &&
         a.recorded_peak_reserved == b.recorded_peak_reserved && a.recorded_oom_event == b.recorded_oom_event &&
         a.recorded_capacity == b.recorded_capacity && a.notes == b.notes &&
         a.start.has_value() == b.start.has_value() && (!a.start || a.start->segments == b.start->segments);
}
constexpr std::uint64_t S1 = 0x10000000, S2 = 0x20000000, S4 = 0x40000000;
}  // namespace

TEST_CASE("a snapshot's device_traces become alloc and free events, frames and other keys are skipped") {
  const std::string json =
      "{\"segments\":[],\"device_traces\":[[" + entry("segment_alloc", 1000, 20 * MiB) + "," +
      "{\"action\":\"alloc\",\"addr\":1000,\"size\":1048577,\"stream\":0,\"frames\":[{\"filename\":\"x.py\","
      "\"line\":3,\"size\":9}]}," +
      entry("free_requested", 1000, 1048577) + "," + entry("free_completed", 1000, 1048577) + "," +
      entry("alloc", 1000, 512) + "]],\"allocator_settings\":{}}";
  const auto t = read(json);
  REQUIRE(t.events.size() == 3);
  CHECK(t.events[0] == event{0, action::alloc, device::cuda, buffer_role::temporary, 0, 1, 1048577});
  CHECK(t.events[1] == event{1, action::free, device::cuda, buffer_role::temporary, 0, 1, 1048577});
  CHECK(t.events[2].buffer == 2);  // an address reused after its free is a new buffer
  CHECK(t.entries == 5);
  CHECK(t.recorded_peak_reserved == 20 * MiB);
  CHECK(t.recorded_reserved_complete);
  CHECK(t.start_events == 0);
  REQUIRE(t.start);
  CHECK(t.start->segments.empty());  // recorded from the start: nothing to rebuild
  CHECK(t.notes.empty());
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

TEST_CASE("pickle protocols 2 and 4 and the JSON export read to the same trace") {
  for (const char* name : {"late_start", "what_if", "streams"}) {
    INFO(name);
    const auto json = snapshot(std::string(name) + ".json");
    CHECK(same_trace(snapshot(std::string(name) + ".p2.pickle"), json));
    CHECK(same_trace(snapshot(std::string(name) + ".p4.pickle"), json));
  }
}

TEST_CASE("a recording that began mid-run starts from exactly the snapshot's segments and blocks") {
  const auto t = snapshot("late_start.p4.pickle");
  // Start blocks by address: the 4 MiB block live throughout, the 3 MiB one freed
  // first, the small 1000-byte one (512-rounded to 1024), and a 19.5 MiB one whose
  // 0.5 MiB rest was too small to split off: it held its whole 20 MiB segment.
  REQUIRE(t.start);
  const std::vector<torch_start_segment> expected{
      {S1, 20 * MiB, false, {{1, S1, 4 * MiB, 4 * MiB}, {2, S1 + 4 * MiB, 3 * MiB, 3 * MiB}}},
      {S2, 2 * MiB, true, {{3, S2, 1024, 1000}}},
      {S4, 20 * MiB, false, {{4, S4, 20 * MiB, 19 * MiB + 512 * 1024}}}};
  CHECK(t.start->segments == expected);
  CHECK(t.start->reserved() == 42 * MiB);
  CHECK(t.start_events == 4);
  for (std::uint64_t i = 0; i < 4; ++i) CHECK(t.events[i].act == action::alloc);
  CHECK(t.events[4] == event{4, action::free, device::cuda, buffer_role::temporary, 0, 2, 3 * MiB});

  // The model holds exactly those blocks after the start events.
  torch_cuda_caching_model m;
  m.adopt(*t.start);
  CHECK(m.reserved() == 42 * MiB);
  for (std::uint64_t i = 0; i < 4; ++i) m.on_event(t.events[i]);
  m.check();
  using info = torch_cuda_caching_model::block_info;
  const std::vector<info> blocks{{S1, 4 * MiB, 4 * MiB, true, true, false, false, true},
                                 {S1 + 4 * MiB, 3 * MiB, 3 * MiB, true, true, false, false, false},
                                 {S1 + 7 * MiB, 13 * MiB, 0, false, true, false, false, false},
                                 {S2, 1024, 1000, true, true, true, false, true},
                                 {S2 + 1024, 2 * MiB - 1024, 0, false, true, true, false, false},
                                 {S4, 20 * MiB, 19 * MiB + 512 * 1024, true, true, false, false, true}};
  const auto got = m.blocks();
  REQUIRE(got.size() == blocks.size());
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    INFO("block " << i);
    CHECK(got[i].addr == blocks[i].addr);
    CHECK(got[i].size == blocks[i].size);
    CHECK(got[i].requested == blocks[i].requested);
    CHECK(got[i].allocated == blocks[i].allocated);
    CHECK(got[i].small == blocks[i].small);
    CHECK(got[i].segment_start == blocks[i].segment_start);
  }
  CHECK(m.allocated() == 27 * MiB + 1024);
}

TEST_CASE("an oom entry is the failing allocation, the capacity is reserved there plus device_free") {
  const auto t = snapshot("late_start.p2.pickle");
  // Reserved: 42 MiB at the start, 82 MiB with the 40 MiB segment, 20 MiB after
  // the release of three segments; device_free 70 MiB: capacity 90 MiB.
  CHECK(t.recorded_peak_reserved == 82 * MiB);
  CHECK(t.recorded_oom_event == 10u);
  CHECK(t.recorded_oom_bytes == 100 * MiB);
  CHECK(t.recorded_capacity == 90 * MiB);
  CHECK(t.releases == std::vector<std::uint64_t>{10});  // the run of three segment_free entries
  REQUIRE(t.events.size() == 12);
  CHECK(t.events[10] == event{10, action::alloc, device::cuda, buffer_role::temporary, 0, 7, 100 * MiB});

  replay_options options;
  options.capacity = t.recorded_capacity;
  const std::vector<std::string> specs{"torch_cuda_caching"};
  const auto r = replay_torch_trace(t, specs, options)[0].devices[0];
  CHECK(r.oom_event == 10u);                 // where PyTorch raised
  CHECK(r.stats.peak_reserved == 82 * MiB);  // PyTorch's own peak
  CHECK(r.peak_reserved_event == 8);
  CHECK(r.stats.reserved == 20 * MiB);  // the release left one segment, as in the snapshot's segments
  CHECK(r.stats.allocated == 12 * MiB);
  CHECK(r.stats.segments == 1);
  // Without the release the cached segments stay: 82 MiB held when the OOM is met.
  const auto no_release = replay_events(t.events, specs, options)[0].devices[0];
  CHECK(no_release.oom_event == 10u);
}

TEST_CASE("what a snapshot holds that the replay does not model is counted by name") {
  const auto t = snapshot("streams.json");
  REQUIRE(t.notes.size() == 3);
  CHECK(t.notes[0].what.find("streams other than the first") != std::string::npos);
  CHECK(t.notes[0].count == 1);
  CHECK(t.notes[1].what.find("frees completed after other work") != std::string::npos);
  CHECK(t.notes[1].count == 1);
  CHECK(t.notes[2].what.find("private pools") != std::string::npos);
  CHECK(t.notes[2].count == 1);
}

TEST_CASE("without `segments`, blocks live at the start are allocated first, by address") {
  const auto t = read("[[" + entry("free", 4096, 10) + "," + entry("free", 64, 7) + "]]");  // the older action
  REQUIRE(t.events.size() == 4);
  CHECK(t.start_events == 2);
  CHECK(t.events[0] == event{0, action::alloc, device::cuda, buffer_role::temporary, 0, 1, 7});
  CHECK(t.events[1] == event{1, action::alloc, device::cuda, buffer_role::temporary, 0, 2, 10});
  CHECK(t.events[2].buffer == 2);
  CHECK(t.events[3].buffer == 1);
  CHECK_FALSE(t.start);
  CHECK_FALSE(t.recorded_reserved_complete);
  REQUIRE(t.notes.size() == 1);
  CHECK(t.notes[0].count == 2);
}

TEST_CASE("snapshot errors name the entry and the fix") {
  auto fails = [](const std::string& json, const std::string& what) {
    CHECK_THROWS_AS(read(json), invalid_input);
    CHECK_THROWS_WITH(read(json), Catch::Contains(what));
  };
  fails("[[" + entry("alloc", 64, 10) + "," + entry("free_completed", 64, 10) + "," + entry("free_completed", 64, 10) +
            "]]",
        "device_traces[0][2]: 'free_completed' of address 64, which is already free (an address freed twice)");
  fails("[[" + entry("alloc", 64, 10) + "," + entry("explode", 64, 10) + "]]", "device_traces[0][1]: unknown action");
  fails("[[{\"action\":\"alloc\",\"size\":5}]]", "without 'addr'");
  fails("[[{\"action\":\"alloc\",\"addr\":-1,\"size\":5}]]", "negative");
  fails("[[{\"action\":\"oom\",\"device_free\":5}]]", "'oom' entry without 'size'");
  fails("{\"segments\":[]}", "no 'device_traces'");
  fails("[[]]", "empty");
  fails("[[" + entry("alloc", 0, 1) + "],[" + entry("alloc", 0, 1) + "]]", "GPUs 0, 1; choose one");
  fails("{\"device_traces\": [[{\"action\": ", "not a JSON document");
  fails("{\"segments\":[{\"address\":0,\"total_size\":2097152,\"blocks\":[]}],\"device_traces\":[[" +
            entry("free_completed", 4194304, 10) + "]]}",
        "the block at address 4194304, live when recording began, lies in no segment of the snapshot");
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
  std::istringstream bad_pickle(std::string("\x80\x02") + "cos\nsystem\n.");
  CHECK_THROWS_WITH(read_torch_snapshot(bad_pickle, "s.pickle"),
                    Catch::Contains("s.pickle: refused to import 'os.system'") &&
                        Catch::Contains("(pickle opcode 0x63 GLOBAL at byte 2)"));
}

TEST_CASE("what-if: the recorded OOM and the settings that would have avoided it") {
  const auto t = snapshot("what_if.p4.pickle");
  // Recorded: a = 100 MiB in a 100 MiB segment, freed; b = 50 MiB split from it;
  // c = 60 MiB needs a new segment: 160 MiB > 130 MiB (100 MiB reserved + 30 MiB
  // device_free), and nothing is free to release: OOM.
  CHECK(t.recorded_capacity == 130 * MiB);
  const auto w = what_if(t);
  CHECK(w.capacity == 130 * MiB);
  CHECK(w.recorded_need == 160 * MiB);
  REQUIRE(w.rows.size() == 8);
  auto row = [&](const std::string& settings) -> const what_if_row& {
    for (const auto& r : w.rows)
      if (r.settings == settings) return r;
    FAIL("no row " << settings);
    return w.rows[0];
  };
  CHECK(w.rows[0].recorded);
  CHECK(w.rows[0].settings.empty());
  CHECK(w.rows[0].result.oom_event == 3u);
  // Expandable segments: b reuses the mapped 100 MiB, c maps one 20 MiB page more: 120 MiB.
  CHECK_FALSE(row("expandable_segments:True").result.oom_event);
  CHECK(row("expandable_segments:True").result.stats.peak_reserved == 120 * MiB);
  // max_split_size_mb:64: the 100 MiB block is oversize and b may not split it; the
  // failed cudaMalloc releases it, b gets 50 MiB, c 60 MiB: 110 MiB, 50 MiB saved.
  const auto& split64 = row("max_split_size_mb:64");
  CHECK_FALSE(split64.result.oom_event);
  CHECK(split64.result.stats.peak_reserved == 110 * MiB);
  CHECK(w.rows[w.best].settings == "max_split_size_mb:64");
  CHECK(w.saved(w.best) == static_cast<std::int64_t>(50 * MiB));
  // roundup_power2_divisions:4 rounds a to 112 MiB, b to 56 MiB, c to 64 MiB: OOM.
  CHECK(row("roundup_power2_divisions:4").result.oom_event == 3u);
  CHECK(row("roundup_power2_divisions:4").result.stats.peak_reserved == 112 * MiB);
  CHECK(row("max_split_size_mb:256").result.oom_event == 3u);
  CHECK(row("garbage_collection_threshold:0.6,per_process_memory_fraction:1").result.oom_event == 3u);
  // Without a capacity, garbage collection (which needs a memory fraction) is not compared.
  CHECK(what_if_settings("", false).size() == 7);
  CHECK(what_if_settings("max_split_size_mb:128,expandable_segments:True", true)[1] ==
        "expandable_segments:True,max_split_size_mb:64");  // expandable_segments:True is already recorded
  CHECK(what_if_settings("max_split_size_mb:128", true)[1] == "max_split_size_mb:128,expandable_segments:True");
  CHECK(what_if_settings("max_split_size_mb:128", true)[2] == "max_split_size_mb:64");
}
