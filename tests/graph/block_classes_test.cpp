// Block classes: they partition the blocks by shape, count each worker's blocks
// of each shape as a walk over the blocks does, and the plans built on them
// (exact, and under allocator models) equal the meta execution of every block.

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include "dwsr/graph/model_plan.hpp"
#include "dwsr/memory/peak_counter.hpp"
#include "operators/operator_test_support.hpp"

using namespace dwsr;

namespace {

/// A small deterministic generator for test choices.
struct chooser {
  std::uint64_t state;
  std::uint64_t below(std::uint64_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % n;
  }
  std::uint64_t between(std::uint64_t lo, std::uint64_t hi) { return lo + below(hi - lo + 1); }
};

/// A random chunking: cube extents 1..12, chunks 1..extent, halos 0..5.
chunking random_chunking(chooser& ch) {
  const shape3 cube{ch.between(1, 12), ch.between(1, 12), ch.between(1, 12)};
  const shape3 chunk{ch.between(1, cube.inlines), ch.between(1, cube.crosslines), ch.between(1, cube.samples)};
  return chunking(cube, chunk, {ch.below(6), ch.below(6), ch.below(6)});
}

/// "AxBxC" for a box-filter kernel.
std::string kernel_text(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  std::string out = std::to_string(a);
  out += ',';
  out += std::to_string(b);
  out += ',';
  out += std::to_string(c);
  return out;
}

/// A box filter of a random odd kernel (halos 0..4 per axis), followed, one
/// time in two, by a cube-wide reduction (so that plans have several phases).
graph random_graph(chooser& ch) {
  graph g(operators::catalogue());
  g.add("box", "convolution", {"input"},
        {{"kernel", kernel_text(1 + 2 * ch.below(5), 1 + 2 * ch.below(5), 1 + 2 * ch.below(5))}});
  if (ch.below(2)) g.add("equalised", "histogram_equalization", {"box"});
  g.build();
  return g;
}

/// The plan of `s` by the meta execution of every block of every worker.
std::vector<worker_memory> walk_every_block(const chunked_schedule& s) {
  std::vector<worker_memory> out(s.workers());
  for (std::size_t w = 0; w < s.workers(); ++w) {
    peak_counter counter;
    std::uint64_t events = 0;
    struct counting {
      peak_counter* counter;
      std::uint64_t* events;
      void on_event(const event& e) { counter->on_event(e), ++*events; }
    } sink{&counter, &events};
    worker_events(s, w, sink);
    out[w] = {counter.peak(), s.blocks_of(w), events};
  }
  return out;
}

/// Each worker's peak under `spec`, feeding every block of every worker.
std::vector<std::uint64_t> replay_every_block(const chunked_schedule& s, const std::string& spec) {
  std::vector<std::uint64_t> out(s.workers());
  for (std::size_t w = 0; w < s.workers(); ++w) {
    auto model = sim::make_model(spec);
    worker_events(s, w, model);
    out[w] = model.stats().peak_reserved;
  }
  return out;
}

}  // namespace

TEST_CASE("the classes along an axis partition its blocks by extended and interior extent") {
  chooser ch{11};
  for (int trial = 0; trial < 300; ++trial) {
    const auto c = random_chunking(ch);
    for (int a = 0; a < 3; ++a) {
      INFO("cube " << to_string(c.cube()) << ", chunk " << to_string(c.chunk()) << ", axis " << a << ", halo "
                   << c.halo()[std::size_t(a)]);
      std::vector<int> seen(c.grid()[std::size_t(a)]);
      std::map<std::pair<std::uint64_t, std::uint64_t>, int> keys;
      const auto along = c.axis_classes(a);
      for (const auto& k : along.classes) CHECK(++keys[{k.extended, k.interior}] == 1);
      std::vector<std::uint64_t> count(along.classes.size()), first(along.classes.size(), ~0ull);
      std::uint64_t next = 0;
      for (const auto& r : along.runs) {
        CHECK(r.first == next);  // ascending and gap-free
        CHECK(r.first < r.last);
        next = r.last;
        REQUIRE(r.k < along.classes.size());
        const auto& k = along.classes[r.k];
        for (auto g = r.first; g < r.last; ++g) {
          const auto s = c.span(a, g);
          CHECK(s.ext_end - s.ext_begin == k.extended);
          CHECK(s.end - s.begin == k.interior);
          ++seen[g];
          ++count[r.k];
          first[r.k] = std::min(first[r.k], g);
        }
      }
      CHECK(next == c.grid()[std::size_t(a)]);
      for (const auto n : seen) CHECK(n == 1);
      for (std::size_t k = 0; k < along.classes.size(); ++k) {
        CHECK(along.classes[k].count == count[k]);
        CHECK(along.classes[k].first == first[k]);
      }
    }
  }
}

