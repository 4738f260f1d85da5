#pragma once
/// \file SEG-Y files of regular 3-D post-stack surveys: read into a cube (inline, crossline, time) and write cubes as
/// SEG-Y.
///
/// Reading is split like .npy: read_segy_header() validates the file and says
/// what to allocate, read_segy_data() fills caller memory with the whole cube,
/// read_segy_samples() with part of one trace and read_segy_traces() with part
/// of consecutive traces (input windows). Traces may come in
/// any order (inline-sorted, crossline-sorted or other) as long as they form a
/// full grid; the cube's axes hold the line numbers in ascending order.
/// Samples in any format segyio reads (IBM and IEEE floats, integers of 1, 2,
/// 4 and 8 bytes; detail/segy_samples.hpp), big-endian as the standard says or
/// little-endian (detected from the binary header), converted to float32 as
/// segyio converts them. Trace headers are read, and files written, with
/// segyio's C API; samples are read with positioned reads.

#include <fcntl.h>
#include <segyio/segy.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dwsr/core/atomic_file.hpp"
#include "dwsr/core/cube_view.hpp"
#include "dwsr/core/shape.hpp"
#include "dwsr/error.hpp"
#include "dwsr/io/detail/file.hpp"
#include "dwsr/io/detail/positioned_file.hpp"
#include "dwsr/io/detail/segy_geometry.hpp"
#include "dwsr/io/detail/segy_samples.hpp"

