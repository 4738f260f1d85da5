#pragma once
/// \file What an estimator sees and says (the Estimator concept in
/// concepts.hpp): a job, one chunked execution of a graph on a cube with W
/// workers of T threads, and its estimate, the memory the run will hold.
/// Estimators differ in what of the job they use: `plan` executes the graph
/// symbolically, `volume_linear` reads only the cube's bytes and the graph's
/// operators. Learned estimators fit on labelled runs: jobs with the peak a
/// real execution measured.

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "dwsr/core/shape.hpp"
#include "dwsr/error.hpp"

namespace dwsr {

class graph;

/// One job to estimate.
struct estimate_job {
  std::uint64_t id = 0;      ///< unique within a suite
  const graph* g = nullptr;  ///< the graph (outlives the job)
  std::string operators;     ///< the graph's operators in node order, joined by '+': "gaussian+envelope"
  shape3 cube{};             ///< the float32 input cube
  shape3 chunk{};            ///< block shape (zero extents: the whole cube along that axis)
  std::size_t workers = 1;   ///< W, workers of one process
  std::size_t threads = 1;   ///< T, threads per worker
  /// Bytes of the float32 input cube.
  std::uint64_t input_bytes() const noexcept { return cube.voxels() * 4; }
};

/// An estimate of a job's memory.
struct estimate {
  double held = 0;              ///< bytes the process holds at its peak above its idle baseline (all workers)
  double worker_peak = 0;       ///< bytes the largest worker requests at its peak
  std::optional<double> upper;  ///< an upper quantile of `held`, for estimators that give one
};

/// An estimate of `held` bytes for job `j`, its workers' share of them even:
/// for estimators that predict the whole process only.
inline estimate shared_by_workers(double held, const estimate_job& j) {
  return {.held = held, .worker_peak = held / double(j.workers ? j.workers : 1), .upper = {}};
}

/// A job with what its real execution measured: what learned estimators fit.
struct labelled_run {
  estimate_job job;
  double held = 0;  ///< bytes: the real run's peak RSS above its idle baseline
  /// bytes: the same when the run's first blocks (one per worker) had
  /// finished; 0 where that was not measured
  double first_blocks_held = 0;
};

/// Run `r`'s held bytes, for an estimator that learns from their scale. Throws
/// invalid_input, naming `estimator`, for held bytes that are not finite and > 0.
inline double positive_held(std::string_view estimator, const labelled_run& r) {
  if (!std::isfinite(r.held) || r.held <= 0)
    throw invalid_input(std::string(estimator) + ": run of job " + std::to_string(r.job.id) + " holds " +
                        std::to_string(r.held) + " bytes; expected a finite number > 0");
  return r.held;
}

}  // namespace dwsr
