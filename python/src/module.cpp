// dwsr._core: the C++ half of the Python package. Thin, like the CLI: each
// function parses its arguments and calls the library; documents come back
// as the same JSON the CLI prints (dwsr/report/), which the Python half turns
// into dataclasses. Errors become dwsr's Python exceptions (dwsr/_errors.py).

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "dwsr/core/bytes.hpp"
#include "dwsr/core/quote.hpp"
#include "dwsr/error.hpp"
#include "dwsr/exec/host_context.hpp"
#include "dwsr/graph/advisor.hpp"
#include "dwsr/graph/calibrate.hpp"
#include "dwsr/graph/dataset_files.hpp"
#include "dwsr/graph/graph_json.hpp"
#include "dwsr/graph/in_place.hpp"
#include "dwsr/memory/fan_out.hpp"
#include "dwsr/memory/peak_counter.hpp"
#include "dwsr/memory/recorder.hpp"
#include "dwsr/operators/catalogue.hpp"
#include "dwsr/ops/describe.hpp"
#include "dwsr/report/plan_report.hpp"
#include "dwsr/report/replay_report.hpp"
#include "dwsr/sim/trace_csv.hpp"

namespace py = pybind11;

void register_envs(py::module_& m);  // envs.cpp

namespace {

using dwsr::shape3;

/// A run's or a plan's events, as Python reads them: (seq, action, role,
/// node, buffer, bytes). A run feeds its recorder from its own thread, and
/// later the frees of its output arrays, so this reads a locked copy.
std::vector<std::tuple<std::uint64_t, std::string, std::string, std::uint32_t, std::uint64_t, std::uint64_t>> rows(
    const dwsr::recorder& log) {
  std::vector<std::tuple<std::uint64_t, std::string, std::string, std::uint32_t, std::uint64_t, std::uint64_t>> out;
  for (const auto& e : log.snapshot())
    out.emplace_back(e.seq, std::string(dwsr::name_of(e.act)), std::string(dwsr::name_of(e.role)), e.node, e.buffer,
                     e.bytes);
  return out;
}

/// Writes a log as a dwsr trace (sim/trace_csv.hpp). Each run numbers its
/// buffers from 1, so a log of several runs is renumbered 1, 2, ... in
/// allocation order; a buffer allocated again while the same id is alive
/// (runs whose buffers overlap) cannot be told apart and is refused.
void write_trace(const dwsr::recorder& log, const std::string& path) {
  auto events = log.snapshot();
  std::map<std::uint64_t, std::uint64_t> live;  // the log's id -> the trace's
  std::uint64_t next = 1;
  for (std::size_t i = 0; i < events.size(); ++i) {
    auto& e = events[i];
    const auto it = live.find(e.buffer);
    if ((e.act == dwsr::action::alloc) == (it != live.end()))
      throw dwsr::invalid_input(std::string("event ")
                                    .append(std::to_string(i))
                                    .append(" of the log ")
                                    .append(e.act == dwsr::action::alloc ? "allocates" : "frees")
                                    .append(" buffer ")
                                    .append(std::to_string(e.buffer))
                                    .append(e.act == dwsr::action::alloc
                                                ? " while an earlier buffer of that id is alive"
                                                : " that is not alive")
                                    .append(" (the log holds runs whose buffers overlap); give each run its own "
                                            "EventLog"));
    if (e.act == dwsr::action::alloc) {
      live.emplace(e.buffer, next);
      e.buffer = next++;
    } else {
      e.buffer = it->second;
      live.erase(it);
    }
    e.seq = i;
  }
  dwsr::sim::write_trace_csv(std::filesystem::path(path), events);
}

/// One run's execution state. Output arrays keep it alive (they free through
/// its context, and their free events go to its sinks).
struct session {
  session(std::size_t threads, std::uint64_t budget, std::shared_ptr<dwsr::recorder> log_)
      : log(std::move(log_)),
        sinks(log ? dwsr::fan_out{counter, *log} : dwsr::fan_out{counter}),
        bus(sinks),
        ctx(bus, {.threads = threads, .budget = budget, .name = "dwsr.run", .cancel = &cancel}) {}
  dwsr::peak_counter counter;
  std::shared_ptr<dwsr::recorder> log;
  dwsr::fan_out sinks;
  dwsr::event_bus bus;
  std::atomic<bool> cancel{false};
  dwsr::host_context ctx;
};

/// An operator name, a graph file (.json) or a graph document (JSON text).
dwsr::graph graph_of(const std::string& spec, const std::map<std::string, std::string>& params) {
  const auto& ops = dwsr::operators::catalogue();
  if (!spec.empty() && spec.front() == '{') {
    if (!params.empty()) throw dwsr::invalid_input("params apply to a single operator; set them in the graph's nodes");
    return dwsr::graph_from_json(dwsr::parse_json_document(spec, "graph document"), ops, "graph");
  }
  return dwsr::resolve_graph(spec, ops, dwsr::param_overrides(params));  // text as `--param` spells it
}

shape3 shape_of(const std::array<std::uint64_t, 3>& s) { return {s[0], s[1], s[2]}; }

py::dtype numpy_type(dwsr::dtype t) {
  switch (t) {
    case dwsr::dtype::float32: return py::dtype::of<float>();
    case dwsr::dtype::complex64: return py::dtype::of<std::complex<float>>();
    case dwsr::dtype::int64: return py::dtype::of<std::int64_t>();
    case dwsr::dtype::int32: return py::dtype::of<std::int32_t>();
  }
  throw dwsr::error("unknown output type");
}

/// The cube as a view: a C-contiguous float32 array of 3 dimensions, used in
/// place. Anything else is refused rather than copied behind the caller's back.
dwsr::cube_view<const float> cube_of(const py::array& cube) {
  const auto describe = [&] {
    std::string d = py::str(cube.dtype()).cast<std::string>() + " array of shape (";
    for (py::ssize_t a = 0; a < cube.ndim(); ++a) d += (a ? ", " : "") + std::to_string(cube.shape(a));
    return d + (cube.ndim() == 1 ? ",)" : ")");
  };
  const bool c_order = (cube.flags() & py::array::c_style) != 0;
  if (!cube.dtype().is(py::dtype::of<float>()) || cube.ndim() != 3 || !c_order)
    throw dwsr::invalid_input(
        "cube: expected a C-contiguous float32 array of 3 dimensions (inline, crossline, time), used in place; got "
        "a " +
        (c_order ? std::string() : std::string("non-contiguous ")) + describe() +
        "; pass numpy.ascontiguousarray(cube, dtype=numpy.float32) (one copy)");
  const shape3 s{std::uint64_t(cube.shape(0)), std::uint64_t(cube.shape(1)), std::uint64_t(cube.shape(2))};
  if (s.voxels() == 0) throw dwsr::invalid_input("cube: shape " + dwsr::to_string(s) + " has no voxels");
  return {static_cast<const float*>(cube.data()), s};
}

/// Runs `f` on a thread of its own with the GIL released, checking for
/// signals (Ctrl-C) every 50 ms: on one, the run is cancelled through
/// `cancel`, joined, and the Python exception (KeyboardInterrupt) raised.
template <class F>
void run_interruptible(std::atomic<bool>& cancel, F&& f) {
  std::exception_ptr error;
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  bool interrupted = false;
  {
    py::gil_scoped_release release;
    std::thread worker([&] {
      try {
        f();
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard lock(m);
      done = true;
      cv.notify_one();
    });
    std::unique_lock lock(m);
    while (!cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return done; })) {
      if (interrupted) continue;
      lock.unlock();
      {
        py::gil_scoped_acquire gil;
        if (PyErr_CheckSignals() != 0) interrupted = true;  // the exception stays set until we return
      }
      if (interrupted) cancel = true;
      lock.lock();
    }
    lock.unlock();
    worker.join();
  }
  if (interrupted) throw py::error_already_set();
  if (error) std::rethrow_exception(error);
}