TEST_CASE("block classes count the blocks below any block number as a walk over the blocks does") {
  chooser ch{12};
  for (int trial = 0; trial < 200; ++trial) {
    const auto c = random_chunking(ch);
    const block_classes classes(c);
    INFO("cube " << to_string(c.cube()) << ", chunk " << to_string(c.chunk()));
    using key = std::array<std::uint64_t, 6>;  // extended, then interior shape
    auto key_of = [](shape3 e, shape3 i) {
      return key{e.inlines, e.crosslines, e.samples, i.inlines, i.crosslines, i.samples};
    };
    std::map<key, std::size_t> index;
    for (std::size_t k = 0; k < classes.classes().size(); ++k) {
      const auto& cls = classes.classes()[k];
      CHECK(cls.example.extended() == cls.extended);
      CHECK(cls.example.interior() == cls.interior);
      index[key_of(cls.extended, cls.interior)] = k;
    }
    std::vector<std::uint64_t> walked(classes.classes().size());
    for (std::uint64_t x = 0; x <= c.count(); ++x) {
      CHECK(classes.counts_below(x) == walked);
      if (x == c.count()) break;
      const auto b = c.at(x);
      const auto it = index.find(key_of(b.extended(), b.interior()));
      REQUIRE(it != index.end());
      ++walked[it->second];
    }
    for (std::size_t k = 0; k < walked.size(); ++k) CHECK(classes.classes()[k].count == walked[k]);
  }
}

TEST_CASE("workers run contiguous ranges that cover every block once, as evenly as possible") {
  const auto g = graph::single(operators::catalogue(), "convolution");
  for (const std::size_t workers : {1, 2, 5, 7, 40}) {
    const chunked_schedule s(g, {5, 6, 7}, {.chunk = {2, 2, 7}, .workers = workers});
    std::uint64_t next = 0;
    for (std::size_t w = 0; w < workers; ++w) {
      const auto [first, last] = s.range_of(w);
      CHECK(first == next);
      CHECK(last - first == s.blocks().count() / workers + (w < s.blocks().count() % workers ? 1 : 0));
      next = last;
    }
    CHECK(next == s.blocks().count());
  }
}

TEST_CASE("plans from block classes equal the meta execution of every block, exact and under allocator models") {
  chooser ch{2025};
  for (int trial = 0; trial < 60; ++trial) {
    const auto g = random_graph(ch);
    const auto c = random_chunking(ch);
    const chunked_options o{.chunk = c.chunk(), .workers = ch.between(1, 9), .threads = ch.between(1, 3)};
    const chunked_schedule s(g, c.cube(), o);
    INFO("trial " << trial << ": cube " << to_string(c.cube()) << ", chunk " << to_string(o.chunk) << ", halo "
                  << s.blocks().halo()[0] << "x" << s.blocks().halo()[1] << "x" << s.blocks().halo()[2] << ", "
                  << g.nodes().size() << " nodes, " << o.workers << " workers x " << o.threads << " threads");
    const auto plan = plan_chunked(s);
    const auto walked = walk_every_block(s);
    for (std::size_t w = 0; w < o.workers; ++w) {
      INFO("worker " << w);
      CHECK(plan.workers[w].peak == walked[w].peak);
      CHECK(plan.workers[w].events == walked[w].events);
      CHECK(plan.workers[w].blocks == walked[w].blocks);
    }
    for (const std::string spec : {"exact", "host_pages", "torch_cuda_caching", "host_malloc"}) {
      INFO("allocator model " << spec);
      CHECK(model_peaks(s, plan, spec) == replay_every_block(s, spec));
    }
    // What `dwsr dataset` does: one meta execution per class and phase for
    // both models, one count of each worker's blocks for both plans.
    const block_classes classes(s.blocks());
    const auto steps =
        detail::measure_classes_under(s, classes, detail::run_phase_reductions(s), {"exact", "host_pages"});
    const auto plans = detail::plans_from_classes(s, classes, steps);
    REQUIRE(plans.size() == 2);
    const auto pages = replay_every_block(s, "host_pages");
    for (std::size_t w = 0; w < o.workers; ++w) {
      INFO("worker " << w << ", shared measurement");
      CHECK(plans[0].workers[w].peak == walked[w].peak);
      CHECK(plans[0].workers[w].events == walked[w].events);
      CHECK(plans[1].workers[w].peak == pages[w]);
      CHECK(plans[1].workers[w].blocks == walked[w].blocks);
    }
    CHECK(plans[1].halo_overhead == plan.halo_overhead);
    // The dataset's labels need only the highest worker's peak: the highest class's.
    CHECK(steps[0].highest_peak() == plan.peak());
    CHECK(steps[1].highest_peak() == *std::max_element(pages.begin(), pages.end()));
  }
}

