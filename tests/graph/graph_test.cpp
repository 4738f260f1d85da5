// Graphs: validation, schedules, chunked execution equal to whole-cube
// execution bit for bit, and per-worker peaks predicted exactly.

#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>

#include "dwsr/graph/chunked.hpp"
#include "dwsr/graph/graph_json.hpp"
#include "dwsr/graph/random_graph.hpp"
#include "dwsr/memory/recorder.hpp"
#include "io/temp_dir.hpp"
#include "operators/operator_test_support.hpp"

using namespace dwsr;
using namespace dwsr::test;

namespace {

/// Whole-cube outputs of `g` (one block), as bytes per graph output.
std::vector<std::vector<std::byte>> run_whole(const graph& g, const std::vector<float>& cube, shape3 shape,
                                              chunked_options o = {}) {
  std::vector<std::vector<std::byte>> outs;
  std::vector<array_ref> refs;
  for (const auto& r : g.outputs()) {
    const auto type = g.nodes()[r.node].outputs[r.output].type;
    outs.emplace_back(shape.voxels() * size_of(type));
    refs.push_back({type, outs.back().data(), shape});
  }
  memory_block_source source(cube_view<const float>(cube.data(), shape));
  memory_block_sink sink(refs);
  run_chunked(g, source, &sink, o);
  return outs;
}

/// "" when equal, else where the first output differs (and how many bytes).
std::string difference(const std::vector<std::vector<std::byte>>& a, const std::vector<std::vector<std::byte>>& b) {
  if (a.size() != b.size()) return "output counts differ";
  for (std::size_t o = 0; o < a.size(); ++o) {
    if (a[o].size() != b[o].size()) return "output " + std::to_string(o) + " sizes differ";
    std::size_t first = a[o].size(), count = 0;
    for (std::size_t i = 0; i < a[o].size(); ++i)
      if (a[o][i] != b[o][i]) first = std::min(first, i), ++count;
    if (count)
      return "output " + std::to_string(o) + ": " + std::to_string(count) + " bytes differ, first at byte " +
             std::to_string(first);
  }
  return "";
}

/// A small deterministic generator for test choices.
struct chooser {
  std::uint64_t state;
  std::uint64_t below(std::uint64_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % n;
  }
};

/// A random graph of `nodes` nodes over the chainable operators (and, when
/// there are two earlier float cubes, sometimes a two-input combination).
graph random_graph(chooser& ch, std::size_t nodes) {
  const auto ops = chainable_operators(operators::catalogue());
  std::vector<node_spec> specs;
  std::vector<std::string> cubes = {"input"};
  for (std::size_t k = 0; k < nodes; ++k) {
    node_spec s;
    s.name = "n";  // appended, not "n" + ...: GCC 12 warns falsely (-Wrestrict) on that form here
    s.name += std::to_string(k);
    if (cubes.size() >= 2 && ch.below(4) == 0) {
      s.op = ch.below(2) ? "sweetness_from" : "dominant_frequency_from";
      s.inputs = {cubes[ch.below(cubes.size())], cubes[ch.below(cubes.size())]};
    } else {
      s.op = ops[ch.below(ops.size())];
      s.inputs = {cubes[ch.below(cubes.size())]};
    }
    s.keep = ch.below(3) == 0;
    specs.push_back(s);
    cubes.push_back(s.name);
  }
  return graph::from_specs(operators::catalogue(), specs);
}

/// A random chunk for a cube: any extents, time whole when the graph needs it.
shape3 random_chunk(chooser& ch, const graph& g, shape3 cube) {
  const auto whole = g.whole_axes();
  shape3 c{1 + ch.below(cube.inlines), 1 + ch.below(cube.crosslines), cube.samples};
  if (!whole[2] && ch.below(2)) c.samples = 1 + ch.below(cube.samples);
  if (whole[0]) c.inlines = cube.inlines;
  if (whole[1]) c.crosslines = cube.crosslines;
  return c;
}

/// A fixed chunk made legal for the graph (axes it reads whole stay whole).
shape3 legal(const graph& g, shape3 chunk, shape3 cube) {
  const auto whole = g.whole_axes();
  return {whole[0] ? cube.inlines : chunk.inlines, whole[1] ? cube.crosslines : chunk.crosslines,
          whole[2] ? cube.samples : chunk.samples};
}

}  // namespace

