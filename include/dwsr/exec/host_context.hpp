#pragma once
/// \file The real host execution: 64-byte aligned heap memory, TBB threads, and
/// an event for every allocation and free.

#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <cstdint>
#include <memory>
#include <new>

#include "dwsr/exec/context_base.hpp"
#include "dwsr/memory/buffer.hpp"

namespace dwsr {

/// Executes operators for real on the host.
class host_context : public context_base {
 public:
  /// Operators compute only when this is true.
  static constexpr bool computes = true;
  static constexpr device memory_device = device::host;
  static constexpr std::size_t alignment = 64;

  explicit host_context(event_bus& bus, context_options options = {})
      : context_base(bus, std::move(options)), arena_(static_cast<int>(threads())) {
    // Honour a thread count above the core count (TBB caps workers at cores - 1).
    if (threads() > std::size_t(tbb::this_task_arena::max_concurrency()))
      oversubscribe_ = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, threads());
  }

  /// Allocates `count` elements of T (uninitialised), emitting the alloc event.
  template <class T>
  buffer<T, host_context> allocate(std::uint64_t count, buffer_role role) {
    const event e = admit(count * sizeof(T), memory_device, role);
    return {*this, static_cast<T*>(obtain(e)), count, e};
  }

  /// Runs f(begin, end, slot) over [0, n) on up to threads() threads; slot is in
  /// [0, threads()) and unique among concurrently running calls, so operators
  /// index per-thread scratch with it.
  template <class F>
  void parallel_for(std::uint64_t n, F&& f, std::uint64_t grain = 1) {
    if (n == 0) return;
    if (threads() == 1) {
      f(std::uint64_t{0}, n, std::size_t{0});
      return;
    }
    arena_.execute([&] {
      tbb::parallel_for(tbb::blocked_range<std::uint64_t>(0, n, grain), [&](const tbb::blocked_range<std::uint64_t>& r) {
        f(r.begin(), r.end(), static_cast<std::size_t>(tbb::this_task_arena::current_thread_index()));
      });
    });
  }

  /// Runs serial compute (skipped by the meta context).
  template <class F>
  void compute(F&& f) {
    f();
  }

 protected:
  /// 64-byte aligned heap memory for an admitted allocation (null for 0 bytes);
  /// out_of_memory, with the event retired, when the system refuses. Contexts
  /// derived from this one allocate through it.
  void* obtain(const event& admitted) {
    if (admitted.bytes == 0) return nullptr;
    // Round up so that aligned operator new sees a multiple of the alignment.
    const auto rounded = (admitted.bytes + alignment - 1) / alignment * alignment;
    try {
      return ::operator new(rounded, std::align_val_t{alignment});
    } catch (const std::bad_alloc&) {
      retire(admitted);
      throw out_of_memory(options().name + ": the system refused " + std::to_string(admitted.bytes) + " bytes",
                          admitted.bytes, options().budget);
    }
  }
  /// Frees memory from obtain() and emits the free event.
  void release(void* data, const event& allocated) noexcept {
    if (data) ::operator delete(data, std::align_val_t{alignment});
    retire(allocated);
  }

 private:
  template <class, class>
  friend class buffer;

  std::unique_ptr<tbb::global_control> oversubscribe_;
  tbb::task_arena arena_;
};

}  // namespace dwsr
