#pragma once
/// \file The AllocatorModel concept: what turns requested bytes into what a
/// device or the OS holds. A model consumes alloc and free events (it is an
/// EventSink, so a live execution can feed it) and keeps `allocated` (bytes
/// handed out, after its rounding), `reserved` (bytes it holds from the device
/// or the OS), their peaks, its segments and free blocks, and whether it ran
/// out of memory against an optional capacity.
///
/// A model describes one device's allocator; sim/replay.hpp runs one instance
/// per device of a stream. Once a model has run out of memory it ignores the
/// rest of the stream, as the program would have stopped there; its statistics
/// are those right after the failing allocation (some models release their
/// cache while trying, so reserved may have dropped). Every model checks
/// buffer ids (detail/live_buffers.hpp): an alloc of a live id, or a free of an
/// id that is not alive, is an invalid_input naming the event and the id.

#include <concepts>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>

#include "dwsr/memory/event.hpp"
#include "dwsr/memory/event_sink.hpp"

namespace dwsr::sim {

/// A model's state: current values, peaks, segments and free blocks.
struct model_stats {
  std::uint64_t requested = 0;       ///< live bytes as requested by the stream
  std::uint64_t allocated = 0;       ///< live bytes handed out, after the model's rounding
  std::uint64_t reserved = 0;        ///< bytes held from the device or the OS (resident bytes for host_malloc)
  std::uint64_t peak_requested = 0;  ///< highest `requested`
  std::uint64_t peak_allocated = 0;  ///< highest `allocated`
  std::uint64_t peak_reserved = 0;   ///< highest `reserved`
  std::uint64_t segments = 0;        ///< memory regions held from the system (cudaMalloc'd segments, mmaps, heap)
  std::uint64_t largest_free = 0;    ///< largest free block inside reserved memory
  std::uint64_t total_free = 0;      ///< free bytes in blocks inside reserved memory
  std::uint64_t allocs = 0;          ///< allocations served
  std::uint64_t frees = 0;           ///< frees
  std::uint64_t system_allocs = 0;   ///< calls to the system for memory (cudaMalloc, page maps, mmap, brk)
  std::uint64_t system_frees = 0;    ///< memory given back to the system (cudaFree, unmaps, munmap, trims)
  std::uint64_t retries = 0;         ///< allocations retried after releasing cached memory
  bool oom = false;                  ///< an allocation failed; the model stopped there
  std::uint64_t oom_bytes = 0;       ///< requested bytes of the failed allocation

  /// 1 - largest free / total free: 0 when all free memory is one block (or none is free).
  double fragmentation() const noexcept {
    return total_free == 0 ? 0.0 : 1.0 - static_cast<double>(largest_free) / static_cast<double>(total_free);
  }
  friend bool operator==(const model_stats&, const model_stats&) = default;
};

/// A model of an allocator (see the file comment). `alloc` returns false when
/// the allocation fails (out of memory); `free` takes the requested bytes of the
/// matching alloc, which models that track their blocks may ignore.
template <class M>
concept AllocatorModel = EventSink<M> && requires(M& m, const M& cm, std::uint64_t id, std::uint64_t bytes) {
  { M::name } -> std::convertible_to<std::string_view>;
  { m.alloc(id, bytes) } -> std::same_as<bool>;
  { m.free(id, bytes) } -> std::same_as<void>;
  { cm.allocated() } -> std::same_as<std::uint64_t>;
  { cm.reserved() } -> std::same_as<std::uint64_t>;
  { cm.oom() } -> std::same_as<bool>;
  { cm.stats() } -> std::same_as<model_stats>;
};

/// Feeds events to a model in order; the same as on_event on each, so the
/// result does not depend on how a stream is cut into batches.
template <class M>
void feed(M& model, std::span<const event> events) {
  for (const auto& e : events) model.on_event(e);
}

/// "No capacity": models treat it as unlimited memory.
inline constexpr std::uint64_t unlimited = std::numeric_limits<std::uint64_t>::max();

namespace detail {

/// Raises the peaks of `s` to its current values.
inline void update_peaks(model_stats& s) noexcept {
  if (s.requested > s.peak_requested) s.peak_requested = s.requested;
  if (s.allocated > s.peak_allocated) s.peak_allocated = s.allocated;
  if (s.reserved > s.peak_reserved) s.peak_reserved = s.reserved;
}

}  // namespace detail
}  // namespace dwsr::sim
