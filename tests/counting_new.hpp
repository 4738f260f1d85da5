#pragma once
// Replaces the global operator new and delete with ones that count this
// thread's allocations and forward to malloc / free, so that a test can show
// that some code allocates nothing (allocations_during). Every form that
// pairs with the counted ones is replaced, so that no allocator (a
// sanitizer's included) frees what another one made. Include it in exactly
// one translation unit of a test executable: the rest of the executable then
// allocates through it too. Another translation unit of the same executable
// that counts defines DWSR_COUNTING_NEW_ELSEWHERE first: it gets
// allocations_during without a second set of replacements.

#include <cstdint>
#include <cstdlib>
#include <new>

namespace dwsr::test {
namespace detail {
inline thread_local std::uint64_t allocations = 0;
}  // namespace detail

/// How many times operator new runs on this thread during f().
template <class F>
std::uint64_t allocations_during(F&& f) {
  const auto before = detail::allocations;
  f();
  return detail::allocations - before;
}
}  // namespace dwsr::test

#ifndef DWSR_COUNTING_NEW_ELSEWHERE
// Not inlined: GCC would see malloc's pointer meet operator delete (or new's
// pointer meet free) and warn about a mismatch.
[[gnu::noinline]] void* operator new(std::size_t n) {
  ++dwsr::test::detail::allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void* operator new[](std::size_t n) { return operator new(n); }
[[gnu::noinline]] void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  ++dwsr::test::detail::allocations;
  return std::malloc(n == 0 ? 1 : n);
}
[[gnu::noinline]] void* operator new[](std::size_t n, const std::nothrow_t& tag) noexcept {
  return operator new(n, tag);
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
#endif  // DWSR_COUNTING_NEW_ELSEWHERE
