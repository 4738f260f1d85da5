// `dwsr ops`, `dwsr run`, `dwsr plan` and `dwsr demo` as a user runs them:
// outputs, JSON figures, and every error path (exit 2, one line, no partial file).

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_runner.hpp"
#include "dwsr/core/simd_isa.hpp"
#include "dwsr/io/npy.hpp"
#include "dwsr/operators/catalogue.hpp"

using namespace dwsr;
using namespace dwsr::test;

TEST_CASE("dwsr ops lists every operator with parameters, halo and outputs") {
  const auto r = run_dwsr("ops --json");
  REQUIRE(r.status == 0);
  const auto ops = nlohmann::json::parse(r.out);
  REQUIRE(ops.size() == operators::catalogue().entries().size());
  bool found = false;
  for (const auto& op : ops) {
    CHECK(op.contains("family"));
    CHECK(op.contains("halo"));
    CHECK(op["outputs"].size() + op["tables"].size() > 0);  // cubes, or tables (event_picks)
    if (op["name"] == "instantaneous_frequency") {
      found = true;
      CHECK(op["parameters"][0]["name"] == "sample_rate");
      CHECK(op["parameters"][0]["default"] == "4");
      CHECK(op["halo"]["radius"] == nlohmann::json::array({1, 1, 0}));
      CHECK(op["halo"]["whole_traces"] == true);
    }
  }
  CHECK(found);
  CHECK(run_dwsr("ops").out.find("complex_trace") != std::string::npos);
}

TEST_CASE("dwsr run writes the reference-named outputs and measures the planned peak exactly") {
  temp_dir dir;
  const auto r = run_dwsr("run hilbert --input synthetic:3x4x50:9 --output " + (dir / "out").string() + " --json -t 2");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["measured_peak_bytes"] == j["planned_peak_bytes"]);
  CHECK(j["planned_peak_bytes"].get<std::uint64_t>() > 3 * 4 * 50 * (4 + 8));
  CHECK(j["measured_workers"] == j["planned_workers"]);  // peaks, blocks and event counts
  const auto out = io::load_npy<std::complex<float>>(dir / "out" / "hilbert.npy");
  CHECK(out.shape == shape3{3, 4, 50});
  CHECK(dir.entries() == std::vector<std::string>{"out"});
  // The process's high-water mark when its first blocks had finished (here the only block), for online estimators.
  CHECK(j["first_blocks"]["blocks"] == 1);
  CHECK(j["first_blocks"]["vm_hwm_bytes"].get<std::uint64_t>() > 0);
  CHECK(j["first_blocks"]["vm_hwm_bytes"].get<std::uint64_t>() <= j["vm_hwm_bytes"].get<std::uint64_t>());

  SECTION("the first blocks are one per worker, or every block when there are fewer") {
    for (const auto& [chunk, blocks] : {std::pair{"2x8x64", 3}, std::pair{"4x8x64", 2}}) {
      const auto q = run_dwsr("run envelope --input synthetic:8x8x64 --chunk " + std::string(chunk) +
                              " -w 3 --output " + (dir / "w3").string() + " --json");
      REQUIRE(q.status == 0);
      const auto d = nlohmann::json::parse(q.out);
      CHECK(d["first_blocks"]["blocks"] == blocks);
      CHECK(d["first_blocks"]["vm_hwm_bytes"].get<std::uint64_t>() <= d["vm_hwm_bytes"].get<std::uint64_t>());
    }
  }

  SECTION("from a .npy input, with a parameter override") {
    const auto in = dir / "in.npy";
    REQUIRE(run_dwsr("run envelope --input synthetic:2x2x16 --output " + dir.path().string()).status == 0);
    std::filesystem::rename(dir / "envelope.npy", in);
    const auto q =
        run_dwsr("run phase_rotation -p rotation=45 --input " + in.string() + " --output " + (dir / "rot").string());
    CHECK(q.status == 0);
    CHECK(q.out.find("(= plan)") != std::string::npos);
    CHECK(std::filesystem::exists(dir / "rot" / "phase_rotation.npy"));
  }
}

