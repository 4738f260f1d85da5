#pragma once
/// \file The execution contexts that type-erased operators (registries, graphs,
/// chunked runs) are compiled for. Adding a context is its own header plus one
/// entry in `execution_contexts`; a program may also compile operators for a
/// list of its own (`make_configured<Op, context_list<...>>`,
/// `operators::catalogue_for<context_list<...>>()`).

#include <type_traits>

#include "dwsr/exec/host_context.hpp"
#include "dwsr/exec/meta_context.hpp"

namespace dwsr {

/// A list of execution context types.
template <class... Contexts>
struct context_list {
  /// Whether Ctx is one of the list.
  template <class Ctx>
  static constexpr bool contains = (std::is_same_v<Ctx, Contexts> || ...);
};

/// The contexts every registered operator runs in by default: the real host
/// execution and the meta (planning) execution.
using execution_contexts = context_list<host_context, meta_context>;

}  // namespace dwsr