/// One output array: it owns the buffer (and through it the session).
struct output_holder {
  std::shared_ptr<session> owner;
  dwsr::buffer<float, dwsr::host_context> data;
};

py::tuple run(const std::string& spec, const py::array& cube, const std::map<std::string, std::string>& params,
              std::size_t threads, std::optional<std::string> memory, std::shared_ptr<dwsr::recorder> log) {
  const auto g = graph_of(spec, params);
  const auto view = cube_of(cube);
  const auto planned = dwsr::plan_in_place(g, view.shape(), threads);
  const auto budget = memory ? dwsr::parse_bytes(*memory) : std::numeric_limits<std::uint64_t>::max();
  auto s = std::make_shared<session>(threads, budget, std::move(log));
  std::vector<dwsr::buffer<float, dwsr::host_context>> outputs;
  // Tables are copied out of the operators' buffers as they are written.
  std::vector<std::vector<std::byte>> tables(g.tables().size());
  const dwsr::table_rows keep = [&](std::size_t t, const void* rows, std::uint64_t count) {
    const auto* p = static_cast<const std::byte*>(rows);
    const auto& table = g.nodes()[g.tables()[t].node].tables[g.tables()[t].table];
    tables[t].insert(tables[t].end(), p, p + count * table.row_bytes());
  };
  const auto started = std::chrono::steady_clock::now();
  run_interruptible(s->cancel, [&] { outputs = dwsr::run_in_place(s->ctx, g, view, keep); });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const auto measured_peak = s->counter.peak();
  const auto events = s->bus.events();
  py::list arrays;
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    const auto r = g.outputs()[k];
    const auto type = g.nodes()[r.node].outputs[r.output].type;
    auto* holder = new output_holder{s, std::move(outputs[k])};
    py::capsule owner(holder, [](void* p) { delete static_cast<output_holder*>(p); });
    const auto sh = view.shape();
    const std::vector<py::ssize_t> dims{py::ssize_t(sh.inlines), py::ssize_t(sh.crosslines), py::ssize_t(sh.samples)};
    arrays.append(py::make_tuple(g.output_name(r), py::array(numpy_type(type), dims, holder->data.data(), owner)));
  }
  for (std::size_t t = 0; t < tables.size(); ++t) {
    const auto ref = g.tables()[t];
    const auto& columns = g.nodes()[ref.node].tables[ref.table];
    py::list fields;
    for (const auto& c : columns.columns) fields.append(py::make_tuple(c.name, std::string(dwsr::numpy_descr(c.type))));
    const auto rows = py::ssize_t(tables[t].size() / columns.row_bytes());
    py::array table(py::dtype::from_args(fields), std::vector<py::ssize_t>{rows});
    std::memcpy(table.mutable_data(), tables[t].data(), tables[t].size());
    arrays.append(py::make_tuple(g.table_name(ref), table));
  }
  py::dict stats;
  stats["planned_peak_bytes"] = planned.peak;
  stats["planned_events"] = planned.events;
  stats["measured_peak_bytes"] = measured_peak;
  stats["events"] = events;
  stats["seconds"] = seconds;
  stats["threads"] = threads;
  stats["input_bytes"] = view.shape().voxels() * sizeof(float);
  stats["shape"] = dwsr::to_string(view.shape());
  return py::make_tuple(arrays, stats);
}