TEST_CASE("dwsr run on the host loads neither cuFFT nor XGBoost: they load at their first use") {
  // Linked, the two cost every start of the tool ~6.5 ms (a run of rms on
  // 32 MiB takes ~50 ms end to end). The loader lists what it opens.
  temp_dir dir;
  ::setenv("LD_DEBUG", "files", 1);
  const auto r = run_dwsr("run envelope --input synthetic:2x2x16 --output " + (dir / "out").string());
  ::unsetenv("LD_DEBUG");
  REQUIRE(r.status == 0);
  REQUIRE(r.err.find("file=libtbb") != std::string::npos);  // the loader did report its files
  CHECK(r.err.find("libcufft") == std::string::npos);
  CHECK(r.err.find("libxgboost") == std::string::npos);
}

TEST_CASE("dwsr run --no-sync writes the same files, whole, without waiting for the disk") {
  temp_dir dir;
  const auto synced = dir / "synced", unsynced = dir / "unsynced";
  for (const auto& [out, flag] : {std::pair{synced, ""}, std::pair{unsynced, " --no-sync"}})
    REQUIRE(run_dwsr("run gst_3d_dip --input synthetic:6x5x40:3 --chunk 4x5x40 -w 2 --output " + out.string() + flag)
                .status == 0);
  const auto a = read_raw(synced / "gst_3d_dip.npy"), b = read_raw(unsynced / "gst_3d_dip.npy");
  CHECK(a.size() == 128 + 6 * 5 * 40 * 4);
  CHECK(a == b);
  // Nothing but the output: no temporary stays behind (nor the lock).
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(unsynced)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{"gst_3d_dip.npy"});
  CHECK(run_dwsr("run --help").out.find("--no-sync") != std::string::npos);
}

TEST_CASE("dwsr plan reports the meta execution's peak and events") {
  const auto r = run_dwsr("plan envelope --shape 128x128x512 --threads 2 --json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  const std::uint64_t cube = 128ull * 128 * 512 * 4;
  // input + output + 2 threads x (512 floats + 512 complex)
  CHECK(j["peak_bytes"] == 2 * cube + 2 * (512 * 4 + 512 * 8));
  CHECK(j["events"] == 8);
  CHECK(j["blocks"] == 1);
  CHECK(run_dwsr("plan envelope --shape 128x128x512").out.find("2.00 x input") != std::string::npos);
}

TEST_CASE("dwsr demo runs operators on a synthetic cube and checks plan == measurement") {
  const auto r = run_dwsr("demo --shape 4x8x64 --ops envelope,sweetness");
  REQUIRE(r.status == 0);
  CHECK(r.out.find("sweetness") != std::string::npos);
  CHECK(r.out.find("Every measured peak equals its plan") != std::string::npos);
}

TEST_CASE("user errors exit with status 2, one line on stderr, and no partial output") {
  temp_dir dir;
  const auto out = (dir / "out").string();
  SECTION("unknown operator") {
    expect_user_error(run_dwsr("plan envelop --shape 2x2x2"), "unknown operator 'envelop'");
  }
  SECTION("malformed shapes") {
    expect_user_error(run_dwsr("plan envelope --shape 2x0x5"), "'2x0x5'");
    expect_user_error(run_dwsr("plan envelope --shape 12x"), "'12x'");
    expect_user_error(run_dwsr("plan envelope --shape 1x2x3x4"), "'1x2x3x4'");
    expect_user_error(run_dwsr("run envelope --input synthetic:4xAx2 --output " + out), "'4xAx2'");
  }
  SECTION("unknown or ill-typed parameters") {
    expect_user_error(run_dwsr("plan envelope --shape 2x2x8 -p sigma=3"), "no parameter 'sigma'");
    expect_user_error(run_dwsr("plan sweetness --shape 2x2x8 -p sample_rate=fast"), "'fast' is not a number");
    expect_user_error(run_dwsr("plan sweetness --shape 2x2x8 -p sample_rate=-4"), "sample_rate");
    expect_user_error(run_dwsr("plan sweetness --shape 2x2x8 -p sample_rate"), "NAME=VALUE");
  }
  SECTION("missing file") {
    expect_user_error(run_dwsr("run envelope --input " + (dir / "nope.npy").string() + " --output " + out), "nope.npy");
  }
  SECTION("corrupt file") {
    std::ofstream(dir / "bad.npy") << "this is not an npy file at all";
    expect_user_error(run_dwsr("run envelope --input " + (dir / "bad.npy").string() + " --output " + out), "bad.npy");
    std::ofstream(dir / "bad.sgy") << "nor a SEG-Y file";
    expect_user_error(run_dwsr("run envelope --input " + (dir / "bad.sgy").string() + " --output " + out), "bad.sgy");
  }
  SECTION("unsupported dtype and extension") {
    const std::vector<std::int64_t> ints(8, 1);
    io::write_npy(dir / "ints.npy", {dtype::int64, const_cast<std::int64_t*>(ints.data()), {2, 2, 2}});
    expect_user_error(run_dwsr("run envelope --input " + (dir / "ints.npy").string() + " --output " + out), "int64");
    expect_user_error(run_dwsr("run envelope --input cube.tiff --output " + out), "cube.tiff");
  }
  SECTION("output directory not writable") {
    std::ofstream(dir / "file") << "x";
    expect_user_error(run_dwsr("run envelope --input synthetic:2x2x8 --output " + (dir / "file" / "sub").string()),
                      "output directory");
  }
  SECTION("command-line misuse") {
    CHECK(run_dwsr("run envelope --output " + out).status == 2);  // --input missing
    CHECK(run_dwsr("frobnicate").status == 2);
    CHECK(run_dwsr("plan envelope --shape 2x2x2 --threads 0").status == 2);
  }
  // Nothing half-written anywhere.
  for (const auto& e : dir.entries()) CHECK((e == "file" || e == "bad.npy" || e == "bad.sgy" || e == "ints.npy"));
  CHECK(!std::filesystem::exists(out));
}

TEST_CASE("a failing run leaves no partial output file") {
  // The output directory is created, but a failure while writing (here: the
  // output name is taken by a directory) must not leave any .npy behind.
  temp_dir dir;
  std::filesystem::create_directories(dir / "out" / "gradient.npy");
  std::filesystem::create_directories(dir / "out" / "envelope.npy");
  const auto r = run_dwsr("run envelope --input synthetic:2x3x16 --output " + (dir / "out").string());
  CHECK(r.status == 2);
  CHECK(r.error_lines() == 1);
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(dir / "out")) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{"envelope.npy", "gradient.npy"});
  CHECK(std::filesystem::is_directory(dir / "out" / "envelope.npy"));
}

