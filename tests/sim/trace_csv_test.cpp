#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "dwsr/sim/random_stream.hpp"
#include "dwsr/sim/trace_csv.hpp"

using namespace dwsr;
using namespace dwsr::sim;

namespace {
std::vector<event> read(const std::string& text) {
  std::istringstream in(text);
  return read_trace_csv(in, "t.csv");
}
}  // namespace

TEST_CASE("a written trace reads back as the same events") {
  auto events = random_stream(2000, 4, {4, 40, device::cuda});
  for (auto& e : events) e.dev = e.buffer % 2 ? device::host : device::cuda;
  std::ostringstream out;
  write_trace_csv(out, events);
  CHECK(out.str().rfind("action,id,bytes,device,node,role\n", 0) == 0);
  CHECK(read(out.str()) == events);
}

TEST_CASE("the short forms: three columns, a free without bytes, comments, blank lines, CRLF") {
  const auto events = read("# a comment\r\naction,id,bytes\r\n\r\nalloc,5,100\nalloc,6,0\nfree,5,\nfree,6\n");
  REQUIRE(events.size() == 4);
  CHECK(events[0] == event{0, action::alloc, device::host, buffer_role::temporary, 0, 5, 100});
  CHECK(events[2] == event{2, action::free, device::host, buffer_role::temporary, 0, 5, 100});
  CHECK(events[3].bytes == 0);
  const std::string bom = "\xEF\xBB\xBF";  // a UTF-8 byte order mark
  CHECK(read(bom + "action,id,bytes\nalloc,1,2\n").size() == 1);
  const auto full = read("action,id,bytes,device,node,role\nalloc,1,8,cuda,3,workspace\nfree,1,8,cuda\n");
  CHECK(full[1] == event{1, action::free, device::cuda, buffer_role::workspace, 3, 1, 8});
}

TEST_CASE("every malformed trace is an error naming the file and line") {
  auto fails = [](const std::string& body, const std::string& what) {
    INFO(body);
    CHECK_THROWS_AS(read(body), invalid_input);
    CHECK_THROWS_WITH(read(body), Catch::Contains(what));
  };
  const std::string h = "action,id,bytes,device,node,role\n";
  fails("", "t.csv:0: the trace is empty");
  fails("alloc,1,10\n", "t.csv:1: expected the header");
  fails(h + "alloc,1,10\nfree,2\n", "t.csv:3: free of buffer 2, which was never allocated");
  fails(h + "alloc,1,10\nfree,1\nfree,1\n", "t.csv:4: free of buffer 1, already freed at line 3");
  fails(h + "alloc,1,10\nalloc,1,10\n", "t.csv:3: buffer 1 was already allocated at line 2");
  fails(h + "alloc,1,-5\n", "t.csv:2: bytes '-5' is negative");
  fails(h + "alloc,1,ten\n", "t.csv:2: bytes 'ten' is not a whole number");
  fails(h + "alloc,1,1e3\n", "not a whole number");
  fails(h + "alloc,1,99999999999999999999\n", "too large");
  fails(h + "alloc,x,10\n", "t.csv:2: id 'x' is not a whole number");
  fails(h + "alloc,0,10\n", "id 0");
  fails(h + "alloc,1\n", "t.csv:2: an alloc needs its bytes");
  fails(h + "grab,1,10\n", "unknown action 'grab'");
  fails(h + "alloc,1,10,gpu\n", "unknown device 'gpu'");
  fails(h + "alloc,1,10,host,0,scratch\n", "unknown role 'scratch'");
  fails(h + "alloc,1,10,host,0,input,extra\n", "t.csv:2: expected 2 to 6 comma-separated fields");
  fails("action,id,bytes\nalloc,1,10,host\n", "expected 2 to 3");
  fails(h + "alloc,1\n", "needs its bytes");
  fails(h + "alloc,1,10\nfree,1,11\n", "t.csv:3: free of buffer 1 with bytes 11, but it was allocated with bytes 10");
  fails(h + "alloc,1,10,host,2\nfree,1,10,host,3\n", "with node 3");
  fails(h + "alloc,1,10,host\nfree,1,10,cuda\n", "with device cuda");
}

TEST_CASE("trace files are written atomically and read back, a bad path is an i/o error") {
  const auto dir = std::filesystem::temp_directory_path() / "dwsr_trace_csv_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto events = random_stream(100, 1);
  write_trace_csv(dir / "t.csv", events);
  CHECK(read_trace_csv(dir / "t.csv") == events);
  CHECK_FALSE(std::filesystem::exists(dir / "t.csv.dwsr-partial"));
  std::vector<std::string> files;  // no temporary is left beside the trace
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files.push_back(entry.path().filename().string());
  CHECK(files == std::vector<std::string>{"t.csv"});
  CHECK_THROWS_AS(write_trace_csv(dir / "missing" / "t.csv", events), io_error);
  CHECK_THROWS_AS(read_trace_csv(dir / "nope.csv"), io_error);
  std::filesystem::remove_all(dir);
}
