#pragma once
/// \file Upper bounds on the thread and worker counts users may ask for. Every
/// thread is a real one (a TBB worker, or a worker's own std::thread), and
/// creating tens of thousands fails on ordinary systems in ways that cannot be
/// recovered from (TBB terminates the process when its thread creation fails);
/// a clear error up front is better. 1024 is far above any machine's useful
/// parallelism today and far below the limits of Linux's defaults.

#include <cstddef>

namespace dwsr {

/// Most threads one execution context (a worker) may use.
inline constexpr std::size_t max_threads = 1024;

/// Most workers of a chunked execution; each runs on a thread of its own.
inline constexpr std::size_t max_workers = 1024;

}  // namespace dwsr
