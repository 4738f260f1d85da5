#pragma once
/// \file Where an input cube comes from, behind one interface: a float32 .npy
/// file, a SEG-Y file, or a synthetic cube. open_source() checks the spec and
/// reads headers; read() and read_window() fill caller memory (chunked runs
/// read each block's window into a buffer of their worker's context).

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dwsr/core/shape.hpp"
#include "dwsr/error.hpp"
#include "dwsr/io/detail/positioned_file.hpp"
#include "dwsr/io/npy.hpp"
#include "dwsr/io/segy.hpp"
#include "dwsr/io/synthetic.hpp"

namespace dwsr::io {

/// An input cube whose header is known and whose samples are read on demand.
class cube_source {
 public:
  virtual ~cube_source() = default;
  /// The cube's (inline, crossline, time) extent.
  virtual shape3 shape() const = 0;
  /// One line for people, e.g. "synthetic 64x64x512 seed 1".
  virtual std::string describe() const = 0;
  /// Fills dst (shape().voxels() floats, C order), using up to `threads` threads where that helps.
  virtual void read(float* dst, std::size_t threads) const = 0;
  /// Fills dst with the window [lo, hi) of the cube, C order; thread-safe. By
  /// default the whole cube is read on first use and kept by the source (SEG-Y
  /// and synthetic cubes); .npy files read the window alone.
  virtual void read_window(const std::array<std::uint64_t, 3>& lo, const std::array<std::uint64_t, 3>& hi,
                           float* dst) const {
    std::call_once(whole_once_, [&] {
      whole_.resize(shape().voxels());
      read(whole_.data(), 1);
    });
    const auto s = shape();
    for (auto i = lo[0]; i < hi[0]; ++i)
      for (auto x = lo[1]; x < hi[1]; ++x) {
        const float* src = whole_.data() + (i * s.crosslines + x) * s.samples;
        dst = std::copy(src + lo[2], src + hi[2], dst);
      }
  }
  /// Milliseconds between samples when the source says (SEG-Y headers, synthetic: 4 ms), else none (.npy).
  virtual std::optional<double> sample_interval_ms() const { return std::nullopt; }

 private:
  mutable std::once_flag whole_once_;
  mutable std::vector<float> whole_;
};

/// A float32 .npy file.
class npy_source final : public cube_source {
 public:
  /// Reads and checks the header; invalid_input unless the data are float32.
  explicit npy_source(std::filesystem::path path)
      : path_(std::move(path)), header_(read_npy_header(path_)), file_(path_) {
    if (header_.type != dtype::float32)
      throw invalid_input(detail::quoted(path_) + " holds " + std::string(name_of(header_.type)) +
                          " data; input cubes must be float32 ('<f4'); convert with numpy: a.astype(numpy.float32)");
    shape_ = header_.cube_shape();
    if (shape_.voxels() == 0)
      throw invalid_input(detail::quoted(path_) + " holds an empty array (" + to_string(shape_) +
                          "); an input cube needs at least one sample");
  }
  shape3 shape() const override { return shape_; }
  std::string describe() const override {
    return "npy " + detail::quoted(path_) + " " + to_string(shape_) + " float32";
  }
  void read(float* dst, std::size_t) const override { read_npy_data(path_, header_, dst); }
  /// Positioned reads of the window's time runs (one per trace), never the whole cube.
  void read_window(const std::array<std::uint64_t, 3>& lo, const std::array<std::uint64_t, 3>& hi,
                   float* dst) const override {
    const auto n = hi[2] - lo[2];
    for (auto i = lo[0]; i < hi[0]; ++i)
      for (auto x = lo[1]; x < hi[1]; ++x, dst += n) {
        const auto offset = header_.data_offset + ((i * shape_.crosslines + x) * shape_.samples + lo[2]) * sizeof(float);
        file_.read(offset, dst, n * sizeof(float), ".npy data");
      }
  }
  /// The file.
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
  npy_header header_;
  shape3 shape_{};
  detail::positioned_file file_;
};

/// A SEG-Y file of a regular 3-D survey.
class segy_source final : public cube_source {
 public:
  /// Reads and checks every header (not the samples).
  explicit segy_source(std::filesystem::path path, const segy_options& options = {})
      : path_(std::move(path)), header_(read_segy_header(path_, options)) {}
  shape3 shape() const override { return header_.shape; }
  std::string describe() const override {
    std::string d = "SEG-Y " + detail::quoted(path_) + " " + to_string(header_.shape) + ", ";
    d += header_.format == segy_sample_format::ibm_float ? "IBM float" : "IEEE float";
    d += header_.little_endian ? " little-endian, " : ", ";
    d += name_of(header_.sorting);
    char ms[32];
    std::snprintf(ms, sizeof ms, ", %g ms", header_.sample_interval_us / 1000);
    d += ms;
    if (!header_.sample_interval_in_file) d += " (assumed)";
    return d;
  }
  void read(float* dst, std::size_t) const override { read_segy_data(path_, header_, dst); }
  std::optional<double> sample_interval_ms() const override {
    if (!header_.sample_interval_in_file) return std::nullopt;
    return header_.sample_interval_us / 1000;
  }
  /// The headers as read.
  const segy_header& header() const noexcept { return header_; }

