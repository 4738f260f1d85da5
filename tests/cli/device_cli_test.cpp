// `--device cuda` of the command-line tool where no GPU is needed: the CUDA
// operators' list and plans, the advice for device memory, the errors; a run
// either succeeds (on a GPU) or fails cleanly. A build without CUDA says so.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/cli_runner.hpp"

using namespace dwsr;
using namespace dwsr::test;

#if DWSR_CLI_WITH_CUDA

TEST_CASE("dwsr ops --device cuda lists the operators with a CUDA implementation") {
  const auto r = run_dwsr("ops --device cuda --json");
  REQUIRE(r.status == 0);
  const auto all = nlohmann::json::parse(r.out);
  std::vector<std::string> names;
  for (const auto& d : all) names.push_back(d["name"]);
  CHECK(names.size() == 43);
  // One of each family's kernels (window, tensor, filter, wavelet, ...); the count holds the rest.
  for (const char* n : {"envelope", "quality_factor", "median", "gradient_structure_tensor", "chaos", "semblance",
                        "time_gain", "bandpass_filter", "cwt_ricker", "cwt_ormsby"})
    CHECK(std::find(names.begin(), names.end(), n) != names.end());
  CHECK(std::find(names.begin(), names.end(), "glcm_contrast") == names.end());
}

TEST_CASE("dwsr plan --device cuda: device peaks per worker, a model of the device stream, the context, the budget") {
  temp_dir dir;
  const auto graph = (dir / "g.json").string();
  std::ofstream(graph) << R"({"nodes": [{"name": "smooth", "op": "gaussian"},
                                        {"name": "env", "op": "envelope", "inputs": ["smooth"]}]})";
  const auto r = run_dwsr("plan " + graph + " --device cuda --shape 12x10x128 --chunk 5x4x128 -w 2 --json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["device"] == "cuda");
  CHECK(j["blocks"] == 9);
  std::uint64_t peak = 0;
  for (const auto& w : j["planned_workers"]) peak = std::max<std::uint64_t>(peak, w["peak_bytes"]);
  CHECK(j["peak_bytes"] == peak);
  CHECK(j["host_staging_peak_bytes"].get<std::uint64_t>() > 0);
  // A caching model of the device stream holds at least the requested bytes; the context adds its own.
  const auto m =
      nlohmann::json::parse(run_dwsr("plan " + graph +
                                     " --device cuda --shape 12x10x128 --chunk 5x4x128 -w 2 -a torch_cuda_caching "
                                     "--context-overhead 1MiB -m 1MiB --json")
                                .out);
  CHECK(m["peak_bytes"].get<std::uint64_t>() >= peak);
  CHECK(m["device_needed_bytes"] == m["peak_bytes"].get<std::uint64_t>() + (1u << 20));
  CHECK(m["fits"] == false);
  // Where the same chunk fits, the advice finds it.
  const auto a =
      run_dwsr("advise " + graph + " --device cuda --shape 12x10x128 -w 2 --json -m " + std::to_string(peak));
  REQUIRE(a.status == 0);
  CHECK(nlohmann::json::parse(a.out)["advice"]["peak_bytes"].get<std::uint64_t>() <= peak);
}

TEST_CASE("dwsr with --device cuda: no CUDA implementation, host-only options, no GPU are user errors") {
  temp_dir dir;
  expect_user_error(run_dwsr("plan glcm_contrast --device cuda --shape 4x4x16"),
                    "'glcm_contrast' has no CUDA implementation");
  expect_user_error(run_dwsr("plan envelope --shape 4x4x16 --context-overhead 1MiB"), "--device cuda");
  expect_user_error(run_dwsr("plan envelope --device cuda --shape 4x4x16 --exec dask"), "--device cuda");
  expect_user_error(run_dwsr("advise envelope --device cuda --shape 4x4x16 -m 1GiB --objective time"), "--device cuda");
  const auto out = dir / "out";
  const auto r = run_dwsr("run envelope --device cuda --input synthetic:4x4x16 --output " + out.string());
  if (r.status == 0) {  // a GPU is here
    CHECK(std::filesystem::exists(out / "envelope.npy"));
  } else {
    expect_user_error(r, "no CUDA device");
    CHECK_FALSE(std::filesystem::exists(out / "envelope.npy"));
  }
}

#else

TEST_CASE("a build without CUDA says so for --device cuda") {
  expect_user_error(run_dwsr("plan envelope --device cuda --shape 4x4x16"), "built without CUDA");
  expect_user_error(run_dwsr("ops --device cuda"), "built without CUDA");
}

#endif
