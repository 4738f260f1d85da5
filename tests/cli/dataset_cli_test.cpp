// `dwsr dataset`: the same bytes from the same seed, labels that `dwsr plan`
// prints for the same configuration, and one-line errors that leave nothing.

#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "cli/cli_runner.hpp"
#include "dwsr/io/npy.hpp"

using namespace dwsr::test;

namespace {

std::string bytes_of(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// The data of a 2-D .npy matrix of T (header skipped).
template <class T>
std::vector<T> matrix(const std::filesystem::path& p) {
  const auto all = bytes_of(p);
  const auto start = all.find('\n') + 1;
  std::vector<T> out((all.size() - start) / sizeof(T));
  std::memcpy(out.data(), all.data() + start, out.size() * sizeof(T));
  return out;
}

}  // namespace

TEST_CASE("dwsr dataset writes the same bytes for the same seed, and plan agrees with its labels") {
  temp_dir dir;
  const auto a = dir / "a", b = dir / "b";
  const std::string common = "dataset --rows 48 --graphs 8 --seed 21 -a exact,host_pages,torch_cuda_caching -o ";
  const auto r = run_dwsr(common + a.string());
  REQUIRE(r.status == 0);
  CHECK(r.out.find("48 rows (task peak)") != std::string::npos);
  REQUIRE(run_dwsr(common + b.string()).status == 0);
  for (const char* f : {"features.npy", "labels.npy", "splits.npy", "graphs.npy", "columns.json", "dataset.csv"})
    CHECK(bytes_of(a / f) == bytes_of(b / f));

  const auto doc = nlohmann::json::parse(std::ifstream(a / "columns.json"));
  std::map<std::string, std::size_t> fcol, lcol;
  for (std::size_t k = 0; k < doc["features"].size(); ++k) fcol[doc["features"][k]["name"]] = k;
  for (std::size_t k = 0; k < doc["labels"].size(); ++k) lcol[doc["labels"][k]["name"]] = k;
  const auto x = matrix<float>(a / "features.npy");
  const auto y = matrix<double>(a / "labels.npy");
  const auto graphs = matrix<std::int64_t>(a / "graphs.npy");
  const auto nf = fcol.size(), nl = lcol.size();
  for (std::size_t row : {0, 13, 30, 47}) {
    auto f = [&](const char* name) { return std::to_string(std::uint64_t(x[row * nf + fcol.at(name)])); };
    const auto graph_file = dir / ("graph" + std::to_string(row) + ".json");
    std::ofstream(graph_file) << doc["graphs"][std::size_t(graphs[row])].dump();
    const auto shape = f("inlines") + "x" + f("crosslines") + "x" + f("samples");
    const auto chunk = f("chunk_inlines") + "x" + f("chunk_crosslines") + "x" + f("chunk_samples");
    const auto base = "plan " + graph_file.string() + " -s " + shape + " -c " + chunk + " -w " + f("workers") + " -t " +
                      f("threads") + " --json -a ";
    INFO("row " << row << ": " << base);
    for (const auto& [model, label] :
         std::vector<std::pair<std::string, std::string>>{{"exact", "peak_requested"},
                                                          {"host_pages", "peak_reserved_host_pages"},
                                                          {"torch_cuda_caching", "peak_reserved_torch_cuda_caching"}}) {
      const auto p = run_dwsr(base + model);
      REQUIRE(p.status == 0);
      CHECK(nlohmann::json::parse(p.out)["peak_bytes"].get<double>() == y[row * nl + lcol.at(label)]);
    }
  }
}

TEST_CASE("dwsr dataset's Dask-style rows are what dwsr plan --exec dask prints") {
  temp_dir dir;
  const auto a = dir / "dask";
  REQUIRE(run_dwsr("dataset --rows 8 --graphs 4 --seed 5 -a exact --exec dask_unfused -o " + a.string()).status == 0);
  const auto doc = nlohmann::json::parse(std::ifstream(a / "columns.json"));
  std::map<std::string, std::size_t> fcol;
  for (std::size_t k = 0; k < doc["features"].size(); ++k) fcol[doc["features"][k]["name"]] = k;
  const auto x = matrix<float>(a / "features.npy");
  const auto y = matrix<double>(a / "labels.npy");
  const auto graphs = matrix<std::int64_t>(a / "graphs.npy");
  auto f = [&](const char* name) { return std::to_string(std::uint64_t(x[fcol.at(name)])); };
  std::ofstream(dir / "g.json") << doc["graphs"][std::size_t(graphs[0])].dump();
  const auto p =
      run_dwsr("plan " + (dir / "g.json").string() + " -s " + f("inlines") + "x" + f("crosslines") + "x" +
               f("samples") + " -c " + f("chunk_inlines") + "x" + f("chunk_crosslines") + "x" + f("chunk_samples") +
               " -w " + f("workers") + " -t " + f("threads") + " --exec dask --tasks unfused --json");
  REQUIRE(p.status == 0);
  const auto j = nlohmann::json::parse(p.out)["dask"];
  CHECK(j["schedule_peak_bytes"].get<double>() == y[0]);  // peak_requested
  CHECK(j["bound_bytes"].get<double>() == y[1]);          // peak_bound
}

TEST_CASE("dwsr dataset refuses bad options in one line and writes nothing") {
  temp_dir dir;
  const auto out = dir / "set";
  expect_user_error(run_dwsr("dataset --task bogus --rows 4 -o " + out.string()),
                    "--task 'bogus': expected peak, chunk or pack");
  expect_user_error(run_dwsr("dataset --rows 0 -o " + out.string()), "0 rows; expected 1 to");
  expect_user_error(run_dwsr("dataset --rows 4 -a exact,bogus -o " + out.string()), "bogus");
  expect_user_error(run_dwsr("dataset --task chunk --rows 4 -a rmm_pool -o " + out.string()),
                    "expected exact or host_pages");
  expect_user_error(run_dwsr("dataset --rows 4 --profile " + (dir / "missing.json").string() + " -o " + out.string()),
                    "missing.json");
  CHECK(!std::filesystem::exists(out));
}
