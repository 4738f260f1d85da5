// The training-data generator: determinism, labels equal to the plan and the
// advisor on the configuration a row's features describe, the code features
// of known operators, the splits' rules, the files, and bad options.

#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>

#include "dwsr/graph/dataset_files.hpp"
#include "dwsr/io/npy.hpp"
#include "io/temp_dir.hpp"
#include "operators/operator_test_support.hpp"

using namespace dwsr;

namespace {

/// Index of the column named `name`.
std::size_t col(const std::vector<column>& cs, const std::string& name) {
  for (std::size_t k = 0; k < cs.size(); ++k)
    if (cs[k].name == name) return k;
  FAIL("no column " << name);
  return 0;
}

/// What a row's features say about its configuration.
struct row_config {
  graph g;
  execution_config e;
};

row_config config_of(const dataset& d, std::uint64_t row) {
  const auto nf = d.features.size();
  auto f = [&](const char* name) { return static_cast<std::uint64_t>(d.x[row * nf + col(d.features, name)]); };
  row_config c{graph_from_json(d.graphs.at(std::size_t(d.graph_of_row[row])), operators::catalogue()), {}};
  c.e.cube = {f("inlines"), f("crosslines"), f("samples")};
  if (d.task == dataset_task::peak) c.e.chunk = {f("chunk_inlines"), f("chunk_crosslines"), f("chunk_samples")};
  c.e.workers = f("workers");
  c.e.threads = f("threads");
  // The budget is a float32 feature; the exact bytes are whole MiB, which float32 holds exactly.
  c.e.budget = f("budget");
  for (const auto& [name, doc] : sim::model_catalogue())
    if (f(("allocator_" + std::string(name)).c_str())) c.e.allocator = name;
  return c;
}

double label(const dataset& d, std::uint64_t row, const std::string& name) {
  return d.y[row * d.labels.size() + col(d.labels, name)];
}

sim::time_profile flat_profile() {
  sim::time_profile p;
  p.cpu = "test";
  p.cores = 8;
  p.created = "2026-11-23T00:00:00Z";
  p.trace_samples = 64;
  p.copy = {1e-4, {{1, 1e-9}}};
  for (const auto& e : operators::catalogue().entries()) p.operators[e.name] = {1e-3, {{1, 1e-8}}};
  return p;
}

}  // namespace

TEST_CASE("a dataset is a function of its options and seed") {
  dataset_options o;
  o.rows = 150;
  o.random_graphs = 16;
  o.seed = 7;
  const auto a = make_dataset(operators::catalogue(), o), b = make_dataset(operators::catalogue(), o);
  CHECK(a.x == b.x);
  CHECK(a.y == b.y);
  CHECK(a.split == b.split);
  CHECK(a.graph_of_row == b.graph_of_row);
  CHECK(a.graphs == b.graphs);
  REQUIRE(a.rows() == 150);
  CHECK(a.x.size() == 150 * a.features.size());
  CHECK(a.y.size() == 150 * a.labels.size());
  o.seed = 8;
  const auto c = make_dataset(operators::catalogue(), o);
  CHECK(c.x != a.x);
  CHECK(c.y != a.y);
  // The pool: every single-input operator alone, then the random graphs.
  std::size_t singles = 0;
  for (const auto& e : operators::catalogue().entries()) singles += e.configure()->arity() == 1;
  CHECK(a.graphs.size() == singles + 16);
}

TEST_CASE("peak labels are the plan's figures for the configuration the features describe") {
  dataset_options o;
  o.rows = 120;
  o.random_graphs = 32;
  o.seed = 11;
  const auto p = flat_profile();
  o.profile = &p;
  const auto d = make_dataset(operators::catalogue(), o);
  CHECK(d.labels.back().name == "makespan");
  std::uint64_t oom = 0;
  for (std::uint64_t row = 0; row < d.rows(); row += 7) {
    const auto c = config_of(d, row);
    INFO("row " << row << ": " << to_string(c.e.cube) << " chunk " << to_string(c.e.chunk) << " W " << c.e.workers
                << " T " << c.e.threads << " " << c.e.allocator);
    const chunked_schedule s(c.g, c.e.cube, {c.e.chunk, c.e.workers, c.e.threads});
    const auto plan = plan_chunked(s);
    CHECK(label(d, row, "peak_requested") == double(plan.peak()));
    std::uint64_t held = plan.peak();
    for (const auto& a : o.allocators) {
      if (a == "exact") continue;
      const auto peaks = model_peaks(s, plan, a);
      const auto peak = *std::max_element(peaks.begin(), peaks.end());
      CHECK(label(d, row, "peak_reserved_" + a) == double(peak));
      if (a == c.e.allocator) held = peak;
    }
    CHECK(label(d, row, "oom") == double(held > c.e.budget));
    oom += held > c.e.budget;
    CHECK(label(d, row, "makespan") == predict_time(s, p).makespan);
  }
  CHECK(oom > 0);  // budgets are drawn so that both outcomes occur
}

