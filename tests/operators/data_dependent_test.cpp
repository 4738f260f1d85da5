#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>
#include <sstream>
#include <vector>

#include "dwsr/core/random.hpp"
#include "dwsr/exec/host_context.hpp"
#include "dwsr/exec/meta_context.hpp"
#include "dwsr/graph/chunked.hpp"
#include "dwsr/memory/event_bus.hpp"
#include "dwsr/memory/recorder.hpp"
#include "dwsr/operators/catalogue.hpp"
#include "dwsr/operators/event_picks.hpp"
#include "dwsr/operators/geobodies.hpp"
#include "dwsr/sim/trace_csv.hpp"
#include "io/temp_dir.hpp"
#include "operators/operator_test_support.hpp"

using namespace dwsr;
using operators::body_stats;
using operators::pick;

namespace {

/// The events of one real (or meta) call of f(ctx).
template <class Ctx, class F>
std::vector<event> events_of(F&& f, std::size_t threads = 1) {
  recorder rec;
  event_bus bus(rec);
  Ctx ctx(bus, {.threads = threads});
  f(ctx);
  return rec.events();
}

/// Checks that a real and a meta stream are the same but for bound events,
/// which only the meta one has, and whose bytes are at least the real ones.
/// Returns the real / bound byte ratio of the flagged events taken together.
double check_real_against_plan(const std::vector<event>& real, const std::vector<event>& meta) {
  REQUIRE(real.size() == meta.size());
  std::uint64_t real_bytes = 0, bound_bytes = 0;
  bool flagged = false;
  for (std::size_t i = 0; i < real.size(); ++i) {
    INFO("event " << i);
    CHECK_FALSE(real[i].bound);
    event plan = meta[i];
    if (plan.bound) {
      flagged = true;
      CHECK(real[i].bytes <= plan.bytes);
      if (plan.act == action::alloc) real_bytes += real[i].bytes, bound_bytes += plan.bytes;
      plan.bytes = real[i].bytes;
      plan.bound = false;
    }
    CHECK(plan == real[i]);
  }
  CHECK(flagged);
  return bound_bytes ? double(real_bytes) / double(bound_bytes) : 1.0;
}

std::vector<pick> picks_of(std::vector<float> cube, shape3 s, operators::event_picks_options options) {
  recorder rec;
  event_bus bus(rec);
  host_context ctx(bus);
  auto table = operators::event_picks(ctx, cube_view<const float>(cube.data(), s), options);
  return {table.data(), table.data() + table.size()};
}

/// Reference labelling by breadth-first flood fill, bodies numbered as their
/// first voxel is met in C order.
std::vector<std::int32_t> flood_labels(const std::vector<float>& v, shape3 s, float threshold) {
  std::vector<std::int32_t> label(v.size(), 0);
  std::int32_t next = 0;
  const std::int64_t d[3] = {std::int64_t(s.crosslines * s.samples), std::int64_t(s.samples), 1};
  for (std::uint64_t seed = 0; seed < v.size(); ++seed) {
    if (!(v[seed] > threshold) || label[seed]) continue;
    label[seed] = ++next;
    std::deque<std::uint64_t> todo{seed};
    while (!todo.empty()) {
      const auto x = todo.front();
      todo.pop_front();
      const std::uint64_t at[3] = {x / (s.crosslines * s.samples), x / s.samples % s.crosslines, x % s.samples};
      for (int axis = 0; axis < 3; ++axis)
        for (int step : {-1, 1}) {
          if ((step < 0 && at[axis] == 0) || (step > 0 && at[axis] + 1 == s[std::size_t(axis)])) continue;
          const auto y = std::uint64_t(std::int64_t(x) + step * d[axis]);
          if (v[y] > threshold && !label[y]) label[y] = next, todo.push_back(y);
        }
    }
  }
  return label;
}

std::vector<float> random_cube(shape3 s, std::uint64_t seed) {
  xoshiro256ss rng(seed);
  std::vector<float> v(s.voxels());
  for (auto& x : v) x = static_cast<float>(rng.uniform());
  return v;
}

struct labelled {
  std::vector<std::int32_t> labels;
  std::vector<body_stats> stats;
};

/// geobodies (block = whole cube) or geobodies_blocked on the host.
labelled label(const std::vector<float>& v, shape3 s, float threshold, shape3 block = {}, std::size_t threads = 1) {
  recorder rec;
  event_bus bus(rec);
  host_context ctx(bus, {.threads = threads});
  labelled out{std::vector<std::int32_t>(v.size(), -1), {}};
  const cube_view<const float> in(v.data(), s);
  const cube_view<std::int32_t> labels(out.labels.data(), s);
  auto table = block.voxels() ? operators::geobodies_blocked(ctx, in, labels, block, {.threshold = threshold})
                              : operators::geobodies(ctx, in, labels, {.threshold = threshold});
  out.stats.assign(table.data(), table.data() + table.size());
  return out;
}

void check_same_stats(const std::vector<body_stats>& a, const std::vector<body_stats>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("body " << i + 1);
    CHECK(a[i].voxels == b[i].voxels);
    CHECK(a[i].first == b[i].first);
    CHECK(a[i].lo == b[i].lo);
    CHECK(a[i].hi == b[i].hi);
    CHECK(a[i].peak == b[i].peak);
    CHECK(a[i].sum == Approx(b[i].sum).epsilon(1e-9));
  }
}

}  // namespace

