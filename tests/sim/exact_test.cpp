#include <catch2/catch.hpp>

#include "dwsr/concepts.hpp"
#include "dwsr/exec/host_context.hpp"
#include "dwsr/memory/fan_out.hpp"
#include "dwsr/memory/peak_counter.hpp"
#include "dwsr/memory/recorder.hpp"
#include "dwsr/sim/any_model.hpp"
#include "dwsr/sim/exact.hpp"
#include "dwsr/sim/host_pages.hpp"
#include "dwsr/sim/random_stream.hpp"

using namespace dwsr;
using namespace dwsr::sim;

static_assert(AllocatorModel<exact_model>);
static_assert(dwsr::AllocatorModel<exact_model>);  // named in concepts.hpp too

TEST_CASE("exact: allocated = reserved = requested, with an optional capacity") {
  exact_model m(1000);
  CHECK(m.alloc(1, 600));
  CHECK(m.alloc(2, 400));  // exactly at the capacity
  CHECK(m.reserved() == 1000);
  m.free(2, 400);
  CHECK_FALSE(m.alloc(3, 401));
  CHECK(m.oom());
  const auto s = m.stats();
  CHECK(s.oom_bytes == 401);
  CHECK(s.peak_allocated == 1000);
  CHECK(s.allocated == 600);
  CHECK(s.segments == 1);
  CHECK(s.fragmentation() == 0.0);
  m.on_event({0, action::free, device::host, buffer_role::input, 0, 1, 600});  // ignored after the OOM
  CHECK(m.allocated() == 600);
}

TEST_CASE("exact agrees with the peak counter on random streams, per device") {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    for (auto dev : {device::host, device::cuda}) {
      const auto events = random_stream(20000, seed, {9, 24, dev});
      peak_counter counter;
      exact_model m;
      for (const auto& e : events) {
        counter.on_event(e);
        m.on_event(e);
        REQUIRE(m.allocated() == counter.live(dev));
      }
      CHECK(m.stats().peak_allocated == counter.peak(dev));
      CHECK(m.allocated() == 0);
    }
  }
}

TEST_CASE("exact fed live by a host execution equals the peak counter") {
  peak_counter counter;
  exact_model m;
  recorder rec;
  fan_out sinks{counter, m, rec};
  event_bus bus(sinks);
  host_context ctx(bus, {.threads = 2});
  {
    auto in = ctx.allocate<float>(1000, buffer_role::input);
    for (int i = 0; i < 5; ++i) {
      auto t = ctx.allocate<double>(100 * (i + 1), buffer_role::temporary);
      auto w = ctx.allocate<float>(64, buffer_role::workspace);
    }
    auto out = ctx.allocate<float>(1000, buffer_role::output);
  }
  CHECK(m.stats().peak_allocated == counter.peak());
  CHECK(m.stats().peak_allocated == 4000 + 4000 + 256);
  CHECK(m.allocated() == 0);
  CHECK(m.stats().allocs == rec.events().size() / 2);
}

TEST_CASE("host_pages: every live buffer held in whole 4 KiB pages") {
  static_assert(AllocatorModel<host_pages_model>);
  host_pages_model m(3 * 4096);
  CHECK(m.alloc(1, 1));  // one page for one byte
  CHECK(m.alloc(2, 4096));
  CHECK(m.alloc(3, 0));  // nothing mapped
  CHECK(m.reserved() == 2 * 4096);
  CHECK(m.stats().requested == 4097);
  CHECK_FALSE(m.alloc(4, 4097));  // two more pages do not fit
  CHECK(m.stats().oom_bytes == 4097);

  host_pages_model n;
  n.alloc(1, 4097);
  n.alloc(2, 10);
  CHECK(n.stats().peak_reserved == 3 * 4096);
  n.free(1, 4097);
  CHECK(n.reserved() == 4096);
  CHECK(n.stats().segments == 1);
  CHECK(make_model("host_pages").stats().reserved == 0);
  CHECK_THROWS_WITH(make_model("host_pages:page:65536"), Catch::Contains("takes no settings"));
}

TEST_CASE("host_pages agrees with a page-rounding count on random streams") {
  for (std::uint64_t seed : {4u, 5u}) {
    const auto events = random_stream(20000, seed, {4, 23, device::host});
    host_pages_model m;
    std::uint64_t live = 0, peak = 0;
    for (const auto& e : events) {
      const auto pages = (e.bytes + 4095) / 4096 * 4096;
      live = e.act == action::alloc ? live + pages : live - pages;
      peak = std::max(peak, live);
      m.on_event(e);
      REQUIRE(m.reserved() == live);
    }
    CHECK(m.stats().peak_reserved == peak);
  }
}
