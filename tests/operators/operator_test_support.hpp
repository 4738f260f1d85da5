#pragma once
// Shared by the operator tests: run an operator for real and in the meta
// context, compare against the DASF reference files, random shapes.

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dwsr/graph/execute.hpp"
#include "dwsr/io/npy.hpp"
#include "dwsr/memory/peak_counter.hpp"
#include "dwsr/memory/realises.hpp"
#include "dwsr/memory/recorder.hpp"
#include "dwsr/operators/catalogue.hpp"

namespace dwsr::test {

/// The reference directory; a missing one fails the test (CI has ../shared).
inline std::filesystem::path reference_dir() {
  const std::filesystem::path dir = std::filesystem::path(DWSR_REFERENCE_DIR) / "dasf";
  REQUIRE(std::filesystem::exists(dir / "input.npy"));
  return dir;
}

/// One output of a real run, as raw bytes and its type.
struct output_data {
  dtype type;
  std::vector<std::byte> bytes;
  template <class T>
  const T* as() const {
    return reinterpret_cast<const T*>(bytes.data());
  }
};

/// What a real run produced and emitted.
struct real_run {
  std::vector<output_data> outputs;
  std::vector<event> events;
  std::uint64_t peak = 0;
};

/// Runs `op` for real on `input` with `threads` threads, in a computing context
/// of type Ctx (the host by default).
template <ExecutionContext Ctx = host_context>
real_run run_real(const configured_operator& op, const std::vector<float>& input, shape3 shape,
                  std::size_t threads = 1) {
  real_run r;
  recorder rec;
  peak_counter counter;
  fan_out sinks{rec, counter};
  event_bus bus(sinks);
  Ctx ctx(bus, {.threads = threads});
  execute(
      ctx, op, shape, [&](float* dst) { std::copy(input.begin(), input.end(), dst); },
      [&](std::span<const array_ref> outs) {
        for (const auto& o : outs) {
          const auto* p = static_cast<const std::byte*>(o.data);
          r.outputs.push_back({o.type, std::vector<std::byte>(p, p + o.bytes())});
        }
      });
  r.events = rec.events();
  r.peak = counter.peak();
  return r;
}

/// The cube-wide reduction of `op` over `input`, every pass in order (empty
/// for operators without one).
inline reduction reduce_real(const configured_operator& op, const std::vector<float>& input, shape3 shape) {
  event_bus bus;
  host_context ctx(bus);
  reduction r;
  for (std::size_t pass = 0; pass < op.reduction_passes(); ++pass)
    op.reduce(ctx, cube_view<const float>(input.data(), shape), pass, r);
  return r;
}

/// Runs `op` on one block with a reduction computed elsewhere, as chunked
/// execution does (operators without a reduction ignore it): the outputs.
inline std::vector<output_data> run_block(const configured_operator& op, const std::vector<float>& block, shape3 shape,
                                          const reduction& r, std::size_t threads = 1) {
  event_bus bus;
  host_context ctx(bus, {.threads = threads});
  std::vector<output_data> outs;
  std::vector<array_ref> refs;
  for (const auto& s : op.outputs()) outs.push_back({s.type, std::vector<std::byte>(shape.voxels() * size_of(s.type))});
  for (auto& o : outs) refs.push_back({o.type, o.bytes.data(), shape});
  op.run(ctx, cube_view<const float>(block.data(), shape), refs, r);
  return outs;
}

/// The meta execution's events.
inline std::vector<event> meta_events(const configured_operator& op, shape3 shape, std::size_t threads) {
  recorder rec;
  plan(op, shape, threads, rec);
  return rec.events();
}

/// Max |a - b| over voxels finite in both, and whether the non-finite masks agree.
struct comparison {
  double max_abs_diff = 0;
  double max_abs_ref = 0;
  std::uint64_t mask_mismatches = 0;
  std::uint64_t worst_index = 0;
  std::uint64_t ill_conditioned = 0;  ///< voxels held to the loose bound instead
  double worst_loose_ratio = 0;       ///< max |diff| / loose(|ref|) over those
};

template <class T>
std::complex<double> widen(T v) {
  if constexpr (std::is_same_v<T, std::complex<float>>)
    return {v.real(), v.imag()};
  else
    return {static_cast<double>(v), 0.0};
}

/// A comparison with a reference file. Where an output is ill-conditioned (a
/// phase where the envelope vanishes, a ratio whose denominator crosses zero),
/// `well_conditioned` selects the voxels held to the strict tolerance; the
/// others must agree within loose(|ref|) and be under 1% of the cube.
struct reference_check {
  std::string op;
  std::string file;
  double rel = 1e-4;  ///< tolerance: rel * max(1, max |ref|) on the max abs difference
  std::map<std::string, std::string> params = {};
  std::size_t output = 0;
  std::function<bool(std::uint64_t voxel)> well_conditioned = {};
  std::function<double(double abs_ref)> loose = {};
};

template <class T>
comparison compare(const T* got, const T* ref, std::uint64_t n, const reference_check& check) {
  comparison c;
  for (std::uint64_t i = 0; i < n; ++i) {
    const auto r = widen(ref[i]);
    if (std::isfinite(r.real()) && std::isfinite(r.imag())) c.max_abs_ref = std::max(c.max_abs_ref, std::abs(r));
  }
  for (std::uint64_t i = 0; i < n; ++i) {
    const auto g = widen(got[i]);
    const auto r = widen(ref[i]);
    const bool gf = std::isfinite(g.real()) && std::isfinite(g.imag());
    const bool rf = std::isfinite(r.real()) && std::isfinite(r.imag());
    if (gf != rf) {
      ++c.mask_mismatches;
      continue;
    }
    if (!rf) continue;
    const double d = std::abs(g - r);
    if (check.well_conditioned && !check.well_conditioned(i)) {
      ++c.ill_conditioned;
      c.worst_loose_ratio = std::max(c.worst_loose_ratio, d / check.loose(std::abs(r)));
      continue;
    }
    if (d > c.max_abs_diff) c.max_abs_diff = d, c.worst_index = i;
  }
  return c;
}

/// Runs the check on the reference input and asserts it.
inline void check_against_reference(const reference_check& check) {
  const auto dir = reference_dir();
  const auto input = io::load_npy<float>(dir / "input.npy");
  const auto op = operators::catalogue().find(check.op).configure(check.params);
  const auto run = run_real(*op, input.data, input.shape, 2);
  const auto& out = run.outputs.at(check.output);
  const auto path = dir / (check.file + ".npy");
  REQUIRE(io::read_npy_header(path).type == out.type);
  comparison c;
  const auto n = input.shape.voxels();
  if (out.type == dtype::complex64) {
    c = compare(out.as<std::complex<float>>(), io::load_npy<std::complex<float>>(path).data.data(), n, check);
  } else if (out.type == dtype::int64) {
    c = compare(out.as<std::int64_t>(), io::load_npy<std::int64_t>(path).data.data(), n, check);
  } else {
    c = compare(out.as<float>(), io::load_npy<float>(path).data.data(), n, check);
  }
  const double tolerance = check.rel * std::max(1.0, c.max_abs_ref);
  INFO(check.op << " vs " << check.file << ": max |diff| " << c.max_abs_diff << " at voxel " << c.worst_index
                << ", tolerance " << tolerance << ", max |ref| " << c.max_abs_ref << "; " << c.ill_conditioned
                << " ill-conditioned voxels at " << c.worst_loose_ratio << " of their bound");
  CHECK(c.mask_mismatches == 0);
  CHECK(c.max_abs_diff <= tolerance);
  CHECK(c.ill_conditioned * 100 <= n);
  CHECK(c.worst_loose_ratio <= 1.0);
}

/// Each operator against the reference file of its own name, with the default
/// tolerance and parameters.
inline void check_against_references(std::initializer_list<const char*> ops) {
  for (const char* op : ops) check_against_reference({op, op});
}

/// Loads a reference file's values (for conditioning masks).
inline std::vector<float> reference_values(const std::string& file) {
  return io::load_npy<float>(reference_dir() / (file + ".npy")).data;
}

/// Operator `name` of the catalogue with `params`.
inline std::unique_ptr<configured_operator> configured(const std::string& name,
                                                       const std::map<std::string, std::string>& params = {}) {
  return operators::catalogue().find(name).configure(params);
}

/// Operator `name` of the catalogue with one parameter.
inline std::unique_ptr<configured_operator> configured(const std::string& name, const std::string& param,
                                                       const std::string& value) {
  return configured(name, {{param, value}});
}

/// `kernel` as a parameter.
inline std::map<std::string, std::string> kernel_param(std::array<std::uint64_t, 3> k) {
  return {{"kernel", std::to_string(k[0]) + "," + std::to_string(k[1]) + "," + std::to_string(k[2])}};
}

/// `kernel` and `dip_factor` as parameters.
inline std::map<std::string, std::string> dip_param(std::array<std::uint64_t, 3> k, const std::string& dip_factor) {
  auto p = kernel_param(k);
  p["dip_factor"] = dip_factor;
  return p;
}

/// Configuring `op` with `params` fails with a message containing `fragment`.
inline void check_rejected(const std::string& op, const std::map<std::string, std::string>& params,
                           const std::string& fragment) {
  INFO(op);
  CHECK_THROWS_WITH(configured(op, params), Catch::Contains(fragment));
}

/// A deterministic pseudo-random cube (xorshift), values in [-1, 1).
inline std::vector<float> noise(shape3 s, std::uint64_t seed) {
  std::vector<float> v(s.voxels());
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& f : v) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    f = static_cast<float>(static_cast<double>(x >> 11) / 4503599627370496.0 - 1.0);
  }
  return v;
}