TEST_CASE("event_picks finds strict maxima above the threshold, a plateau once at its start") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Trace 0: a peak at 1, a plateau 3-4 left downwards (picked at 3), a
  // shoulder 6-7 left upwards (no pick), a rising last sample (no pick).
  // Trace 1: falling from its first sample. Trace 2: NaN takes no part.
  const std::vector<float> cube = {0, 1,   0, 2, 2, 1, 3,   3, 4,  //
                                   5, 4,   3, 2, 1, 0, 0,   0, 0,  //
                                   0, nan, 0, 1, 0, 7, nan, 0, 0};
  const shape3 s{1, 3, 9};
  CHECK(picks_of(cube, s, {.threshold = 0}) == std::vector<pick>{{0, 0, 1, 1}, {0, 0, 3, 2}, {0, 2, 3, 1}});
  CHECK(picks_of(cube, s, {.threshold = 1}) == std::vector<pick>{{0, 0, 3, 2}});
  CHECK(picks_of(cube, s, {.threshold = 2}).empty());
  // The origin places the rows in a larger survey.
  CHECK(picks_of(cube, s, {.threshold = 1, .origin = {10, 20, 30}}) == std::vector<pick>{{10, 20, 33, 2}});
}

TEST_CASE("event_picks equals the rule sample by sample on traces with plateaus") {
  const shape3 s{4, 5, 31};
  xoshiro256ss rng(5);
  std::vector<float> cube(s.voxels());
  for (auto& x : cube) x = static_cast<float>(int(rng.uniform() * 4));  // 0..3: many plateaus
  for (float threshold : {-1.0f, 0.0f, 1.5f, 2.0f, 3.0f}) {
    INFO("threshold " << threshold);
    std::vector<pick> want;
    for (std::uint64_t q = 0; q < s.traces(); ++q) {
      const float* v = cube.data() + q * s.samples;
      for (std::uint64_t t = 1; t + 1 < s.samples; ++t) {
        std::uint64_t e = t + 1;
        while (e < s.samples && v[e] == v[t]) ++e;
        if (v[t] > threshold && v[t - 1] < v[t] && e < s.samples && v[e] < v[t])
          want.push_back({std::uint32_t(q / s.crosslines), std::uint32_t(q % s.crosslines), std::uint32_t(t), v[t]});
      }
    }
    const auto got = picks_of(cube, s, {threshold});
    CHECK(got == want);
    CHECK(got.size() <= s.traces() * operators::max_picks_per_trace(s.samples));
  }
}

