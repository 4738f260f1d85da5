#pragma once
/// \file Dask-style execution of a chunked graph, planned: each worker has T
/// slots, each runs one single-threaded task at a time (graph/dask_tasks.hpp:
/// a block fused into one task, or one task per node and block), and a task's
/// results stay in memory until its last dependent has run. Workers own the
/// same contiguous ranges of blocks as in dwsr's own execution
/// (graph/chunked_schedule.hpp), and reduction passes are phases separated by
/// barriers, as there.
///
/// A real Dask worker's task order is not deterministic, so the plan gives
/// three figures per worker:
/// - schedule peak: the peak of one deterministic list schedule, the order
///   Dask's priorities suggest. Blocks are opened in C order, at most T at
///   once (Dask's queuing of root tasks keeps about one per thread); a free
///   slot takes the ready task of the earliest open block, else opens the
///   next block. Durations come from the tasks (a time profile, or voxels);
///   at equal times tasks end before others start. A running task counts its
///   results and its highest scratch for its whole duration, so this is the
///   peak of the schedule if every task reached its own peak at once.
/// - bound: an upper bound over every order with the same concurrency (T
///   slots, at most T blocks open at once). Blocks share nothing, so the live
///   bytes are the sum over the open blocks of what each holds; a block holds
///   at most its own worst state, the largest over the sets of its finished
///   tasks (closed under dependencies) of the results they still hold for an
///   unfinished dependent, plus its T largest ready tasks running. At most T
///   blocks being open, the sum of the T largest such figures over the
///   worker's blocks bounds every order. Without the limit on open blocks,
///   no bound short of every block's input exists: an order may read every
///   input before running anything else (Dask's root-task overproduction,
///   which its queuing is there to prevent).
/// - floor: what every order reaches, the largest task running with its
///   inputs held.
/// With T = 1 and fused tasks, all three are the exact plan of a run with one
/// thread (plan_chunked), byte for byte.
///
/// The bound costs O(block shapes) (graph/block_classes.hpp); the schedule
/// visits every task, so it refuses more than dask_task_limit tasks.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <queue>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "dwsr/graph/block_classes.hpp"
#include "dwsr/graph/dask_tasks.hpp"

