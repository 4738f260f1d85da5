// The CUDA operators against the CPU ones, the CUDA meta execution against
// the real one, and the device's memory against the events. Exits with 77
// (ctest's SKIP_RETURN_CODE) where no GPU can be used, so the suite stays
// green without one; the plan checks need no GPU and run in plan_test mode.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "dwsr/exec/cuda_context.hpp"
#include "dwsr/exec/cuda_meta_context.hpp"
#include "dwsr/graph/chunked.hpp"
#include "dwsr/io/synthetic.hpp"
#include "dwsr/memory/recorder.hpp"
#include "dwsr/operators/catalogue.hpp"
#include "dwsr/operators/cuda/detail/cufft_library.hpp"
#include "dwsr/operators/cuda/device_operators.hpp"
#include "gpu_comparison.hpp"

using namespace dwsr;
namespace cu = dwsr::operators::cuda;

namespace {

using params = std::map<std::string, std::string>;

/// The operators and parameter sets checked (every CUDA operator at its
/// defaults, and the parameters that change their loops).
std::vector<std::pair<std::string, params>> cases() {
  std::vector<std::pair<std::string, params>> out;
  for (const auto& name : cu::operator_names()) out.push_back({name, {}});
  out.push_back({"gaussian", {{"sigmas", "2,1,0.5"}}});
  out.push_back({"gaussian", {{"sigmas", "0,1.5,0"}}});
  out.push_back({"median", {{"kernel", "3,5,7"}}});
  out.push_back({"median", {{"kernel", "1,1,9"}}});
  out.push_back({"rms", {{"kernel", "3,3,9"}}});
  out.push_back({"convolution", {{"kernel", "5,1,3"}}});
  out.push_back({"first_derivative", {{"axis", "0"}}});
  out.push_back({"first_derivative", {{"axis", "1"}}});
  out.push_back({"second_derivative", {{"axis", "0"}}});
  out.push_back({"phase_rotation", {{"rotation", "45"}}});
  out.push_back({"instantaneous_frequency", {{"sample_rate", "2"}}});
  out.push_back({"quality_factor", {{"sample_rate", "2"}}});
  out.push_back({"gst_3d_dip", {{"kernel", "3,5,3"}}});
  out.push_back({"chaos", {{"kernel", "3,3,3"}}});
  out.push_back({"semblance", {{"kernel", "5,1,7"}}});
  out.push_back({"semblance", {{"kernel", "3,1,515"}}});  // beyond the tile path's reach
  out.push_back({"rescale_amplitude_range", {{"min_val", "-0.1"}, {"max_val", "0.2"}}});
  out.push_back({"reflection_intensity", {{"kernel", "1,1,4"}}});
  out.push_back({"time_gain", {{"gain_val", "-0.7"}}});
  out.push_back({"gradient_magnitude", {{"sigmas", "2,0.5,1.5"}}});
  out.push_back({"gradient_dips", {{"kernel", "3,5,1"}}});
  out.push_back({"gradient_structure_tensor", {{"kernel", "1,3,5"}}});
  out.push_back({"gradient_structure_tensor", {{"kernel", "1,1,1025"}}});  // beyond the tile path's reach
  out.push_back({"lowpass_filter", {{"freq", "80"}, {"sample_rate", "2"}}});
  out.push_back({"bandpass_filter", {{"freq_lp", "5"}, {"freq_hp", "100"}}});
  out.push_back({"cwt_ricker", {{"freq", "40"}, {"sample_rate", "2"}}});          // 256 taps
  out.push_back({"cwt_ormsby", {{"freqs", "2,8,30,70"}, {"sample_rate", "1"}}});  // 512 taps
  out.push_back({"cwt_ricker", {{"sample_rate", "0.08"}}});  // 6,400 taps: beyond the tile's shared memory
  return out;
}

std::string describe(const std::string& name, const params& p) {
  std::string s = name;
  for (const auto& [k, v] : p) s += " " + k + "=" + v;
  return s;
}

/// Odd sizes, a smooth trace length, one with a factor 11, a prime one
/// (cuFFT's Bluestein path), one-sample traces (no transform at all), and
/// powers of two (the fused Hilbert path) with odd and even trace counts
/// and every pass structure: radix 16 only (16, 256, 4096) and a last pass
/// of radix 2, 4 or 8.
std::vector<shape3> shapes() {
  return {{7, 9, 200}, {5, 6, 462}, {4, 3, 257}, {1, 1, 64},   {3, 2, 1},    {5, 3, 16},
          {3, 3, 32},  {2, 3, 128}, {4, 5, 256}, {3, 1, 1024}, {2, 2, 2048}, {1, 3, 4096}};
}

std::vector<float> cube_data(shape3 s) {
  std::vector<float> v(s.voxels());
  io::generate_synthetic(s, 11, v.data());
  return v;
}

/// Host outputs of an operator of `shape`.
struct host_outputs {
  std::vector<std::vector<std::byte>> data;
  std::vector<array_ref> refs;
  host_outputs(const configured_operator& op, shape3 shape) {
    for (const auto& spec : op.outputs()) data.emplace_back(shape.voxels() * size_of(spec.type), std::byte{0x7f});
    std::size_t k = 0;
    for (const auto& spec : op.outputs()) refs.push_back({spec.type, data[k++].data(), shape});
  }
};

/// Every output within the tolerance and finite where the CPU's is;
/// ill-conditioned voxels (gpu_comparison.hpp) aside, of which at most 1 % differ.
void check_close(const std::string& op, const host_outputs& gpu, const host_outputs& cpu, const std::vector<float>& in,
                 shape3 s, const std::string& what) {
  const auto weak = testing::ill_conditioned_voxels(op, cube_view<const float>(in.data(), s));
  for (std::size_t k = 0; k < cpu.data.size(); ++k) {
    const auto n = cpu.data[k].size() / sizeof(float);
    const auto c =
        testing::compare_outputs(reinterpret_cast<const float*>(gpu.data[k].data()),
                                 reinterpret_cast<const float*>(cpu.data[k].data()), n, n / s.voxels(), weak);
    const auto* g = reinterpret_cast<const float*>(gpu.data[k].data());
    const auto* r = reinterpret_cast<const float*>(cpu.data[k].data());
    INFO(what << ": max |gpu - cpu| " << c.max_abs_diff << " at " << c.worst << " (gpu " << g[c.worst] << ", cpu "
              << r[c.worst] << "), tolerance " << c.tolerance << ", finite on one side only " << c.finiteness_mismatches
              << ", ill-conditioned " << c.ill_conditioned << ", beyond the tolerance " << c.outside);
    if (!weak.empty())
      std::printf("%-50s ill-conditioned voxels %llu of %llu, values beyond the tolerance %llu\n", what.c_str(),
                  (unsigned long long)c.ill_conditioned, (unsigned long long)s.voxels(), (unsigned long long)c.outside);
    CHECK(c.finiteness_mismatches == 0);
    CHECK(c.max_abs_diff <= c.tolerance);
    CHECK(c.outside * 100 <= n);
  }
}

}  // namespace

