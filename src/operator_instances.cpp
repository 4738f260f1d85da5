// Compiles every operator for the default execution contexts once, for dwsr's
// own tests, tool and benchmarks (which see only extern declarations of them,
// see dwsr/operators/catalogue.hpp). Not part of the installed, header-only library.
#include "dwsr/operators/catalogue.hpp"

namespace dwsr {
#define DWSR_INSTANTIATE_OPERATOR(Op) template class detail::operator_model<Op, execution_contexts>;
DWSR_FOR_EACH_OPERATOR(DWSR_INSTANTIATE_OPERATOR)
#undef DWSR_INSTANTIATE_OPERATOR
template registry operators::catalogue_for<execution_contexts>();
}  // namespace dwsr
