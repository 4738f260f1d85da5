#pragma once
/// \file SEG-Y sample formats and their conversion to float32: which format
/// codes dwsr reads (those segyio reads), what each is called, and the tight
/// per-run loops that turn raw file bytes of either byte order into floats.
///
/// Values convert as a reader using segyio gets them: integers and doubles
/// are cast to float (round to nearest, no scaling), IEEE floats are copied
/// bit for bit, IBM floats follow segyio's mapping (see ibm_to_ieee_bits).

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace dwsr::io {

/// The sample formats dwsr reads, by their code in binary header bytes 3225-3226.
enum class segy_sample_format : std::uint8_t {
  ibm_float = 1,    ///< 4-byte IBM System/360 float
  int32 = 2,        ///< 4-byte two's complement integer
  int16 = 3,        ///< 2-byte two's complement integer
  ieee_float = 5,   ///< 4-byte IEEE float
  ieee_double = 6,  ///< 8-byte IEEE float
  int8 = 8,         ///< 1-byte two's complement integer
  int64 = 9,        ///< 8-byte two's complement integer
  uint32 = 10,      ///< 4-byte unsigned integer
  uint16 = 11,      ///< 2-byte unsigned integer
  uint64 = 12,      ///< 8-byte unsigned integer
  uint8 = 16,       ///< 1-byte unsigned integer
};

/// Bytes per sample of a format dwsr reads.
constexpr int sample_bytes(segy_sample_format f) noexcept {
  switch (f) {
    case segy_sample_format::int8:
    case segy_sample_format::uint8: return 1;
    case segy_sample_format::int16:
    case segy_sample_format::uint16: return 2;
    case segy_sample_format::ieee_double:
    case segy_sample_format::int64:
    case segy_sample_format::uint64: return 8;
    default: return 4;
  }
}

/// The SEG-Y rev2 name of a sample format code, e.g. "4-byte IBM float"; "unknown" for codes the standard does not
/// assign.
constexpr const char* segy_format_code_name(int code) noexcept {
  switch (code) {
    case 1: return "4-byte IBM float";
    case 2: return "4-byte integer";
    case 3: return "2-byte integer";
    case 4: return "4-byte fixed-point with gain";
    case 5: return "4-byte IEEE float";
    case 6: return "8-byte IEEE float";
    case 7: return "3-byte integer";
    case 8: return "1-byte integer";
    case 9: return "8-byte integer";
    case 10: return "4-byte unsigned integer";
    case 11: return "2-byte unsigned integer";
    case 12: return "8-byte unsigned integer";
    case 15: return "3-byte unsigned integer";
    case 16: return "1-byte unsigned integer";
    case 0: return "not set";
    default: return "unknown";
  }
}

/// "4-byte IBM float", ...
constexpr const char* name_of(segy_sample_format f) noexcept { return segy_format_code_name(static_cast<int>(f)); }

/// True for the format codes dwsr reads (1, 2, 3, 5, 6, 8, 9, 10, 11, 12, 16).
constexpr bool segy_format_readable(int code) noexcept {
  switch (code) {
    case 1:
    case 2:
    case 3:
    case 5:
    case 6:
    case 8:
    case 9:
    case 10:
    case 11:
    case 12:
    case 16: return true;
    default: return false;
  }
}

/// True for the codes SEG-Y rev2 assigns (readable or not): what tells the byte order of a file apart.
constexpr bool segy_format_assigned(int code) noexcept { return (code >= 1 && code <= 12) || code == 15 || code == 16; }

namespace detail {

/// "format 4 (4-byte fixed-point with gain)": how messages name a format code.
inline std::string segy_format_text(int code) {
  std::string s = "format ";
  s += std::to_string(code);
  s += " (";
  s += segy_format_code_name(code);
  s += ')';
  return s;
}

/// The IEEE float bits segyio gives for the IBM float word `w` (already in host order).
///
/// On normalised words (a non-zero leading hex digit) this is segyio's mapping
/// bit for bit: exact where the value fits a normal float; words whose
/// magnitude is below 16^-31 / 8 (2^-127) give +0; words past its largest
/// (0x611FFFFF) give a NaN with the word's sign; the few words between give the
/// bits segyio's arithmetic gives (NaN near the top, denormals near the bottom).
/// Unnormalised words, which IBM hardware never produces, are normalised first
/// (segyio would give, e.g., 0.5 for the zero word 0x41000000); a zero mantissa
/// gives +0.
constexpr std::uint32_t ibm_to_ieee_bits(std::uint32_t w) noexcept {
  const std::uint32_t sign = w & 0x80000000u;
  std::uint32_t exponent = (w >> 24) & 0x7fu;  // base 16, bias 64
  std::uint32_t mantissa = w & 0x00ffffffu;    // 24-bit fraction
  if (mantissa == 0) return 0;
  if (mantissa < 0x00100000u) {  // leading hex digits 0: shift them out
    const int digits = (std::countl_zero(mantissa) - 8) / 4;
    if (static_cast<std::uint32_t>(digits) > exponent) return 0;
    mantissa <<= 4 * digits;
    exponent -= static_cast<std::uint32_t>(digits);
  }
  const std::uint32_t magnitude = (exponent << 24) | mantissa;
  if (magnitude < 0x21200000u) return 0;                   // below 2^-127
  if (magnitude > 0x611fffffu) return sign | 0x7fffffffu;  // past segyio's largest: NaN
  // The leading mantissa bit (bit 20..23) moves to bit 23, where it adds one
  // to the exponent field instead of being stored: value = m * 2^(4e - 280).
  const int lead = std::bit_width(mantissa) - 1;
  const std::uint32_t biased_minus_one = 4 * exponent + static_cast<std::uint32_t>(lead) - 154;  // wraps like segyio
  return ((mantissa << (23 - lead)) + (biased_minus_one << 23)) | sign;
}

/// The float of the IBM word `w` (host order), as ibm_to_ieee_bits maps it.
inline float ibm_to_float(std::uint32_t w) noexcept { return std::bit_cast<float>(ibm_to_ieee_bits(w)); }

/// The unsigned integer of `sizeof(U)` bytes at `p` in the given byte order.
template <class U, bool Little>
inline U load_word(const unsigned char* p) noexcept {
  U v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (sizeof(U) > 1 && Little != (std::endian::native == std::endian::little)) {
    if constexpr (sizeof(U) == 2) v = static_cast<U>(__builtin_bswap16(v));
    if constexpr (sizeof(U) == 4) v = __builtin_bswap32(v);
    if constexpr (sizeof(U) == 8) v = __builtin_bswap64(v);
  }
  return v;
}

/// Converts n samples at src (raw words of type U) to floats at dst with `convert(U)`.
/// src may be dst itself (4-byte formats decode in place): each word is read before its float is written.
template <class U, bool Little, class Convert>
inline void decode_run(const unsigned char* src, std::size_t n, float* dst, Convert convert) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    const float v = convert(load_word<U, Little>(src + i * sizeof(U)));
    std::memcpy(dst + i, &v, sizeof v);
  }
}

