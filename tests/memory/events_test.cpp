#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "dwsr/exec/host_context.hpp"
#include "dwsr/memory/event_bus.hpp"
#include "dwsr/memory/fan_out.hpp"
#include "dwsr/memory/peak_counter.hpp"
#include "dwsr/memory/recorder.hpp"

using namespace dwsr;

TEST_CASE("a recorder and a peak counter see each alloc and free once, in order") {
  recorder rec;
  peak_counter counter;
  fan_out sinks{rec, counter};
  event_bus bus(sinks);
  host_context ctx(bus);
  {
    auto a = ctx.allocate<float>(100, buffer_role::input);
    auto b = ctx.allocate<double>(10, buffer_role::temporary);
    b.reset();
    auto c = ctx.allocate<char>(1000, buffer_role::output);
    CHECK(counter.live() == 1400);
  }
  CHECK(counter.peak() == 1400);
  CHECK(counter.live() == 0);
  REQUIRE(rec.events().size() == 6);
  const auto& e = rec.events();
  CHECK(e[0] == event{0, action::alloc, device::host, buffer_role::input, 0, 1, 400});
  CHECK(e[1] == event{1, action::alloc, device::host, buffer_role::temporary, 0, 2, 80});
  CHECK(e[2] == event{2, action::free, device::host, buffer_role::temporary, 0, 2, 80});
  CHECK(e[3] == event{3, action::alloc, device::host, buffer_role::output, 0, 3, 1000});
  // Scope exit frees in reverse order of declaration.
  CHECK(e[4] == event{4, action::free, device::host, buffer_role::output, 0, 3, 1000});
  CHECK(e[5] == event{5, action::free, device::host, buffer_role::input, 0, 1, 400});
}

TEST_CASE("host allocations are 64-byte aligned and zero-byte buffers hold no memory") {
  event_bus bus;
  host_context ctx(bus);
  for (std::uint64_t n : {1u, 3u, 17u, 1000u}) {
    auto b = ctx.allocate<float>(n, buffer_role::workspace);
    CHECK(reinterpret_cast<std::uintptr_t>(b.data()) % 64 == 0);
  }
  auto empty = ctx.allocate<float>(0, buffer_role::workspace);
  CHECK(empty.data() == nullptr);
  CHECK(bus.events() == 9);
}

TEST_CASE("events from many threads are neither lost nor torn") {
  recorder rec;
  peak_counter counter;
  fan_out sinks{rec, counter};
  event_bus bus(sinks);
  host_context ctx(bus, {.threads = 8});
  constexpr std::uint64_t tasks = 20000;
  ctx.parallel_for(tasks, [&](std::uint64_t begin, std::uint64_t end, std::size_t) {
    for (auto i = begin; i < end; ++i) {
      auto b = ctx.allocate<std::byte>(i % 977 + 1, buffer_role::temporary);
      if (i % 3 == 0) {
        auto c = ctx.allocate<std::byte>(64, buffer_role::workspace);
      }
    }
  });
  const auto expected_allocs = tasks + (tasks + 2) / 3;
  CHECK(counter.allocs() == expected_allocs);
  CHECK(counter.frees() == expected_allocs);
  CHECK(counter.live() == 0);
  CHECK(ctx.live() == 0);
  const auto& events = rec.events();
  REQUIRE(events.size() == 2 * expected_allocs);
  // The recorder sees a gap-free sequence in order, and each buffer is
  // allocated before it is freed, with the same byte count.
  std::vector<std::uint64_t> bytes_of(expected_allocs + 1, 0);
  std::uint64_t live = 0;
  for (std::uint64_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    REQUIRE(e.seq == i);
    REQUIRE(e.buffer >= 1);
    REQUIRE(e.buffer <= expected_allocs);
    if (e.act == action::alloc) {
      REQUIRE(bytes_of[e.buffer] == 0);
      bytes_of[e.buffer] = e.bytes;
      live += e.bytes;
    } else {
      REQUIRE(bytes_of[e.buffer] == e.bytes);
      live -= e.bytes;
    }
  }
  CHECK(live == 0);
}

TEST_CASE("the peak counter is exact when fed directly from many threads") {
  peak_counter counter;
  constexpr std::uint64_t n = 100000;
  event_bus bus;
  host_context ctx(bus, {.threads = 8});
  ctx.parallel_for(n, [&](std::uint64_t begin, std::uint64_t end, std::size_t) {
    for (auto i = begin; i < end; ++i) {
      const event e{0, action::alloc, device::cuda, buffer_role::temporary, 0, i + 1, 16};
      counter.on_event(e);
      auto f = e;
      f.act = action::free;
      counter.on_event(f);
    }
  });
  CHECK(counter.allocs(device::cuda) == n);
  CHECK(counter.live(device::cuda) == 0);
  CHECK(counter.peak(device::cuda) >= 16);
  CHECK(counter.peak(device::host) == 0);
}
