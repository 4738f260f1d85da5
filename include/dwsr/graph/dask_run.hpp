#pragma once
/// \file A real Dask-style run of fused block tasks, to check the plan of
/// graph/dask_model.hpp against: each worker runs T single-threaded block
/// tasks at once, each on a host context of one thread, taking the next of
/// its blocks as soon as one of them ends. Every context of a worker emits
/// into the worker's one event bus, which serialises the events of its
/// threads, so the worker's peak counter measures the peak of its live
/// requested bytes over all its tasks at once. Reduction passes are phases
/// separated by barriers, as in run_chunked.
///
/// The run measures and enforces nothing: contexts have no budget (a budget
/// per context would be a budget per task, not per worker).

#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "dwsr/exec/host_context.hpp"
#include "dwsr/graph/chunked.hpp"

namespace dwsr {

/// Runs schedule `s` for real with fused block tasks, T = s's threads at once
/// per worker, writing graph outputs to `sink` (may be null; its writes must
/// be safe from many threads, as writes of disjoint interiors are). Returns
/// each worker's measured peak, blocks and events. Rethrows the first error
/// of any task once every thread has stopped.
inline chunked_result run_dask_fused(const chunked_schedule& s, const block_source& input, block_sink* sink = nullptr) {
  const auto& o = s.options();
  const auto started = std::chrono::steady_clock::now();
  struct worker {
    peak_counter counter;
    std::unique_ptr<event_bus> bus;
    std::atomic<std::uint64_t> next{0};
  };
  std::vector<std::unique_ptr<worker>> workers;
  for (std::size_t w = 0; w < o.workers; ++w) {
    auto& k = *workers.emplace_back(std::make_unique<worker>());
    k.bus = std::make_unique<event_bus>(k.counter);
  }
  node_reductions reductions(s.graph().nodes().size());
  std::atomic<bool> failed{false};
  std::exception_ptr first_error;
  std::mutex error_lock, reduce_lock;
  for (const auto& ph : s.phases()) {
    reduction acc = ph.reduces() ? reductions[*ph.node].value_or(reduction{}) : reduction{};
    auto slot = [&](std::size_t w, std::size_t t) {
      try {
        auto& k = *workers[w];
        host_context ctx(*k.bus, {.threads = 1, .name = "worker " + std::to_string(w) + " slot " + std::to_string(t)});
        const auto [first, last] = s.range_of(w);
        for (auto i = first + k.next++; i < last && !failed; i = first + k.next++) {
          const auto b = s.blocks().at(i);
          run_step(
              ctx, s, ph, b, reductions, &acc, &reduce_lock, [&](float* dst) { input.read(b, dst); },
              ph.reduces() ? nullptr : sink);
        }
      } catch (...) {
        failed = true;
        std::lock_guard lock(error_lock);
        if (!first_error) first_error = std::current_exception();
      }
    };
    std::vector<std::thread> threads;
    for (std::size_t w = 0; w < o.workers && !failed; ++w) {
      workers[w]->next = 0;
      for (std::size_t t = 0; t < o.threads && !failed; ++t) {
        try {
          threads.emplace_back(slot, w, t);
        } catch (const std::system_error& e) {
          // The system refused a thread: stop the started ones and report it as an error of the run.
          failed = true;
          std::lock_guard lock(error_lock);
          if (!first_error)
            first_error =
                std::make_exception_ptr(error("cannot start slot " + std::to_string(t) + " of worker " +
                                              std::to_string(w) + ": " + e.what() + "; use fewer workers or threads"));
        }
      }
    }
    for (auto& t : threads) t.join();
    if (failed) break;
    if (ph.reduces()) reductions[*ph.node] = acc;
  }
  if (first_error) std::rethrow_exception(first_error);
  chunked_result result{std::vector<worker_memory>(o.workers)};
  for (std::size_t w = 0; w < o.workers; ++w)
    result.workers[w] = {workers[w]->counter.peak(), s.blocks_of(w), workers[w]->bus->events()};
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

}  // namespace dwsr
