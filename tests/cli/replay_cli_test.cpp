// `dwsr replay` as a user runs it: reports, JSON, timelines, and every error
// path (exit 2, one line on stderr, no partial output file).

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_runner.hpp"
#include "dwsr/sim/random_stream.hpp"
#include "dwsr/sim/trace_csv.hpp"
#include "sim/torch_snapshot_files.hpp"

using namespace dwsr;
using namespace dwsr::test;

namespace {
void write_text(const std::filesystem::path& p, const std::string& text) { std::ofstream(p) << text; }
const std::string small_trace =
    "action,id,bytes,device,node,role\n"
    "alloc,1,100,cuda,1,input\n"
    "alloc,2,200,cuda,2,temporary\n"
    "free,2\n"
    "alloc,3,50,cuda,3,output\n"
    "free,3\n"
    "free,1\n";
}  // namespace

TEST_CASE("dwsr replay reports peaks, the event and the buffers alive at the peak, per model") {
  temp_dir dir;
  write_text(dir / "t.csv", small_trace);
  const auto r =
      run_dwsr("replay " + (dir / "t.csv").string() + " -a exact -a torch_cuda_caching:max_split_size_mb:64 --json");
  INFO(r.err);
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["trace"]["format"] == "csv");
  CHECK(j["trace"]["events"] == 6);
  REQUIRE(j["models"].size() == 2);
  const auto& exact = j["models"][0]["devices"][0];
  CHECK(j["models"][0]["spec"] == "exact");
  CHECK(exact["device"] == "cuda");
  CHECK(exact["peak_reserved"] == 300);
  CHECK(exact["peak_reserved_event"] == 1);
  CHECK(exact["oom"].is_null());
  REQUIRE(exact["alive"].size() == 2);
  CHECK(exact["alive"][0]["id"] == 2);
  CHECK(exact["alive"][0]["node"] == 2);
  CHECK(exact["alive"][0]["role"] == "temporary");
  const auto& torch = j["models"][1]["devices"][0];
  CHECK(torch["peak_reserved"] == 2 << 20);
  CHECK(torch["peak_allocated"] == 1024);
  CHECK(torch["end"]["segments"] == 1);

  const auto text = run_dwsr("replay " + (dir / "t.csv").string() + " --allocator torch_cuda_caching");
  REQUIRE(text.status == 0);
  CHECK(text.out.find("peak reserved") != std::string::npos);
  CHECK(text.out.find("alive at event") != std::string::npos);
  CHECK(text.out.find("OOM              none") != std::string::npos);
}

TEST_CASE("dwsr replay with a capacity reports the OOM event, --timeline writes a Chrome trace") {
  temp_dir dir;
  write_text(dir / "t.csv", small_trace);
  const auto r = run_dwsr("replay " + (dir / "t.csv").string() + " --capacity 250 --json --timeline " +
                          (dir / "tl.json").string());
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["capacity"] == 250);
  CHECK(j["models"][0]["devices"][0]["oom"]["event"] == 1);
  CHECK(j["models"][0]["devices"][0]["oom"]["requested"] == 200);
  std::ifstream in(dir / "tl.json");
  const auto tl = nlohmann::json::parse(in);
  CHECK(tl["traceEvents"].size() > 3);
  CHECK(run_dwsr("replay " + (dir / "t.csv").string() + " -c 1KiB").out.find("capacity: 1.00 KiB") !=
        std::string::npos);
}

TEST_CASE("dwsr replay reads a PyTorch snapshot export") {
  temp_dir dir;
  write_text(dir / "s.json", R"({"device_traces": [[{"action": "alloc", "addr": 0, "size": 104857600},)"
                             R"( {"action": "free_completed", "addr": 0, "size": 104857600},)"
                             R"( {"action": "alloc", "addr": 0, "size": 52428800},)"
                             R"( {"action": "alloc", "addr": 209715200, "size": 62914560}]]})");
  const auto r = run_dwsr("replay " + (dir / "s.json").string() + " -a torch_cuda_caching --json");
  INFO(r.err);
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["trace"]["format"] == "torch_snapshot");
  CHECK(j["models"][0]["devices"][0]["peak_reserved"] == 160 << 20);
}