TEST_CASE("dwsr run and plan execute graphs chunked over workers, as planned") {
  temp_dir dir;
  std::ofstream(dir / "g.json") << R"({"nodes": [
      {"name": "env", "op": "envelope"},
      {"name": "freq", "op": "instantaneous_frequency", "params": {"sample_rate": 4}},
      {"name": "sweet", "op": "sweetness_from", "inputs": ["env", "freq"], "keep": true}]})";
  const auto graph = (dir / "g.json").string();
  const auto r = run_dwsr("run " + graph + " --input synthetic:9x10x40:3 --output " + (dir / "out").string() +
                          " --chunk 4x3x40 --workers 3 --threads 2 --json --trace " + (dir / "t.csv").string());
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["blocks"] == 12);
  CHECK(j["measured_workers"] == j["planned_workers"]);
  CHECK(j["outputs"].size() == 1);
  CHECK(std::filesystem::exists(dir / "out" / "sweet.npy"));
  for (int w = 0; w < 3; ++w) CHECK(std::filesystem::exists(dir / ("t.worker" + std::to_string(w) + ".csv")));
  // The chunked output equals the single operator's whole-cube output.
  REQUIRE(run_dwsr("run sweetness --input synthetic:9x10x40:3 --output " + (dir / "whole").string()).status == 0);
  const auto a = io::load_npy<float>(dir / "out" / "sweet.npy"),
             b = io::load_npy<float>(dir / "whole" / "sweetness.npy");
  CHECK(a.data == b.data);

  const auto p = nlohmann::json::parse(
      run_dwsr("plan " + graph + " --shape 9x10x40 --chunk 4x3x40 --workers 3 --threads 2 --json").out);
  CHECK(p["planned_workers"] == j["planned_workers"]);
  CHECK(p["peak_bytes"] == j["planned_peak_bytes"]);
}