TEST_CASE("every CUDA operator has a CPU operator of the same name and outputs") {
  const auto reg = operators::catalogue();
  for (const auto& name : cu::operator_names()) {
    INFO(name);
    CHECK(reg.contains(name));
  }
  CHECK(cu::has_operator("envelope"));
  CHECK_FALSE(cu::has_operator("glcm_contrast"));
  recorder rec;
  CHECK_THROWS_WITH(cu::plan("glcm_contrast", {}, {2, 2, 8}, rec),
                    Catch::Contains("'glcm_contrast' has no CUDA implementation") && Catch::Contains("envelope"));
  CHECK_THROWS_AS(cu::plan("gaussian", {{"sigmas", "-1,1,1"}}, {2, 2, 8}, rec), invalid_input);
}

/// The device events of a plan: live bytes at the end, the peak, and the workspace bytes.
struct device_totals {
  std::uint64_t live = 0, peak = 0, work = 0;
};
device_totals device_totals_of(const std::vector<event>& events) {
  device_totals d;
  for (const auto& e : events) {
    if (e.dev != device::cuda) continue;
    d.live = e.act == action::alloc ? d.live + e.bytes : d.live - e.bytes;
    d.peak = std::max(d.peak, d.live);
    if (e.act == action::alloc && e.role == buffer_role::workspace) d.work += e.bytes;
  }
  return d;
}

