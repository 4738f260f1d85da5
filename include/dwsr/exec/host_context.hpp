#pragma once
/// \file The real host execution: memory mapped from the OS for every buffer,
/// TBB threads, and an event for every allocation and free.
///
/// Each buffer is its own anonymous mapping of whole pages (huge pages where
/// it spans them: memory/page_mapping.hpp), populated when it is made and
/// unmapped when it is freed, so what the process holds for dwsr's buffers is
/// exactly the live buffers rounded up to pages: the `host_pages` allocator
/// model (sim/host_pages.hpp) predicts it from the events. Through glibc's
/// malloc the same buffers would leave the heap holding freed memory that
/// depends on the order and sizes of earlier blocks (its dynamic mmap
/// threshold, per-thread caches of the slivers that aligned allocation
/// splits off, per-thread arenas), which no model of the events alone can
/// predict.

#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "dwsr/exec/context_base.hpp"
#include "dwsr/exec/detail/tsan_handoff.hpp"
#include "dwsr/memory/buffer.hpp"
#include "dwsr/memory/page_mapping.hpp"

namespace dwsr {

/// Executes operators for real on the host.
class host_context : public context_base {
 public:
  /// Operators compute only when this is true.
  static constexpr bool computes = true;
  static constexpr device memory_device = device::host;

  explicit host_context(event_bus& bus, context_options options = {})
      : context_base(bus, std::move(options)), arena_(static_cast<int>(threads())) {
    // Honour a thread count above the core count (TBB caps workers at cores - 1).
    if (threads() > std::size_t(tbb::this_task_arena::max_concurrency()))
      oversubscribe_ = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, threads());
  }

  /// Allocates `count` elements of T (uninitialised), emitting the alloc event.
  template <class T>
  buffer<T, host_context> allocate(std::uint64_t count, buffer_role role) {
    return allocate_for<T>(*this, count, role);
  }

  /// Runs f(begin, end, slot) over [0, n) on up to threads() threads; slot is in
  /// [0, threads()) and unique among concurrently running calls, so operators
  /// index per-thread scratch with it.
  template <class F>
  void parallel_for(std::uint64_t n, F&& f, std::uint64_t grain = 1) {
    if (n == 0) return;
    const bool cancellable = options().cancel != nullptr;
    if (threads() == 1) {
      if (!cancellable) return f(std::uint64_t{0}, n, std::size_t{0});
      // In pieces, so that a cancelled run stops within about 1/64 of a loop.
      const auto piece = std::max<std::uint64_t>(grain, (n + 63) / 64);
      for (std::uint64_t begin = 0; begin < n; begin += piece) {
        check_cancelled();
        f(begin, std::min(n, begin + piece), std::size_t{0});
      }
      return;
    }
    detail::tsan_handoff handoff;
    handoff.fork();
    arena_.execute([&] {
      tbb::parallel_for(tbb::blocked_range<std::uint64_t>(0, n, grain),
                        [&](const tbb::blocked_range<std::uint64_t>& r) {
                          if (cancellable) check_cancelled();  // TBB cancels the other pieces and rethrows
                          handoff.enter();
                          f(r.begin(), r.end(), static_cast<std::size_t>(tbb::this_task_arena::current_thread_index()));
                          handoff.leave();
                        });
    });
    handoff.join();
  }

  /// Runs serial compute (skipped by the meta context).
  template <class F>
  void compute(F&& f) {
    f();
  }

 protected:
  /// allocate() for a context derived from this one: the buffer frees through `self`.
  template <class T, class Self>
  static buffer<T, Self> allocate_for(Self& self, std::uint64_t count, buffer_role role) {
    const event e = self.admit(count * sizeof(T), memory_device, role);
    return {self, static_cast<T*>(self.obtain(e)), count, e};
  }
  /// A populated mapping for an admitted allocation (null for 0 bytes);
  /// out_of_memory, with the event retired, when the system refuses. Contexts
  /// derived from this one allocate through it.
  void* obtain(const event& admitted) {
    if (admitted.bytes == 0) return nullptr;
    void* p = detail::map_populated(admitted.bytes,
                                    [this](char* at, std::uint64_t size) { return populate_split(at, size); });
    if (!p) {
      retire(admitted);
      throw out_of_memory(options().name + ": the system refused " + std::to_string(admitted.bytes) + " bytes",
                          admitted.bytes, options().budget);
    }
    return p;
  }
  /// Populates [at, at + size) (a huge-page aligned mapping), split among the threads
  /// when it spans at least two huge pages per thread: on the control thread
  /// alone, zeroing the pages of a worker's large buffers is serial time
  /// that its other threads wait through.
  bool populate_split(char* at, std::uint64_t size) noexcept {
    const auto pieces = std::min<std::uint64_t>(threads(), size / (2 * detail::huge_page_bytes));
    if (pieces < 2) return detail::populate(at, size);
    const auto piece =
        (size / pieces + detail::huge_page_bytes - 1) / detail::huge_page_bytes * detail::huge_page_bytes;
    std::atomic<bool> ok = true;
    try {
      arena_.execute([&] {
        tbb::parallel_for(std::uint64_t{0}, pieces, [&](std::uint64_t k) {
          const auto begin = k * piece;
          if (begin < size && !detail::populate(at + begin, std::min(piece, size - begin))) ok = false;
        });
      });
    } catch (...) {
      return false;  // TBB could not run the tasks (no memory for them)
    }
    return ok;
  }
  /// Emits the free event, then unmaps memory from obtain() (in that order, so
  /// that a sink sampling the process's memory sees the buffer still held).
  void release(void* data, const event& allocated) noexcept {
    retire(allocated);
    detail::unmap(data, allocated.bytes);
  }

 private:
  template <class, class>
  friend class buffer;

  std::unique_ptr<tbb::global_control> oversubscribe_;
  tbb::task_arena arena_;
};

}  // namespace dwsr