 private:
  std::filesystem::path path_;
  segy_header header_;
};

/// A deterministic synthetic cube (see synthetic.hpp).
class synthetic_source final : public cube_source {
 public:
  synthetic_source(shape3 shape, std::uint64_t seed) : shape_(shape), seed_(seed) {}
  shape3 shape() const override { return shape_; }
  std::string describe() const override { return "synthetic " + to_string(shape_) + " seed " + std::to_string(seed_); }
  void read(float* dst, std::size_t threads) const override { generate_synthetic(shape_, seed_, dst, threads); }
  std::optional<double> sample_interval_ms() const override { return synthetic_recipe::sample_interval_s * 1000; }
  /// The seed.
  std::uint64_t seed() const noexcept { return seed_; }

 private:
  shape3 shape_;
  std::uint64_t seed_;
};

/// The spec syntax, for messages and help texts.
inline constexpr std::string_view source_spec_help =
    "a .npy file (float32), a .sgy/.segy file, or synthetic:IxXxT[:SEED] (e.g. synthetic:64x64x512:1)";

/// Opens an input: "PATH.npy", "PATH.sgy" / "PATH.segy" (any case), or
/// "synthetic:IxXxT[:SEED]" (seed 1 by default). Reads and validates headers,
/// not samples. Throws invalid_input for a malformed spec or unsupported kind
/// and io_error for a missing or corrupt file.
inline std::unique_ptr<cube_source> open_source(std::string_view spec, const segy_options& segy = {}) {
  constexpr std::string_view synthetic = "synthetic:";
  if (spec.substr(0, synthetic.size()) == synthetic) {
    const auto rest = spec.substr(synthetic.size());
    const auto colon = rest.find(':');
    const shape3 shape = parse_shape(rest.substr(0, colon));
    std::uint64_t seed = 1;
    if (colon != std::string_view::npos) {
      const auto text = rest.substr(colon + 1);
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seed);
      if (text.empty() || ec != std::errc{} || end != text.data() + text.size())
        throw invalid_input("seed '" + std::string(text) + "' in '" + std::string(spec) +
                            "': expected an integer in 0..18446744073709551615, e.g. synthetic:64x64x512:7");
    }
    return std::make_unique<synthetic_source>(shape, seed);
  }
  const std::filesystem::path path{std::string(spec)};
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".npy") return std::make_unique<npy_source>(path);
  if (ext == ".sgy" || ext == ".segy") return std::make_unique<segy_source>(path, segy);
  throw invalid_input("input '" + std::string(spec) + "': unknown kind" +
                      (ext.empty() ? std::string(" (no file extension)") : " (extension '" + ext + "')") +
                      "; expected " + std::string(source_spec_help));
}

}  // namespace dwsr::io