TEST_CASE("a CUDA plan: staging, device input and outputs, work areas; the budget is the device's") {
  recorder rec;
  const shape3 s{16, 16, 200};  // not a power of two: the cuFFT path
  cu::plan("envelope", {}, s, rec);
  const auto& ev = rec.events();
  REQUIRE(ev.size() >= 8);
  // The device input first, then its staging on the host.
  CHECK(ev[0].dev == device::cuda);
  CHECK(ev[0].role == buffer_role::input);
  CHECK(ev[0].bytes == s.voxels() * 4);
  CHECK(ev[1].dev == device::host);
  const auto d = device_totals_of(ev);
  CHECK(d.live == 0);
  CHECK(d.work > 0);  // cuFFT's work area is an event
  // Input, output and the batch buffers: well under NumPy's 7x.
  CHECK(d.peak < 3 * s.voxels() * 4 + (std::uint64_t{64} << 20));
  recorder small;
  CHECK_THROWS_AS(cu::plan("envelope", {}, s, small, {.budget = s.voxels() * 4 + 100}), out_of_memory);
}

TEST_CASE("a CUDA plan: power-of-two traces take the fused path, input and output only") {
  for (const auto& [name, outputs] : {std::pair{"envelope", 1}, {"hilbert", 2}, {"phase_rotation", 1}}) {
    for (const shape3 s : {shape3{16, 16, 256}, {3, 5, 16}, {1, 1, 4096}}) {
      INFO(name << " " << to_string(s));
      recorder rec;
      cu::plan(name, {}, s, rec);
      const auto d = device_totals_of(rec.events());
      CHECK(d.work == 0);
      CHECK(d.peak == s.voxels() * 4 * (1 + std::uint64_t(outputs)));  // complex64 is two floats
    }
  }
  // The derivative-based attributes add one cube, of envelopes or phases (a
  // second derivative is written through it and copied back); those that
  // combine the frequency with the relative amplitude change add both. The
  // lobe responses add the envelopes (and the phases for the frequency).
  const shape3 s{8, 8, 512};
  for (const auto& [name, cubes] : {std::pair{"instantaneous_frequency", 3},
                                    {"sweetness", 3},
                                    {"relative_amplitude_change", 3},
                                    {"instantaneous_bandwidth", 3},
                                    {"amplitude_acceleration", 3},
                                    {"frequency_change", 3},
                                    {"dominant_frequency", 4},
                                    {"quality_factor", 4},
                                    {"response_phase", 3},
                                    {"response_amplitude", 3},
                                    {"apparent_polarity", 3},
                                    {"response_frequency", 4}}) {
    INFO(name);
    recorder rec;
    cu::plan(name, {}, s, rec);
    const auto d = device_totals_of(rec.events());
    CHECK(d.peak == std::uint64_t(cubes) * s.voxels() * 4);
    CHECK(d.live == 0);
  }
  // 8192 samples exceed the fused path's shared memory: cuFFT again.
  recorder longer;
  cu::plan("envelope", {}, {1, 2, 8192}, longer);
  CHECK(device_totals_of(longer.events()).work > 0);
}