/// Shapes that exercise edge cases: 1-sample traces, a single trace, prime and odd lengths.
inline std::vector<shape3> edge_shapes() {
  return {{1, 1, 1}, {1, 1, 2}, {1, 1, 127}, {3, 1, 1}, {1, 5, 16}, {2, 3, 7}, {5, 4, 31}, {4, 7, 64}, {3, 3, 101}};
}

/// `count` random shapes from a fixed seed: up to 16 inlines, 8 crosslines, 200 samples.
inline std::vector<shape3> random_shapes(std::uint64_t seed, int count) {
  std::vector<shape3> out;
  for (int i = 0; i < count; ++i) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    out.push_back({1 + (seed >> 60), 1 + ((seed >> 50) & 7), 1 + ((seed >> 33) % 200)});
  }
  return out;
}

/// The edge shapes and `count` random shapes from `seed`.
inline std::vector<shape3> test_shapes(std::uint64_t seed, int count = 6) {
  auto shapes = edge_shapes();
  for (const auto& s : random_shapes(seed, count)) shapes.push_back(s);
  return shapes;
}

/// Meta execution emits exactly the real execution's events and plans its
/// peak (but for the events it flags as bounds, event::bound, which the real
/// ones stay within, and then the peak too), on every shape (input noise(shape, voxels + input_seed)) with 1, 2
/// and 3 threads; with `thread_invariant`, every output's bytes are also those
/// of the 1-thread run.
inline void check_plan_matches_run(const configured_operator& op, const std::vector<shape3>& shapes,
                                   bool thread_invariant, std::uint64_t input_seed = 0) {
  for (const auto& shape : shapes) {
    const auto input = noise(shape, shape.voxels() + input_seed);
    std::vector<output_data> first;
    for (std::size_t threads : {1, 2, 3}) {
      INFO(op.name() << " on " << to_string(shape) << " with " << threads << " threads");
      const auto run = run_real(op, input, shape, threads);
      const auto planned = meta_events(op, shape, threads);
      REQUIRE(realises(run.events, planned));
      if (std::any_of(planned.begin(), planned.end(), [](const event& e) { return e.bound; }))
        CHECK(run.peak <= plan(op, shape, threads).peak_bytes);
      else
        CHECK(run.peak == plan(op, shape, threads).peak_bytes);
      if (!thread_invariant) continue;
      if (threads == 1) first = run.outputs;
      for (std::size_t k = 0; k < first.size(); ++k) CHECK(run.outputs[k].bytes == first[k].bytes);
    }
  }
}