/// What a caller mapping the graph over blocks needs: its outputs, the input
/// halo per axis, the axes no block may split, whether it reduces over the cube.
std::string graph_info_json(const std::string& spec, const std::map<std::string, std::string>& params) {
  const auto g = graph_of(spec, params);
  nlohmann::json outputs = nlohmann::json::array();
  for (const auto& r : g.outputs())
    outputs.push_back({{"name", g.output_name(r)}, {"dtype", dwsr::name_of(g.nodes()[r.node].outputs[r.output].type)}});
  return nlohmann::json{{"outputs", outputs},
                        {"halo", g.input_halo()},
                        {"whole_axes", g.whole_axes()},
                        {"needs_reduction", g.needs_reduction()},
                        {"nodes", g.nodes().size()}}
      .dump();
}

std::string plan_json(const std::string& spec, const std::array<std::uint64_t, 3>& shape,
                      const std::map<std::string, std::string>& params,
                      std::optional<std::array<std::uint64_t, 3>> chunk, std::size_t workers, std::size_t threads,
                      std::optional<std::string> memory, const std::string& allocator, const std::string& profile,
                      std::size_t cores, const std::string& execution, const std::string& tasks,
                      std::shared_ptr<dwsr::recorder> log) {
  if (execution != "dwsr" && execution != "dask")
    throw dwsr::invalid_input("execution " + dwsr::quote(execution) + "; expected 'dwsr' or 'dask'");
  if (tasks != "fused" && tasks != "unfused")
    throw dwsr::invalid_input("tasks " + dwsr::quote(tasks) + "; expected 'fused' or 'unfused'");
  if (tasks == "unfused" && execution != "dask")
    throw dwsr::invalid_input("tasks 'unfused' needs execution 'dask' (dwsr's own execution does not cut tasks)");
  if (log && execution == "dask")
    throw dwsr::invalid_input("events lists the events of dwsr's own execution; leave it out with execution 'dask'");
  const auto g = graph_of(spec, params);
  const auto times = dwsr::sim::find_time_profile(profile);
  dwsr::report::plan_request r{spec, shape_of(shape), {}, allocator, times ? &*times : nullptr, cores};
  if (execution == "dask") r.dask = tasks == "unfused" ? dwsr::dask_split::unfused : dwsr::dask_split::fused;
  r.options = {.chunk = chunk ? shape_of(*chunk) : shape3{},
               .workers = workers,
               .threads = threads,
               .budget = memory ? dwsr::parse_bytes(*memory) : std::numeric_limits<std::uint64_t>::max()};
  py::gil_scoped_release release;
  const auto doc = dwsr::report::plan_report(g, r);
  if (log) dwsr::worker_events(dwsr::chunked_schedule(g, r.cube, r.options), 0, *log);
  return doc.dump();
}