TEST_CASE("dwsr advise picks the largest chunk within the budget and compares with Dask's default") {
  const auto r = run_dwsr("advise envelope --shape 64x64x512 --memory 6MiB --workers 2 --threads 2 --json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["advice"]["peak_bytes"].get<std::uint64_t>() <= 6u << 20);
  for (const auto& n : j["next_larger"]) CHECK(n["peak_bytes"].get<std::uint64_t>() > 6u << 20);
  CHECK(j["dask_default"]["chunk"] == "64x64x512");
  CHECK(run_dwsr("advise envelope --shape 64x64x512 --memory 6MiB").out.find("advised chunk") != std::string::npos);
  expect_user_error(run_dwsr("advise envelope --shape 64x64x512 --memory 1KiB"), "too small");
  expect_user_error(run_dwsr("advise envelope --shape 64x64x512 --memory lots"), "'lots'");
  expect_user_error(run_dwsr("advise envelope --shape 64x64x512 --memory 1GiB --allocator nope"), "nope");
}

TEST_CASE("graph and chunking errors exit with status 2 and leave no output") {
  temp_dir dir;
  const auto out = (dir / "out").string();
  std::ofstream(dir / "bad.json") << "{\"nodes\": [";
  expect_user_error(run_dwsr("plan " + (dir / "bad.json").string() + " --shape 2x2x8"), "not valid JSON");
  std::ofstream(dir / "cycle.json") << R"({"nodes": [{"name": "a", "op": "envelope", "inputs": ["b"]},
                                                     {"name": "b", "op": "envelope", "inputs": ["a"]}]})";
  expect_user_error(run_dwsr("plan " + (dir / "cycle.json").string() + " --shape 2x2x8"), "cycle");
  std::ofstream(dir / "typo.json") << R"({"nodes": [{"name": "a", "op": "envelope", "input": ["b"]}]})";
  expect_user_error(run_dwsr("plan " + (dir / "typo.json").string() + " --shape 2x2x8"), "\"input\"");
  expect_user_error(run_dwsr("plan " + (dir / "missing.json").string() + " --shape 2x2x8"), "missing.json");
  expect_user_error(run_dwsr("plan envelope --shape 8x8x64 --chunk 2x2x32"), "reads whole traces");
  expect_user_error(run_dwsr("plan envelope --shape 8x8x64 --chunk 2x0x64"), "'2x0x64'");
  expect_user_error(run_dwsr("run envelope --input synthetic:8x8x64 --output " + out + " --memory 20KiB"),
                    "out of memory");
  CHECK(std::filesystem::is_empty(out));
  expect_user_error(run_dwsr("run sweetness_from --input synthetic:8x8x64 --output " + out), "2 input");
}

TEST_CASE("dwsr plan and advise answer for cubes of any size, and bound what grows with the blocks") {
  const auto advice = run_dwsr("advise envelope --shape 100000x100000x100000 --memory 2GiB --json");
  REQUIRE(advice.status == 0);
  const auto a = nlohmann::json::parse(advice.out);
  CHECK(a["advice"]["peak_bytes"].get<std::uint64_t>() <= 2ull << 30);
  CHECK(a["advice"]["chunk"].get<std::string>().ends_with("x100000"));
  for (const auto& n : a["next_larger"]) CHECK(n["peak_bytes"].get<std::uint64_t>() > 2ull << 30);

  const auto plan = run_dwsr("plan gaussian --shape 100000x100000x100000 --chunk 64x64x64 -w 4 -t 2 --json");
  REQUIRE(plan.status == 0);
  const auto p = nlohmann::json::parse(plan.out);
  const std::uint64_t blocks = 1563ull * 1563 * 1563;  // ceil(100000 / 64) per axis
  CHECK(p["blocks"] == blocks);
  REQUIRE(p["planned_workers"].size() == 4);
  std::uint64_t sum = 0;
  for (const auto& w : p["planned_workers"]) {
    sum += w["blocks"].get<std::uint64_t>();
    // A middle block is 72^3 with its halo: the input and the output at least.
    CHECK(w["peak_bytes"].get<std::uint64_t>() >= 2 * 72ull * 72 * 72 * 4);
    CHECK(w["events"].get<std::uint64_t>() >= 4 * w["blocks"].get<std::uint64_t>());
  }
  CHECK(sum == blocks);

  const auto many = run_dwsr("plan gaussian --shape 100000x100000x100000 --chunk 64x64x64 -w 1024 --json");
  REQUIRE(many.status == 0);
  CHECK(nlohmann::json::parse(many.out)["planned_workers"].size() == 1024);

  temp_dir dir;
  const auto trace = (dir / "events.csv").string();
  expect_user_error(run_dwsr("plan gaussian --shape 100000x100000x100000 --chunk 64x64x64 --trace " + trace),
                    "--trace: worker 0 would emit");
  CHECK(dir.entries().empty());
  expect_user_error(run_dwsr("plan convolution -p kernel=81,81,81 --shape 200x200x200 --chunk 1x1x1"),
                    "distinct block shapes");
  expect_user_error(run_dwsr("advise envelope --shape 20000x20000x8 --memory 1MiB -a torch_cuda_caching"),
                    "replays every event");
}