TEST_CASE("Dask-style rows are labelled by the Dask model's schedule and bound") {
  dataset_options o;
  o.rows = 96;
  o.random_graphs = 16;
  o.seed = 13;
  o.allocators = {"exact", "host_pages"};
  o.execs = {"dwsr", "dask", "dask_unfused"};
  const auto d = make_dataset(operators::catalogue(), o);
  const auto nf = d.features.size();
  std::size_t seen[3]{};
  for (std::uint64_t row = 0; row < d.rows(); ++row) {
    auto f = [&](const char* name) { return d.x[row * nf + col(d.features, name)]; };
    const auto c = config_of(d, row);
    const chunked_schedule s(c.g, c.e.cube, {c.e.chunk, c.e.workers, c.e.threads});
    INFO("row " << row);
    if (f("exec_dask") == 0) {
      ++seen[0];
      CHECK(label(d, row, "peak_bound") == label(d, row, "peak_requested"));
      continue;
    }
    const auto split = f("dask_unfused") == 1 ? dask_split::unfused : dask_split::fused;
    ++seen[split == dask_split::fused ? 1 : 2];
    const auto p = plan_dask(s, {.split = split});
    CHECK(c.e.allocator == "exact");
    CHECK(label(d, row, "peak_requested") == double(p.schedule_peak()));
    CHECK(label(d, row, "peak_bound") == double(p.bound()));
    CHECK(std::isnan(label(d, row, "peak_reserved_host_pages")));
    CHECK(label(d, row, "oom") == double(p.schedule_peak() > c.e.budget));
  }
  for (auto n : seen) CHECK(n > 0);
  o.task = dataset_task::chunk;
  CHECK_THROWS_WITH(make_dataset(operators::catalogue(), o), Catch::Contains("expected task peak"));
  o.execs = {"spark"};
  CHECK_THROWS_WITH(make_dataset(operators::catalogue(), o), Catch::Contains("expected dwsr, dask or dask_unfused"));
}

TEST_CASE("chunk labels are the advisor's answer for the row's budget") {
  dataset_options o;
  o.task = dataset_task::chunk;
  o.rows = 40;
  o.random_graphs = 8;
  o.seed = 5;
  o.allocators = {"exact", "host_pages"};
  const auto d = make_dataset(operators::catalogue(), o);
  for (const auto& c : d.features) CHECK(c.name.rfind("chunk_", 0) != 0);  // the chunk is the answer, not a feature
  std::uint64_t fits = 0;
  for (std::uint64_t row = 0; row < d.rows(); row += 3) {
    const auto c = config_of(d, row);
    INFO("row " << row << ": " << to_string(c.e.cube) << " W " << c.e.workers << " budget " << c.e.budget);
    const advice_options ao{c.e.budget, c.e.workers, c.e.threads, c.e.allocator};
    if (label(d, row, "fits") == 0) {
      CHECK_THROWS_AS(advise(c.g, c.e.cube, ao), invalid_input);
      continue;
    }
    ++fits;
    const auto a = advise(c.g, c.e.cube, ao);
    CHECK(label(d, row, "chunk_inlines") == double(a.chosen.plan.chunk.inlines));
    CHECK(label(d, row, "chunk_crosslines") == double(a.chosen.plan.chunk.crosslines));
    CHECK(label(d, row, "blocks") == double(a.chosen.plan.blocks));
    CHECK(label(d, row, "peak") == double(a.chosen.peak));
  }
  CHECK(fits > 0);
}