TEST_CASE("the halo's cost and the largest block come from the runs of blocks as from a walk over every block") {
  chooser ch{77};
  for (int trial = 0; trial < 300; ++trial) {
    const auto c = random_chunking(ch);
    INFO("cube " << to_string(c.cube()) << ", chunk " << to_string(c.chunk()) << ", halo " << c.halo()[0] << "x"
                 << c.halo()[1] << "x" << c.halo()[2]);
    double read = 0;
    std::array<std::uint64_t, 3> largest{};
    for (std::uint64_t i = 0; i < c.count(); ++i) {
      const auto e = c.at(i).extended();
      read += double(e.voxels());
      for (int a = 0; a < 3; ++a) largest[std::size_t(a)] = std::max(largest[std::size_t(a)], e[a]);
    }
    CHECK(c.read_voxels() == read);
    CHECK(c.halo_overhead() == read / double(c.cube().voxels()) - 1.0);
    for (int a = 0; a < 3; ++a) CHECK(c.largest_extended(a) == largest[std::size_t(a)]);
  }
}

TEST_CASE("plans of cubes far larger than memory take one block per shape") {
  const auto g = graph::single(operators::catalogue(), "gaussian");
  const chunked_schedule s(g, {100000, 100000, 100000}, {.chunk = {64, 64, 64}, .workers = 4, .threads = 2});
  const auto plan = plan_chunked(s);
  CHECK(plan.blocks == 1563ull * 1563 * 1563);
  std::uint64_t blocks = 0;
  for (const auto& w : plan.workers) blocks += w.blocks;
  CHECK(blocks == plan.blocks);
  // The middle blocks are 64 + 2 x 4 on a side: an input and an output.
  CHECK(plan.peak() >= 2 * 72ull * 72 * 72 * sizeof(float));
  CHECK(model_peaks(s, plan, "host_pages")[0] >= plan.workers[0].peak);
}

TEST_CASE("chunks far below the halo, and caching models over too many events, are clear errors") {
  graph g(operators::catalogue());
  g.add("box", "convolution", {"input"}, {{"kernel", "81,81,81"}});
  g.build();
  CHECK_THROWS_AS(plan_chunked(g, {200, 200, 200}, {.chunk = {1, 1, 1}}), invalid_input);
  CHECK_THROWS_WITH(plan_chunked(g, {200, 200, 200}, {.chunk = {1, 1, 1}}),
                    Catch::Contains("distinct block shapes") && Catch::Contains("e.g. 40x40x40"));
  const auto envelope = graph::single(operators::catalogue(), "envelope");
  const chunked_schedule s(envelope, {4000, 4000, 8}, {.chunk = {1, 1, 8}, .workers = 3});
  const auto plan = plan_chunked(s);
  CHECK_THROWS_WITH(model_peaks(s, plan, "torch_cuda_caching"),
                    Catch::Contains("torch_cuda_caching") && Catch::Contains("replays every event"));
  CHECK_NOTHROW(model_peaks(s, plan, "host_pages"));
  // Measuring one block shape at a time is for models without a cache only.
  const chunked_schedule small(envelope, {8, 8, 8}, {.chunk = {4, 8, 8}});
  const block_classes classes(small.blocks());
  CHECK_THROWS_WITH(
      detail::measure_classes_under(small, classes, detail::run_phase_reductions(small), {"exact", "host_malloc"}),
      Catch::Contains("'host_malloc' keeps a cache") && Catch::Contains("expected exact or host_pages"));
  // A whole-unit model's name with settings is make_model's error, not a model taken by its name.
  CHECK_THROWS_WITH(
      detail::measure_classes_under(small, classes, detail::run_phase_reductions(small), {"host_pages:4096"}),
      Catch::Contains("'host_pages' takes no settings"));
  CHECK_THROWS_WITH(model_peaks(s, plan, "exact:1"), Catch::Contains("'exact' takes no settings"));
}