TEST_CASE("dwsr run and plan geobodies: int32 labels of the whole cube, and a peak that is a bound") {
  temp_dir dir;
  const auto out = (dir / "out").string();
  const auto r = run_dwsr("run geobodies -p threshold=0.5 --input synthetic:4x5x40:3 --output " + out + " --json -t 2");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["peak_is_bound"] == true);
  CHECK(j["measured_peak_bytes"].get<std::uint64_t>() <= j["planned_peak_bytes"].get<std::uint64_t>());
  CHECK(j["blocks"] == 1);
  const auto labels = io::load_npy<std::int32_t>(dir / "out" / "geobodies.npy");
  CHECK(labels.shape == shape3{4, 5, 40});
  // Labels 0 (background) and 1..N, each body's label first met in C order.
  std::int32_t next = 1;
  for (const auto v : labels.data) {
    CHECK((v >= 0 && v <= next));
    if (v == next) ++next;
  }
  CHECK(next > 2);
  CHECK(run_dwsr("run geobodies --input synthetic:4x5x40:3 --output " + out).out.find("within the planned bound") !=
        std::string::npos);

  const auto plan = nlohmann::json::parse(run_dwsr("plan geobodies --shape 4x5x40 --json").out);
  CHECK(plan["peak_is_bound"] == true);
  CHECK(nlohmann::json::parse(run_dwsr("plan envelope --shape 4x5x40 --json").out)["peak_is_bound"] == false);
  CHECK(run_dwsr("plan geobodies --shape 4x5x40").out.find("(an upper bound: data-dependent sizes)") !=
        std::string::npos);
  CHECK(run_dwsr("plan envelope --shape 4x5x40").out.find("upper bound") == std::string::npos);

  const auto ops = nlohmann::json::parse(run_dwsr("ops --json").out);
  bool listed = false;
  for (const auto& op : ops)
    if (op["name"] == "geobodies") {
      listed = true;
      CHECK(op["family"] == "interpretation");
      CHECK(op["parameters"][0]["name"] == "threshold");
      CHECK(op["outputs"][0]["dtype"] == "int32");
      CHECK(op["tables"][0]["name"] == "geobodies_bodies.npy");
      CHECK(op["tables"][0]["columns"][11]["name"] == "sum");
    }
  CHECK(listed);
  CHECK(std::filesystem::exists(dir / "out" / "geobodies_bodies.npy"));

  // Its labels are global: a chunk that splits the cube is refused before anything is written.
  expect_user_error(
      run_dwsr("run geobodies --input synthetic:4x5x40 --output " + (dir / "chunked").string() + " --chunk 2x5x40"),
      "geobodies needs the whole cube at once");
  CHECK_FALSE(std::filesystem::exists(dir / "chunked"));
}