TEST_CASE("pack labels are the co-location replay of the jobs and device the features describe") {
  dataset_options o;
  o.task = dataset_task::pack;
  o.rows = 64;
  o.random_graphs = 16;
  o.seed = 9;
  o.allocators = {"exact", "torch_cuda_caching", "cupy_pool", "rmm_pool"};
  const auto d = make_dataset(operators::catalogue(), o);
  REQUIRE(d.graph_slots == pack_max_jobs);
  const auto nf = d.features.size();
  std::uint64_t ooms = 0, fits = 0;
  for (std::uint64_t row = 0; row < d.rows(); row += 3) {
    auto f = [&](const std::string& name) { return double(d.x[row * nf + col(d.features, name)]); };
    const auto capacity = std::uint64_t(f("device_capacity"));
    std::vector<sim::job> jobs;
    for (std::size_t k = 0; k < std::size_t(f("jobs")); ++k) {
      const auto p = "job" + std::to_string(k) + "_";
      auto u = [&](const char* name) { return std::uint64_t(f(p + name)); };
      const auto g =
          graph_from_json(d.graphs.at(std::size_t(d.graph_of_row[row * pack_max_jobs + k])), operators::catalogue());
      const chunked_schedule s(g, {u("inlines"), u("crosslines"), u("samples")},
                               {{u("chunk_inlines"), u("chunk_crosslines"), u("chunk_samples")}, 1, u("threads")});
      std::string allocator;
      for (const auto& [name, doc] : sim::model_catalogue())
        if (f(p + "allocator_" + std::string(name)) == 1) allocator = name;
      jobs.push_back(colocated_job(s, {.allocator = allocator, .start = f(p + "start")}));
      jobs.back().name = "job " + std::to_string(k);
      CHECK(float(jobs.back().duration) == float(f(p + "duration")));
    }
    for (std::size_t k = jobs.size(); k < pack_max_jobs; ++k) CHECK(d.graph_of_row[row * pack_max_jobs + k] == -1);
    sim::device_spec dev;
    dev.capacity = capacity;
    const auto r = sim::colocate(dev, jobs);
    INFO("row " << row);
    CHECK(label(d, row, "device_peak") == double(r.peak));
    CHECK(label(d, row, "peak_time") == r.peak_time);
    CHECK(label(d, row, "oom") == double(!r.ooms.empty()));
    CHECK(label(d, row, "first_oom_job") == (r.ooms.empty() ? -1.0 : double(r.ooms.front().job)));
    CHECK(r.peak <= capacity);
    (r.ooms.empty() ? fits : ooms) += 1;
  }
  CHECK(ooms > 0);
  CHECK(fits > 0);
}

TEST_CASE("code features read the operators' declarations and a canonical meta execution") {
  auto features = [](const graph& g) {
    feature_vector v;
    code_features(g, v);
    std::map<std::string, double> out;
    for (std::size_t k = 0; k < v.columns().size(); ++k) out[v.columns()[k].name] = v.values()[k];
    return out;
  };
  const auto env = features(graph::single(operators::catalogue(), "envelope"));
  CHECK(env.at("nodes") == 1);
  CHECK(env.at("fft_nodes") == 1);
  CHECK(env.at("whole_time") == 1);
  CHECK(env.at("whole_inline") == 0);
  CHECK(env.at("allocs_input") == 1);
  CHECK(env.at("allocs_output") == 1);
  CHECK(env.at("output_bytes_per_voxel") == 4);
  CHECK(env.at("scratch_per_thread") > 0);  // the analytic signal's per-thread FFT buffers
  // Peak per voxel: the input and the output, plus the workspace.
  CHECK(env.at("peak_bytes_per_voxel") > 8);

  const auto gst = features(graph::single(operators::catalogue(), "gst_3d_dip"));
  CHECK(gst.at("fft_nodes") == 0);
  CHECK(gst.at("halo_inline") > 0);
  CHECK(gst.at("whole_time") == 0);
  CHECK(env.at("allocs_bound") == 0);
  CHECK(features(graph::single(operators::catalogue(), "geobodies")).at("allocs_bound") > 0);
  const auto agc = features(graph::single(operators::catalogue(), "trace_agc"));
  CHECK(agc.at("reduction_passes") == 1);

  graph g(operators::catalogue());
  g.add("env", "envelope").add("freq", "instantaneous_frequency").add("sweet", "sweetness_from", {"env", "freq"});
  g.add("smooth", "gaussian", {"sweet"});
  g.build();
  const auto f = features(g);
  CHECK(f.at("nodes") == 4);
  CHECK(f.at("depth") == 3);
  CHECK(f.at("width") == 2);
  CHECK(f.at("two_input_nodes") == 1);
  CHECK(f.at("graph_outputs") == 1);
  CHECK(f.at("results_alive") == 3);  // env and freq, read by sweetness, and its own output
}