TEST_CASE("event_picks: the meta execution allocates the flagged bound, the real one the actual table") {
  const shape3 s{3, 4, 25};
  const auto cube = random_cube(s, 7);
  const cube_view<const float> in(cube.data(), s);
  for (float threshold : {0.0f, 0.5f, 0.9f, 1.0f}) {
    INFO("threshold " << threshold);
    const auto real = events_of<host_context>([&](auto& ctx) { operators::event_picks(ctx, in, {threshold}); }, 2);
    const auto meta = events_of<meta_context>([&](auto& ctx) { operators::event_picks(ctx, in, {threshold}); });
    check_real_against_plan(real, meta);
    CHECK(meta[1].bytes == s.traces() * 12 * sizeof(pick));
  }
  SECTION("the bound is reached by alternating samples") {
    std::vector<float> zigzag(2 * 7);
    for (std::size_t i = 0; i < zigzag.size(); ++i) zigzag[i] = float(i % 7 % 2);
    const cube_view<const float> z(zigzag.data(), {1, 2, 7});
    const auto real = events_of<host_context>([&](auto& ctx) { operators::event_picks(ctx, z); });
    const auto meta = events_of<meta_context>([&](auto& ctx) { operators::event_picks(ctx, z); });
    CHECK(check_real_against_plan(real, meta) == 1.0);
    CHECK(operators::max_picks_per_trace(7) == 3);
  }
}

TEST_CASE("geobodies: face neighbours join, edge and corner neighbours do not") {
  const shape3 s{2, 2, 3};
  SECTION("voxels touching along an edge are separate bodies, numbered in C order") {
    std::vector<float> v(s.voxels(), 0);
    v[(1 * 2 + 1) * 3 + 0] = 5;  // (1, 1, 0)
    v[(0 * 2 + 0) * 3 + 0] = 2;  // (0, 0, 0)
    v[(1 * 2 + 0) * 3 + 2] = 3;  // (1, 0, 2): touches neither
    const auto got = label(v, s, 1);
    CHECK(got.labels == std::vector<std::int32_t>{1, 0, 0, 0, 0, 0, 0, 0, 2, 3, 0, 0});
    REQUIRE(got.stats.size() == 3);
    CHECK(got.stats[0].first == std::array<std::uint32_t, 3>{0, 0, 0});
    CHECK(got.stats[1].peak == 3);
    CHECK(got.stats[2].sum == 5);
  }
  SECTION("a U shape is one body, labelled from its first voxel") {
    // In the inline-0 slice (crossline x sample), a U: both arms and the bottom.
    const shape3 u{1, 3, 3};
    const std::vector<float> v = {1, 0, 1,  //
                                  1, 0, 1,  //
                                  1, 1, 1};
    const auto got = label(v, u, 0.5f);
    CHECK(got.labels == std::vector<std::int32_t>{1, 0, 1, 1, 0, 1, 1, 1, 1});
    REQUIRE(got.stats.size() == 1);
    CHECK(got.stats[0].voxels == 7);
    CHECK(got.stats[0].lo == std::array<std::uint32_t, 3>{0, 0, 0});
    CHECK(got.stats[0].hi == std::array<std::uint32_t, 3>{0, 2, 2});
    CHECK(got.stats[0].mean() == 1.0);
  }
  SECTION("a checkerboard holds the most bodies the bound allows") {
    const shape3 c{3, 3, 3};
    std::vector<float> v(c.voxels());
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = float((i / 9 + i / 3 % 3 + i % 3 + 1) % 2);
    CHECK(label(v, c, 0.5f).stats.size() == operators::max_bodies(c.voxels()));
  }
}