TEST_CASE("dwsr run event_picks writes its table, the same bytes for every chunking and worker count") {
  temp_dir dir;
  auto run = [&](const std::string& name, const std::string& how) {
    const auto r = run_dwsr("run event_picks -p threshold=0.2 --input synthetic:12x10x64:4 --output " +
                            (dir / name).string() + " --json " + how);
    REQUIRE(r.status == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["peak_is_bound"] == true);
    CHECK(j["outputs"] == nlohmann::json::array({(dir / name / "event_picks_picks.npy").string()}));
    std::ifstream file(dir / name / "event_picks_picks.npy", std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  };
  const auto whole = run("whole", "");
  CHECK(whole.find("'descr': [('inline', '<u4'), ('crossline', '<u4'), ('sample', '<u4'), ('value', '<f4')]") !=
        std::string::npos);
  CHECK(whole.size() > 128 + 100 * 16);  // the header and a hundred picks at least
  CHECK(run("chunked", "--chunk 5x3x64 -w 3 -t 2") == whole);
  CHECK(run("traces", "--chunk 1x1x64 -w 2") == whole);
  // Time is read whole: a chunk that splits it is refused before anything is written.
  expect_user_error(
      run_dwsr("run event_picks --input synthetic:12x10x64 --output " + (dir / "split").string() + " --chunk 12x10x32"),
      "event_picks");
  CHECK_FALSE(std::filesystem::exists(dir / "split"));
  // Plans of every kind say that their figures are bounds.
  CHECK(nlohmann::json::parse(
            run_dwsr("advise event_picks --shape 12x10x64 --memory 1MiB --json").out)["peak_is_bound"] == true);
  CHECK(nlohmann::json::parse(run_dwsr("advise envelope --shape 12x10x64 --memory 1MiB --json").out)["peak_is_bound"] ==
        false);
  CHECK(run_dwsr("advise event_picks --shape 12x10x64 --memory 1MiB").out.find("the peaks are upper bounds") !=
        std::string::npos);
  CHECK(run_dwsr("plan event_picks --shape 12x10x64 --exec dask -t 2").out.find("each figure is an upper bound") !=
        std::string::npos);
}

TEST_CASE("dwsr run writes the same bytes with every vector instruction set (DWSR_SIMD); an unknown one is refused") {
  temp_dir dir;
  // The structure-tensor and edge families run their eigen-solves, the
  // median its selection and the separable filters their passes in the widest
  // lanes the CPU has: the outputs must not depend on which.
  auto run = [&](const char* simd, const std::string& op) {
    ::setenv("DWSR_SIMD", simd, 1);
    const auto out = dir / (op + "-" + simd);
    const auto r = run_dwsr("run " + op + " --input synthetic:10x9x80:3 --output " + out.string() + " -t 2");
    const auto version = run_dwsr("--version");
    ::unsetenv("DWSR_SIMD");
    REQUIRE(r.status == 0);
    CHECK(version.out.find(std::string("(vector instructions: ") + simd) != std::string::npos);
    std::vector<std::filesystem::path> files(std::filesystem::directory_iterator(out), {});
    std::sort(files.begin(), files.end());
    std::string bytes;
    for (const auto& file : files) bytes += file.filename().string() + ":" + read_raw(file);
    CHECK(bytes.size() > 10 * 9 * 80 * 4);
    return bytes;
  };
  // Solve (gst_*, chaos) and the dip and azimuth angles, window sums and gradients (all), gradients of dips
  // and the curvature formulas (volume_curvature), the 3x3x3 median's
  // selection (median), separable
  // passes along each axis (gaussian), streamed by slice (gradient_magnitude)
  // and trace by trace (trace_agc, reflection_intensity), the 9 x 9 solves in
  // lanes (eig_complex).
  for (const std::string op :
       {"gst_3d_dip", "gst_3d_azm", "gst_2d_dips", "chaos", "gradient_dips", "volume_curvature", "median", "gaussian",
        "gradient_magnitude", "trace_agc", "reflection_intensity", "eig_complex"}) {
    INFO(op);
    const auto baseline = run("baseline", op);
    if (cpu_simd_isa() >= simd_isa::avx2) CHECK(run("avx2", op) == baseline);
    if (cpu_simd_isa() >= simd_isa::avx512) CHECK(run("avx512", op) == baseline);
  }
  ::setenv("DWSR_SIMD", "sse4", 1);
  const auto bad = run_dwsr("run chaos --input synthetic:4x4x8 --output " + (dir / "bad").string());
  ::unsetenv("DWSR_SIMD");
  expect_user_error(bad, "DWSR_SIMD is 'sse4'; expected baseline, avx2 or avx512");
  CHECK_FALSE(std::filesystem::exists(dir / "bad"));
}
