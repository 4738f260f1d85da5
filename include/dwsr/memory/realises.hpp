#pragma once
/// \file Whether a real event stream is what a planned (meta) one predicts.
/// Exact for every event but those the plan flags as bounds (event::bound: a
/// data-dependent size), whose real bytes may be anything up to the bound.

#include <cstddef>
#include <span>

#include "dwsr/memory/event.hpp"

namespace dwsr {

/// Whether real event `r` is what planned event `p` predicts: the same event,
/// except that when `p` is a bound, `r` (never flagged) asks for at most its bytes.
constexpr bool realises(const event& r, const event& p) noexcept {
  if (!p.bound) return r == p;
  event bounded = p;
  bounded.bytes = r.bytes;
  bounded.bound = false;
  return r.bytes <= p.bytes && r == bounded;
}

/// Whether the real stream `real` realises `plan` event for event (see above).
inline bool realises(std::span<const event> real, std::span<const event> plan) noexcept {
  if (real.size() != plan.size()) return false;
  for (std::size_t i = 0; i < real.size(); ++i)
    if (!realises(real[i], plan[i])) return false;
  return true;
}

}  // namespace dwsr
