// A program that holds a known amount of memory: `touch_bytes N` maps N bytes
// and writes one byte in each page, then exits. The leaderboard's RSS probe
// (memory/child_peak.hpp) is checked against it.

#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: touch_bytes N\n");
    return 2;
  }
  const auto n = std::strtoull(argv[1], nullptr, 10);
  if (n == 0) return 0;
  auto* p = static_cast<volatile char*>(mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (p == MAP_FAILED) return 1;
  for (std::uint64_t k = 0; k < n; k += 4096) p[k] = 1;
  return 0;
}
