// Buffer ids are checked in one place (detail/live_buffers.hpp), by every model
// and by the replay, with one message: the owner, the event and the buffer.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "dwsr/sim/any_model.hpp"
#include "dwsr/sim/detail/live_buffers.hpp"

using namespace dwsr;
using namespace dwsr::sim;
using Catch::Contains;

TEST_CASE("live_buffers keeps a value per live id and names the owner, the event and the id in errors") {
  sim::detail::live_buffers<std::uint64_t> t("owner");
  t.add(5, 0, 50);
  t.add(6, 1, 60);
  REQUIRE(t.find(5));
  CHECK(*t.find(5) == 50);
  t.set(5, 55);
  CHECK(t.remove(5, 2) == 55);
  CHECK(t.find(5) == nullptr);
  CHECK(t.find(0) == nullptr);
  t.add(5, 3, 7);  // an id may come back once freed
  t.forget(5);
  CHECK(t.size() == 1);
  CHECK_THROWS_WITH(t.add(6, 4), Contains("owner: event 4: buffer 6 allocated again while alive"));
  CHECK_THROWS_WITH(t.remove(9, 5), Contains("owner: event 5: free of buffer 9, which is not allocated"));
  CHECK_THROWS_WITH(t.add(0, 6), Contains("owner: event 6: buffer id 0; buffer ids start at 1"));
  CHECK_THROWS_AS(t.add(0, 6), invalid_input);
}

TEST_CASE("every model checks buffer ids the same way, counting its own events") {
  for (const auto& [name, _] : model_catalogue()) {
    INFO(name);
    auto m = make_model(name);
    REQUIRE(m.alloc(1, 1000));
    REQUIRE(m.alloc(2, 0));  // a zero-byte buffer is a buffer too
    const std::string prefix = std::string(name) + ": event 2: ";
    CHECK_THROWS_WITH(m.alloc(1, 10), Contains(prefix + "buffer 1 allocated again while alive"));
    CHECK_THROWS_WITH(m.free(7, 10), Contains(prefix + "free of buffer 7, which is not allocated"));
    CHECK_THROWS_WITH(m.alloc(0, 10), Contains(prefix + "buffer id 0"));
    m.free(2, 0);
    m.free(1, 1000);
    CHECK_THROWS_WITH(m.free(1, 1000), Contains(std::string(name) + ": event 4: free of buffer 1"));
    CHECK(m.allocated() == 0);
  }
}

TEST_CASE("a model forgets the buffer whose allocation failed") {
  for (const auto& [name, _] : model_catalogue()) {
    INFO(name);
    auto m = make_model(name, 1 << 20);
    CHECK_FALSE(m.alloc(1, 1ull << 40));
    REQUIRE(m.oom());
    CHECK_THROWS_WITH(m.free(1, 1ull << 40), Contains("free of buffer 1, which is not allocated"));
  }
}