/// Measured peaks on `input` (of `shape`) with `threads` threads, for every
/// operator of `ops` with default parameters: exactly input + outputs +
/// scratch(name), as planned, and at most `bound` x (input + outputs) (0: no bound).
inline void check_measured_peaks(const std::vector<std::string>& ops, const std::vector<float>& input, shape3 shape,
                                 std::size_t threads, const std::function<std::uint64_t(const std::string&)>& scratch,
                                 double bound = 0) {
  const std::uint64_t in_bytes = shape.voxels() * 4;
  for (const auto& name : ops) {
    const auto op = configured(name);
    const auto run = run_real(*op, input, shape, threads);
    const std::uint64_t expected = in_bytes + output_bytes(*op, shape) + scratch(name);
    INFO(name << ": peak " << run.peak << " = " << double(run.peak) / double(in_bytes) << " x input");
    CHECK(run.peak == expected);
    CHECK(plan(*op, shape, threads).peak_bytes == expected);
    if (bound > 0) CHECK(double(run.peak) <= double(in_bytes + output_bytes(*op, shape)) * bound);
  }
}

/// Measured peaks of window operators on a 9 x 10 x 37 noise cube with 3
/// threads, for every kernel of kernels(name): expected(name, shape, kernel, 3).
template <class Kernels, class Expected>
void check_kernel_peaks(const std::vector<std::string>& ops, Kernels&& kernels, Expected&& expected) {
  const shape3 shape{9, 10, 37};
  const auto input = noise(shape, 5);
  for (const auto& name : ops)
    for (const std::array<std::uint64_t, 3> k : kernels(name)) {
      INFO(name << " kernel " << k[0] << "," << k[1] << "," << k[2]);
      CHECK(run_real(*configured(name, kernel_param(k)), input, shape, 3).peak == expected(name, shape, k, 3));
    }
}