std::string advise_json(const std::string& spec, const std::array<std::uint64_t, 3>& shape,
                        const std::map<std::string, std::string>& params, const std::string& memory,
                        std::size_t workers, std::size_t threads, const std::string& allocator,
                        const std::string& objective, const std::string& profile, std::size_t cores) {
  const auto g = graph_of(spec, params);
  const auto times = dwsr::sim::find_time_profile(profile);
  if (objective != "auto" && objective != "time" && objective != "largest")
    throw dwsr::invalid_input("objective " + dwsr::quote(objective) + "; expected 'time', 'largest' or 'auto'");
  if (objective == "time" && !times)
    throw dwsr::io_error("objective 'time' needs a time profile: none at " +
                         dwsr::quote(dwsr::sim::default_time_profile_path().string(), 400) +
                         "; run dwsr.calibrate() (or pass profile=)");
  const dwsr::advice_options o{
      .budget = dwsr::parse_bytes(memory),
      .workers = workers,
      .threads = threads,
      .allocator = allocator,
      .objective = objective == "largest" || !times ? dwsr::advice_objective::largest : dwsr::advice_objective::time,
      .profile = times ? &*times : nullptr,
      .cores = cores};
  py::gil_scoped_release release;
  return dwsr::report::advice_report(dwsr::advise(g, shape_of(shape), o), spec, shape_of(shape), o).dump();
}

std::string replay_json(const std::string& trace, const std::vector<std::string>& allocators,
                        std::optional<std::string> capacity, std::optional<std::size_t> gpu, bool what_if,
                        const std::string& timeline) {
  dwsr::report::replay_request r{trace, allocators, {}, gpu, what_if, timeline};
  if (capacity) r.capacity = dwsr::parse_bytes(*capacity);
  py::gil_scoped_release release;
  return dwsr::report::replay_report(r).document.dump();
}

std::string calibrate_json(bool quick, const std::vector<std::string>& ops, const std::vector<std::size_t>& threads,
                           const std::string& output) {
  const auto path = output.empty() ? dwsr::sim::default_time_profile_path() : std::filesystem::path(output);
  std::atomic<bool> cancel{false};  // Ctrl-C stops between operators
  dwsr::sim::time_profile p;
  run_interruptible(cancel, [&] {
    p = dwsr::calibrate(
        dwsr::operators::catalogue(),
        {.quick = quick, .ops = ops, .threads = threads, .progress = [&](const std::string&, std::size_t, std::size_t) {
           if (cancel) throw dwsr::cancelled("calibrate");
         }});
  });
  dwsr::sim::write_time_profile(path, p);
  auto doc = dwsr::sim::to_json(p);
  doc["path"] = path.string();
  return doc.dump();
}

/// A NumPy array copied from `data`, of shape (rows, cols), or (rows,) when cols is 0.
template <class T>
py::array_t<T> matrix(const std::vector<T>& data, std::size_t rows, std::size_t cols) {
  std::vector<py::ssize_t> dims{py::ssize_t(rows)};
  if (cols) dims.push_back(py::ssize_t(cols));
  py::array_t<T> out(dims);
  std::copy(data.begin(), data.end(), out.mutable_data());
  return out;
}

