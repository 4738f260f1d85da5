#pragma once
/// \file The buffers alive in an event stream, by id: the one place where the
/// simulator checks buffer ids (every model, and the replay), with one error
/// format. An id is a whole number from 1; it may be reused once its buffer
/// is freed. Errors name the owner (a model, or "replay"), the event and the
/// buffer: "torch_cuda_caching: event 12: free of buffer 7, which is not
/// allocated; ...". Events are numbered from 0 in the order the owner
/// receives them (a model counts its allocs and frees).
///
/// Cost: one probe of an open-addressing table per check (detail/flat_id_map.hpp).

#include <cstdint>
#include <string>
#include <string_view>

#include "dwsr/error.hpp"
#include "dwsr/sim/detail/flat_id_map.hpp"

namespace dwsr::sim::detail {

/// The value of a table that only checks ids.
struct no_value {};

/// Live buffer ids, each with a value V (trivially copyable): a block index, a
/// log position, or nothing.
template <class V = no_value>
class live_buffers {
 public:
  /// A table whose errors name `owner`, which must outlive it (a model's name).
  explicit live_buffers(std::string_view owner) : owner_(owner) {}

  /// Records buffer `id`, allocated by event `seq`, with `value`. Throws
  /// invalid_input for id 0 or an id that is alive.
  void add(std::uint64_t id, std::uint64_t seq, V value = V{}) {
    if (id == 0) fail(seq, "buffer id 0; buffer ids start at 1");
    if (!ids_.insert(id, value))
      fail(seq, "buffer " + std::to_string(id) +
                    " allocated again while alive; an id is reused only after the free of its buffer");
  }

  /// Forgets buffer `id`, freed by event `seq`, and returns its value. Throws
  /// invalid_input when no buffer `id` is alive.
  V remove(std::uint64_t id, std::uint64_t seq) {
    V value{};
    if (!ids_.erase(id, &value))
      fail(seq, "free of buffer " + std::to_string(id) +
                    ", which is not allocated; every free must follow the alloc of the same buffer id");
    return value;
  }

  /// Sets the value of live buffer `id` (for an owner that learns it after add).
  void set(std::uint64_t id, V value) noexcept { *ids_.find(id) = value; }
  /// Forgets live buffer `id` without a free: its allocation failed.
  void forget(std::uint64_t id) noexcept { ids_.erase(id); }
  /// The value of buffer `id`, or null when it is not alive.
  const V* find(std::uint64_t id) const noexcept { return id == 0 ? nullptr : ids_.find(id); }
  /// Buffers alive.
  std::size_t size() const noexcept { return ids_.size(); }

 private:
  [[noreturn]] void fail(std::uint64_t seq, const std::string& what) const {
    throw invalid_input(std::string(owner_) + ": event " + std::to_string(seq) + ": " + what);
  }

  std::string_view owner_;
  flat_id_map<V> ids_;
};

}  // namespace dwsr::sim::detail
