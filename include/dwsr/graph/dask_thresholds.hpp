#pragma once
/// \file Dask's memory thresholds for a worker: with a memory limit, a Dask
/// worker starts spilling results to disk above 60 % of it
/// (distributed.worker.memory.target), stops starting tasks above 80 %
/// (pause) and is restarted by its nanny above 95 % (terminate). A planned
/// peak is reported against them.

#include <cstdint>
#include <string_view>

namespace dwsr {

/// The thresholds, as fractions of the worker's memory limit (Dask's defaults).
struct dask_thresholds {
  double spill = 0.60;      ///< starts spilling results to disk
  double pause = 0.80;      ///< stops starting tasks
  double terminate = 0.95;  ///< the nanny restarts the worker
};

/// The highest threshold a peak goes above.
enum class dask_level { none, spill, pause, terminate };

/// "none", "spill", "pause" or "terminate".
constexpr std::string_view name_of(dask_level l) noexcept {
  switch (l) {
    case dask_level::none: return "none";
    case dask_level::spill: return "spill";
    case dask_level::pause: return "pause";
    case dask_level::terminate: return "terminate";
  }
  return "?";
}

/// The highest threshold of `t` that `peak` bytes exceed on a worker limited to `limit` bytes.
constexpr dask_level crossed(std::uint64_t peak, std::uint64_t limit, const dask_thresholds& t = {}) noexcept {
  const double f = double(peak) / double(limit);
  return f > t.terminate ? dask_level::terminate
         : f > t.pause   ? dask_level::pause
         : f > t.spill   ? dask_level::spill
                         : dask_level::none;
}

}  // namespace dwsr
