#pragma once
/// \file Operators behind one type-erased handle (`configured_operator`), in
/// the spirit of CUTLASS's can_implement / workspace query / run: an operator
/// (see the Operator concept in dwsr/concepts.hpp) declares its parameters,
/// halo and outputs and implements one run() over any ExecutionContext; the
/// handle keeps its parameters bound and runs it in every context of a
/// `context_list` (by default `execution_contexts`).
///
///     struct envelope {
///       static constexpr std::string_view name = "envelope", family = "complex_trace", summary = "...";
///       static std::vector<param_spec> params();
///       explicit envelope(const param_values&);
///       dwsr::halo halo() const;
///       std::vector<output_spec> outputs() const;
///       template <ExecutionContext Ctx>
///       void run(Ctx&, cube_view<const float> in, std::span<const array_ref> out) const;
///     };
///
/// Every operator, whatever its form, is called through two entry points:
/// run(ctx, inputs, outputs, reduction*) and reduce(ctx, block, interior, pass,
/// acc). A null reduction means "reduce the input first" (a whole-cube run);
/// folding must not depend on block order (min, max, integer counts; never
/// floating-point sums) so that chunked outputs are bit-identical to whole-cube
/// outputs.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <typeinfo>
#include <utility>
#include <vector>

#include "dwsr/concepts.hpp"
#include "dwsr/error.hpp"
#include "dwsr/exec/contexts.hpp"
#include "dwsr/ops/param.hpp"
#include "dwsr/ops/protocol.hpp"

namespace dwsr {

namespace detail {

/// A table_writer that drops the rows (a caller that wants no tables).
struct discard_tables final : table_writer {
  void write(std::size_t, const void*, std::uint64_t) override {}
};

/// Runs `op` in `c` on its input cubes: reducing its single input first when it
/// needs a reduction and none is given; tables go to `t` (dropped when null).
template <Operator Op, ExecutionContext Ctx>
void run_operator(const Op& op, Ctx& c, std::span<const cube_view<const float>> in, std::span<const array_ref> out,
                  const reduction* r, table_writer* t) {
  constexpr auto arity = arity_of<Op>();
  if (in.size() != arity)
    throw invalid_input("operator '" + std::string(Op::name) + "' reads " + std::to_string(arity) + " cube" +
                        (arity == 1 ? "" : "s") + ", got " + std::to_string(in.size()) +
                        (arity > 1 ? "; use it in a graph whose nodes provide them" : ""));
  if constexpr (MultiInputOperator<Op>) {
    op.run(c, in, out);
  } else if constexpr (TableOperator<Op>) {
    discard_tables none;
    op.run(c, in[0], out, t ? *t : none);
  } else if constexpr (ReducingOperator<Op>) {
    if (r) return op.run(c, in[0], out, *r);
    reduction own;
    for (std::size_t pass = 0; pass < op.reduction_passes(); ++pass) op.reduce(c, in[0], pass, own);
    op.run(c, in[0], out, std::as_const(own));
  } else {
    op.run(c, in[0], out);
  }
}

/// Folds the `interior` of a halo-extended block into `acc` for `pass`.
/// Operators whose statistic reads neighbours see the halo; the others get a
/// copy of the interior (allocated through the context) unless the interior is
/// the whole block. A no-op for operators without a reduction.
template <Operator Op, ExecutionContext Ctx>
void reduce_operator(const Op& op, Ctx& c, cube_view<const float> in, const box3& w, std::size_t pass, reduction& acc) {
  if constexpr (WindowedReducingOperator<Op>) {
    op.reduce(c, in, w, pass, acc);
  } else if constexpr (ReducingOperator<Op>) {
    if (w == box3::whole(in.shape())) return op.reduce(c, in, pass, acc);
    const auto inner = w.shape();
    auto copy = c.template allocate<float>(inner.voxels(), buffer_role::temporary);
    c.compute([&] {
      float* dst = copy.data();
      for (auto i = w.begin[0]; i < w.end[0]; ++i)
        for (auto x = w.begin[1]; x < w.end[1]; ++x) {
          const float* src = &in(i, x, w.begin[2]);
          dst = std::copy(src, src + inner.samples, dst);
        }
    });
    op.reduce(c, cube_view<const float>(copy.data(), inner), pass, acc);
  }
}

/// One context's entry points into a type-erased operator.
template <class Ctx>
struct context_entry {
  void (*run)(const void* op, Ctx&, std::span<const cube_view<const float>>, std::span<const array_ref>,
              const reduction*, table_writer*);
  void (*reduce)(const void* op, Ctx&, cube_view<const float>, const box3&, std::size_t, reduction&);
};

template <Operator Op, class Ctx>
constexpr context_entry<Ctx> entry_for() {
  return {[](const void* op, Ctx& c, std::span<const cube_view<const float>> in, std::span<const array_ref> out,
             const reduction* r, table_writer* t) { run_operator(*static_cast<const Op*>(op), c, in, out, r, t); },
          [](const void* op, Ctx& c, cube_view<const float> in, const box3& w, std::size_t pass, reduction& acc) {
            reduce_operator(*static_cast<const Op*>(op), c, in, w, pass, acc);
          }};
}

/// One address per execution context: operators look up a context's entry
/// points by it, once per node and block (comparing typeids calls strcmp
/// whenever they differ: 2 % of a plan's instructions).
template <class Ctx>
inline constexpr char context_key = 0;

/// The entry points of one operator type for every context of a list.
template <class List>
struct entry_table;
template <class... Contexts>
struct entry_table<context_list<Contexts...>> : context_entry<Contexts>... {
  /// The entry of context Ctx, or null when the list does not hold it.
  template <class Ctx>
  const context_entry<Ctx>* find() const noexcept {
    if constexpr (context_list<Contexts...>::template contains<Ctx>)
      return this;
    else
      return nullptr;
  }
};

template <Operator Op, class... Contexts>
constexpr entry_table<context_list<Contexts...>> entries_for(context_list<Contexts...>) {
  return {entry_for<Op, Contexts>()...};
}

}  // namespace detail

/// An operator with its parameters bound, runnable in every context it was
/// compiled for (see make_configured).
class configured_operator {
 public:
  virtual ~configured_operator() = default;
  virtual std::string_view name() const = 0;
  virtual dwsr::halo halo() const = 0;
  virtual std::vector<output_spec> outputs() const = 0;
  /// Reduction passes a chunked run makes before this operator runs (0: none).
  virtual std::size_t reduction_passes() const = 0;
  /// Number of input cubes.
  virtual std::size_t arity() const = 0;
  /// The tables it writes beside its cubes (none for most operators).
  virtual std::vector<table_spec> tables() const = 0;

