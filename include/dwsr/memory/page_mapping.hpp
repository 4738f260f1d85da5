#pragma once
/// \file The host context's memory: one private anonymous mapping of whole
/// pages per buffer, populated before it is handed out.
///
/// A mapping of a huge page (2 MiB) or more is aligned to huge pages and
/// advised to use them (transparent huge pages, in `madvise` mode on most
/// distributions): populating 32 MiB then takes about 3 ms instead of 14-20 ms
/// in 4 KiB pages, and unmapping it 0.2 ms instead of 3.6 ms (a `dwsr run` of
/// envelope on 32 MiB: 110 ms in median instead of 148 ms). The pages
/// the process holds are the same either way: every page of the mapping is
/// populated, and the mapping is exactly the buffer's whole pages, so its
/// interior goes in huge pages and its unaligned tail in small ones. Where the
/// kernel has no huge page to give, or no transparent huge pages at all, it
/// maps small pages, as before.

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace dwsr::detail {

/// The kernel's transparent huge page on x86-64 and arm64 (4 KiB granules).
inline constexpr std::uint64_t huge_page_bytes = std::uint64_t{2} << 20;

/// The kernel's small page.
inline std::uint64_t page_bytes() noexcept {
  static const auto page = std::uint64_t(::sysconf(_SC_PAGESIZE));
  return page;
}

/// Bytes of the mapping that holds an allocation of `bytes`: whole pages (so
/// every buffer starts on a page, beyond the 64 bytes vector code wants).
inline std::uint64_t mapped_bytes(std::uint64_t bytes) noexcept {
  return (bytes + page_bytes() - 1) / page_bytes() * page_bytes();
}

/// Faults in every page of [p, p + bytes) for writing; false when the system
/// has not the memory. MADV_POPULATE_WRITE (Linux 5.14) reports that as an
/// error where a touch would be killed; older kernels get the touch.
inline bool populate(char* p, std::uint64_t bytes) noexcept {
#ifndef MADV_POPULATE_WRITE
  constexpr int MADV_POPULATE_WRITE = 23;
#endif
  if (::madvise(p, bytes, MADV_POPULATE_WRITE) == 0) return true;
  if (errno != EINVAL) return false;
  for (std::uint64_t at = 0; at < bytes; at += page_bytes()) static_cast<volatile char*>(p)[at] = 0;
  return true;
}

/// A populated, zeroed mapping of mapped_bytes(bytes) > 0 bytes; null when the
/// system refuses. A mapping of huge pages is populated by
/// `fill(char* p, std::uint64_t size) -> bool` (populate by default; the host
/// context splits it among its threads: the kernel zeroes every page it
/// hands out, 3.5 ms per 32 MiB on one core of the 2-core EPYC VM).
template <class Fill>
void* map_populated(std::uint64_t bytes, Fill&& fill) noexcept {
  const std::uint64_t size = mapped_bytes(bytes);
  if (size < huge_page_bytes) {
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
  }
  // Reserve a huge page more than needed and keep the aligned part: mmap
  // aligns only to small pages, and a huge page must start on its own size.
  void* raw = ::mmap(nullptr, size + huge_page_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto begin = reinterpret_cast<std::uintptr_t>(raw);
  const auto aligned = (begin + huge_page_bytes - 1) & ~(huge_page_bytes - 1);
  if (aligned > begin) ::munmap(raw, aligned - begin);
  ::munmap(reinterpret_cast<void*>(aligned + size), begin + huge_page_bytes - aligned);
  auto* p = reinterpret_cast<char*>(aligned);
  ::madvise(p, size, MADV_HUGEPAGE);  // advice only: without it, small pages
  if (!fill(p, size)) {
    ::munmap(p, size);
    return nullptr;
  }
  return p;
}

/// map_populated, populated on the calling thread.
inline void* map_populated(std::uint64_t bytes) noexcept { return map_populated(bytes, populate); }

/// Returns a mapping from map_populated() to the system.
inline void unmap(void* p, std::uint64_t bytes) noexcept {
  if (p) ::munmap(p, mapped_bytes(bytes));
}

}  // namespace dwsr::detail
