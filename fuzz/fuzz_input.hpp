#pragma once
/// \file What the harnesses share: the fuzzer's bytes as a file, for the
/// readers that take a path (the paths the command-line tool uses).

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace dwsr::fuzz {

/// A file of this process (in $TMPDIR, else the system's temporary directory),
/// rewritten with each input and removed when the process exits normally.
class input_file {
 public:
  /// A file named dwsr-fuzz-<pid><extension>; the extension picks the reader.
  explicit input_file(const std::string& extension) {
    std::string name = "dwsr-fuzz-";
    name += std::to_string(::getpid());
    name += extension;
    path_ = std::filesystem::temp_directory_path() / name;
  }
  ~input_file() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  input_file(const input_file&) = delete;
  input_file& operator=(const input_file&) = delete;

  /// Replaces the file with one holding data[0, size); aborts when it cannot
  /// (a harness that fuzzes nothing must not pass).
  const std::filesystem::path& write(const std::uint8_t* data, std::size_t size) const {
    // A new file each time: truncating one that holds data makes some file
    // systems (ext4) flush it to disk, a hundredfold slowdown.
    ::unlink(path_.c_str());
    std::FILE* f = std::fopen(path_.c_str(), "wb");
    if (f == nullptr || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0) {
      std::perror(path_.c_str());
      std::abort();
    }
    return path_;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace dwsr::fuzz
