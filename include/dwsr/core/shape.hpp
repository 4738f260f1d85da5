#pragma once
/// \file Cube shapes: (inline, crossline, time), time fastest (C order).

#include <array>
#include <charconv>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "dwsr/error.hpp"

namespace dwsr {

/// The extent of a cube along (inline, crossline, time).
struct shape3 {
  std::uint64_t inlines = 0;
  std::uint64_t crosslines = 0;
  std::uint64_t samples = 0;

  /// Number of traces (inline x crossline).
  constexpr std::uint64_t traces() const noexcept { return inlines * crosslines; }
  /// Number of voxels.
  constexpr std::uint64_t voxels() const noexcept { return traces() * samples; }
  /// Extent along axis 0, 1 or 2.
  constexpr std::uint64_t operator[](std::size_t axis) const noexcept {
    return axis == 0 ? inlines : axis == 1 ? crosslines : samples;
  }
  constexpr std::array<std::uint64_t, 3> as_array() const noexcept { return {inlines, crosslines, samples}; }
  friend constexpr bool operator==(const shape3&, const shape3&) = default;
};

/// "IxXxT", the notation used by the CLI and error messages.
inline std::string to_string(const shape3& s) {
  return std::to_string(s.inlines) + "x" + std::to_string(s.crosslines) + "x" + std::to_string(s.samples);
}

/// Parses "IxXxT" (three positive integers). Throws invalid_input naming the text.
inline shape3 parse_shape(std::string_view text) {
  std::array<std::uint64_t, 3> dims{};
  std::size_t axis = 0;
  const char* p = text.data();
  const char* end = text.data() + text.size();
  auto fail = [&](const char* why) -> shape3 {
    throw invalid_input("shape '" + std::string(text) + "': " + why +
                        "; expected IxXxT with three positive integers, e.g. 64x64x512");
  };
  while (true) {
    auto [next, ec] = std::from_chars(p, end, dims[axis]);
    if (ec != std::errc{} || next == p)
      return fail(ec == std::errc::result_out_of_range ? "a dimension is too large" : "not a number");
    if (dims[axis] == 0) return fail("a dimension is zero");
    p = next;
    if (++axis == 3) break;
    if (p == end || (*p != 'x' && *p != 'X')) return fail("missing 'x' separator");
    ++p;
  }
  if (p != end) return fail("trailing characters");
  const shape3 s{dims[0], dims[1], dims[2]};
  // Reject shapes whose voxel count or byte size (complex64: 8 B) overflows 64 bits.
  const auto max = std::numeric_limits<std::uint64_t>::max() / 16;
  if (s.inlines > max / s.crosslines || s.traces() > max / s.samples) return fail("too many voxels");
  return s;
}

}  // namespace dwsr
