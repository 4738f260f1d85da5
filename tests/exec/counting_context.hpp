#pragma once
// A test-only execution context, to show that a new context is one header: the
// real host execution, counting the parallel loops and serial compute sections
// operators hand it. Operators are templates over their context, so they run in
// it unchanged; a registry compiled for it (operators::catalogue_for) runs the
// whole catalogue in it.

#include <cstdint>
#include <utility>

#include "dwsr/exec/host_context.hpp"

namespace dwsr::test {

class counting_context : public host_context {
 public:
  using host_context::host_context;

  template <class T>
  buffer<T, counting_context> allocate(std::uint64_t count, buffer_role role) {
    return allocate_for<T>(*this, count, role);
  }

  template <class F>
  void parallel_for(std::uint64_t n, F&& f, std::uint64_t grain = 1) {
    ++loops;
    host_context::parallel_for(n, std::forward<F>(f), grain);
  }
  template <class F>
  void compute(F&& f) {
    ++serial;
    host_context::compute(std::forward<F>(f));
  }

  std::uint64_t loops = 0;   ///< parallel_for calls
  std::uint64_t serial = 0;  ///< compute calls

 private:
  template <class, class>
  friend class buffer;  // frees through host_context::release
};

}  // namespace dwsr::test
