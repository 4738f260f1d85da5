// Every extension point's concept, both ways: what satisfies it, and what a
// user's type that forgets one part of the protocol does not.

#include <catch2/catch.hpp>

#include "dwsr/concepts.hpp"
#include "dwsr/estimators/online.hpp"
#include "dwsr/estimators/plan.hpp"
#include "dwsr/estimators/volume_linear.hpp"
#include "dwsr/exec/host_context.hpp"
#include "dwsr/memory/peak_counter.hpp"
#include "dwsr/memory/recorder.hpp"
#include "dwsr/operators/catalogue.hpp"
#include "dwsr/sim/any_model.hpp"
#include "exec/counting_context.hpp"

namespace {
using namespace dwsr;

// ---- ExecutionContext
static_assert(ExecutionContext<host_context>);
static_assert(ExecutionContext<meta_context>);
static_assert(ExecutionContext<test::counting_context>);
struct context_without_compute {
  static constexpr bool computes = false;
  std::size_t threads() const { return 1; }
  node_id node() const { return 0; }
  void set_node(node_id) {}
  template <class T>
  buffer<T, meta_context> allocate(std::uint64_t, buffer_role);
  template <class F>
  void parallel_for(std::uint64_t, F&&) {}
};
static_assert(!ExecutionContext<context_without_compute>);
static_assert(!ExecutionContext<int>);

// ---- Operator and its forms
static_assert(Operator<operators::envelope>);
static_assert(CubeOperator<operators::envelope>);
static_assert(ReducingOperator<operators::histogram_equalization>);
static_assert(!ReducingOperator<operators::envelope>);
static_assert(WindowedReducingOperator<operators::rgb_blending>);
static_assert(!WindowedReducingOperator<operators::histogram_equalization>);
static_assert(MultiInputOperator<operators::sweetness_from>);
static_assert(!MultiInputOperator<operators::envelope>);
static_assert(arity_of<operators::sweetness_from>() == 2 && arity_of<operators::envelope>() == 1);
static_assert(TableOperator<operators::event_picks_table> && TableOperator<operators::geobody_labels>);
static_assert(Operator<operators::event_picks_table> && !CubeOperator<operators::event_picks_table>);
static_assert(!TableOperator<operators::envelope>);

// The parts of the operator protocol, put together below with one part left out at a time.
struct named {
  static constexpr std::string_view name = "complete", family = "test";
};
struct summarised {
  static constexpr std::string_view summary = "copies its input";
};
struct parametrised {
  static std::vector<param_spec> params() { return {}; }
};
struct shaped {
  dwsr::halo halo() const { return {}; }
  std::vector<output_spec> outputs() const { return {{"", dtype::float32}}; }
};
struct runnable {
  template <ExecutionContext Ctx>
  void run(Ctx&, cube_view<const float>, std::span<const array_ref>) const {}
};
/// An operator of the given parts, constructible from parameter values.
template <class... Parts>
struct assembled : Parts... {
  explicit assembled(const param_values&) {}
};
/// The same parts without that constructor.
template <class... Parts>
struct unconstructible : Parts... {};

using complete = assembled<named, summarised, parametrised, shaped, runnable>;
static_assert(Operator<complete>);
static_assert(!Operator<assembled<named, parametrised, shaped, runnable>>);  // no summary
static_assert(!Operator<assembled<named, summarised, shaped, runnable>>);    // no params()
static_assert(!Operator<unconstructible<named, summarised, parametrised, shaped, runnable>>);
static_assert(!Operator<assembled<named, summarised, parametrised, shaped>>);     // no run()
static_assert(!Operator<assembled<summarised, parametrised, shaped, runnable>>);  // no name
static_assert(!Operator<int>);

/// A run() that only the host context can execute is not an operator: the plan needs it too.
struct host_only_run {
  void run(host_context&, cube_view<const float>, std::span<const array_ref>) const {}
};
static_assert(!Operator<assembled<named, summarised, parametrised, shaped, host_only_run>>);

/// A reduce() without the passes it needs is not a reducing operator.
struct reduce_without_passes : complete {
  using complete::complete;
  template <ExecutionContext Ctx>
  void reduce(Ctx&, cube_view<const float>, std::size_t, reduction&) const {}
};
static_assert(Operator<reduce_without_passes> && !ReducingOperator<reduce_without_passes>);

/// Several inputs without saying how many is not a multi-input operator.
struct inputs_without_arity : complete {
  using complete::complete;
  using complete::run;
  template <ExecutionContext Ctx>
  void run(Ctx&, std::span<const cube_view<const float>>, std::span<const array_ref>) const {}
};
static_assert(Operator<inputs_without_arity> && !MultiInputOperator<inputs_without_arity>);

// ---- EventSink
static_assert(EventSink<recorder>);
static_assert(EventSink<peak_counter>);
static_assert(EventSink<event_sink_ref>);
struct sink_of_ints {
  void on_event(int) {}
};
static_assert(!EventSink<sink_of_ints>);
static_assert(!EventSink<int>);

// ---- AllocatorModel
static_assert(AllocatorModel<sim::exact_model>);
static_assert(AllocatorModel<sim::host_malloc_model>);
static_assert(AllocatorModel<sim::torch_cuda_caching_model>);
static_assert(AllocatorModel<sim::cupy_pool_model>);
static_assert(AllocatorModel<sim::rmm_pool_model>);
static_assert(!AllocatorModel<recorder>);  // a sink, but it models no allocator

// Estimator: the built-in ones, and types that miss a part of the protocol.
static_assert(Estimator<estimators::plan> && !FittedEstimator<estimators::plan>);
static_assert(FittedEstimator<estimators::volume_linear> && !OnlineEstimator<estimators::volume_linear>);
static_assert(OnlineEstimator<estimators::online<estimators::volume_linear>>);
static_assert(EarlyCorrectedEstimator<estimators::online<estimators::plan>> &&
              !EarlyCorrectedEstimator<estimators::plan>);
static_assert(FittedEstimator<estimators::online<estimators::plan>>);
struct nameless_estimator {
  estimate predict(const estimate_job&) const { return {}; }
};
struct estimator_of_doubles {
  std::string_view name() const { return "x"; }
  double predict(const estimate_job&) const { return 0; }
};
struct early_estimate_of_doubles {
  std::string_view name() const { return "x"; }
  estimate predict(const estimate_job&) const { return {}; }
  double predict(const estimate_job&, double) const { return 0; }
};
static_assert(Estimator<early_estimate_of_doubles> && !EarlyCorrectedEstimator<early_estimate_of_doubles>);
static_assert(!Estimator<nameless_estimator>);
static_assert(!Estimator<estimator_of_doubles>);

}  // namespace

TEST_CASE("a user's operator registers, configures and runs like the catalogue's") {
  dwsr::registry reg = dwsr::operators::catalogue();
  reg.add<complete>();
  CHECK(reg.entries().size() == dwsr::operators::catalogue().entries().size() + 1);
  CHECK(reg.find("complete").configure()->arity() == 1);
  CHECK_THROWS_WITH(reg.add<complete>(), Catch::Contains("registered twice"));
  CHECK_FALSE(dwsr::operators::catalogue().contains("complete"));  // the copy was extended, not the catalogue
}