TEST_CASE("graphs are validated with errors naming the node and the problem") {
  using Catch::Contains;
  CHECK_THROWS_WITH(graph::from_specs(operators::catalogue(), {}), Contains("no nodes"));
  CHECK_THROWS_WITH(graph::from_specs(operators::catalogue(), {{"a", "envelop"}}),
                    Contains("unknown operator 'envelop'"));
  CHECK_THROWS_WITH(graph::from_specs(operators::catalogue(), {{"a", "sweetness_from", {}, {"input"}}}),
                    Contains("'a': operator 'sweetness_from' takes 2 inputs, got 1"));
  CHECK_THROWS_WITH(
      graph::from_specs(operators::catalogue(), {{"a", "envelope", {}, {"b"}}, {"b", "envelope", {}, {"a"}}}),
      Contains("cycle through nodes: a, b"));
  CHECK_THROWS_WITH(graph::from_specs(operators::catalogue(), {{"a", "envelope", {}, {"ghost"}}}),
                    Contains("'a' reads 'ghost'"));
  CHECK_THROWS_WITH(graph::from_specs(operators::catalogue(), {{"a", "envelope"}, {"a", "envelope"}}),
                    Contains("'a' is defined twice"));
  CHECK_THROWS_WITH(graph::from_specs(operators::catalogue(), {{"h", "hilbert"}, {"e", "envelope", {}, {"h"}}}),
                    Contains("complex64"));
  CHECK_THROWS_WITH(graph::from_specs(operators::catalogue(), {{"e", "envelope"}, {"f", "envelope", {}, {"e.xl"}}}),
                    Contains("no output 'xl'"));
  CHECK_THROWS_WITH(graph::from_specs(operators::catalogue(), {{"e", "envelope", {{"sigma", "1"}}}}),
                    Contains("no parameter 'sigma'"));
}

// A crash of the fuzz harness (fuzz/corpus/graph_json/crash-number-overflow.json): a
// number beyond double's range escaped read_graph as nlohmann's out_of_range,
// an internal error of the tool instead of a message about the file.
TEST_CASE("a graph file with a number JSON cannot hold is invalid input naming the file") {
  temp_dir dir;
  const auto path = dir / "huge.json";
  std::ofstream(path) << R"({"nodes": [{"name": "a", "op": "envelope", "params": {"x": 1e999}}]})";
  CHECK_THROWS_AS(read_graph(path, operators::catalogue()), invalid_input);
  CHECK_THROWS_WITH(read_graph(path, operators::catalogue()),
                    Catch::Contains("huge.json' holds a value dwsr cannot represent") && Catch::Contains("1e999"));
}

TEST_CASE("node names are plain names, so that output files stay in their directory") {
  for (const std::string ok : {"env", "Env_1", "a-b", "_x", "0"}) CHECK(valid_node_name(ok));
  CHECK(valid_node_name(std::string(max_node_name, 'n')));
  for (const std::string bad :
       {"", "input", "/tmp/somewhere", "a/b", "..", ".hidden", "a.b", "-x", "a b", "a\nb", "caf\xc3\xa9"})
    CHECK_FALSE(valid_node_name(bad));
  CHECK_FALSE(valid_node_name(std::string(max_node_name + 1, 'n')));
  CHECK_THROWS_WITH(graph::from_specs(operators::catalogue(), {{"a/b", "envelope"}}),
                    Catch::Contains("graph node name 'a/b'") && Catch::Contains("letters, digits, '_' or '-'"));
  CHECK_THROWS_WITH(graph::from_specs(operators::catalogue(), {{"a\x1b[2J", "envelope"}}),
                    Catch::Contains(R"('a\x1b[2J')"));
}

