#pragma once
/// \file Chunked execution of a graph over W workers x T threads, and its plan,
/// both walking one chunked_schedule (graph/chunked_schedule.hpp).
///
/// Each worker runs its blocks on its own context (own TBB arena of T threads,
/// event stream and memory budget). Graph outputs leave a worker as soon as
/// they are computed (copied into whole cubes or written to .npy files block by
/// block), so between blocks a worker holds nothing.
///
/// What the plan predicts, and why it is exact: operators allocate only from
/// the worker's control thread, before and after their parallel loops (the T
/// threads compute into scratch allocated up front), so a worker's event
/// sequence is the same for every thread interleaving. The meta execution walks
/// the same schedule with the same step function and emits that sequence; the
/// predicted per-worker peak is the real one, byte for byte. Blocks of one
/// extended and interior shape emit the same events, so the plan runs the meta
/// execution once per shape and phase and counts the blocks of each shape per
/// worker arithmetically: it answers in milliseconds for any number of blocks.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "dwsr/exec/host_context.hpp"
#include "dwsr/exec/meta_context.hpp"
#include "dwsr/graph/block_classes.hpp"
#include "dwsr/graph/block_io.hpp"
#include "dwsr/graph/chunked_schedule.hpp"
#include "dwsr/graph/device_staging.hpp"
#include "dwsr/graph/schedule.hpp"
#include "dwsr/memory/fan_out.hpp"
#include "dwsr/memory/peak_counter.hpp"

