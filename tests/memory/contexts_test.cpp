#include <catch2/catch.hpp>

#include "dwsr/exec/host_context.hpp"
#include "dwsr/exec/meta_context.hpp"
#include "dwsr/memory/recorder.hpp"

using namespace dwsr;

namespace {
// A toy workload written once over the context, as operators are.
template <class Ctx>
float workload(Ctx& ctx, std::uint64_t n) {
  auto ws = ctx.template allocate<float>(ctx.threads() * 4, buffer_role::workspace);
  auto tmp = ctx.template allocate<float>(n, buffer_role::temporary);
  float sum = 0;
  ctx.parallel_for(n, [&](std::uint64_t b, std::uint64_t e, std::size_t slot) {
    for (auto i = b; i < e; ++i) tmp[i] = float(i);
    ws[slot * 4] = 1;
  });
  ctx.compute([&] {
    for (std::uint64_t i = 0; i < n; ++i) sum += tmp[i];
  });
  return sum;
}
}  // namespace

TEST_CASE("the real and the meta context emit the same events, only the real one computes") {
  for (std::size_t threads : {1, 2, 4}) {
    recorder real_events, meta_events;
    event_bus real_bus(real_events), meta_bus(meta_events);
    host_context real(real_bus, {.threads = threads});
    meta_context meta(meta_bus, {.threads = threads});
    CHECK(workload(real, 1000) == 499500.0f);
    CHECK(workload(meta, 1000) == 0.0f);
    CHECK(real_events.events() == meta_events.events());
    CHECK(real_events.events().size() == 4);
  }
}

TEST_CASE("a bus one thread emits through gives the stream, live bytes and budget of a shared one") {
  for (std::size_t threads : {1, 4}) {
    recorder shared_events, own_events;
    event_bus shared(shared_events), own(own_events, emitters::one_thread);
    CHECK(!shared.one_thread());
    CHECK(own.one_thread());
    meta_context a(shared, {.threads = threads}), b(own, {.threads = threads});
    workload(a, 1000);
    workload(b, 1000);
    CHECK(own_events.events() == shared_events.events());
    CHECK(own.events() == shared.events());
    CHECK(b.live() == 0);
  }
  recorder rec;
  event_bus bus(rec, emitters::one_thread);
  meta_context ctx(bus, {.threads = 1, .budget = 1000});
  auto a = ctx.allocate<std::byte>(600, buffer_role::input);
  CHECK_THROWS_AS(ctx.allocate<std::byte>(401, buffer_role::temporary), out_of_memory);
  CHECK(ctx.live() == 600);
  {
    auto b = ctx.allocate<std::byte>(400, buffer_role::temporary);  // exactly at the budget
    CHECK(ctx.live() == 1000);
  }
  CHECK(ctx.live() == 600);
  CHECK(rec.events().size() == 3);  // the refused allocation emitted nothing
}

TEST_CASE("parallel_for hands out slots below threads()") {
  event_bus bus;
  host_context ctx(bus, {.threads = 3});
  std::atomic<bool> ok{true};
  ctx.parallel_for(100000, [&](std::uint64_t, std::uint64_t, std::size_t slot) {
    if (slot >= 3) ok = false;
  });
  CHECK(ok);
}

TEST_CASE("a budget is enforced before the allocation, naming worker, node, bytes and budget") {
  recorder rec;
  event_bus bus(rec);
  host_context ctx(bus, {.threads = 1, .budget = 1000, .name = "worker 3"});
  ctx.set_node(7);
  auto a = ctx.allocate<std::byte>(600, buffer_role::input);
  try {
    auto b = ctx.allocate<std::byte>(500, buffer_role::temporary);
    FAIL("no out_of_memory");
  } catch (const out_of_memory& e) {
    CHECK(e.requested() == 500);
    CHECK(e.budget() == 1000);
    const std::string msg = e.what();
    CHECK(msg.find("worker 3") != std::string::npos);
    CHECK(msg.find("node 7") != std::string::npos);
    CHECK(msg.find("500 bytes") != std::string::npos);
    CHECK(msg.find("1000 bytes") != std::string::npos);
  }
  CHECK(rec.events().size() == 1);  // the refused allocation emitted nothing
  CHECK(ctx.live() == 600);
  auto c = ctx.allocate<std::byte>(400, buffer_role::temporary);  // exactly at the budget
  CHECK(ctx.live() == 1000);
}

TEST_CASE("zero threads is a clear error") {
  event_bus bus;
  CHECK_THROWS_WITH(host_context(bus, {.threads = 0}), Catch::Contains("thread count 0"));
}