TEST_CASE("a graph's halo composes along paths and its outputs are its sinks and kept nodes") {
  graph g(operators::catalogue());
  g.add("rac", "relative_amplitude_change")
      .add("aa", "amplitude_acceleration", {"rac"})
      .add("env", "envelope", {"input"}, {}, true)
      .add("sw", "sweetness_from", {"env", "aa"});
  g.build();
  CHECK(g.input_halo() == std::array<std::uint64_t, 3>{3, 3, 0});
  CHECK(g.needs_whole_traces());
  std::vector<std::string> names;
  for (const auto& r : g.outputs()) names.push_back(g.output_name(r));
  CHECK(names == std::vector<std::string>{"env", "sw"});
  // What executions read instead of deriving it per block: who reads each
  // output last (itself when nobody does), and which outputs are the graph's.
  std::vector<std::size_t> last, index;
  for (const auto& n : g.nodes()) {
    last.insert(last.end(), n.last_reader.begin(), n.last_reader.end());
    index.insert(index.end(), n.graph_output.begin(), n.graph_output.end());
  }
  const std::size_t none = graph::no_output;
  CHECK(last == std::vector<std::size_t>{1, 3, 3, 3});  // rac -> aa, aa -> sw, env -> sw, sw itself
  CHECK(index == std::vector<std::size_t>{none, none, 0, 1});
  // An execution's slots: one per node output, in node then output order.
  graph multi(operators::catalogue());
  multi.add("dips", "gst_2d_dips").add("env", "envelope").add("sw", "sweetness_from", {"env", "dips.xl"});
  multi.build();
  std::vector<std::size_t> first;
  for (const auto& n : multi.nodes()) first.push_back(n.first_slot);
  CHECK(first == std::vector<std::size_t>{0, 2, 3});
  CHECK(multi.slots() == 4);
  CHECK(multi.most_inputs() == 2);
  CHECK(multi.most_outputs() == 2);
}

TEST_CASE("chunked outputs equal whole-cube outputs bit for bit, for every operator") {
  const shape3 cube{7, 9, 24};
  const auto data = noise(cube, 3);
  for (const auto& e : operators::catalogue().entries()) {
    if (e.configure()->arity() != 1) continue;
    const auto g = graph::single(operators::catalogue(), e.name);
    const auto whole = run_whole(g, data, cube);
    for (const shape3 fixed : {shape3{1, 1, 24}, shape3{2, 4, 24}, shape3{3, 9, 24}, shape3{4, 5, 7}}) {
      const auto chunk = legal(g, fixed, cube);
      INFO(e.name << " with chunk " << to_string(chunk));
      CHECK(difference(run_whole(g, data, cube, {.chunk = chunk, .workers = 2, .threads = 2}), whole) == "");
    }
  }
}

TEST_CASE("chunked outputs equal whole-cube outputs bit for bit, for random graphs of up to 5 nodes") {
  const shape3 cube{6, 7, 20};
  const auto data = noise(cube, 5);
  chooser ch{2024};
  for (int trial = 0; trial < 12; ++trial) {
    const auto g = random_graph(ch, 1 + ch.below(5));
    const auto whole = run_whole(g, data, cube);
    const auto chunk = random_chunk(ch, g, cube);
    std::string desc;
    for (const auto& n : g.nodes()) desc += n.spec.name + "=" + n.spec.op + " ";
    INFO("graph " << desc << "chunk " << to_string(chunk));
    CHECK(difference(run_whole(g, data, cube, {.chunk = chunk, .workers = 1 + ch.below(3), .threads = 1 + ch.below(2)}),
                     whole) == "");
  }
}

TEST_CASE("the plan predicts every worker's peak and event stream exactly") {
  const shape3 cube{6, 8, 20};
  const auto data = noise(cube, 9);
  chooser ch{77};
  auto check = [&](const graph& g, chunked_options o) {
    memory_block_source source(cube_view<const float>(data.data(), cube));
    std::vector<recorder> recorded(o.workers);
    std::vector<event_sink_ref> sinks(recorded.begin(), recorded.end());
    const auto measured = run_chunked(g, source, nullptr, o, sinks);
    const auto predicted = plan_chunked(g, cube, o);
    // Data-dependent operators plan bounds: the run stays within them.
    const bool bound = plan_is_bound(chunked_schedule(g, cube, o));
    for (std::size_t w = 0; w < o.workers; ++w) {
      INFO("worker " << w << " of " << o.workers << ", " << o.threads << " threads, chunk " << to_string(o.chunk));
      if (bound)
        CHECK(measured.workers[w].peak <= predicted.workers[w].peak);
      else
        CHECK(predicted.workers[w].peak == measured.workers[w].peak);
      CHECK(predicted.workers[w].events == measured.workers[w].events);
      recorder planned;
      worker_events(chunked_schedule(g, cube, o), w, planned);
      CHECK(realises(recorded[w].events(), planned.events()));
    }
  };
  for (const auto& e : operators::catalogue().entries()) {
    if (e.configure()->arity() != 1) continue;
    const auto g = graph::single(operators::catalogue(), e.name);
    INFO(e.name);
    check(g, {.chunk = random_chunk(ch, g, cube), .workers = 1 + ch.below(3), .threads = 1 + ch.below(3)});
  }
  for (int trial = 0; trial < 10; ++trial) {
    const auto g = random_graph(ch, 1 + ch.below(5));
    check(g, {.chunk = random_chunk(ch, g, cube), .workers = 1 + ch.below(3), .threads = 1 + ch.below(3)});
  }
}