template <bool Little>
inline void decode_segy_samples(const unsigned char* src, std::size_t n, segy_sample_format f, float* dst) noexcept {
  using F = segy_sample_format;
  auto cast = [](auto v) { return static_cast<float>(v); };
  switch (f) {
    case F::ibm_float:
      decode_run<std::uint32_t, Little>(src, n, dst, [](std::uint32_t v) { return ibm_to_float(v); });
      break;
    case F::ieee_float:
      decode_run<std::uint32_t, Little>(src, n, dst, [](std::uint32_t v) { return std::bit_cast<float>(v); });
      break;
    case F::ieee_double:
      decode_run<std::uint64_t, Little>(src, n, dst, [](std::uint64_t v) { return float(std::bit_cast<double>(v)); });
      break;
    case F::int8:
      decode_run<std::uint8_t, Little>(src, n, dst, [](std::uint8_t v) { return float(std::int8_t(v)); });
      break;
    case F::int16:
      decode_run<std::uint16_t, Little>(src, n, dst, [](std::uint16_t v) { return float(std::int16_t(v)); });
      break;
    case F::int32:
      decode_run<std::uint32_t, Little>(src, n, dst, [](std::uint32_t v) { return float(std::int32_t(v)); });
      break;
    case F::int64:
      decode_run<std::uint64_t, Little>(src, n, dst, [](std::uint64_t v) { return float(std::int64_t(v)); });
      break;
    case F::uint8: decode_run<std::uint8_t, Little>(src, n, dst, cast); break;
    case F::uint16: decode_run<std::uint16_t, Little>(src, n, dst, cast); break;
    case F::uint32: decode_run<std::uint32_t, Little>(src, n, dst, cast); break;
    case F::uint64: decode_run<std::uint64_t, Little>(src, n, dst, cast); break;
  }
}

/// Converts n samples of format f, stored at src in the file's byte order,
/// into floats at dst. For 4-byte formats src may equal dst (in place).
inline void decode_segy_samples(const void* src, std::size_t n, segy_sample_format f, bool little_endian,
                                float* dst) noexcept {
  const auto* bytes = static_cast<const unsigned char*>(src);
  if (little_endian)
    decode_segy_samples<true>(bytes, n, f, dst);
  else
    decode_segy_samples<false>(bytes, n, f, dst);
}

}  // namespace detail
}  // namespace dwsr::io