/// The plans of `ops` (default parameters) on the README's cube, 128 x 128 x
/// 512 float32 with 2 threads, printed as peaks over the input; check(name,
/// shape, plan) asserts each.
template <class Check>
void check_readme_plans(const std::vector<std::string>& ops, Check&& check) {
  const shape3 shape{128, 128, 512};
  for (const auto& name : ops) {
    const auto planned = plan(*configured(name), shape, 2);
    const double ratio = double(planned.peak_bytes) / double(planned.input_bytes);
    std::cout << name << ": peak " << planned.peak_bytes << " B = " << ratio << " x input\n";
    check(name, shape, planned);
  }
}

/// The sub-cube [lo, hi) of `cube` (of shape `s`), in C order.
inline std::vector<float> sub_cube(const std::vector<float>& cube, shape3 s, std::array<std::uint64_t, 3> lo,
                                   std::array<std::uint64_t, 3> hi) {
  std::vector<float> out;
  for (auto i = lo[0]; i < hi[0]; ++i)
    for (auto x = lo[1]; x < hi[1]; ++x) {
      const auto* trace = cube.data() + (i * s.crosslines + x) * s.samples;
      out.insert(out.end(), trace + lo[2], trace + hi[2]);
    }
  return out;
}

/// Whether every output of `op` on a block [b, b + n) of a noise cube, computed
/// from the block extended by `extension` per side, equals bytewise the whole-cube
/// run's values there. The cube has `margin` voxels beyond the extension on each
/// side (time is kept whole for operators that need whole traces).
inline bool block_matches_whole(const configured_operator& op, std::array<std::uint64_t, 3> extension,
                                std::array<std::uint64_t, 3> n = {4, 3, 8}, std::uint64_t margin = 2) {
  const bool whole_time = op.halo().whole_traces;
  std::array<std::uint64_t, 3> dims{}, b{}, lo{}, hi{};
  for (std::size_t a = 0; a < 3; ++a) {
    const auto r = op.halo().radius[a];
    dims[a] = 2 * (margin + r) + n[a];
    b[a] = margin + r;
  }
  if (whole_time) b[2] = 0, n[2] = dims[2] = 24;
  for (std::size_t a = 0; a < 3; ++a) {
    lo[a] = b[a] - (a == 2 && whole_time ? 0 : extension[a]);
    hi[a] = b[a] + n[a] + (a == 2 && whole_time ? 0 : extension[a]);
  }
  const shape3 shape{dims[0], dims[1], dims[2]};
  const shape3 block{hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]};
  const auto cube = noise(shape, 42);
  const auto whole = run_real(op, cube, shape);
  const auto part = run_real(op, sub_cube(cube, shape, lo, hi), block);
  for (std::size_t k = 0; k < whole.outputs.size(); ++k) {
    const auto elem = size_of(whole.outputs[k].type);
    for (auto i = b[0]; i < b[0] + n[0]; ++i)
      for (auto x = b[1]; x < b[1] + n[1]; ++x) {
        const auto* w = whole.outputs[k].bytes.data() + ((i * shape.crosslines + x) * shape.samples + b[2]) * elem;
        const auto* p = part.outputs[k].bytes.data() +
                        (((i - lo[0]) * block.crosslines + (x - lo[1])) * block.samples + (b[2] - lo[2])) * elem;
        if (std::memcmp(w, p, n[2] * elem) != 0) return false;
      }
  }
  return true;
}