TEST_CASE("dwsr replay on a snapshot pickle equals dwsr replay on its JSON export") {
  const auto& dir = torch_snapshots();
  for (const char* name : {"late_start", "what_if", "streams"}) {
    INFO(name);
    for (const char* flags : {" --json", " --json --what-if", ""}) {
      auto out = [&](const std::string& file) {
        auto r = run_dwsr("replay " + (dir / file).string() + flags);
        INFO(r.err);
        REQUIRE(r.status == 0);
        // The file name is the only difference.
        const auto at = r.out.find((dir / file).string());
        REQUIRE(at != std::string::npos);
        r.out.erase(at, (dir / file).string().size());
        return r.out;
      };
      const auto json = out(std::string(name) + ".json");
      CHECK(out(std::string(name) + ".p2.pickle") == json);
      CHECK(out(std::string(name) + ".p4.pickle") == json);
    }
  }
}

TEST_CASE("dwsr replay of a snapshot says what it rebuilt, where PyTorch ran out, and what it does not model") {
  const auto& dir = torch_snapshots();
  const auto r = run_dwsr("replay " + (dir / "late_start.p4.pickle").string());
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("start state rebuilt from the snapshot's segments: 3 segments (42.00 MiB), 4 blocks live") !=
        std::string::npos);
  CHECK(r.out.find("PyTorch raised OutOfMemoryError at event 10") != std::string::npos);
  CHECK(r.out.find("capacity: 90.00 MiB") != std::string::npos);  // from the OOM entry
  CHECK(r.out.find("OUT OF MEMORY    at event 10") != std::string::npos);
  CHECK(r.out.find("not modelled: 1 releases of cached segments") != std::string::npos);
  const auto j = nlohmann::json::parse(run_dwsr("replay " + (dir / "late_start.p4.pickle").string() + " --json").out);
  CHECK(j["trace"]["start"]["segments"] == 3);
  CHECK(j["trace"]["recorded_capacity"] == 90 << 20);
  CHECK(j["models"][0]["spec"] == "torch_cuda_caching");
  CHECK(j["models"][0]["devices"][0]["peak_reserved"] == 82 << 20);
  CHECK(j["models"][0]["devices"][0]["oom"]["event"] == 10);
  // --capacity wins over the trace's.
  const auto roomy = nlohmann::json::parse(
      run_dwsr("replay " + (dir / "late_start.p4.pickle").string() + " --json --capacity 1GiB").out);
  CHECK(roomy["models"][0]["devices"][0]["oom"].is_null());
  const auto streams = run_dwsr("replay " + (dir / "streams.json").string());
  CHECK(streams.out.find("not modelled: 1 allocations on streams other than the first") != std::string::npos);
  CHECK(streams.out.find("not modelled: 1 segments of private pools") != std::string::npos);
}

TEST_CASE("dwsr replay --what-if prints peak, saving, fragmentation and OOM per setting, --timeline the best beside") {
  const auto& dir = torch_snapshots();
  const auto tl = dir / "what_if_timeline.json";
  const auto r = run_dwsr("replay " + (dir / "what_if.p4.pickle").string() + " --what-if --timeline " + tl.string());
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("the recorded settings need 160.00 MiB") != std::string::npos);
  CHECK(r.out.find("recorded: defaults") != std::string::npos);
  CHECK(r.out.find("OOM at event 3") != std::string::npos);
  CHECK(r.out.find("* max_split_size_mb:64") != std::string::npos);
  CHECK(r.out.find("from the OOM entry") != std::string::npos);
  std::ifstream in(tl);
  const auto trace = nlohmann::json::parse(in);
  std::string names;
  for (const auto& e : trace["traceEvents"]) names += e.dump();
  CHECK(names.find("recorded: ") != std::string::npos);
  CHECK(names.find("best: max_split_size_mb:64") != std::string::npos);
  std::filesystem::remove(tl);
  const auto j = nlohmann::json::parse(run_dwsr("replay " + (dir / "what_if.json").string() + " --what-if --json").out);
  CHECK(j["what_if"]["capacity"] == 130 << 20);
  CHECK(j["what_if"]["recorded_need"] == 160 << 20);
  CHECK(j["what_if"]["rows"][j["what_if"]["best"].get<std::size_t>()]["saved"] == 50 << 20);
  CHECK(run_dwsr("replay --help").out.find("--what-if") != std::string::npos);
}

