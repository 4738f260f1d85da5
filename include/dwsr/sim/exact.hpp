#pragma once
/// \file The exact model: requested bytes and nothing else, what dwsr's own
/// peak counter measures. Held == handed out == requested.
///
/// It is the baseline every other model is compared with and the cheapest:
/// per event, one probe of the table of live buffer ids (which checks the
/// stream, as every model does), an add and a compare. A free carries the bytes
/// of its alloc, so nothing else is kept per buffer.

#include <cstdint>
#include <optional>
#include <string_view>

#include "dwsr/sim/allocator_model.hpp"
#include "dwsr/sim/detail/live_buffers.hpp"
#include "dwsr/sim/detail/model_base.hpp"

namespace dwsr::sim {

/// Requested bytes, with an optional capacity.
class exact_model : public detail::model_base<exact_model> {
 public:
  static constexpr std::string_view name = "exact";

  explicit exact_model(std::optional<std::uint64_t> capacity = {}) : capacity_(capacity.value_or(unlimited)) {}

  /// Adds `bytes`; false when they would exceed the capacity.
  bool alloc(std::uint64_t id, std::uint64_t bytes) {
    ids_.add(id, s_.allocs + s_.frees);
    if (bytes > capacity_ - s_.allocated) {
      ids_.forget(id);
      s_.oom = true;
      s_.oom_bytes = bytes;
      return false;
    }
    s_.allocated += bytes;
    s_.requested = s_.reserved = s_.allocated;
    detail::update_peaks(s_);
    if (bytes != 0) ++s_.segments;
    ++s_.allocs;
    ++s_.system_allocs;
    return true;
  }
  /// Removes the bytes of the matching alloc.
  void free(std::uint64_t id, std::uint64_t bytes) {
    ids_.remove(id, s_.allocs + s_.frees);
    s_.allocated -= bytes;
    s_.requested = s_.reserved = s_.allocated;
    if (bytes != 0) --s_.segments;
    ++s_.frees;
    ++s_.system_frees;
  }

  /// Segments are the live buffers of nonzero size; there are no free blocks.
  model_stats stats() const noexcept { return s_; }

 private:
  std::uint64_t capacity_;
  detail::live_buffers<> ids_{name};
};

}  // namespace dwsr::sim