/// `dwsr dataset` (graph/dataset.hpp): the matrices and columns.json's
/// document, and the files written into `out` when it is not empty.
py::dict dataset(const std::string& task, std::uint64_t rows, std::uint64_t seed,
                 const std::vector<std::string>& allocators, const std::vector<std::string>& execs,
                 std::size_t random_graphs, const std::string& profile, std::size_t cores, const std::string& out,
                 bool csv) {
  const auto parsed = dwsr::parse_dataset_task(task);
  if (!parsed) throw dwsr::invalid_input("task " + dwsr::quote(task) + ": expected peak, chunk or pack");
  dwsr::dataset_options o{.task = *parsed, .rows = rows, .seed = seed};
  if (!allocators.empty())
    o.allocators = allocators;
  else if (o.task == dwsr::dataset_task::pack)
    o.allocators = {"exact", "torch_cuda_caching", "cupy_pool", "rmm_pool"};
  if (!execs.empty()) o.execs = execs;
  o.random_graphs = random_graphs;
  o.cores = cores;
  std::optional<dwsr::sim::time_profile> times;
  if (!profile.empty()) times = dwsr::sim::read_time_profile(profile);
  o.profile = times ? &*times : nullptr;
  std::atomic<bool> cancel{false};  // Ctrl-C stops between groups of rows
  dwsr::dataset d;
  run_interruptible(cancel, [&] {
    d = dwsr::make_dataset(dwsr::operators::catalogue(), o, [&](std::uint64_t) {
      if (cancel) throw dwsr::cancelled("dataset");
    });
    if (!out.empty()) dwsr::write_dataset(d, out, csv);
  });
  py::dict r;
  r["features"] = matrix(d.x, d.rows(), d.features.size());
  r["labels"] = matrix(d.y, d.rows(), d.labels.size());
  r["splits"] = matrix(d.split, d.rows(), 3);
  r["graphs"] = matrix(d.graph_of_row, d.rows(), d.graph_slots == 1 ? 0 : d.graph_slots);
  r["columns"] = dwsr::dataset_columns(d).dump();
  return r;
}

/// Raises dwsr's Python exception `name` (dwsr/_errors.py) with `args`.
template <class... Args>
void raise(const char* name, Args&&... args) {
  const auto cls = py::module_::import("dwsr._errors").attr(name);
  const auto value = cls(std::forward<Args>(args)...);
  PyErr_SetObject(cls.ptr(), value.ptr());
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "dwsr's native core; use the dwsr package, not this module";
  m.attr("__version__") = DWSR_VERSION;

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const dwsr::out_of_memory& e) {
      raise("OutOfMemoryError", e.what(), e.requested(), e.budget());
    } catch (const dwsr::invalid_input& e) {
      raise("InvalidInputError", e.what());
    } catch (const dwsr::io_error& e) {
      raise("FileError", e.what());
    } catch (const dwsr::cancelled& e) {
      raise("CancelledError", e.what());
    } catch (const dwsr::error& e) {
      raise("Error", e.what());
    }
  });

  py::class_<dwsr::recorder, std::shared_ptr<dwsr::recorder>>(m, "EventLog")
      .def(py::init<>())
      .def("rows", &rows)
      .def("__len__", &dwsr::recorder::size)
      .def("clear", &dwsr::recorder::clear)
      .def("write_trace", &write_trace, py::arg("path"));

  m.def("operators_json", [] { return dwsr::describe(dwsr::operators::catalogue()).dump(); });
  m.def("graph_info_json", &graph_info_json, py::arg("graph"), py::arg("params"));
  m.def("run", &run, py::arg("graph"), py::arg("cube"), py::arg("params"), py::arg("threads"), py::arg("memory"),
        py::arg("log"));
  m.def("plan_json", &plan_json, py::arg("graph"), py::arg("shape"), py::arg("params"), py::arg("chunk"),
        py::arg("workers"), py::arg("threads"), py::arg("memory"), py::arg("allocator"), py::arg("profile"),
        py::arg("cores"), py::arg("execution"), py::arg("tasks"), py::arg("log"));
  m.def("advise_json", &advise_json, py::arg("graph"), py::arg("shape"), py::arg("params"), py::arg("memory"),
        py::arg("workers"), py::arg("threads"), py::arg("allocator"), py::arg("objective"), py::arg("profile"),
        py::arg("cores"));
  m.def("calibrate_json", &calibrate_json, py::arg("quick"), py::arg("ops"), py::arg("threads"), py::arg("output"));
  m.def("dataset", &dataset, py::arg("task"), py::arg("rows"), py::arg("seed"), py::arg("allocators"), py::arg("execs"),
        py::arg("graphs"), py::arg("profile"), py::arg("cores"), py::arg("out"), py::arg("csv"));
  m.def("replay_json", &replay_json, py::arg("trace"), py::arg("allocators"), py::arg("capacity"), py::arg("gpu"),
        py::arg("what_if"), py::arg("timeline"));
  register_envs(m);
}
