// A program outside dwsr, built against the installed package: it registers an
// operator of its own beside the one of dwsr's that it needs, puts them in a
// graph, and runs the graph chunked over 2 workers. Exits non-zero unless
// every worker's measured peak equals its plan, byte for byte.
#include <dwsr/dwsr.hpp>
#include <dwsr/operators/complex_trace.hpp>

#include <cstdio>
#include <vector>

namespace {

/// A user's operator: scales every sample (no halo, no scratch).
struct scale {
  static constexpr std::string_view name = "scale", family = "user", summary = "x * factor";
  static std::vector<dwsr::param_spec> params() { return {{"factor", dwsr::param_kind::real, 2.0, "multiplier"}}; }
  explicit scale(const dwsr::param_values& p) : factor(float(p.real("factor"))) {}
  dwsr::halo halo() const { return {}; }
  std::vector<dwsr::output_spec> outputs() const { return {{"", dwsr::dtype::float32}}; }
  template <dwsr::ExecutionContext Ctx>
  void run(Ctx& ctx, dwsr::cube_view<const float> in, std::span<const dwsr::array_ref> out) const {
    float* y = out[0].as<float>().data();
    ctx.parallel_for(in.size(), [&](std::uint64_t lo, std::uint64_t hi, std::size_t) {
      for (auto i = lo; i < hi; ++i) y[i] = in.data()[i] * factor;
    });
  }
  float factor;
};
static_assert(dwsr::Operator<scale>);

}  // namespace

int main() {
  // Only the operators it runs: a registry compiles each operator it holds (the
  // whole catalogue, dwsr::operators::catalogue(), takes about two minutes).
  dwsr::registry reg;
  reg.add<dwsr::operators::envelope>().add<scale>();
  dwsr::graph g(reg);
  g.add("mine", "scale", {"input"}, {{"factor", 3.0}}).add("env", "envelope", {"mine"});
  g.build();

  const dwsr::shape3 shape{6, 5, 64};
  std::vector<float> cube(shape.voxels()), envelope(shape.voxels());
  dwsr::io::generate_synthetic(shape, 7, cube.data());
  const dwsr::chunked_options options{.chunk = {3, 5, 64}, .workers = 2, .threads = 2};
  const auto planned = dwsr::plan_chunked(g, shape, options);
  dwsr::memory_block_source source(dwsr::cube_view<const float>(cube.data(), shape));
  dwsr::memory_block_sink sink({{dwsr::dtype::float32, envelope.data(), shape}});
  const auto measured = dwsr::run_chunked(g, source, &sink, options);

  bool exact = planned.workers.size() == 2;
  for (std::size_t w = 0; w < measured.workers.size(); ++w) {
    std::printf("worker %zu: planned %llu, measured %llu bytes\n", w, (unsigned long long)planned.workers[w].peak,
                (unsigned long long)measured.workers[w].peak);
    exact = exact && planned.workers[w].peak == measured.workers[w].peak && measured.workers[w].peak > 0;
  }
  double checksum = 0;
  for (float v : envelope) checksum += v;
  std::printf("checksum %g\n", checksum);
  return exact && checksum > 0 ? 0 : 1;
}
