#pragma once
/// \file Each worker's peak of a chunked execution under an allocator model
/// (sim/any_model.hpp), what `dwsr plan --allocator` and the advisor report.
///
/// What it costs, and why it stays exact:
/// - exact: the plan's own peaks (graph/chunked.hpp), one meta execution per
///   block shape.
/// - host_pages: the model holds nothing but the live buffers, and a worker
///   holds nothing between blocks, so each block starts from an empty model:
///   one fresh model per block shape, as cheap as exact.
/// - the caching models (host_malloc, torch_cuda_caching, cupy_pool,
///   rmm_pool) carry their cache from one block to the next, so the peak
///   depends on the order of all the worker's blocks. They replay each
///   worker's whole event stream, which costs its events: past replay_limit
///   events over all workers (over all candidates, for an advice) the answer
///   is an invalid_input naming the chunk and the fix, not a replay that runs
///   for hours.

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dwsr/error.hpp"
#include "dwsr/graph/chunked.hpp"
#include "dwsr/memory/device_filter.hpp"
#include "dwsr/memory/fan_out.hpp"
#include "dwsr/memory/peak_counter.hpp"
#include "dwsr/sim/any_model.hpp"

namespace dwsr {

/// Most events a caching model's plan replays, over all workers.
inline constexpr std::uint64_t replay_limit = 1u << 25;

/// The events a caching model may still replay: replay_limit for one plan; an
/// advice shares one budget over all its candidates, so it stays bounded too.
struct replay_budget {
  std::uint64_t events_left = replay_limit;  ///< events that may still be replayed
};

/// Whether a model (built by sim::make_model) holds nothing once every buffer
/// is freed, so that it can be planned one block shape at a time.
inline bool holds_nothing_between_blocks(const sim::any_model& m) {
  return m.model_name() == sim::exact_model::name || m.model_name() == sim::host_pages_model::name;
}

namespace detail {

/// One step measured in a meta execution through a fresh model built from
/// `spec`: its peak reserved bytes and its events (meta_step's counterpart
/// for the models that hold nothing between blocks).
template <class MetaCtx = meta_context>
std::pair<std::uint64_t, std::uint64_t> model_step(const chunked_schedule& s, const node_reductions& reductions,
                                                   const schedule_phase& ph, const block& b, const std::string& spec) {
  auto model = sim::make_model(spec);
  device_filter<sim::any_model> modelled{&model, MetaCtx::memory_device};
  event_bus bus(modelled);
  MetaCtx ctx(bus, {.threads = s.options().threads});
  reduction acc;
  run_step(
      ctx, s, ph, b, reductions, &acc, nullptr, [](float*) {}, nullptr);
  return {model.stats().peak_reserved, bus.events()};
}

/// class_steps of `classes` under each of `specs`: "exact" (requested
/// bytes, meta_step's) or a model that holds nothing between blocks
/// (model_step's). One meta execution per class and phase feeds them all, so
/// several models cost one execution, not one each; the figures are those of
/// measure_classes with meta_step or model_step per spec.
inline std::vector<class_steps> measure_classes_under(const chunked_schedule& s, const block_classes& classes,
                                                      const node_reductions& reductions,
                                                      const std::vector<std::string>& specs) {
  const auto& ks = classes.classes();
  std::vector<class_steps> out(
      specs.size(), class_steps{std::vector<std::uint64_t>(ks.size()), std::vector<std::uint64_t>(ks.size())});
  // One fan-out for every step; each step replaces the models in their slots
  // (the fan-out refers to the slots), so each starts from nothing.
  std::vector<std::string_view> modelled;  // the specs other than exact
  for (const auto& spec : specs)
    if (spec != sim::exact_model::name) modelled.push_back(spec);
  std::vector<sim::any_model> models;
  models.reserve(modelled.size());
  serial_peak_counter counter;
  fan_out fan;
  for (auto spec : modelled) fan.add(models.emplace_back(sim::make_model(spec)));
  fan.add(counter);
  bool fresh = true;  // the models were just made
  for (std::size_t k = 0; k < ks.size(); ++k)
    for (const auto& ph : s.phases()) {
      if (!fresh)
        for (std::size_t m = 0; m < models.size(); ++m) models[m] = sim::make_model(modelled[m]);
      fresh = false;
      counter = serial_peak_counter();
      event_bus bus(fan);
      meta_context ctx(bus, {.threads = s.options().threads});
      reduction acc;
      run_step(
          ctx, s, ph, ks[k].example, reductions, &acc, nullptr, [](float*) {}, nullptr);
      for (std::size_t j = 0, m = 0; j < specs.size(); ++j) {
        const auto peak = specs[j] == sim::exact_model::name ? counter.peak() : models[m++].stats().peak_reserved;
        out[j].peak[k] = std::max(out[j].peak[k], peak);
        out[j].events[k] += bus.events();
      }
    }
  return out;
}

}  // namespace detail

/// Each worker's peak reserved bytes under the model `spec` (see the file
/// comment); `plan` is plan_chunked<MetaCtx>(s). The model sees the events of
/// the workers' memory device (a GPU worker's device stream). Throws
/// invalid_input for an unknown model, or for a caching model whose replay
/// would exceed what is left of `budget` (which the replay spends).
template <class MetaCtx = meta_context>
std::vector<std::uint64_t> model_peaks(const chunked_schedule& s, const chunked_plan& plan, const std::string& spec,
                                       replay_budget& budget) {
  std::vector<std::uint64_t> peaks(s.workers());
  if (holds_nothing_between_blocks(sim::make_model(spec))) {
    const auto reductions = detail::run_phase_reductions(s);
    const auto by_class = detail::plan_by_class(s, [&](const schedule_phase& ph, const block& b) {
      return detail::model_step<MetaCtx>(s, reductions, ph, b, spec);
    });
    for (std::size_t w = 0; w < s.workers(); ++w) peaks[w] = by_class.workers[w].peak;
    return peaks;
  }
  std::uint64_t events = 0;
  for (const auto& w : plan.workers)
    if ((events += std::min(w.events, replay_limit + 1)) > budget.events_left) break;
  if (events > budget.events_left)
    throw invalid_input("allocator model '" + spec + "' keeps a cache from block to block, so its plan replays every " +
                        "event of every worker, and chunk " + to_string(plan.chunk) + " (" +
                        std::to_string(plan.blocks) + " blocks) takes it past the " + std::to_string(replay_limit) +
                        " events a plan or an advice replays; use a larger chunk, a smaller cube, or the exact or " +
                        "host_pages model");
  budget.events_left -= events;
  for (std::size_t w = 0; w < s.workers() && s.blocks_of(w) > 0; ++w) {
    auto model = sim::make_model(spec);
    device_filter<sim::any_model> modelled{&model, MetaCtx::memory_device};
    worker_events<MetaCtx>(s, w, modelled);
    peaks[w] = model.stats().peak_reserved;
  }
  return peaks;
}

/// model_peaks with a budget of its own.
template <class MetaCtx = meta_context>
std::vector<std::uint64_t> model_peaks(const chunked_schedule& s, const chunked_plan& plan, const std::string& spec) {
  replay_budget budget;
  return model_peaks<MetaCtx>(s, plan, spec, budget);
}

}  // namespace dwsr
