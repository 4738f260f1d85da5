#pragma once
/// \file The `plan` estimator: dwsr's meta execution of the job itself (its
/// graph, cube, chunking, W and T), every worker's event stream through the
/// host_pages allocator model, summed over the workers. That sum is what
/// env/real_check.hpp validates against a fresh process's peak RSS; it is
/// the reference the other estimators are measured against. It sees the job,
/// not only its features, and learns nothing.

#include <algorithm>
#include <string>
#include <string_view>

#include "dwsr/concepts.hpp"
#include "dwsr/error.hpp"
#include "dwsr/graph/chunked.hpp"
#include "dwsr/graph/model_plan.hpp"
#include "dwsr/sim/host_pages.hpp"

namespace dwsr::estimators {

/// Plans the job (see the file comment).
class plan {
 public:
  std::string_view name() const noexcept { return "plan"; }

  /// Throws invalid_input for a job without a graph, and what plan_chunked
  /// throws for one it cannot plan.
  estimate predict(const estimate_job& j) const {
    if (!j.g) throw invalid_input("job " + std::to_string(j.id) + " has no graph; the plan estimator needs one");
    const chunked_schedule s(*j.g, j.cube, {.chunk = j.chunk, .workers = j.workers, .threads = j.threads});
    const auto p = plan_chunked(s);
    estimate e;
    for (const auto& w : p.workers) e.worker_peak = std::max(e.worker_peak, double(w.peak));
    for (auto pages : model_peaks(s, p, std::string(sim::host_pages_model::name))) e.held += double(pages);
    return e;
  }
};

static_assert(Estimator<plan>);

}  // namespace dwsr::estimators
