#pragma once
/// \file Tells ThreadSanitizer about the synchronization inside TBB's scheduler,
/// which it cannot see when libtbb is not built with TSan (Debian's is not):
/// the caller's work happens before each task of a parallel loop, and every
/// task before the loop returns. Races between the tasks themselves are still
/// reported. Compiles to nothing outside TSan builds.

#if defined(__SANITIZE_THREAD__)
#define DWSR_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DWSR_TSAN 1
#endif
#endif

#ifdef DWSR_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace dwsr::detail {

/// One parallel loop handed to TBB: fork() before, enter()/leave() around each
/// task, join() after.
class tsan_handoff {
 public:
  /// The caller's work so far happens before every enter().
  void fork() noexcept { release(&start_); }
  /// Called first in each task.
  void enter() noexcept { acquire(&start_); }
  /// Called last in each task: its work happens before join().
  void leave() noexcept { release(&end_); }
  /// Called after the loop returns.
  void join() noexcept { acquire(&end_); }

 private:
#ifdef DWSR_TSAN
  static void release(char* token) noexcept { __tsan_release(token); }
  static void acquire(char* token) noexcept { __tsan_acquire(token); }
#else
  static void release(char*) noexcept {}
  static void acquire(char*) noexcept {}
#endif
  // Two tokens, so that tasks synchronize with the caller but not with each other.
  char start_ = 0;
  char end_ = 0;
};

}  // namespace dwsr::detail