TEST_CASE("a CUDA plan: the tile path holds input and output only; wide passes take a temporary") {
  const shape3 s{16, 16, 256};
  const auto cube = s.voxels() * 4;
  // Windows of 3 taps, or along time only: one tiled launch, no temporary (the weights aside).
  for (const auto& [name, p] : std::vector<std::pair<std::string, params>>{
           {"rms", {}}, {"convolution", {}}, {"first_derivative", {}}, {"first_derivative", {{"axis", "0"}}}}) {
    INFO(describe(name, p));
    recorder rec;
    cu::plan(name, p, s, rec);
    const auto d = device_totals_of(rec.events());
    CHECK(d.peak >= 2 * cube);
    CHECK(d.peak <= 2 * cube + 1024);
  }
  // The structure tensor: input, output and three gradients, none with a temporary.
  recorder gst;
  cu::plan("gst_3d_dip", {}, s, gst);
  CHECK(device_totals_of(gst.events()).peak <= 5 * cube + 4096);
  // 9 or 5 taps on every axis: the separate passes, through a temporary.
  for (const auto& [name, p] : std::vector<std::pair<std::string, params>>{
           {"gaussian", {}}, {"second_derivative", {}}, {"gaussian", {{"sigmas", "20,20,20"}}}}) {
    INFO(describe(name, p));
    recorder rec;
    cu::plan(name, p, s, rec);
    CHECK(device_totals_of(rec.events()).peak >= 3 * cube);
  }
}

TEST_CASE("on a GPU: every CUDA operator equals the CPU one; meta == real event for event; device memory == events") {
  if (cu::device_count() == 0) {
    WARN("no CUDA device: the device checks did not run");
    return;
  }
  std::printf("device: %s\n", cu::device_description().c_str());
  for (const auto& [name, p] : cases()) {
    for (const auto s : shapes()) {
      const auto what = describe(name, p) + " on " + std::to_string(s.inlines) + "x" + std::to_string(s.crosslines) +
                        "x" + std::to_string(s.samples);
      INFO(what);
      const auto op = operators::catalogue().find(name).configure(p);
      const auto in = cube_data(s);
      host_outputs cpu(*op, s), gpu(*op, s), warm(*op, s);
      {
        event_bus bus;
        host_context ctx(bus);
        op->run(ctx, cube_view<const float>(in.data(), s), cpu.refs);
      }
      // A first run loads the kernels (module memory), so the checked one sees only dwsr's.
      recorder ignored;
      cu::run(name, p, cube_view<const float>(in.data(), s), warm.refs, ignored);
      recorder real, meta;
      const auto r = cu::run(name, p, cube_view<const float>(in.data(), s), gpu.refs, real, {}, true);
      cu::plan(name, p, s, meta);
      check_close(name, gpu, cpu, in, s, what);
      CHECK(real.events() == meta.events());
      REQUIRE(r.memory);
      const auto& m = *r.memory;
      std::printf(
          "%-50s live peak %12llu  pool used peak %12llu  reserved peak %12llu  used-live [%lld, %lld] granularity "
          "%llu  memgetinfo-reserved [%lld, %lld]  after %lld\n",
          what.c_str(), (unsigned long long)m.live_peak, (unsigned long long)m.pool_used_peak,
          (unsigned long long)m.pool_reserved_peak, (long long)m.used_minus_live_min, (long long)m.used_minus_live_max,
          (unsigned long long)m.pool_granularity, (long long)m.info_minus_reserved_min,
          (long long)m.info_minus_reserved_max, (long long)m.info_after);
      CHECK(m.checks > 0);
      // Every device byte an event: the pool hands out the events' bytes, each
      // rounded up to the pool's granularity, at every free.
      CHECK(m.pool_granularity > 0);
      CHECK(m.pool_granularity <= 4096);
      // Outside the pool only cuFFT's plans hold device memory (at most 16 MiB), and nothing is left.
      CHECK(m.info_minus_reserved_min >= 0);
      CHECK(m.info_minus_reserved_max <= (std::int64_t{16} << 20));
      CHECK(m.info_after <= (std::int64_t{2} << 20));
    }
  }
}