  /// Runs on arity() input cubes of one shape; a null reduction means "reduce
  /// the input first" (for operators with reduction passes). Table rows go to
  /// `tables` (dropped when null).
  template <ExecutionContext Ctx>
  void run(Ctx& c, std::span<const cube_view<const float>> in, std::span<const array_ref> out,
           const reduction* r = nullptr, table_writer* tables = nullptr) const {
    entry<Ctx>().run(target(), c, in, out, r, tables);
  }
  /// Runs on one whole cube (reducing it first when the operator needs it).
  template <ExecutionContext Ctx>
  void run(Ctx& c, cube_view<const float> in, std::span<const array_ref> out) const {
    run(c, std::span<const cube_view<const float>>(&in, 1), out, nullptr);
  }
  /// Runs on one block with the cube-wide reduction already computed.
  template <ExecutionContext Ctx>
  void run(Ctx& c, cube_view<const float> in, std::span<const array_ref> out, const reduction& r) const {
    run(c, std::span<const cube_view<const float>>(&in, 1), out, &r);
  }
  /// Folds the `interior` of a halo-extended block into `acc` for pass `pass`.
  template <ExecutionContext Ctx>
  void reduce(Ctx& c, cube_view<const float> block, const box3& interior, std::size_t pass, reduction& acc) const {
    entry<Ctx>().reduce(target(), c, block, interior, pass, acc);
  }
  /// Folds a whole block (no halo) into `acc` for pass `pass`.
  template <ExecutionContext Ctx>
  void reduce(Ctx& c, cube_view<const float> block, std::size_t pass, reduction& acc) const {
    reduce(c, block, box3::whole(block.shape()), pass, acc);
  }

 protected:
  /// The entry points for context Ctx, or null when this operator was not compiled for it.
  virtual const void* entry_of(const char* key) const noexcept = 0;
  /// The operator object the entry points receive.
  virtual const void* target() const noexcept = 0;

 private:
  template <class Ctx>
  const detail::context_entry<Ctx>& entry() const {
    const auto* e = static_cast<const detail::context_entry<Ctx>*>(entry_of(&detail::context_key<Ctx>));
    if (!e)
      throw error("operator '" + std::string(name()) + "' was not compiled for execution context '" +
                  typeid(Ctx).name() +
                  "'; register it with make_configured<Op, context_list<...>> naming that context");
    return *e;
  }
};

namespace detail {

template <Operator Op, class List>
class operator_model;

template <Operator Op, class... Contexts>
class operator_model<Op, context_list<Contexts...>> final : public configured_operator {
 public:
  explicit operator_model(Op op) : op_(std::move(op)) {}
  std::string_view name() const override { return Op::name; }
  dwsr::halo halo() const override { return op_.halo(); }
  std::vector<output_spec> outputs() const override { return op_.outputs(); }
  std::size_t reduction_passes() const override {
    if constexpr (ReducingOperator<Op>)
      return op_.reduction_passes();
    else
      return 0;
  }
  std::size_t arity() const override { return arity_of<Op>(); }
  std::vector<table_spec> tables() const override {
    if constexpr (TableOperator<Op>)
      return op_.tables();
    else
      return {};
  }

 protected:
  const void* entry_of(const char* key) const noexcept override {
    const void* found = nullptr;
    static_cast<void>(
        ((key == &detail::context_key<Contexts> ? (found = table.template find<Contexts>(), true) : false) || ...));
    return found;
  }
  const void* target() const noexcept override { return &op_; }

 private:
  static constexpr entry_table<context_list<Contexts...>> table = entries_for<Op>(context_list<Contexts...>{});
  Op op_;
};

}  // namespace detail

/// Binds an operator to a type-erased handle that runs in every context of List.
template <Operator Op, class List = execution_contexts>
std::unique_ptr<configured_operator> make_configured(Op op) {
  return std::make_unique<detail::operator_model<Op, List>>(std::move(op));
}

}  // namespace dwsr