TEST_CASE("splits keep groups whole, hold out families and extrapolate in volume") {
  dataset_options o;
  o.rows = 400;
  o.random_graphs = 32;
  o.seed = 3;
  o.allocators = {"exact"};
  const auto d = make_dataset(operators::catalogue(), o);
  REQUIRE(d.held_out.size() == 2);
  const auto nf = d.features.size();
  const auto bytes = col(d.features, "input_bytes");
  std::uint64_t test[3]{};
  for (std::uint64_t row = 0; row < d.rows(); ++row) {
    for (int k = 0; k < 3; ++k) test[k] += d.split[row * 3 + std::size_t(k)];
    // A group (rows_per_group consecutive rows) is all train or all test.
    const auto first = row / o.rows_per_group * o.rows_per_group;
    CHECK(d.split[row * 3] == d.split[first * 3]);
    // Family: test exactly when the graph has a node of a held-out family.
    const auto g = graph_from_json(d.graphs[std::size_t(d.graph_of_row[row])], operators::catalogue());
    bool held = false;
    for (const auto& n : g.nodes())
      for (const auto& f : d.held_out) held = held || operators::catalogue().find(n.spec.op).family == f;
    CHECK(d.split[row * 3 + 1] == held);
    // Extrapolation: test exactly when the input is at least the cut.
    CHECK(d.split[row * 3 + 2] == (std::uint64_t(d.x[row * nf + bytes]) >= d.extrapolation_cut));
  }
  for (auto t : test) {
    CHECK(t > 0);
    CHECK(t < d.rows());
  }
  CHECK(test[2] == Approx(0.2 * double(d.rows())).margin(double(o.rows_per_group) * 2));
}

TEST_CASE("a dataset on disk: npy matrices, columns.json and the CSV, written together") {
  dataset_options o;
  o.rows = 30;
  o.random_graphs = 4;
  o.allocators = {"exact", "host_pages"};
  const auto d = make_dataset(operators::catalogue(), o);
  test::temp_dir dir;
  const auto out = dir / "set";
  write_dataset(d, out);
  const auto fh = io::read_npy_header(out / "features.npy");
  CHECK(fh.type == dtype::float32);
  CHECK(fh.dims == std::vector<std::uint64_t>{30, d.features.size()});
  const auto gh = io::read_npy_header(out / "graphs.npy");
  CHECK(gh.type == dtype::int64);
  CHECK(gh.dims == std::vector<std::uint64_t>{30});
  // float64 and uint8 are outside what dwsr reads; their headers say so.
  std::ifstream labels(out / "labels.npy", std::ios::binary);
  std::string head(128, '\0');
  labels.read(head.data(), 128);
  CHECK(head.find("'descr': '<f8'") != std::string::npos);
  CHECK(head.find("'shape': (30, 3)") != std::string::npos);
  CHECK(std::filesystem::file_size(out / "labels.npy") == 128 + 30 * 3 * 8);
  CHECK(std::filesystem::file_size(out / "splits.npy") == 128 + 30 * 3);
  const auto doc = nlohmann::json::parse(std::ifstream(out / "columns.json"));
  CHECK(doc["task"] == "peak");
  CHECK(doc["features"].size() == d.features.size());
  CHECK(doc["labels"][1]["name"] == "peak_reserved_host_pages");
  CHECK(doc["labels"][1]["unit"] == "bytes");
  CHECK(doc["graphs"].size() == d.graphs.size());
  std::ifstream csv(out / "dataset.csv");
  std::string line;
  std::size_t lines = 0;
  while (std::getline(csv, line)) ++lines;
  CHECK(lines == 31);
  // Written again without the CSV: the stale one goes.
  write_dataset(d, out, false);
  CHECK(!std::filesystem::exists(out / "dataset.csv"));
  // A file where the directory should be: an error, nothing written.
  std::ofstream(dir / "file") << "x";
  CHECK_THROWS_AS(write_dataset(d, dir / "file"), io_error);
}

TEST_CASE("bad dataset options are refused before anything is generated") {
  dataset_options o;
  o.rows = 0;
  CHECK_THROWS_WITH(make_dataset(operators::catalogue(), o), Catch::Contains("0 rows; expected 1 to"));
  o.rows = 10;
  o.allocators = {"exact", "bogus"};
  CHECK_THROWS_AS(make_dataset(operators::catalogue(), o), invalid_input);
  o.allocators = {"exact", "exact"};
  CHECK_THROWS_WITH(make_dataset(operators::catalogue(), o), Catch::Contains("listed twice"));
  o.allocators = {"exact", "torch_cuda_caching"};
  o.task = dataset_task::chunk;
  CHECK_THROWS_WITH(make_dataset(operators::catalogue(), o), Catch::Contains("expected exact or host_pages"));
  sim::time_profile partial = flat_profile();
  partial.operators.erase("envelope");
  o.task = dataset_task::peak;
  o.allocators = {"exact"};
  o.profile = &partial;
  CHECK_THROWS_WITH(make_dataset(operators::catalogue(), o), Catch::Contains("envelope"));
  CHECK_FALSE(parse_dataset_task("bogus").has_value());
}
