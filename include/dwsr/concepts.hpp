#pragma once
/// \file dwsr's extension points, one concept each, and the whole of each
/// protocol: a type that satisfies a concept plugs in; one that does not fails
/// here, at the concept, rather than deep inside a template. Each is tested both
/// ways in tests/concepts_test.cpp.
///
/// - ExecutionContext: where an operator runs (host_context, meta_context).
/// - Operator: a seismic operator (dwsr/operators/), with its variants
///   ReducingOperator, WindowedReducingOperator, MultiInputOperator and
///   TableOperator.
/// - EventSink: consumes alloc/free events (dwsr/memory/event_sink.hpp).
/// - AllocatorModel: turns requested bytes into held bytes (dwsr/sim/allocator_model.hpp).
/// - Estimator: predicts a job's memory (dwsr/estimators/), with its variants
///   FittedEstimator and OnlineEstimator.

#include <concepts>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "dwsr/core/cube_view.hpp"
#include "dwsr/estimators/estimate.hpp"
#include "dwsr/exec/meta_context.hpp"
#include "dwsr/memory/event.hpp"
#include "dwsr/memory/event_sink.hpp"
#include "dwsr/ops/param.hpp"
#include "dwsr/ops/protocol.hpp"
#include "dwsr/sim/allocator_model.hpp"