TEST_CASE("geobodies equals a flood fill, and blocked labelling equals the whole cube's") {
  const shape3 s{7, 6, 9};
  const std::array<shape3, 7> blocks = {shape3{2, 3, 4}, shape3{7, 6, 9}, shape3{1, 6, 9},  shape3{3, 1, 2},
                                        shape3{7, 6, 1}, shape3{1, 1, 1}, shape3{8, 100, 4}};
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    const auto v = random_cube(s, seed);
    for (float threshold : {0.3f, 0.6f, 0.72f, 0.9f}) {
      INFO("seed " << seed << ", threshold " << threshold);
      const auto whole = label(v, s, threshold, {}, 2);
      CHECK(whole.labels == flood_labels(v, s, threshold));
      for (const auto& b : blocks) {
        INFO("blocks " << to_string(b));
        const auto blocked = label(v, s, threshold, b, 2);
        CHECK(blocked.labels == whole.labels);
        check_same_stats(blocked.stats, whole.stats);
      }
    }
  }
}

TEST_CASE("geobodies: the meta execution allocates flagged bounds, the real one the actual sizes") {
  const shape3 s{5, 4, 11};
  const auto v = random_cube(s, 11);
  std::vector<std::int32_t> labels(s.voxels());
  const cube_view<const float> in(v.data(), s);
  for (float threshold : {0.0f, 0.5f, 0.8f, 1.0f}) {
    INFO("threshold " << threshold);
    const auto real = events_of<host_context>(
        [&](auto& ctx) { operators::geobodies(ctx, in, cube_view<std::int32_t>(labels.data(), s), {threshold}); });
    const auto meta = events_of<meta_context>([&](auto& ctx) {
      operators::geobodies(ctx, cube_view<const float>(nullptr, s), cube_view<std::int32_t>(nullptr, s), {threshold});
    });
    check_real_against_plan(real, meta);
    const auto real_blocked = events_of<host_context>([&](auto& ctx) {
      operators::geobodies_blocked(ctx, in, cube_view<std::int32_t>(labels.data(), s), {2, 3, 4}, {threshold});
    });
    const auto meta_blocked = events_of<meta_context>([&](auto& ctx) {
      operators::geobodies_blocked(ctx, cube_view<const float>(nullptr, s), cube_view<std::int32_t>(nullptr, s),
                                   {2, 3, 4}, {threshold});
    });
    check_real_against_plan(real_blocked, meta_blocked);
  }
}

TEST_CASE("geobodies from the catalogue writes the kernel's labels as int32 and stays within its planned bounds") {
  const auto op = operators::catalogue().find("geobodies").configure({{"threshold", 0.6}});
  CHECK(op->outputs().size() == 1);
  CHECK(op->outputs()[0].type == dtype::int32);
  CHECK(op->halo().whole_axes() == std::array<bool, 3>{true, true, true});
  const shape3 s{5, 6, 40};
  const auto v = random_cube(s, 4);
  const auto run = test::run_real(*op, v, s, 2);
  REQUIRE(run.outputs.size() == 1);
  const auto expected = label(v, s, 0.6f).labels;
  REQUIRE(run.outputs[0].bytes.size() == expected.size() * sizeof(std::int32_t));
  const auto* got = run.outputs[0].as<std::int32_t>();
  CHECK(std::vector<std::int32_t>(got, got + expected.size()) == expected);
  CHECK(*std::max_element(got, got + expected.size()) > 1);  // several bodies at this threshold
  // Real events equal the plan's but for the flagged bounds, which they stay within.
  test::check_plan_matches_run(*op, {s, shape3{1, 1, 1}, shape3{3, 1, 17}, shape3{2, 7, 9}}, true);
}

TEST_CASE("geobodies rejects labels of another shape and empty blocks") {
  recorder rec;
  event_bus bus(rec);
  meta_context ctx(bus);
  const cube_view<const float> in(nullptr, {2, 2, 2});
  CHECK_THROWS_AS(operators::geobodies(ctx, in, cube_view<std::int32_t>(nullptr, {2, 2, 3})), invalid_input);
  CHECK_THROWS_AS(operators::geobodies_blocked(ctx, in, cube_view<std::int32_t>(nullptr, {2, 2, 2}), {0, 1, 1}),
                  invalid_input);
}

