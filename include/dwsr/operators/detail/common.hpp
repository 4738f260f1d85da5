#pragma once
/// \file Small helpers several operator families share.

#include <array>
#include <cmath>
#include <cstdint>

#include "dwsr/ops/protocol.hpp"

namespace dwsr::operators::detail {

/// NaN becomes 0, as the reference's nan_to_num does for the attributes that use it.
inline float nan_to_zero(float v) { return std::isnan(v) ? 0.0f : v; }

/// A window's halo: kernel / 2 per axis, after `extra` samples of derivatives.
inline dwsr::halo window_halo(const std::array<std::uint64_t, 3>& kernel, std::uint64_t extra = 0) {
  return {.radius = {extra + kernel[0] / 2, extra + kernel[1] / 2, extra + kernel[2] / 2}};
}

}  // namespace dwsr::operators::detail
