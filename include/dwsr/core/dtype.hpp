#pragma once
/// \file Sample types of cubes: the three the reference outputs use, and
/// int32 for labels (geobodies).

#include <complex>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace dwsr {

/// Element type of a cube.
enum class dtype : std::uint8_t { float32, complex64, int64, int32 };

/// Bytes per element.
constexpr std::uint64_t size_of(dtype t) noexcept { return t == dtype::float32 || t == dtype::int32 ? 4 : 8; }

/// NumPy's name of the type ("float32", ...).
constexpr std::string_view name_of(dtype t) noexcept {
  switch (t) {
    case dtype::float32: return "float32";
    case dtype::complex64: return "complex64";
    case dtype::int64: return "int64";
    case dtype::int32: return "int32";
  }
  return "?";
}

/// The dtype of a C++ element type.
template <class T>
constexpr dtype dtype_of() noexcept {
  if constexpr (std::is_same_v<T, float>)
    return dtype::float32;
  else if constexpr (std::is_same_v<T, std::complex<float>>)
    return dtype::complex64;
  else if constexpr (std::is_same_v<T, std::int32_t>)
    return dtype::int32;
  else {
    static_assert(std::is_same_v<T, std::int64_t>,
                  "dwsr cubes hold float, std::complex<float>, std::int64_t or std::int32_t");
    return dtype::int64;
  }
}

}  // namespace dwsr
