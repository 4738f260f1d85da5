// The CUDA operators on a GPU, for scripts/gpu-validate.sh: for every operator
// and cube shape, the device time (CUDA events, median of --repeats), voxels/s,
// the planned device peak from the events, the device memory read during a
// checked run (the context's pool and cudaMemGetInfo), and, on the smallest
// shape, the largest difference from the CPU operator. Writes a JSON document
// and, for --traces, the events of one run of each operator as a dwsr trace
// (for the allocator comparisons). Needs a GPU; exits 77 without one.
//
//   cuda_table --shapes 256x256x256,512x512x1024 --repeats 5 --out DIR [--traces envelope,gaussian]

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dwsr/core/shape.hpp"
#include "dwsr/io/synthetic.hpp"
#include "dwsr/memory/recorder.hpp"
#include "dwsr/operators/catalogue.hpp"
#include "dwsr/operators/cuda/device_operators.hpp"
#include "dwsr/sim/trace_csv.hpp"
#include "gpu_comparison.hpp"

using namespace dwsr;
namespace cu = dwsr::operators::cuda;

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= s.size()) {
    const auto next = s.find(sep, at);
    out.push_back(s.substr(at, next == std::string::npos ? std::string::npos : next - at));
    if (next == std::string::npos) break;
    at = next + 1;
  }
  return out;
}

std::uint64_t device_peak(const std::vector<event>& events) {
  std::uint64_t live = 0, peak = 0;
  for (const auto& e : events) {
    if (e.dev != device::cuda) continue;
    live = e.act == action::alloc ? live + e.bytes : live - e.bytes;
    peak = std::max(peak, live);
  }
  return peak;
}

struct outputs {
  std::vector<std::vector<std::byte>> data;
  std::vector<array_ref> refs;
  outputs(const configured_operator& op, shape3 s) {
    for (const auto& spec : op.outputs()) data.emplace_back(s.voxels() * size_of(spec.type));
    std::size_t k = 0;
    for (const auto& spec : op.outputs()) refs.push_back({spec.type, data[k++].data(), s});
  }
};

/// The events of every CUDA operator's plan on each shape, one after another,
/// buffer ids renumbered: a long, varied trace for the allocator comparisons.
std::vector<event> catalogue_trace(const std::vector<std::string>& ops, const std::vector<shape3>& shapes) {
  std::vector<event> all;
  std::uint64_t offset = 0;
  for (const auto s : shapes)
    for (const auto& name : ops) {
      recorder rec;
      cu::plan(name, {}, s, rec);
      std::uint64_t top = 0;
      for (auto e : rec.events()) {
        top = std::max(top, e.buffer);
        e.buffer += offset;
        e.seq = all.size();
        all.push_back(e);
      }
      offset += top;
    }
  return all;
}

}  // namespace