TEST_CASE("dwsr replay snapshot errors: exit 2, one line naming the offset or the event") {
  temp_dir dir;
  write_raw(dir / "os.pickle", std::string("\x80\x02") + "cos\nsystem\n(S'ls'\ntR.");
  expect_user_error(run_dwsr("replay " + (dir / "os.pickle").string()), "pickle opcode 0x63 GLOBAL at byte 2");
  write_raw(dir / "cut.pickle", std::string("\x80\x02}q\x00(X\x0d\x00\x00\x00"
                                            "device",
                                            17));
  expect_user_error(run_dwsr("replay " + (dir / "cut.pickle").string()), "truncated pickle");
  write_text(dir / "what.json", R"([[{"action": "alloc", "addr": 0, "size": 1}, {"action": "teleport", "addr": 0}]])");
  expect_user_error(run_dwsr("replay " + (dir / "what.json").string()),
                    "device_traces[0][1]: unknown action 'teleport'");
  write_text(dir / "twice.json",
             R"([[{"action": "alloc", "addr": 0, "size": 1}, {"action": "free_completed", "addr": 0},)"
             R"( {"action": "free_completed", "addr": 0}]])");
  expect_user_error(run_dwsr("replay " + (dir / "twice.json").string()),
                    "device_traces[0][2]: 'free_completed' of address 0");
  write_text(dir / "t.csv", small_trace);
  expect_user_error(run_dwsr("replay " + (dir / "t.csv").string() + " --what-if"), "--what-if needs a PyTorch");
}

TEST_CASE("dwsr replay errors: exit 2, one line naming the line or setting, no partial timeline") {
  temp_dir dir;
  const auto t = (dir / "t.csv").string();
  write_text(t, small_trace);
  const std::string h = "action,id,bytes,device,node,role\n";
  write_text(dir / "bad_line.csv", h + "alloc,1,10\nalloc,2,10,host,0,input,x\n");
  expect_user_error(run_dwsr("replay " + (dir / "bad_line.csv").string()), "bad_line.csv:3");
  write_text(dir / "unknown.csv", h + "alloc,1,10\nfree,9\n");
  expect_user_error(run_dwsr("replay " + (dir / "unknown.csv").string()), "free of buffer 9");
  write_text(dir / "negative.csv", h + "alloc,1,-10\n");
  expect_user_error(run_dwsr("replay " + (dir / "negative.csv").string()), "negative");
  write_text(dir / "nan.csv", h + "alloc,1,lots\n");
  expect_user_error(run_dwsr("replay " + (dir / "nan.csv").string()), "not a whole number");
  expect_user_error(run_dwsr("replay " + t + " -a jemalloc"), "unknown allocator model 'jemalloc'");
  expect_user_error(run_dwsr("replay " + t + " -a torch_cuda_caching:max_split_size_mb:7"), "max_split_size_mb");
  expect_user_error(run_dwsr("replay " + t + " -a torch_cuda_caching:colour:blue"), "'colour' is unknown");
  expect_user_error(run_dwsr("replay " + t + " --capacity 12XB"), "byte size '12XB'");
  expect_user_error(run_dwsr("replay " + (dir / "missing.csv").string()), "cannot open");
  expect_user_error(run_dwsr("replay " + t + " --gpu 1"), "--gpu");
  // A failure after the replay leaves no timeline file behind; a bad trace writes none.
  expect_user_error(run_dwsr("replay " + t + " --timeline " + (dir / "no" / "tl.json").string()), "cannot write");
  expect_user_error(run_dwsr("replay " + (dir / "unknown.csv").string() + " --timeline " + (dir / "tl.json").string()),
                    "free of buffer 9");
  CHECK_FALSE(std::filesystem::exists(dir / "tl.json"));
  auto left = dir.entries();
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{"bad_line.csv", "nan.csv", "negative.csv", "t.csv", "unknown.csv"});
  CHECK(run_dwsr("replay").status == 2);  // the trace is required
  const auto help = run_dwsr("replay --help");
  CHECK(help.status == 0);
  CHECK(help.out.find("--allocator") != std::string::npos);
  CHECK(help.out.find("PYTORCH_CUDA_ALLOC_CONF") != std::string::npos);
}