/// What chunked execution relies on for operators of whole traces: the traces
/// [2, 6) x [2, 5) of an 8 x 7 x 40 noise cube, computed on `threads` threads
/// from the block extended by the declared inline and crossline radius (with
/// the whole cube's reduction), are the whole-cube run's bytes.
inline void check_trace_block_halo(const configured_operator& op, std::size_t threads) {
  const shape3 shape{8, 7, 40};
  const auto cube = noise(shape, 42);
  const auto r = op.halo().radius;
  const std::array<std::uint64_t, 3> lo{2 - r[0], 2 - r[1], 0}, hi{6 + r[0], 5 + r[1], shape.samples};
  const shape3 block{hi[0] - lo[0], hi[1] - lo[1], shape.samples};
  const auto whole = run_real(op, cube, shape).outputs[0].bytes;
  const auto part = run_block(op, sub_cube(cube, shape, lo, hi), block, reduce_real(op, cube, shape), threads)[0].bytes;
  const auto elem = size_of(op.outputs()[0].type) * shape.samples;
  for (std::uint64_t i = 2; i < 6; ++i)
    for (std::uint64_t x = 2; x < 5; ++x) {
      const auto* w = whole.data() + (i * shape.crosslines + x) * elem;
      const auto* p = part.data() + ((i - lo[0]) * block.crosslines + (x - lo[1])) * elem;
      INFO(op.name() << " trace " << i << "," << x);
      REQUIRE(std::memcmp(w, p, elem) == 0);
    }
}

/// The halo check of chunked execution: the declared radius is enough (a block
/// extended by it reproduces the whole-cube values bytewise) and tight (one
/// sample less along any axis with a radius changes some value).
inline void check_halo(const configured_operator& op) {
  const auto r = op.halo().radius;
  INFO(op.name() << " with halo " << r[0] << "," << r[1] << "," << r[2]);
  CHECK(block_matches_whole(op, r));
  for (std::size_t a = 0; a < 3; ++a) {
    if (r[a] == 0 || (a == 2 && op.halo().whole_traces)) continue;
    auto less = r;
    --less[a];
    INFO("axis " << a << " extended by " << less[a]);
    CHECK_FALSE(block_matches_whole(op, less));
  }
}

}  // namespace dwsr::test