TEST_CASE("a trace keeps the bound flag in an optional last column") {
  const shape3 s{2, 3, 8};
  const auto meta = events_of<meta_context>([&](auto& ctx) {
    operators::geobodies_blocked(ctx, cube_view<const float>(nullptr, s), cube_view<std::int32_t>(nullptr, s),
                                 {1, 2, 5});
  });
  std::ostringstream out;
  sim::write_trace_csv(out, meta);
  CHECK(out.str().rfind("action,id,bytes,device,node,role,bound\n", 0) == 0);
  std::istringstream in(out.str());
  CHECK(sim::read_trace_csv(in) == meta);

  SECTION("a trace without bounds keeps six columns") {
    const auto real = events_of<host_context>([&](auto& ctx) { ctx.template allocate<float>(3, buffer_role::input); });
    std::ostringstream six;
    sim::write_trace_csv(six, real);
    CHECK(six.str() == "action,id,bytes,device,node,role\nalloc,1,12,host,0,input\nfree,1,12,host,0,input\n");
  }
  SECTION("the column reads 0, 1 or nothing; a free takes its alloc's") {
    auto read = [](const std::string& text) {
      std::istringstream t(text);
      return sim::read_trace_csv(t, "t.csv");
    };
    const std::string h = "action,id,bytes,device,node,role,bound\n";
    const auto e = read(h + "alloc,1,8,host,0,output,1\nalloc,2,8,host,0,output,\nfree,1\nfree,2,8,host,0,output,0\n");
    CHECK(e[0].bound);
    CHECK_FALSE(e[1].bound);
    CHECK(e[2].bound);
    CHECK_THROWS_WITH(read(h + "alloc,1,8,host,0,output,yes\n"),
                      Catch::Contains("t.csv:2: bound 'yes'; expected 0 or 1"));
    CHECK_THROWS_WITH(read(h + "alloc,1,8,host,0,output,1\nfree,1,8,host,0,output,0\n"),
                      Catch::Contains("t.csv:3: free of buffer 1 with bound 0, but it was allocated with bound 1"));
    CHECK_THROWS_WITH(read(h + "alloc,1,8,host,0,output,1,x\n"), Catch::Contains("expected 2 to 7"));
  }
}

namespace {

/// The rows of graph `g`'s table `table` from a chunked run on `v` (shape s)
/// into a memory sink, with chunk `chunk` (empty: whole cube) and W workers.
std::vector<std::byte> chunked_table(const graph& g, const std::vector<float>& v, shape3 s, shape3 chunk,
                                     std::size_t workers, std::size_t table = 0) {
  std::vector<table_spec> specs;
  for (const auto& t : g.tables()) specs.push_back(g.nodes()[t.node].tables[t.table]);
  std::vector<std::vector<float>> cubes;
  std::vector<array_ref> refs;
  cubes.reserve(g.outputs().size());
  for (const auto& r : g.outputs()) {
    const auto type = g.nodes()[r.node].outputs[r.output].type;
    cubes.emplace_back(s.voxels() * size_of(type) / sizeof(float));
    refs.push_back({type, cubes.back().data(), s});
  }
  memory_block_sink sink(refs, specs);
  const memory_block_source in(cube_view<const float>(v.data(), s));
  run_chunked(g, in, &sink, {.chunk = chunk, .workers = workers});
  return sink.table_rows(table);
}

template <class Row>
std::vector<std::byte> bytes_of(const std::vector<Row>& rows) {
  std::vector<std::byte> out(rows.size() * sizeof(Row));
  std::memcpy(out.data(), rows.data(), out.size());
  return out;
}

}  // namespace