namespace dwsr::io {

/// Where to find the line numbers of a trace, and what to assume when the file does not say.
struct segy_options {
  int inline_byte = 189;                      ///< 1-based trace header byte of the inline number (SEG-Y rev1: 189)
  int crossline_byte = 193;                   ///< of the crossline number (SEG-Y rev1: 193)
  double fallback_sample_interval_us = 4000;  ///< used when neither header gives an interval
};

/// What a SEG-Y file holds, as read_segy_header() found it.
struct segy_header {
  shape3 shape{};                       ///< (inlines, crosslines, samples)
  double sample_interval_us = 0;        ///< microseconds between samples
  bool sample_interval_in_file = true;  ///< false when the fallback was used
  segy_sample_format format = segy_sample_format::ieee_float;
  bool little_endian = false;  ///< the file's byte order (standard: big-endian)
  segy_sorting sorting = segy_sorting::inline_sorted;
  std::vector<std::int32_t> inlines;          ///< inline number of each index along axis 0 (ascending)
  std::vector<std::int32_t> crosslines;       ///< crossline number of each index along axis 1 (ascending)
  std::vector<std::uint64_t> trace_position;  ///< cube trace index of each file trace
  long trace0 = 0;                            ///< byte offset of the first trace header
  int trace_bytes = 0;                        ///< sample bytes per trace
};

namespace detail {

/// Closes a segy_file on scope exit.
struct segy_closer {
  void operator()(segy_file* f) const noexcept { segy_close(f); }
};
using unique_segy = std::unique_ptr<segy_file, segy_closer>;

/// segyio's error codes in words.
inline std::string segy_error_text(int code) {
  switch (code) {
    case SEGY_FOPEN_ERROR: return "cannot open the file";
    case SEGY_FSEEK_ERROR: return "seek failed";
    case SEGY_FREAD_ERROR: return "read failed (the file is shorter than its headers say)";
    case SEGY_FWRITE_ERROR: return "write failed (disk full?)";
    case SEGY_TRACE_SIZE_MISMATCH: return "trace size mismatch";
    case SEGY_INVALID_ARGS: return "invalid arguments";
    default: return "segyio error " + std::to_string(code);
  }
}

/// Throws io_error naming the file and what was being done unless code is SEGY_OK.
inline void segy_check(int code, const std::filesystem::path& path, const char* doing) {
  if (code != SEGY_OK) throw io_error(quoted(path) + ": " + doing + ": " + segy_error_text(code));
}

/// Throws invalid_input unless `byte` starts a 4-byte trace header field (line numbers are 4 bytes).
inline void check_line_byte(int byte, const char* which, int standard) {
  char header[SEGY_TRACE_HEADER_SIZE] = {};
  int value = 0;
  const bool field = byte >= 1 && byte <= SEGY_TRACE_HEADER_SIZE - 3 && segy_get_field(header, byte, &value) == SEGY_OK;
  bool four_bytes = false;
  if (field) {  // a 4-byte field: setting -1 fills 4 bytes
    segy_set_field(header, byte, -1);
    four_bytes = static_cast<unsigned char>(header[byte + 2]) == 0xff;
  }
  if (!four_bytes)
    throw invalid_input(std::string(which) + " header byte " + std::to_string(byte) +
                        ": not the first byte of a 4-byte SEG-Y trace header field; the standard position is " +
                        std::to_string(standard) + " (others in use: 9, 17, 21, 181, 185, 189, 193)");
}

/// The byte order of a SEG-Y file from its raw binary header: the rev2
/// byte-order constant 0x01020304 at bytes 3297-3300 when present, else the
/// order in which bytes 3225-3226 hold an assigned format code (a little-endian
/// code 1 reads 256 big-endian, which no format has). Throws io_error when neither order gives a format.
inline bool segy_little_endian(const unsigned char* bin, const std::filesystem::path& path) {
  const auto order = load_word<std::uint32_t, false>(bin + 96);
  if (order == 0x01020304u) return false;
  if (order == 0x04030201u) return true;
  const int big = load_word<std::uint16_t, false>(bin + 24), little = load_word<std::uint16_t, true>(bin + 24);
  if (big == 0 || segy_format_assigned(big)) return false;
  if (segy_format_assigned(little)) return true;
  std::string m =
      quoted(path) + ": binary header bytes 3225-3226 hold no SEG-Y sample format code in either byte order (";
  m += std::to_string(big) + " read big-endian, " + std::to_string(little) + " little-endian); not a SEG-Y file?";
  throw io_error(m);
}

}  // namespace detail

/// Reads and validates the headers of the SEG-Y file at `path`: byte order,
/// sample format, sample count and interval, and every trace's line numbers,
/// which must form a full (inline x crossline) grid. Reads no samples. Throws
/// io_error naming the file and the problem (missing, truncated, unsupported
/// format, negative sample interval, irregular geometry, duplicate traces) and
/// invalid_input for bad options.
inline segy_header read_segy_header(const std::filesystem::path& path, const segy_options& options = {}) {
  using detail::quoted;
  detail::check_line_byte(options.inline_byte, "inline", 189);
  detail::check_line_byte(options.crossline_byte, "crossline", 193);
  const auto file_size = detail::checked_file_size(path, "SEG-Y");
  constexpr std::uint64_t headers = SEGY_TEXT_HEADER_SIZE + SEGY_BINARY_HEADER_SIZE;
  if (file_size < headers)
    throw io_error(quoted(path) + ": truncated or not a SEG-Y file: " + std::to_string(file_size) +
                   " bytes, fewer than the 3600 bytes of the textual and binary headers");

  // The binary header's few fields dwsr needs, in the file's byte order.
  segy_header h;
  unsigned char bin[SEGY_BINARY_HEADER_SIZE];
  detail::positioned_file(path).read(SEGY_TEXT_HEADER_SIZE, bin, sizeof bin, "SEG-Y binary header");
  h.little_endian = detail::segy_little_endian(bin, path);
  auto field16 = [&](int byte) {  // bytes `byte`..`byte`+1 of the file
    const unsigned char* p = bin + (byte - SEGY_TEXT_HEADER_SIZE - 1);
    return h.little_endian ? detail::load_word<std::uint16_t, true>(p) : detail::load_word<std::uint16_t, false>(p);
  };
  const int format = field16(3225);
  if (!segy_format_readable(format))
    throw io_error(quoted(path) + ": " + detail::segy_format_text(format) +
                   " is not supported (binary header bytes 3225-3226); dwsr reads formats 1 (IBM float), 5 and 6 "
                   "(IEEE float, double), 2, 3, 8, 9 (integers of 4, 2, 1, 8 bytes) and 10, 11, 16, 12 (unsigned "
                   "integers of 4, 2, 1, 8 bytes)");
  h.format = static_cast<segy_sample_format>(format);
  const std::uint32_t samples = field16(3221);
  if (samples == 0) throw io_error(quoted(path) + ": the binary header says 0 samples per trace (bytes 3221-3222)");
  const auto ext_headers = static_cast<std::int16_t>(field16(3505));
  if (ext_headers < 0)
    throw io_error(quoted(path) + ": binary header bytes 3505-3506 announce a variable number of extended textual " +
                   "headers (" + std::to_string(ext_headers) + "); dwsr reads files that state their count");
  h.trace0 = SEGY_TEXT_HEADER_SIZE + SEGY_BINARY_HEADER_SIZE + long{SEGY_TEXT_HEADER_SIZE} * ext_headers;
  h.trace_bytes = static_cast<int>(samples) * sample_bytes(h.format);
  if (static_cast<std::uint64_t>(h.trace0) > file_size)
    throw io_error(quoted(path) + ": truncated: the binary header announces extended textual headers up to byte " +
                   std::to_string(h.trace0) + " but the file has " + std::to_string(file_size) + " bytes");
  const std::uint64_t trace_size = SEGY_TRACE_HEADER_SIZE + static_cast<std::uint64_t>(h.trace_bytes);
  const std::uint64_t body = file_size - static_cast<std::uint64_t>(h.trace0);
  if (body % trace_size != 0)
    throw io_error(quoted(path) + ": truncated or corrupt: the " + std::to_string(body) +
                   " bytes after the headers are not a whole number of " + std::to_string(trace_size) +
                   "-byte traces (240-byte header + " + std::to_string(samples) + " samples x " +
                   std::to_string(sample_bytes(h.format)) + " bytes); " + std::to_string(body / trace_size) +
                   " whole traces and " + std::to_string(body % trace_size) + " bytes left over");
  if (body == 0) throw io_error(quoted(path) + ": the file has headers but no traces");
  if (body / trace_size > static_cast<std::uint64_t>(std::numeric_limits<int>::max()))
    throw io_error(quoted(path) + ": more than 2^31 traces; segyio cannot index them");
  const int traces = static_cast<int>(body / trace_size);

  // Trace headers through segyio, which swaps a little-endian file's fields.
  detail::unique_segy f(segy_open(path.c_str(), "rb"));
  if (!f) throw io_error(quoted(path) + ": cannot open for reading: " + std::strerror(errno));
  if (h.little_endian) detail::segy_check(segy_set_format(f.get(), SEGY_LSB), path, "switching to little-endian");
  std::vector<std::int32_t> il(static_cast<std::size_t>(traces)), xl(il.size());
  detail::segy_check(segy_field_forall(f.get(), options.inline_byte, 0, traces, 1, il.data(), h.trace0, h.trace_bytes),
                     path, "reading inline numbers");
  detail::segy_check(
      segy_field_forall(f.get(), options.crossline_byte, 0, traces, 1, xl.data(), h.trace0, h.trace_bytes), path,
      "reading crossline numbers");
  auto grid = detail::segy_grid::from(il, xl);
  if (!grid.problem.empty())
    throw io_error(quoted(path) + ": " + grid.problem + " (inline numbers from trace header byte " +
                   std::to_string(options.inline_byte) + ", crossline from byte " +
                   std::to_string(options.crossline_byte) + ")");
  h.shape = {grid.inlines.size(), grid.crosslines.size(), samples};
  h.sorting = grid.sorting;
  h.inlines = std::move(grid.inlines);
  h.crosslines = std::move(grid.crosslines);
  h.trace_position = std::move(grid.trace_position);

  // Sample interval: the binary header's, else the first trace header's, else
  // the fallback. Both fields are signed 16-bit; a negative one where the
  // interval is taken from is rejected, not read as 65536 - |dt| nor as |dt|.
  char th[SEGY_TRACE_HEADER_SIZE];
  detail::segy_check(segy_traceheader(f.get(), 0, th, h.trace0, h.trace_bytes), path, "reading trace header 1");
  std::int32_t trace_dt = 0;
  segy_get_field(th, SEGY_TR_SAMPLE_INTER, &trace_dt);
  const auto bin_dt = static_cast<std::int16_t>(field16(3217));
  const auto dt = static_cast<std::int16_t>(bin_dt ? bin_dt : trace_dt);
  if (dt < 0) {
    std::string m = quoted(path) + ": negative sample interval " + std::to_string(dt) + " us in the ";
    m += bin_dt ? "binary header (bytes 3217-3218)" : "first trace header (bytes 117-118)";
    m += "; SEG-Y intervals are positive microseconds (read unsigned it would be " +
         std::to_string(static_cast<std::uint16_t>(dt)) + " us); correct the header";
    throw io_error(m);
  }
  h.sample_interval_us = dt ? dt : options.fallback_sample_interval_us;
  h.sample_interval_in_file = dt != 0;
  return h;
}

/// Reads samples [t0, t0 + count) of file trace `k` (0-based, in file order)
/// of the SEG-Y file whose header is `header`, opened as `file`, into dst as
/// floats, converted as segyio converts them (detail/segy_samples.hpp):
/// positioned reads, no stdio buffer, no heap memory (4-byte formats decode in
/// place, others through a small stack buffer); thread-safe. Throws io_error
/// naming the file when it is shorter than the header says.
inline void read_segy_samples(const detail::positioned_file& file, const segy_header& header, std::uint64_t k,
                              std::uint64_t t0, std::uint64_t count, float* dst) {
  const auto bytes = static_cast<std::uint64_t>(sample_bytes(header.format));
  const std::uint64_t trace_size = SEGY_TRACE_HEADER_SIZE + static_cast<std::uint64_t>(header.trace_bytes);
  const std::uint64_t offset =
      static_cast<std::uint64_t>(header.trace0) + k * trace_size + SEGY_TRACE_HEADER_SIZE + t0 * bytes;
  if (bytes == sizeof(float)) {
    file.read(offset, dst, count * bytes, "SEG-Y trace samples");
    detail::decode_segy_samples(dst, count, header.format, header.little_endian, dst);
    return;
  }
  alignas(8) unsigned char buf[8192];
  for (std::uint64_t done = 0; done < count;) {
    const std::uint64_t n = std::min<std::uint64_t>(sizeof buf / bytes, count - done);
    file.read(offset + done * bytes, buf, n * bytes, "SEG-Y trace samples");
    detail::decode_segy_samples(buf, n, header.format, header.little_endian, dst + done);
    done += n;
  }
}

/// Reads samples [t0, t0 + count) of `traces` consecutive file traces from
/// trace `k` on (see read_segy_samples) into dst, count floats a trace. The
/// traces' headers lie between their samples, so a span of traces is read in
/// one positioned read into a 64 KiB stack buffer, then decoded trace by trace
/// into dst: one read per ~64 KiB rather than one per trace, and still no heap
/// memory. Traces longer than the buffer are read one by one.
inline void read_segy_traces(const detail::positioned_file& file, const segy_header& header, std::uint64_t k,
                             std::uint64_t traces, std::uint64_t t0, std::uint64_t count, float* dst) {
  if (traces == 0 || count == 0) return;
  const auto bytes = static_cast<std::uint64_t>(sample_bytes(header.format));
  const std::uint64_t trace_size = SEGY_TRACE_HEADER_SIZE + static_cast<std::uint64_t>(header.trace_bytes);
  const std::uint64_t run = count * bytes;
  alignas(8) unsigned char buf[65536];
  const std::uint64_t per_read = run > sizeof buf ? 0 : 1 + (sizeof buf - run) / trace_size;
  if (per_read < 2) {
    for (std::uint64_t j = 0; j < traces; ++j) read_segy_samples(file, header, k + j, t0, count, dst + j * count);
    return;
  }
  for (std::uint64_t done = 0; done < traces;) {
    const std::uint64_t m = std::min(per_read, traces - done);
    const std::uint64_t offset =
        static_cast<std::uint64_t>(header.trace0) + (k + done) * trace_size + SEGY_TRACE_HEADER_SIZE + t0 * bytes;
    file.read(offset, buf, (m - 1) * trace_size + run, "SEG-Y trace samples");
    for (std::uint64_t j = 0; j < m; ++j)
      detail::decode_segy_samples(buf + j * trace_size, count, header.format, header.little_endian,
                                  dst + (done + j) * count);
    done += m;
  }
}

/// Reads the samples of the SEG-Y file at `path` (whose header is `header`,
/// from read_segy_header) into dst, header.shape.voxels() floats in C order.
inline void read_segy_data(const std::filesystem::path& path, const segy_header& header, float* dst) {
  const detail::positioned_file file(path);
  const auto samples = header.shape.samples;
  for (std::uint64_t k = 0; k < header.trace_position.size(); ++k) {
    try {
      read_segy_samples(file, header, k, 0, samples, dst + header.trace_position[k] * samples);
    } catch (const io_error& e) {
      std::string m = e.what();
      m += " (reading trace " + std::to_string(k + 1) + " of " + std::to_string(header.trace_position.size()) + ")";
      throw io_error(m);
    }
  }
}

/// How write_segy numbers and labels what it writes.
struct segy_write_options {
  int inline_byte = 189;                 ///< trace header byte for the inline number
  int crossline_byte = 193;              ///< for the crossline number
  std::int32_t first_inline = 1;         ///< number of the cube's first inline (step 1)
  std::int32_t first_crossline = 1;      ///< of its first crossline (step 1)
  std::string text = "written by dwsr";  ///< put on line C 1 of the textual header
};

/// Writes `cube` to `path` as SEG-Y rev1: big-endian IEEE float samples
/// (format 5), inline-sorted, line numbers at the options' header bytes, sample
/// interval `sample_interval_us` (1..65535 microseconds). Atomic like
/// write_npy: an error leaves no partial file. Throws invalid_input for shapes
/// or intervals SEG-Y cannot hold, io_error naming the path when writing fails.
inline void write_segy(const std::filesystem::path& path, cube_view<const float> cube, double sample_interval_us,
                       const segy_write_options& options = {}) {
  using detail::quoted;
  detail::check_line_byte(options.inline_byte, "inline", 189);
  detail::check_line_byte(options.crossline_byte, "crossline", 193);
  const auto s = cube.shape();
  if (cube.data() == nullptr && s.voxels() > 0)
    throw invalid_input("cannot write " + quoted(path) + ": the cube has no data (a meta execution computes none)");
  if (s.voxels() == 0) throw invalid_input("cannot write an empty cube " + to_string(s) + " as SEG-Y");
  if (s.samples > 65535)
    throw invalid_input("cube " + to_string(s) + ": SEG-Y rev1 holds at most 65535 samples per trace");
  if (s.traces() > static_cast<std::uint64_t>(std::numeric_limits<int>::max()))
    throw invalid_input("cube " + to_string(s) + ": more than 2^31 traces");
  const auto last_il = static_cast<std::int64_t>(options.first_inline) + static_cast<std::int64_t>(s.inlines) - 1;
  const auto last_xl = static_cast<std::int64_t>(options.first_crossline) + static_cast<std::int64_t>(s.crosslines) - 1;
  if (last_il > std::numeric_limits<std::int32_t>::max() || last_xl > std::numeric_limits<std::int32_t>::max())
    throw invalid_input("cube " + to_string(s) + ": line numbers overflow 32 bits");
  if (!(sample_interval_us >= 1 && sample_interval_us <= 65535) ||
      sample_interval_us != static_cast<double>(static_cast<std::uint32_t>(sample_interval_us)))
    throw invalid_input("sample interval " + std::to_string(sample_interval_us) +
                        " us: SEG-Y stores a whole number of microseconds in 1..65535 (4 ms is 4000)");
  const auto dt = static_cast<int>(sample_interval_us);
  const int samples = static_cast<int>(s.samples);
  const int trace_bytes = segy_trsize(SEGY_IEEE_FLOAT_4_BYTE, samples);

  dwsr::detail::write_atomically(path, [&](const std::filesystem::path& tmp) {
    detail::unique_segy f(segy_open(tmp.c_str(), "w+b"));
    if (!f) throw io_error(quoted(path) + ": cannot create the file: " + std::strerror(errno));
    detail::segy_check(segy_set_format(f.get(), int{SEGY_IEEE_FLOAT_4_BYTE} | int{SEGY_MSB}), path,
                       "setting the format");
    std::string text(SEGY_TEXT_HEADER_SIZE, ' ');
    auto line = [&](int n, const std::string& content) {
      std::string l(1, 'C');
      l += n < 10 ? " " : "";
      l += std::to_string(n) + " " + content;
      l.resize(80, ' ');
      text.replace(static_cast<std::size_t>(n - 1) * 80, 80, l);
    };
    for (int n = 1; n <= 40; ++n) line(n, "");
    line(1, options.text);
    line(2, "CUBE " + to_string(s) + " (INLINE x CROSSLINE x SAMPLE), INLINE-SORTED");
    line(3, "SAMPLE INTERVAL " + std::to_string(dt) + " US, IEEE FLOAT (FORMAT 5)");
    line(4, "INLINE BYTE " + std::to_string(options.inline_byte) + ", CROSSLINE BYTE " +
                std::to_string(options.crossline_byte));
    line(40, "END TEXTUAL HEADER");
    detail::segy_check(segy_write_textheader(f.get(), 0, text.c_str()), path, "writing the textual header");

    char bin[SEGY_BINARY_HEADER_SIZE] = {};
    segy_set_bfield(bin, SEGY_BIN_TRACES, static_cast<int>(s.crosslines < 32767 ? s.crosslines : 0));
    segy_set_bfield(bin, SEGY_BIN_INTERVAL, dt);
    segy_set_bfield(bin, SEGY_BIN_SAMPLES, samples);
    segy_set_bfield(bin, SEGY_BIN_FORMAT, SEGY_IEEE_FLOAT_4_BYTE);
    segy_set_bfield(bin, SEGY_BIN_SORTING_CODE, 4);  // horizontally stacked
    segy_set_bfield(bin, SEGY_BIN_MEASUREMENT_SYSTEM, 1);
    segy_set_bfield(bin, SEGY_BIN_SEGY_REVISION, 0x0100);  // rev 1.0
    segy_set_bfield(bin, SEGY_BIN_TRACE_FLAG, 1);          // fixed-length traces
    detail::segy_check(segy_write_binheader(f.get(), bin), path, "writing the binary header");
    const long trace0 = SEGY_TEXT_HEADER_SIZE + SEGY_BINARY_HEADER_SIZE;

    std::vector<float> buf(s.samples);
    for (std::uint64_t i = 0; i < s.traces(); ++i) {
      const int k = static_cast<int>(i);
      char th[SEGY_TRACE_HEADER_SIZE] = {};
      segy_set_field(th, SEGY_TR_SEQ_LINE, k + 1);
      segy_set_field(th, SEGY_TR_SEQ_FILE, k + 1);
      segy_set_field(th, SEGY_TR_TRACE_ID, 1);  // seismic data
      segy_set_field(th, SEGY_TR_SAMPLE_COUNT, samples);
      segy_set_field(th, SEGY_TR_SAMPLE_INTER, dt);
      segy_set_field(th, options.inline_byte, options.first_inline + static_cast<std::int32_t>(i / s.crosslines));
      segy_set_field(th, options.crossline_byte, options.first_crossline + static_cast<std::int32_t>(i % s.crosslines));
      detail::segy_check(segy_write_traceheader(f.get(), k, th, trace0, trace_bytes), path, "writing a trace header");
      const auto tr = cube.trace(i);
      std::copy(tr.begin(), tr.end(), buf.begin());
      segy_from_native(SEGY_IEEE_FLOAT_4_BYTE, samples, buf.data());
      detail::segy_check(segy_writetrace(f.get(), k, buf.data(), trace0, trace_bytes), path, "writing a trace");
    }
    detail::segy_check(segy_close(f.release()), path, "closing the file");
  });
}

}  // namespace dwsr::io
