#pragma once
/// \file The exact model: requested bytes and nothing else, what dwsr's own
/// peak counter measures. Held == handed out == requested.
///
/// It is the baseline every other model is compared with and the cheapest:
/// per event, one probe of the table of live buffer ids (which checks the
/// stream, as every model does), an add and a compare. A free carries the bytes
/// of its alloc, so nothing else is kept per buffer.

#include <bit>
#include <cstdint>
#include <optional>
#include <string_view>

#include "dwsr/sim/allocator_model.hpp"
#include "dwsr/sim/detail/live_buffers.hpp"
#include "dwsr/sim/detail/model_base.hpp"

namespace dwsr::sim {

namespace detail {

/// `bytes` rounded up to whole units of `unit` bytes, a power of two (each
/// model's granule, asserted where it is defined): what a whole-units model
/// holds for a buffer (planners that count these models without the model
/// itself round with it too, on every event, hence a mask, not a division).
constexpr std::uint64_t whole_units(std::uint64_t bytes, std::uint64_t unit) noexcept {
  return (bytes + unit - 1) & ~(unit - 1);
}

/// Live buffers, each held in whole units of `Granule` bytes (1: exactly the
/// requested bytes), with an optional capacity; no cache and no free blocks.
template <class Model, std::uint64_t Granule>
class whole_units_model : public model_base<Model> {
 public:
  /// Bytes of one unit: every buffer is held as a whole number of them.
  static constexpr std::uint64_t granule = Granule;
  static_assert(std::has_single_bit(Granule), "whole_units rounds with a mask");

  explicit whole_units_model(std::optional<std::uint64_t> capacity = {}) : capacity_(capacity.value_or(unlimited)) {}

  /// Holds `bytes` in whole units; false when they would exceed the capacity.
  bool alloc(std::uint64_t id, std::uint64_t bytes) {
    auto& s = this->s_;
    ids_.add(id, s.allocs + s.frees);
    const auto held = units(bytes);
    if (held > capacity_ - s.allocated) {
      ids_.forget(id);
      s.oom = true;
      s.oom_bytes = bytes;
      return false;
    }
    s.requested += bytes;
    s.allocated += held;
    s.reserved = s.allocated;
    update_peaks(s);
    if (bytes != 0) ++s.segments;
    ++s.allocs;
    ++s.system_allocs;
    return true;
  }
  /// Releases the units of the matching alloc.
  void free(std::uint64_t id, std::uint64_t bytes) {
    auto& s = this->s_;
    ids_.remove(id, s.allocs + s.frees);
    s.requested -= bytes;
    s.allocated -= units(bytes);
    s.reserved = s.allocated;
    if (bytes != 0) --s.segments;
    ++s.frees;
    ++s.system_frees;
  }

  /// Segments are the live buffers of nonzero size; there are no free blocks.
  model_stats stats() const noexcept { return this->s_; }

 private:
  static constexpr std::uint64_t units(std::uint64_t bytes) noexcept { return whole_units(bytes, Granule); }

  std::uint64_t capacity_;
  live_buffers<> ids_{Model::name};
};

}  // namespace detail

/// Requested bytes, with an optional capacity.
class exact_model : public detail::whole_units_model<exact_model, 1> {
 public:
  static constexpr std::string_view name = "exact";
  using whole_units_model::whole_units_model;
};

}  // namespace dwsr::sim