namespace dwsr {

/// Most tasks the schedule of a plan simulates, over all workers and phases.
inline constexpr std::uint64_t dask_task_limit = 1u << 22;

/// How a Dask-style execution is planned.
struct dask_options {
  dask_split split = dask_split::fused;
  const sim::time_profile* profile = nullptr;  ///< task durations; null: proportional to voxels
};

/// One worker's figures under Dask-style execution (see the file comment).
struct dask_worker {
  std::uint64_t schedule_peak = 0;  ///< the peak of the model's schedule
  std::uint64_t bound = 0;          ///< no order with the same concurrency exceeds it
  std::uint64_t floor = 0;          ///< every order reaches it
  std::uint64_t tasks = 0;          ///< tasks the worker runs over all phases
};

/// The plan of a Dask-style execution.
struct dask_plan {
  dask_split split = dask_split::fused;
  std::vector<dask_worker> workers;
  /// Highest over the workers of `field`.
  std::uint64_t highest(std::uint64_t dask_worker::*field) const {
    std::uint64_t p = 0;
    for (const auto& w : workers) p = std::max(p, w.*field);
    return p;
  }
  std::uint64_t schedule_peak() const { return highest(&dask_worker::schedule_peak); }
  std::uint64_t bound() const { return highest(&dask_worker::bound); }
  std::uint64_t floor() const { return highest(&dask_worker::floor); }
};

namespace detail {

/// The sum of the `n` largest of `values`.
inline std::uint64_t sum_of_largest(std::vector<std::uint64_t> values, std::size_t n) {
  n = std::min(n, values.size());
  std::partial_sort(values.begin(), values.begin() + std::ptrdiff_t(n), values.end(), std::greater<>());
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += values[i];
  return sum;
}

/// The most one block can hold with at most `slots` of its tasks running (see
/// the file comment): every set of finished tasks closed under dependencies,
/// for blocks of up to 16 tasks; past that, every result at once plus the
/// largest running tasks, which is looser but still a bound.
inline std::uint64_t block_bound(const dask_block& b, std::size_t slots) {
  const auto& ts = b.tasks;
  const std::size_t n = ts.size();
  std::vector<std::uint64_t> running;
  for (const auto& t : ts) running.push_back(t.running());
  if (n > 16) {
    std::uint64_t all = 0;
    for (const auto& t : ts) all += t.results;
    return all + sum_of_largest(running, slots);
  }
  std::vector<std::uint32_t> deps(n, 0), users(n, 0);
  for (std::size_t i = 0; i < n; ++i)
    for (const auto d : ts[i].deps) deps[i] |= 1u << d, users[d] |= 1u << i;
  std::uint64_t most = 0;
  for (std::uint32_t done = 0; done < (1u << n); ++done) {
    bool closed = true;
    std::uint64_t held = 0;
    std::vector<std::uint64_t> ready;
    for (std::size_t i = 0; i < n && closed; ++i) {
      if (done >> i & 1) {
        closed = (deps[i] & ~done) == 0;
        if (users[i] & ~done) held += ts[i].results;
      } else if ((deps[i] & ~done) == 0) {
        ready.push_back(running[i]);
      }
    }
    if (closed) most = std::max(most, held + sum_of_largest(std::move(ready), slots));
  }
  return most;
}

/// The class of each block position along each axis.
inline std::array<std::vector<std::size_t>, 3> class_along(const chunking& c, const block_classes& classes) {
  std::array<std::vector<std::size_t>, 3> at;
  for (int a = 0; a < 3; ++a) {
    auto& v = at[std::size_t(a)];
    v.assign(c.grid()[std::size_t(a)], 0);
    for (const auto& r : classes.along(a).runs)
      for (auto p = r.first; p < r.last; ++p) v[p] = r.k;
  }
  return at;
}

/// The peak of the list schedule (see the file comment) of blocks [first,
/// last) on `slots` slots; `tasks_of(i)` is block i's tasks.
template <class TasksOf>
std::uint64_t schedule_peak(std::uint64_t first, std::uint64_t last, std::size_t slots, TasksOf&& tasks_of) {
  struct open_block {
    const dask_block* tasks;
    std::vector<std::size_t> waiting;  // per task, dependencies not yet finished
    std::vector<std::size_t> readers;  // per task, dependents not yet finished
    std::vector<std::vector<std::size_t>> users;
    std::size_t left;  // tasks not yet finished
  };
  std::map<std::uint64_t, open_block> open;
  std::set<std::pair<std::uint64_t, std::size_t>> ready;  // (block, task): earliest block first
  // Running tasks by (end time, start order): ties end in the order they started.
  using running_task = std::tuple<double, std::uint64_t, std::uint64_t, std::size_t>;
  std::priority_queue<running_task, std::vector<running_task>, std::greater<>> running;
  std::uint64_t next = first, started = 0, live = 0, peak = 0;
  double now = 0;
  auto fill = [&] {
    while (running.size() < slots) {
      if (ready.empty()) {
        if (open.size() >= slots || next == last) return;
        const auto& b = tasks_of(next);
        open_block o{&b, {}, b.dependents(), std::vector<std::vector<std::size_t>>(b.tasks.size()), b.tasks.size()};
        for (std::size_t i = 0; i < b.tasks.size(); ++i) {
          o.waiting.push_back(b.tasks[i].deps.size());
          for (const auto d : b.tasks[i].deps) o.users[d].push_back(i);
          if (b.tasks[i].deps.empty()) ready.insert({next, i});
        }
        open.emplace(next++, std::move(o));
        continue;
      }
      const auto [blk, i] = *ready.begin();
      ready.erase(ready.begin());
      const auto& t = open.at(blk).tasks->tasks[i];
      live += t.running();
      peak = std::max(peak, live);
      running.emplace(now + t.seconds, started++, blk, i);
    }
  };
  auto finish = [&](std::uint64_t blk, std::size_t i) {
    auto& o = open.at(blk);
    const auto& t = o.tasks->tasks[i];
    live -= t.scratch;
    if (o.readers[i] == 0) live -= t.results;  // nothing reads it: stored, or dropped
    for (const auto d : t.deps)
      if (--o.readers[d] == 0) live -= o.tasks->tasks[d].results;
    for (const auto u : o.users[i])
      if (--o.waiting[u] == 0) ready.insert({blk, u});
    if (--o.left == 0) open.erase(blk);
  };
  fill();
  while (!running.empty()) {
    now = std::get<0>(running.top());
    while (!running.empty() && std::get<0>(running.top()) == now) {
      const auto [end, order, blk, i] = running.top();
      running.pop();
      finish(blk, i);
    }
    fill();
  }
  return peak;
}

}  // namespace detail

/// Plans schedule `s` run Dask-style (see the file comment): T = s's threads
/// per worker become T single-threaded slots. Throws invalid_input when the
/// schedule would simulate more than dask_task_limit tasks, or when the
/// profile lacks one of the graph's operators.
inline dask_plan plan_dask(const chunked_schedule& s, const dask_options& o = {}) {
  const auto& c = s.blocks();
  const auto slots = s.options().threads;
  const block_classes classes(c);
  const auto& ks = classes.classes();
  const auto& phases = s.phases();
  // Per phase and class: its tasks, its worst state and its floor.
  std::vector<std::vector<dask_block>> tasks(phases.size());
  std::vector<std::vector<std::uint64_t>> worst(phases.size()), floors(phases.size());
  for (std::size_t p = 0; p < phases.size(); ++p)
    for (const auto& k : ks) {
      tasks[p].push_back(make_dask_block(s, phases[p], k.example, o.split, o.profile));
      worst[p].push_back(detail::block_bound(tasks[p].back(), slots));
      floors[p].push_back(tasks[p].back().floor());
    }
  std::uint64_t simulated = 0;
  for (std::size_t p = 0; p < phases.size(); ++p)
    for (std::size_t k = 0; k < ks.size(); ++k) {
      const auto add = double(ks[k].count) * double(tasks[p][k].tasks.size());
      if (double(simulated) + add > double(dask_task_limit))
        throw invalid_input("chunk " + to_string(c.chunk()) + " (" + std::to_string(c.count()) + " blocks, " +
                            std::string(name_of(o.split)) + ") gives more than the " + std::to_string(dask_task_limit) +
                            " Dask tasks a plan schedules; use a larger chunk");
      simulated += std::uint64_t(add);
    }

  dask_plan plan{o.split, std::vector<dask_worker>(s.workers())};
  const auto along = detail::class_along(c, classes);
  const auto& grid = c.grid();
  const auto n1 = classes.along(1).classes.size(), n2 = classes.along(2).classes.size();
  auto class_of = [&](std::uint64_t i) {
    const auto z = i % grid[2], y = i / grid[2] % grid[1], x = i / grid[2] / grid[1];
    return (along[0][x] * n1 + along[1][y]) * n2 + along[2][z];
  };
  auto before = classes.counts_below(0);
  for (std::size_t w = 0; w < s.workers(); ++w) {
    const auto [first, last] = s.range_of(w);
    if (first == last) break;
    auto upto = classes.counts_below(last);
    auto& worker = plan.workers[w];
    for (std::size_t p = 0; p < phases.size(); ++p) {
      std::vector<std::uint64_t> candidates;  // each class's worst state, once per block up to T
      for (std::size_t k = 0; k < ks.size(); ++k) {
        const auto n = upto[k] - before[k];
        if (n == 0) continue;
        candidates.insert(candidates.end(), std::min<std::uint64_t>(n, slots), worst[p][k]);
        worker.floor = std::max(worker.floor, floors[p][k]);
        worker.tasks += n * tasks[p][k].tasks.size();
      }
      worker.bound = std::max(worker.bound, detail::sum_of_largest(std::move(candidates), slots));
      worker.schedule_peak =
          std::max(worker.schedule_peak,
                   detail::schedule_peak(
                       first, last, slots, [&](std::uint64_t i) -> auto& { return tasks[p][class_of(i)]; }));
    }
    before = std::move(upto);
  }
  return plan;
}

}  // namespace dwsr