TEST_CASE("cuFFT is loaded at its first use, every function dwsr calls resolved") {
  // Not linked (it would cost every start of the tool ~3.5 ms): loading it must
  // work wherever the toolkit is, GPU or not.
  const auto& fft = cu::detail::cufft();
  for (const void* f : {(const void*)fft.create, (const void*)fft.set_auto_allocation,
                        (const void*)fft.make_plan_many64, (const void*)fft.set_work_area, (const void*)fft.set_stream,
                        (const void*)fft.exec_r2c, (const void*)fft.exec_c2r, (const void*)fft.destroy})
    CHECK(f != nullptr);
  std::string maps;
  if (FILE* f = std::fopen("/proc/self/maps", "r")) {
    char line[4096];
    while (std::fgets(line, sizeof line, f)) maps += line;
    std::fclose(f);
  }
  CHECK(maps.find("libcufft") != std::string::npos);
}

TEST_CASE("on a GPU: cuFFT's work areas stay within dwsr's bound") {
  if (cu::device_count() == 0) {
    WARN("no CUDA device: the work-area bound was not checked");
    return;
  }
  for (std::uint64_t n : {2, 3, 7, 64, 100, 200, 256, 257, 462, 500, 512, 751, 1000, 1024, 1031, 2048, 4096}) {
    for (std::uint64_t batch : {1, 7, 1000, 4096, 16384}) {
      const auto w = cu::fft_work_area(n, batch);
      INFO("length " << n << ", batch " << batch << ": cuFFT " << w.forward << " (R2C) and " << w.backward
                     << " (C2R) bytes, bound " << w.bound);
      CHECK(w.forward <= w.bound);
      CHECK(w.backward <= w.bound);
    }
  }
}

static_assert(ExecutionContext<cuda_context>);
static_assert(ExecutionContext<cuda_meta_context>);

namespace {

/// smooth -> {env, dip, med}: a window node feeding an FFT node, a tensor node and a rank node.
graph device_graph(const registry& ops) {
  graph g(ops);
  g.add("smooth", "gaussian", {"input"}, {{"sigmas", "1,1,0.5"}});
  g.add("env", "envelope", {"smooth"});
  g.add("dip", "gst_3d_dip", {"smooth"});
  g.add("med", "median", {"input"});
  g.build();
  return g;
}

/// The graph's outputs in host cubes of `cube` (one float cube each).
struct graph_outputs {
  std::vector<std::vector<float>> data;
  std::vector<array_ref> refs;
  graph_outputs(const graph& g, shape3 cube) : data(g.outputs().size(), std::vector<float>(cube.voxels(), -7.0f)) {
    for (auto& d : data) refs.push_back({dtype::float32, d.data(), cube});
  }
};

}  // namespace

TEST_CASE("a graph of CUDA operators plans on the device: staging, device blocks, a per-worker device budget") {
  const auto g = device_graph(cu::catalogue());
  const shape3 cube{12, 10, 128};
  const chunked_schedule s(g, cube, {.chunk = {5, 4, 128}, .workers = 2});
  const auto plan = plan_chunked<cuda_meta_context>(s);
  recorder w0;
  worker_events<cuda_meta_context>(s, 0, w0);
  std::uint64_t device_live = 0, device_peak = 0, host_live = 0, host_peak = 0;
  for (const auto& e : w0.events()) {
    auto& live = e.dev == device::cuda ? device_live : host_live;
    live = e.act == action::alloc ? live + e.bytes : live - e.bytes;
    device_peak = std::max(device_peak, device_live);
    host_peak = std::max(host_peak, host_live);
  }
  // The budget is the device's: the plan's peak is the device peak; staging is on the host.
  CHECK(plan.workers[0].peak == device_peak);
  CHECK(host_peak > 0);
  CHECK(device_live == 0);
  CHECK(host_live == 0);
  CHECK(plan.workers[0].events == w0.events().size());
  // Operators without a CUDA implementation are not in the CUDA catalogue.
  graph cpu_only(cu::catalogue());
  cpu_only.add("g", "glcm_contrast");
  CHECK_THROWS_WITH(cpu_only.build(), Catch::Contains("glcm_contrast"));
}

