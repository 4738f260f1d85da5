#pragma once
/// \file An independent probe of the process's memory, read from the kernel:
/// the peak resident set size (VmHWM) above the resident size when the probe
/// started. It checks dwsr's own accounting from outside (the events never see
/// it), so it knows nothing of events or contexts.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace dwsr {

/// A figure of this process from /proc/self/status ("VmRSS:", "VmHWM:"), in
/// bytes; 0 where the kernel does not provide it.
inline std::uint64_t proc_status_bytes(const char* key) {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  std::uint64_t kib = 0;
  const auto len = std::strlen(key);
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, key, len) == 0) kib = std::strtoull(line + len, nullptr, 10);
  std::fclose(f);
  return kib * 1024;
}

/// Measures the peak-RSS increase over a region: resets the kernel's high-water
/// mark (VmHWM) to the current RSS first (Linux >= 4.0), so each region is
/// measured on its own.
class rss_probe {
 public:
  rss_probe() {
    if (std::FILE* f = std::fopen("/proc/self/clear_refs", "w")) {
      std::fputs("5", f);  // 5: reset the peak RSS to the current RSS
      std::fclose(f);
    }
    start_ = proc_status_bytes("VmRSS:");
  }
  /// Peak RSS since construction minus the RSS at construction.
  std::uint64_t increase() const {
    const auto peak = proc_status_bytes("VmHWM:");
    return peak > start_ ? peak - start_ : 0;
  }

 private:
  std::uint64_t start_ = 0;
};

}  // namespace dwsr