TEST_CASE("event_picks from the catalogue: a chunked run's table equals the kernel's on the whole cube") {
  const shape3 s{7, 9, 60};
  const auto v = random_cube(s, 11);
  const auto g = graph::single(operators::catalogue(), "event_picks", {{"threshold", 0.4}});
  REQUIRE(g.outputs().empty());
  REQUIRE(g.tables().size() == 1);
  CHECK(g.table_name(g.tables()[0]) == "event_picks_picks");
  const auto expected = bytes_of(picks_of(v, s, {.threshold = 0.4f}));
  REQUIRE(expected.size() > 100 * sizeof(pick));
  for (const shape3 chunk : {shape3{}, shape3{1, 1, 60}, shape3{3, 4, 60}, shape3{7, 2, 60}})
    for (std::size_t workers : {1, 3}) {
      INFO("chunk " << to_string(chunk) << ", " << workers << " workers");
      CHECK(chunked_table(g, v, s, chunk, workers) == expected);
    }
  // Time is read whole: a chunk that splits it is refused.
  CHECK_THROWS_AS(chunked_schedule(g, s, {.chunk = {7, 9, 30}}), invalid_input);
  // Real events equal the plan's but for the flagged bound, which they stay within.
  test::check_plan_matches_run(*g.nodes()[0].op, {s, shape3{1, 1, 1}, shape3{2, 3, 17}}, true);
}

TEST_CASE("a table behind a node with a halo keeps each pick once, from the block whose interior holds it") {
  // gaussian reads neighbours: blocks overlap by its halo, and the picks of a
  // halo trace belong to the neighbouring block.
  const shape3 s{9, 8, 48};
  const auto v = random_cube(s, 5);
  graph g(operators::catalogue());
  g.add("smooth", "gaussian").add("picks", "event_picks", {"smooth"}, {{"threshold", 0.5}}).build();
  REQUIRE(g.input_halo()[0] > 0);
  const auto whole = chunked_table(g, v, s, {}, 1);
  REQUIRE(whole.size() > 20 * sizeof(pick));
  for (const shape3 chunk : {shape3{3, 3, 48}, shape3{2, 8, 48}, shape3{9, 1, 48}})
    for (std::size_t workers : {1, 2}) {
      INFO("chunk " << to_string(chunk) << ", " << workers << " workers");
      CHECK(chunked_table(g, v, s, chunk, workers) == whole);
    }
}

TEST_CASE("geobodies from the catalogue writes its bodies table: the kernel's statistics, one row per label") {
  const shape3 s{6, 5, 30};
  const auto v = random_cube(s, 8);
  const auto g = graph::single(operators::catalogue(), "geobodies", {{"threshold", 0.7}});
  REQUIRE(g.tables().size() == 1);
  CHECK(g.nodes()[0].tables[0].row_bytes() == sizeof(body_stats));
  const auto expected = label(v, s, 0.7f);
  REQUIRE(expected.stats.size() > 3);
  CHECK(chunked_table(g, v, s, {}, 1) == bytes_of(expected.stats));
}

