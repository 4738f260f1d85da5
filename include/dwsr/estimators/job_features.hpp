#pragma once
/// \file A job's feature vector, as `dwsr dataset` computes it
/// (graph/features.hpp): the code features of its graph (structure,
/// operator declarations, a meta execution on a canonical cube) and its
/// execution features (cube, chunk, blocks, halo, W, T; the allocator set
/// to host_pages, what a process's RSS sees). What the estimators that learn
/// from features see: features_gbt and the LinUCB policy.

#include <string>
#include <string_view>
#include <vector>

#include "dwsr/error.hpp"
#include "dwsr/estimators/estimate.hpp"
#include "dwsr/graph/chunked.hpp"
#include "dwsr/graph/features.hpp"
#include "dwsr/sim/host_pages.hpp"

namespace dwsr::estimators {

/// Job `j`'s feature vector (see the file comment), with its columns when
/// `columns` is given. Throws invalid_input naming `who` for a job without a
/// graph, and what chunked_schedule throws for one it cannot schedule.
inline std::vector<float> job_features(const estimate_job& j, std::string_view who,
                                       std::vector<column>* columns = nullptr) {
  if (!j.g) throw invalid_input("job " + std::to_string(j.id) + " has no graph; " + std::string(who) + " needs one");
  const chunked_schedule s(*j.g, j.cube, {.chunk = j.chunk, .workers = j.workers, .threads = j.threads});
  auto v = columns ? feature_vector() : feature_vector::values_only();
  code_features(*j.g, v);
  execution_features({.cube = j.cube,
                      .chunk = s.blocks().chunk(),
                      .workers = j.workers,
                      .threads = j.threads,
                      .allocator = std::string(sim::host_pages_model::name)},
                     &s, v);
  if (columns) *columns = v.columns();
  return {v.values().begin(), v.values().end()};
}

}  // namespace dwsr::estimators