namespace dwsr {

/// A model of an allocator (sim/): consumes alloc/free events and reports allocated and
/// reserved bytes, their peaks, segments, fragmentation and OOM against a capacity.
using sim::AllocatorModel;

namespace detail {
/// The shapes of what ExecutionContext hands to parallel_for and compute
/// (named types rather than lambdas, which nvcc rejects in a requires-expression).
struct loop_body {
  void operator()(std::uint64_t, std::uint64_t, std::size_t) const {}
};
struct serial_work {
  void operator()() const {}
};
}  // namespace detail

/// Where an operator runs: allocates through events, and either computes
/// (host_context, computes == true) or only plans (meta_context). Operators
/// allocate nothing except through it, so its events see all their memory;
/// they allocate only from the calling thread, outside parallel_for.
template <class C>
concept ExecutionContext = requires(C& c, const C& cc, std::uint64_t n, buffer_role r, node_id id,
                                    detail::loop_body body, detail::serial_work work) {
  { C::computes } -> std::convertible_to<bool>;
  { cc.threads() } -> std::convertible_to<std::size_t>;
  { cc.node() } -> std::convertible_to<node_id>;
  c.set_node(id);
  { c.template allocate<float>(n, r).data() } -> std::same_as<float*>;
  { c.template allocate<std::byte>(n, r).data() } -> std::same_as<std::byte*>;
  c.parallel_for(n, body);
  c.compute(work);
};

/// What every operator declares, whatever it reads: a name, a family and a
/// one-line summary, its parameters with defaults, a constructor from bound
/// parameter values, its halo and its outputs.
template <class Op>
concept OperatorDescription = requires(const Op& op) {
  { Op::name } -> std::convertible_to<std::string_view>;
  { Op::family } -> std::convertible_to<std::string_view>;
  { Op::summary } -> std::convertible_to<std::string_view>;
  { Op::params() } -> std::same_as<std::vector<param_spec>>;
  { op.halo() } -> std::same_as<halo>;
  { op.outputs() } -> std::same_as<std::vector<output_spec>>;
}
&&std::constructible_from<Op, const param_values&>&& std::copy_constructible<Op>;

/// An operator that needs cube-wide statistics before it runs (min/max,
/// histograms, a maximum RMS): reduce() folds one block (no halo) into the
/// reduction for pass k (every block of pass k before pass k + 1), in an order-
/// independent way, then run() reads it.
///
///     std::size_t reduction_passes() const;
///     void reduce(Ctx&, cube_view<const float> block, std::size_t pass, reduction& acc) const;
///     void run(Ctx&, cube_view<const float> in, std::span<const array_ref> out, const reduction&) const;
template <class Op>
concept ReducingOperator = OperatorDescription<Op> &&
    requires(const Op& op, meta_context& c, cube_view<const float> in, std::span<const array_ref> out, reduction& r) {
  { op.reduction_passes() } -> std::convertible_to<std::size_t>;
  op.reduce(c, in, std::size_t{0}, r);
  op.run(c, in, out, std::as_const(r));
};

/// A reducing operator whose statistic reads neighbours (rgb_blending's
/// instantaneous frequency): reduce() gets the halo-extended block and folds
/// only the voxels of `interior`.
template <class Op>
concept WindowedReducingOperator = ReducingOperator<Op> &&
    requires(const Op& op, meta_context& c, cube_view<const float> in, const box3& w, reduction& r) {
  op.reduce(c, in, w, std::size_t{0}, r);
};

/// An operator of several input cubes of one shape (graph nodes such as
/// sweetness_from): `static constexpr std::size_t arity = N;` and
///
///     void run(Ctx&, std::span<const cube_view<const float>> in, std::span<const array_ref> out) const;
template <class Op>
concept MultiInputOperator = OperatorDescription<Op> &&
    requires(const Op& op, meta_context& c, std::span<const cube_view<const float>> in,
             std::span<const array_ref> out) {
  { Op::arity } -> std::convertible_to<std::size_t>;
  op.run(c, in, out);
};

/// An operator of one input cube and no reduction:
///
///     void run(Ctx&, cube_view<const float> in, std::span<const array_ref> out) const;
template <class Op>
concept CubeOperator = OperatorDescription<Op> &&
    requires(const Op& op, meta_context& c, cube_view<const float> in, std::span<const array_ref> out) {
  op.run(c, in, out);
};

/// An operator of one input cube that also writes tables (table_spec: rows
/// whose number depends on the data), handed to a table_writer:
///
///     std::vector<table_spec> tables() const;
///     void run(Ctx&, cube_view<const float> in, std::span<const array_ref> out, table_writer&) const;
template <class Op>
concept TableOperator = OperatorDescription<Op> && requires(const Op& op, meta_context& c, cube_view<const float> in,
                                                            std::span<const array_ref> out, table_writer& t) {
  { op.tables() } -> std::same_as<std::vector<table_spec>>;
  op.run(c, in, out, t);
};

/// A seismic operator (dwsr/operators/): its description and one run() that
/// every ExecutionContext executes, in one of the four forms above. The
/// caller allocates the input and the outputs (roles input and output); run()
/// allocates its temporaries and workspaces through the context only.
template <class Op>
concept Operator = CubeOperator<Op> || ReducingOperator<Op> || MultiInputOperator<Op> || TableOperator<Op>;

/// Number of input cubes of operator type Op.
template <Operator Op>
constexpr std::size_t arity_of() {
  if constexpr (MultiInputOperator<Op>)
    return Op::arity;
  else
    return 1;
}

/// A memory estimator (estimators/): `name()` as the leaderboard shows it,
/// and `predict(job)`, the memory a job's run will hold
/// (estimators/estimate.hpp). Estimators that learn also satisfy
/// FittedEstimator.
template <class E>
concept Estimator = requires(E& e, const estimate_job& j) {
  { e.name() } -> std::convertible_to<std::string_view>;
  { e.predict(j) } -> std::same_as<estimate>;
};

/// An estimator that learns from labelled runs before it predicts:
/// `fit(runs)` replaces whatever it learned before.
template <class E>
concept FittedEstimator = Estimator<E> && requires(E& e, std::span<const labelled_run> runs) {
  e.fit(runs);
};

/// An estimator that corrects itself from runs measured after it predicted
/// them: `observe(job, measured held bytes, held bytes measured when its
/// first blocks had finished (0: not measured))`.
template <class E>
concept OnlineEstimator = Estimator<E> && requires(E& e, const estimate_job& j, double held) {
  e.observe(j, held, held);
};

/// An estimator that corrects its estimate of a running job from what the
/// job held when its first blocks (one per worker) had finished:
/// `predict(job, first blocks' held bytes)`.
template <class E>
concept EarlyCorrectedEstimator = Estimator<E> && requires(const E& e, const estimate_job& j, double first_held) {
  { e.predict(j, first_held) } -> std::same_as<estimate>;
};

}  // namespace dwsr