TEST_CASE("merge_segments orders rows by position across segments and keeps a segment's order for equal positions") {
  struct row {
    std::uint32_t at[3];
    std::uint32_t tag;      ///< ascending in the order of generation
    std::uint32_t segment;  ///< where it came from
  };
  splitmix64 rng{3};
  std::vector<std::vector<row>> segments(5);
  std::vector<row> all;
  std::uint32_t tag = 0;
  for (std::uint32_t k = 0; k < segments.size(); ++k) {
    auto& seg = segments[k];
    const auto n = rng.below(40);
    for (std::uint64_t i = 0; i < n; ++i)
      seg.push_back(
          row{{std::uint32_t(rng.below(3)), std::uint32_t(rng.below(3)), std::uint32_t(rng.below(5))}, tag++, k});
    std::stable_sort(seg.begin(), seg.end(), [](const row& a, const row& b) {
      return std::lexicographical_compare(a.at, a.at + 3, b.at, b.at + 3);
    });
  }
  std::vector<std::uint64_t> counts;
  for (const auto& seg : segments) counts.push_back(seg.size()), all.insert(all.end(), seg.begin(), seg.end());
  std::vector<row> merged;
  merge_segments(
      sizeof(row), counts,
      [&](std::size_t k, std::uint64_t first, std::uint64_t n, std::byte* dst) {
        std::memcpy(dst, segments[k].data() + first, n * sizeof(row));
      },
      [&](const std::byte* rows, std::uint64_t n) {
        const auto* r = reinterpret_cast<const row*>(rows);
        merged.insert(merged.end(), r, r + n);
      },
      7);  // small buffers: every segment is refilled several times
  REQUIRE(merged.size() == all.size());
  for (std::size_t i = 1; i < merged.size(); ++i) {
    const auto& a = merged[i - 1];
    const auto& b = merged[i];
    REQUIRE_FALSE(std::lexicographical_compare(b.at, b.at + 3, a.at, a.at + 3));
    // Equal positions of one segment keep its order (stable_sort kept their tags ascending).
    if (std::equal(a.at, a.at + 3, b.at) && a.segment == b.segment) CHECK(a.tag < b.tag);
  }
  std::multiset<std::uint32_t> tags_in, tags_out;
  for (const auto& r : all) tags_in.insert(r.tag);
  for (const auto& r : merged) tags_out.insert(r.tag);
  CHECK(tags_in == tags_out);
}

TEST_CASE("interior_rows keeps the rows of a block's interior, moved to the cube's indices") {
  block b;
  b.begin = {4, 2, 0}, b.end = {6, 5, 10};
  b.ext_begin = {3, 1, 0}, b.ext_end = {7, 6, 10};
  const std::vector<pick> rows{{0, 1, 2, 1.0f}, {1, 1, 3, 2.0f}, {2, 3, 4, 3.0f}, {3, 1, 5, 4.0f}, {1, 4, 6, 5.0f}};
  std::vector<pick> kept;
  interior_rows(b, sizeof(pick), rows.data(), rows.size(), [&](const std::byte* r) {
    pick p;
    std::memcpy(&p, r, sizeof p);
    kept.push_back(p);
  });
  CHECK(kept == std::vector<pick>{{4, 2, 3, 2.0f}, {5, 4, 4, 3.0f}});
}

TEST_CASE("an npy sink writes a table as a structured .npy of the merged rows, and nothing without a commit") {
  const shape3 s{4, 6, 40};
  const auto v = random_cube(s, 21);
  const auto g = graph::single(operators::catalogue(), "event_picks", {{"threshold", 0.3}});
  const auto spec = g.nodes()[0].tables[0];
  const auto expected = chunked_table(g, v, s, {}, 1);
  const test::temp_dir dir;
  const memory_block_source in(cube_view<const float>(v.data(), s));
  {
    npy_block_sink abandoned({}, s, {{dir / "abandoned.npy", spec}});
    run_chunked(g, in, &abandoned, {.chunk = {2, 3, 40}, .workers = 2});
  }
  CHECK(dir.entries().empty());
  npy_block_sink sink({}, s, {{dir / "picks.npy", spec}});
  run_chunked(g, in, &sink, {.chunk = {2, 3, 40}, .workers = 2});
  sink.commit();
  std::ifstream file(dir / "picks.npy", std::ios::binary);
  const std::string content((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const auto rows = expected.size() / sizeof(pick);
  const std::string header =
      io::npy_header_bytes("[('inline', '<u4'), ('crossline', '<u4'), ('sample', '<u4'), ('value', '<f4')]", {rows});
  CHECK(content.find("'shape': (" + std::to_string(rows) + ",)") != std::string::npos);
  REQUIRE(content.size() == header.size() + expected.size());
  CHECK(content.substr(0, header.size()) == header);
  CHECK(std::memcmp(content.data() + header.size(), expected.data(), expected.size()) == 0);
  CHECK(dir.entries() == std::vector<std::string>{"picks.npy"});
}