namespace dwsr {

/// One worker's figures: predicted (plan) or measured (run, from its events).
struct worker_memory {
  std::uint64_t peak = 0;    ///< highest live requested bytes
  std::uint64_t blocks = 0;  ///< blocks the worker runs
  std::uint64_t events = 0;  ///< allocs + frees over all its blocks and phases
};

/// The prediction for a chunked execution.
struct chunked_plan {
  shape3 chunk;
  std::array<std::uint64_t, 3> halo{};
  std::uint64_t blocks = 0;
  double halo_overhead = 0;
  std::vector<worker_memory> workers;
  /// Highest predicted peak over the workers.
  std::uint64_t peak() const {
    std::uint64_t p = 0;
    for (const auto& w : workers) p = std::max(p, w.peak);
    return p;
  }
};

namespace detail {

/// Re-throws an out_of_memory with the graph node's name added.
[[noreturn]] inline void rethrow_with_node(const out_of_memory& e, const graph& g, node_id node) {
  std::string what = e.what();
  const std::string prefix = "out of memory: ";
  if (what.rfind(prefix, 0) == 0) what.erase(0, prefix.size());
  const std::string where = node == 0 ? "the block's input"
                                      : "graph node '" + g.nodes().at(node - 1).spec.name + "' (operator " +
                                            g.nodes().at(node - 1).spec.op + ")";
  throw out_of_memory(what + ", in " + where, e.requested(), e.budget());
}

/// Windows of at least this many bytes are read by all of a host worker's threads.
inline constexpr std::uint64_t parallel_read_bytes = std::uint64_t{8} << 20;

/// Reads block b's extended window into dst. On the host with several
/// threads, a large window's inlines are split among them: copying out of the
/// page cache is bound by one core's copy rate (32 MiB: 6.5 ms on the 2-core
/// EPYC VM), so T threads copy side by side. No allocation: the events are
/// the same.
template <class Ctx>
void read_window(Ctx& ctx, const block_source& input, const block& b, float* dst) {
  const auto ext = b.extended();
  if constexpr (!on_device<Ctx>) {
    if (ctx.threads() > 1 && ext.inlines > 1 && ext.voxels() * sizeof(float) >= parallel_read_bytes) {
      const auto slab = ext.crosslines * ext.samples;  // voxels per inline of the window
      const auto grain = (ext.inlines + ctx.threads() - 1) / ctx.threads();
      ctx.parallel_for(
          ext.inlines,
          [&](std::uint64_t first, std::uint64_t last, std::size_t) {
            block part = b;  // the window's inlines [first, last)
            part.ext_begin[0] = b.ext_begin[0] + first;
            part.ext_end[0] = b.ext_begin[0] + last;
            input.read(part, dst + first * slab);
          },
          grain);
      return;
    }
  }
  input.read(b, dst);
}

/// Reductions as the run phase sees them: after the reduction phases, the
/// reducing nodes' (filled in by the real run; the plan's allocations never
/// depend on the values); none when the schedule has no reduction phase.
inline node_reductions run_phase_reductions(const chunked_schedule& s) {
  node_reductions out(s.graph().nodes().size());
  for (const auto& ph : s.phases())
    if (ph.reduces()) out[*ph.node] = reduction{};
  return out;
}

}  // namespace detail

/// One step of the schedule in any context: block `b` of phase `ph`. A reduction
/// step runs the reducing node's ancestors on the block and folds the node's
/// input over the block's interior into `acc` (under `lock` when workers share
/// it); the run step runs the graph and hands its outputs and table rows to
/// `sink` (may be null). `fill(float*)` reads the block's extended window (real contexts only).
template <ExecutionContext Ctx, class Fill>
void run_step(Ctx& ctx, const chunked_schedule& s, const schedule_phase& ph, const block& b,
              const node_reductions& reductions, reduction* acc, std::mutex* lock, Fill&& fill, block_sink* sink) {
  const auto& g = s.graph();
  const auto ext = b.extended();
  ctx.set_node(0);
  auto input = [&] {
    if constexpr (on_device<Ctx>) {
      return device_input(ctx, ext.voxels(), fill);
    } else {
      auto in = ctx.template allocate<float>(ext.voxels(), buffer_role::input);
      if constexpr (Ctx::computes) fill(in.data());
      return in;
    }
  }();
  const cube_view<const float> view(input.data(), ext);
  auto tables = [&](std::size_t table, const void* rows, std::uint64_t count) {
    if (sink) sink->write_table(table, b, rows, count);
  };
  if (!ph.reduces()) {
    if constexpr (on_device<Ctx>) {
      // Outputs come back through pinned staging, in the plan as in the run.
      return run_graph_block(
          ctx, g, view, reductions,
          [&](std::size_t output, buffer<float, Ctx>& data) {
            const auto& r = g.outputs()[output];
            const array_ref device_out{g.nodes()[r.node].outputs[r.output].type, data.data(), ext};
            with_host_copy(ctx, device_out, [&](const array_ref& host) {
              if (sink) sink->write(output, b, host);
            });
          },
          tables);
    } else {
      return run_graph_block(
          ctx, g, view, reductions,
          [&](std::size_t output, const array_ref& data) {
            if (sink) sink->write(output, b, data);
          },
          tables);
    }
  }
  const auto k = *ph.node;
  run_graph_block(
      ctx, g, view, reductions, [](std::size_t, const array_ref&) {}, k,
      [&](std::size_t, std::span<const cube_view<const float>> ins) {
        const auto off = b.offset();
        const auto inner = b.interior();
        const box3 interior{off, {off[0] + inner.inlines, off[1] + inner.crosslines, off[2] + inner.samples}};
        std::unique_lock<std::mutex> guard;
        if (lock) guard = std::unique_lock(*lock);
        g.nodes()[k].op->reduce(ctx, ins[0], interior, ph.pass, *acc);
      });
}

namespace detail {

/// What one block of each class costs over every phase of a schedule: its
/// peak (the highest of its steps') and its events (their sum).
struct class_steps {
  std::vector<std::uint64_t> peak, events;
  /// The highest worker peak of every plan built on these steps, whatever
  /// W: each class has blocks, and each block runs on some worker.
  std::uint64_t highest_peak() const noexcept { return peak.empty() ? 0 : *std::max_element(peak.begin(), peak.end()); }
};

/// class_steps of `classes` (the classes of s.blocks()), where
/// `measure(phase, block)` returns the (peak, events) of that step alone.
template <class Measure>
class_steps measure_classes(const chunked_schedule& s, const block_classes& classes, Measure&& measure) {
  const auto& ks = classes.classes();
  class_steps out{std::vector<std::uint64_t>(ks.size()), std::vector<std::uint64_t>(ks.size())};
  for (std::size_t k = 0; k < ks.size(); ++k)
    for (const auto& ph : s.phases()) {
      const auto [step_peak, step_events] = measure(ph, ks[k].example);
      out.peak[k] = std::max(out.peak[k], step_peak);
      out.events[k] += step_events;
    }
  return out;
}

/// The plans of `s` from its classes' steps, one per entry of `steps`
/// (several allocator models' steps of the same classes): a worker's peak is
/// the highest over the classes it runs, its events the sum over them of
/// blocks x events. Exact whenever a worker holds nothing between blocks, as
/// every dwsr context does, and each step was measured from nothing. The
/// steps depend on the chunking and T only, so plans that differ in W share
/// them; the plans share the counting of each worker's blocks per class.
inline std::vector<chunked_plan> plans_from_classes(const chunked_schedule& s, const block_classes& classes,
                                                    std::span<const class_steps> steps) {
  const auto& c = s.blocks();
  std::vector<chunked_plan> plans(steps.size(), chunked_plan{c.chunk(), c.halo(), c.count(), c.halo_overhead(),
                                                             std::vector<worker_memory>(s.workers())});
  const auto& ks = classes.classes();
  // Workers run consecutive ranges, so each range starts where the last ended.
  std::vector<std::uint64_t> before, upto;
  classes.counts_below(0, before);
  for (std::size_t w = 0; w < s.workers(); ++w) {
    const auto [first, last] = s.range_of(w);
    if (first == last) break;  // this worker and the ones after it have no blocks
    classes.counts_below(last, upto);
    for (std::size_t m = 0; m < steps.size(); ++m) {
      const auto& [peak, events] = steps[m];
      auto& worker = plans[m].workers[w];
      worker.blocks = last - first;
      for (std::size_t k = 0; k < ks.size(); ++k) {
        const auto n = upto[k] - before[k];
        if (n == 0) continue;
        worker.peak = std::max(worker.peak, peak[k]);
        std::uint64_t add = 0;
        if (__builtin_mul_overflow(n, events[k], &add) || __builtin_add_overflow(worker.events, add, &worker.events))
          throw invalid_input("worker " + std::to_string(w) + " of a chunking into " + std::to_string(c.count()) +
                              " blocks would emit more than 2^64 events; use a larger chunk");
      }
    }
    std::swap(before, upto);
  }
  return plans;
}

/// The plan of `s` from its classes' steps (plans_from_classes for one).
inline chunked_plan plan_from_classes(const chunked_schedule& s, const block_classes& classes,
                                      const class_steps& steps) {
  return std::move(plans_from_classes(s, classes, std::span(&steps, 1)).front());
}

/// The plan of `s` from one block of each class (graph/block_classes.hpp),
/// measured by `measure(phase, block)` (see measure_classes).
template <class Measure>
chunked_plan plan_by_class(const chunked_schedule& s, Measure&& measure) {
  const block_classes classes(s.blocks());
  return plan_from_classes(s, classes, measure_classes(s, classes, measure));
}

/// One step measured in a meta execution at the schedule's T: its peak
/// requested bytes and its events.
template <class MetaCtx = meta_context>
std::pair<std::uint64_t, std::uint64_t> meta_step(const chunked_schedule& s, const node_reductions& reductions,
                                                  const schedule_phase& ph, const block& b) {
  serial_peak_counter counter(MetaCtx::memory_device);  // a GPU worker's peak: its device's bytes
  event_bus bus(counter, emitters::one_thread);
  MetaCtx ctx(bus, {.threads = s.options().threads});
  reduction acc;
  run_step(
      ctx, s, ph, b, reductions, &acc, nullptr, [](float*) {}, nullptr);
  return {counter.peak(), bus.events()};
}

}  // namespace detail

/// Predicts each worker's peak and events: the meta execution of one block of
/// each shape per phase (the blocks of one shape emit the same events), so
/// the cost grows with the number of distinct block shapes, not of blocks.
/// Exact: the same figures as the meta execution of every block of every
/// worker (worker_events). MetaCtx: the workers' planning context
/// (cuda_meta_context for workers on a GPU).
template <class MetaCtx = meta_context>
chunked_plan plan_chunked(const chunked_schedule& s) {
  const auto reductions = detail::run_phase_reductions(s);
  return detail::plan_by_class(
      s, [&](const schedule_phase& ph, const block& b) { return detail::meta_step<MetaCtx>(s, reductions, ph, b); });
}

/// plan_chunked for `g` on `cube` with options `o`.
inline chunked_plan plan_chunked(const graph& g, shape3 cube, const chunked_options& o) {
  return plan_chunked(chunked_schedule(g, cube, o));
}

/// Whether the plan of `s` is an upper bound rather than exact: its meta
/// execution allocates some buffer whose size depends on the data (an event
/// flagged event::bound, e.g. by geobodies). A real run's peak is then at most
/// the plan's. Runs one block of each phase.
template <class MetaCtx = meta_context>
bool plan_is_bound(const chunked_schedule& s) {
  struct any_bound {
    bool seen = false;
    void on_event(const event& e) noexcept { seen = seen || e.bound; }
  } sink;
  const auto reductions = detail::run_phase_reductions(s);
  for (const auto& ph : s.phases()) {
    event_bus bus(sink, emitters::one_thread);
    MetaCtx ctx(bus, {.threads = s.options().threads});
    reduction acc;
    run_step(
        ctx, s, ph, s.blocks().at(0), reductions, &acc, nullptr, [](float*) {}, nullptr);
  }
  return sink.seen;
}

/// Emits worker w's whole event stream of the schedule into `sink` without
/// computing (what plan_chunked summarises): every block of the worker, so
/// the cost grows with its blocks. MetaCtx as for plan_chunked.
template <class MetaCtx = meta_context>
void worker_events(const chunked_schedule& s, std::size_t w, event_sink_ref sink) {
  event_bus bus(sink, emitters::one_thread);
  MetaCtx ctx(bus, {.threads = s.options().threads, .name = "worker " + std::to_string(w)});
  const auto reductions = detail::run_phase_reductions(s);
  for (const auto& ph : s.phases())
    s.for_each_block(w, [&](const block& b) {
      reduction acc;
      run_step(
          ctx, s, ph, b, reductions, &acc, nullptr, [](float*) {}, nullptr);
    });
}

/// What a real chunked execution measured.
struct chunked_result {
  std::vector<worker_memory> workers;  ///< from each worker's events
  double seconds = 0;
};

/// Runs the schedule for real on workers of context type Ctx (host_context by
/// default), reading blocks from `input` and writing every graph output's
/// interiors to `sink` (may be null). Each worker's events also go to
/// worker_sinks[w] when given. Each worker's peak is of its context's memory
/// device (a GPU worker's device bytes). A worker exceeding its budget raises
/// out_of_memory naming the worker, the node, the bytes and the budget; the
/// other workers stop after their current block and the error propagates.
template <ExecutionContext Ctx = host_context>
chunked_result run_chunked(const chunked_schedule& s, const block_source& input, block_sink* sink,
                           const std::vector<event_sink_ref>& worker_sinks = {},
                           const std::function<void(const block&)>& on_block = {}) {
  if (input.shape() != s.blocks().cube())
    throw invalid_input("input cube " + to_string(input.shape()) + " does not match the schedule's cube " +
                        to_string(s.blocks().cube()));
  const auto& g = s.graph();
  const auto& o = s.options();
  const auto started = std::chrono::steady_clock::now();
  node_reductions reductions(g.nodes().size());
  std::atomic<bool> failed{false};
  std::exception_ptr first_error;
  std::mutex error_lock, reduce_lock, progress_lock;

  struct worker {
    peak_counter counter;
    fan_out sinks;
    std::unique_ptr<event_bus> bus;
    std::unique_ptr<Ctx> ctx;
  };
  std::vector<std::unique_ptr<worker>> workers;
  for (std::size_t w = 0; w < o.workers; ++w) {
    auto& k = *workers.emplace_back(std::make_unique<worker>());
    k.sinks.add(k.counter);
    if (w < worker_sinks.size()) k.sinks.add(worker_sinks[w]);
    k.bus = std::make_unique<event_bus>(k.sinks);
    k.ctx = std::make_unique<Ctx>(
        *k.bus, context_options{.threads = o.threads, .budget = o.budget, .name = "worker " + std::to_string(w)});
  }
  auto guarded = [&](std::size_t w, auto&& body) {
    try {
      body();
    } catch (...) {
      failed = true;
      std::lock_guard lock(error_lock);
      if (first_error) return;
      try {
        throw;
      } catch (const out_of_memory& e) {
        try {
          detail::rethrow_with_node(e, g, workers[w]->ctx->node());
        } catch (...) {
          first_error = std::current_exception();
        }
      } catch (...) {
        first_error = std::current_exception();
      }
    }
  };
  // Phases are separated by barriers: every worker's blocks are folded before
  // the next phase starts.
  for (const auto& ph : s.phases()) {
    reduction acc = ph.reduces() ? reductions[*ph.node].value_or(reduction{}) : reduction{};
    auto per_worker = [&](std::size_t w) {
      guarded(w, [&] {
        s.for_each_block(w, [&](const block& b) {
          if (failed) return;
          run_step(
              *workers[w]->ctx, s, ph, b, reductions, &acc, &reduce_lock,
              [&](float* dst) { detail::read_window(*workers[w]->ctx, input, b, dst); }, ph.reduces() ? nullptr : sink);
          if (on_block && !ph.reduces()) {
            std::lock_guard lock(progress_lock);
            on_block(b);
          }
        });
      });
    };
    std::vector<std::thread> threads;
    std::optional<std::string> refused;  // why a worker's thread could not start
    for (std::size_t w = 1; w < o.workers && !refused; ++w) {
      try {
        threads.emplace_back(per_worker, w);
      } catch (const std::system_error& e) {
        // The system refused a thread: stop the started workers, then report
        // it as an error of the run rather than terminating the process.
        failed = true;
        refused = "cannot start the thread of worker " + std::to_string(w) + " of " + std::to_string(o.workers) + ": " +
                  e.what() + "; use fewer workers";
      }
    }
    if (!refused) per_worker(0);
    for (auto& t : threads) t.join();
    if (refused) throw error(*refused);
    if (failed) break;
    if (ph.reduces()) reductions[*ph.node] = acc;
  }
  if (first_error) std::rethrow_exception(first_error);
  chunked_result result{std::vector<worker_memory>(o.workers)};
  for (std::size_t w = 0; w < o.workers; ++w)
    result.workers[w] = {workers[w]->counter.peak(Ctx::memory_device), s.blocks_of(w), workers[w]->bus->events()};
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

/// run_chunked for `g` over `input` with options `o`.
inline chunked_result run_chunked(const graph& g, const block_source& input, block_sink* sink, const chunked_options& o,
                                  const std::vector<event_sink_ref>& worker_sinks = {},
                                  const std::function<void(const block&)>& on_block = {}) {
  return run_chunked(chunked_schedule(g, input.shape(), o), input, sink, worker_sinks, on_block);
}

}  // namespace dwsr