TEST_CASE("a plan is a bound exactly when a data-dependent operator runs in it") {
  const shape3 cube{4, 5, 32};
  auto bound = [&](const graph& g) { return plan_is_bound(chunked_schedule(g, cube, {.threads = 2})); };
  CHECK(bound(graph::single(operators::catalogue(), "geobodies")));
  CHECK_FALSE(bound(graph::single(operators::catalogue(), "envelope")));
  CHECK_FALSE(bound(graph::single(operators::catalogue(), "rgb_blending")));  // a reduction phase, no bound
  // Downstream of a float cube, in a graph.
  CHECK(bound(graph::from_specs(operators::catalogue(), {{"env", "envelope"}, {"bodies", "geobodies", {}, {"env"}}})));
}

TEST_CASE("axes an operator reads whole may not be split") {
  CHECK_THROWS_WITH(plan_chunked(graph::single(operators::catalogue(), "envelope"), {4, 4, 64}, {.chunk = {2, 2, 32}}),
                    Catch::Contains("splits the time axis, but envelope reads whole traces"));
  CHECK_THROWS_WITH(plan_chunked(graph::single(operators::catalogue(), "lbp3d"), {4, 4, 64}, {.chunk = {2, 4, 64}}),
                    Catch::Contains("splits the inline axis, but lbp3d wraps around the inline faces"));
  CHECK_NOTHROW(plan_chunked(graph::single(operators::catalogue(), "lbp2d"), {4, 4, 64}, {.chunk = {1, 4, 64}}));
  // geobodies' labels are global: it runs on the whole cube, so chunked equals whole.
  for (const shape3 chunk : {shape3{2, 4, 64}, shape3{4, 2, 64}, shape3{4, 4, 32}})
    CHECK_THROWS_WITH(
        plan_chunked(graph::single(operators::catalogue(), "geobodies"), {4, 4, 64}, {.chunk = chunk}),
        Catch::Contains("but geobodies needs the whole cube at once (its result is global); use a chunk"));
}

TEST_CASE("exceeding a worker's budget raises out_of_memory and leaves no output file") {
  const shape3 cube{6, 8, 32};
  const auto data = noise(cube, 1);
  graph g(operators::catalogue());
  g.add("env", "envelope").add("rac", "relative_amplitude_change", {"env"});
  g.build();
  const chunked_options o{.chunk = {2, 8, 32}, .workers = 2, .threads = 1};
  const auto predicted = plan_chunked(g, cube, o).peak();
  temp_dir dir;
  memory_block_source source(cube_view<const float>(data.data(), cube));
  {
    npy_block_sink sink({{dir / "rac.npy", dtype::float32}}, cube);
    auto tight = o;
    tight.budget = predicted - 1;
    try {
      run_chunked(g, source, &sink, tight);
      FAIL("no out_of_memory");
    } catch (const out_of_memory& e) {
      const std::string msg = e.what();
      INFO(msg);
      CHECK(msg.find("worker") != std::string::npos);
      CHECK(msg.find("graph node '") != std::string::npos);
      CHECK(msg.find("budget of " + std::to_string(predicted - 1)) != std::string::npos);
      CHECK(e.budget() == predicted - 1);
    }
  }
  CHECK(dir.entries().empty());
  // Exactly the predicted budget is enough.
  npy_block_sink sink({{dir / "rac.npy", dtype::float32}}, cube);
  auto exact = o;
  exact.budget = predicted;
  run_chunked(g, source, &sink, exact);
  sink.commit();
  const auto whole = run_whole(g, data, cube);
  const auto written = io::load_npy<float>(dir / "rac.npy");
  CHECK(std::memcmp(written.data.data(), whole[0].data(), whole[0].size()) == 0);
}