TEST_CASE("on a GPU: a chunked graph on the device equals the CPU's whole-cube run; plan == run per worker") {
  if (cu::device_count() == 0) {
    WARN("no CUDA device: the chunked device run was not checked");
    return;
  }
  const shape3 cube{12, 10, 128};
  const auto in = cube_data(cube);
  const auto cpu_graph = device_graph(operators::catalogue());
  graph_outputs whole(cpu_graph, cube);
  {
    memory_block_source source(cube_view<const float>(in.data(), cube));
    memory_block_sink sink(whole.refs);
    run_chunked(cpu_graph, source, &sink, {});
  }
  const auto g = device_graph(cu::catalogue());
  for (const chunked_options o :
       {chunked_options{.chunk = {5, 4, 128}, .workers = 2}, chunked_options{.chunk = {12, 10, 128}, .workers = 1},
        chunked_options{.chunk = {1, 3, 128}, .workers = 3}}) {
    INFO("chunk " << to_string(o.chunk) << ", " << o.workers << " workers");
    const chunked_schedule s(g, cube, o);
    graph_outputs gpu(g, cube);
    memory_block_source source(cube_view<const float>(in.data(), cube));
    memory_block_sink sink(gpu.refs);
    std::vector<recorder> recorded(o.workers);
    std::vector<event_sink_ref> sinks(recorded.begin(), recorded.end());
    const auto measured = run_chunked<cuda_context>(s, source, &sink, sinks);
    const auto planned = plan_chunked<cuda_meta_context>(s);
    for (std::size_t w = 0; w < o.workers; ++w) {
      CHECK(measured.workers[w].peak == planned.workers[w].peak);
      recorder events;
      worker_events<cuda_meta_context>(s, w, events);
      CHECK(recorded[w].events() == events.events());
    }
    for (std::size_t k = 0; k < gpu.data.size(); ++k) {
      INFO(g.output_name(g.outputs()[k]));
      const auto c = testing::compare_outputs(gpu.data[k].data(), whole.data[k].data(), cube.voxels(), 1, {});
      CHECK(c.finiteness_mismatches == 0);
      CHECK(c.max_abs_diff <= c.tolerance);
    }
  }
  // The budget bounds each worker's device bytes: one byte less than the plan is an out_of_memory.
  const chunked_schedule s(g, cube, {.chunk = {5, 4, 128}, .workers = 2});
  const auto peak = plan_chunked<cuda_meta_context>(s).peak();
  memory_block_source source(cube_view<const float>(in.data(), cube));
  CHECK_THROWS_AS(
      run_chunked<cuda_context>(chunked_schedule(g, cube, {.chunk = {5, 4, 128}, .workers = 2, .budget = peak - 1}),
                                source, nullptr),
      out_of_memory);
}

int main(int argc, char** argv) {
  // Without a GPU only the plan checks run; the whole program reports "skipped"
  // to ctest (77) when asked to run the device checks alone.
  const bool device_only = argc > 1 && std::strcmp(argv[1], "--device-only") == 0;
  if (device_only && cu::device_count() == 0) {
    std::puts("no CUDA device: skipped");
    return 77;
  }
  Catch::Session session;
  if (device_only) {
    const char* args[] = {argv[0], "on a GPU*"};
    if (const int rc = session.applyCommandLine(2, args)) return rc;
  } else if (const int rc = session.applyCommandLine(argc, argv)) {
    return rc;
  }
  return session.run();
}