int main(int argc, char** argv) {
  std::string shapes_text = "256x256x256,512x512x1024", ops_text, out_dir = ".", traces_text = "envelope,gaussian";
  int repeats = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--shapes")
      shapes_text = v;
    else if (k == "--ops")
      ops_text = v;
    else if (k == "--repeats")
      repeats = std::max(1, std::atoi(v.c_str()));
    else if (k == "--out")
      out_dir = v;
    else if (k == "--traces")
      traces_text = v;
    else {
      std::fprintf(stderr, "cuda_table: unknown option %s; expected --shapes, --ops, --repeats, --out, --traces\n",
                   k.c_str());
      return 2;
    }
  }
  if (cu::device_count() == 0) {
    std::puts("cuda_table: no CUDA device: skipped");
    return 77;
  }
  const auto ops = ops_text.empty() ? cu::operator_names() : split(ops_text, ',');
  const auto traced = split(traces_text, ',');
  std::filesystem::create_directories(out_dir);
  // First, before anything else is allocated: the context's own memory.
  const auto context_bytes = cu::device_memory_used();
  nlohmann::json doc{{"device", cu::device_description()},
                     {"context_overhead_bytes", context_bytes},
                     {"results", nlohmann::json::array()},
                     {"errors", nlohmann::json::array()},
                     {"work_areas", nlohmann::json::array()}};
  for (std::uint64_t n : {64, 200, 256, 257, 462, 512, 1000, 1024, 2048}) {
    const auto batch = std::max<std::uint64_t>(1, (std::uint64_t{1} << 22) / n);
    const auto w = cu::fft_work_area(n, batch);
    doc["work_areas"].push_back({{"n", n},
                                 {"batch", batch},
                                 {"cufft", std::max(w.forward, w.backward)},
                                 {"cufft_r2c", w.forward},
                                 {"cufft_c2r", w.backward},
                                 {"bound", w.bound}});
  }
  auto save = [&] { std::ofstream(std::filesystem::path(out_dir) / "dwsr_ops.json") << doc.dump(2) << "\n"; };
  const auto shapes = split(shapes_text, ',');
  {
    const auto trace = catalogue_trace(ops, {{7, 9, 200}, {33, 17, 100}, {64, 64, 256}});
    sim::write_trace_csv(std::filesystem::path(out_dir) / "trace_catalogue.csv", trace);
  }
  for (std::size_t si = 0; si < shapes.size(); ++si) {
    const auto dims = split(shapes[si], 'x');
    if (dims.size() != 3) {
      std::fprintf(stderr, "cuda_table: shape %s; expected IxXxT\n", shapes[si].c_str());
      return 2;
    }
    const shape3 s{std::stoull(dims[0]), std::stoull(dims[1]), std::stoull(dims[2])};
    std::vector<float> cube(s.voxels());
    io::generate_synthetic(s, 7, cube.data(), 16);
    const cube_view<const float> in(cube.data(), s);
    for (const auto& name : ops) {
      std::printf("%s %s: ", shapes[si].c_str(), name.c_str());
      std::fflush(stdout);
      nlohmann::json row{{"op", name}, {"shape", {s.inlines, s.crosslines, s.samples}}, {"voxels", s.voxels()}};
      try {
        const auto op = operators::catalogue().find(name).configure({});
        outputs gpu(*op, s);
        recorder planned;
        cu::plan(name, {}, s, planned);
        row["device_peak_event_bytes"] = device_peak(planned.events());
        recorder warm;
        cu::run(name, {}, in, gpu.refs, warm);
        row["plan_equals_run"] = warm.events() == planned.events();
        std::vector<double> seconds;
        for (int r = 0; r < repeats; ++r) seconds.push_back(cu::run(name, {}, in, gpu.refs, {}).operator_seconds);
        std::sort(seconds.begin(), seconds.end());
        const double median = seconds[seconds.size() / 2];
        row["seconds_all"] = seconds;
        row["seconds_median"] = median;
        row["voxels_per_s"] = double(s.voxels()) / median;
        const auto checked = cu::run(name, {}, in, gpu.refs, {}, {}, true);
        const auto& m = *checked.memory;
        row["device_peak_memgetinfo_bytes"] = m.info_peak;
        row["memgetinfo_overhead_bytes"] = m.info_minus_reserved_max;
        row["memgetinfo_overhead_min_bytes"] = m.info_minus_reserved_min;
        row["pool_used_peak_bytes"] = m.pool_used_peak;
        row["pool_reserved_peak_bytes"] = m.pool_reserved_peak;
        row["pool_granularity"] = m.pool_granularity;
        row["used_minus_live"] = {m.used_minus_live_min, m.used_minus_live_max};
        row["memgetinfo_after_bytes"] = m.info_after;
        row["events_match_memgetinfo"] = m.pool_granularity != 0 && m.used_minus_live_min >= 0;
        if (si == 0) {
          outputs cpu(*op, s);
          event_bus bus;
          host_context ctx(bus, {.threads = 16});
          op->run(ctx, in, cpu.refs);
          const auto weak = testing::ill_conditioned_voxels(name, in);
          double worst = 0, tolerance = 0;
          std::uint64_t ill = 0, mismatches = 0, outside = 0;
          for (std::size_t k = 0; k < cpu.data.size(); ++k) {
            const auto n = cpu.data[k].size() / sizeof(float);
            const auto c =
                testing::compare_outputs(reinterpret_cast<const float*>(gpu.data[k].data()),
                                         reinterpret_cast<const float*>(cpu.data[k].data()), n, n / s.voxels(), weak);
            worst = std::max(worst, c.max_abs_diff), tolerance = std::max(tolerance, c.tolerance);
            ill = std::max(ill, c.ill_conditioned), mismatches += c.finiteness_mismatches, outside += c.outside;
          }
          row["max_abs_diff_vs_cpu"] = worst;
          row["tolerance"] = tolerance;
          row["ill_conditioned_voxels"] = ill;
          row["values_beyond_tolerance"] = outside;
          row["finiteness_mismatches"] = mismatches;
          if (std::find(traced.begin(), traced.end(), name) != traced.end())
            sim::write_trace_csv(std::filesystem::path(out_dir) / ("trace_" + name + ".csv"), warm.events());
        }
        std::printf("%.3g voxels/s, device peak %llu B (events), %llu B (cudaMemGetInfo)\n",
                    row["voxels_per_s"].get<double>(), (unsigned long long)device_peak(planned.events()),
                    (unsigned long long)m.info_peak);
        doc["results"].push_back(row);
      } catch (const std::exception& e) {
        std::printf("error: %s\n", e.what());
        doc["errors"].push_back({{"op", name}, {"shape", shapes[si]}, {"error", e.what()}});
      }
      std::fflush(stdout);
      save();
    }
  }
  save();
  return 0;
}
