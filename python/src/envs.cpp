// dwsr._core's environments (dwsr/env/): PeakPredict's job pools,
// ChunkSchedule's task pools and GpuPack's job kinds, one environment at a time, and the C++ batch
// (vector_env) writing into NumPy arrays that it owns and Python reads in
// place. The masked environments (discrete actions with an action mask) share
// one generic binding: an environment object built by a factory, then
// wrapped one at a time or copied into a batch. dwsr/envs.py wraps them as
// Gymnasium classes; action conversion (dtype, shape) happens there, so that
// an action Python cannot convert reaches C++ as an invalid one rather than
// an exception.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dwsr/core/quote.hpp"
#include "dwsr/env/chunk_schedule.hpp"
#include "dwsr/env/gpu_pack.hpp"
#include "dwsr/env/peak_predict.hpp"
#include "dwsr/env/vector_env.hpp"
#include "dwsr/error.hpp"
#include "dwsr/operators/catalogue.hpp"

namespace py = pybind11;

namespace {

using dwsr::env::autoreset_mode;
using dwsr::env::basic_peak_predict;
using dwsr::env::peak_info;
using dwsr::env::peak_jobs;
using dwsr::env::pool_part;
// pybind11 holds pools as shared_ptr<peak_jobs>; the environments take them as const.
using pool = std::shared_ptr<peak_jobs>;

pool_part part_named(const std::string& part) {
  if (part == "train") return pool_part::train;
  if (part == "test") return pool_part::test;
  throw dwsr::invalid_input("split part " + dwsr::quote(part) + ": expected train or test");
}

autoreset_mode mode_named(const std::string& mode) {
  if (mode == "next_step") return autoreset_mode::next_step;
  if (mode == "same_step") return autoreset_mode::same_step;
  if (mode == "disabled") return autoreset_mode::disabled;
  throw dwsr::invalid_input("autoreset mode " + dwsr::quote(mode) + ": expected next_step, same_step or disabled");
}

dwsr::env::peak_predict_options options_of(const std::string& part, double oom_reward, std::int64_t bins) {
  return {.part = part_named(part), .oom_reward = oom_reward, .bins = bins};
}

template <class T>
py::array_t<T> copy_of(const std::vector<T>& v) {
  py::array_t<T> out(py::ssize_t(v.size()));
  std::copy(v.begin(), v.end(), out.mutable_data());
  return out;
}

template <class T>
std::span<T> span_of(py::array_t<T>& a) {
  return {a.mutable_data(), std::size_t(a.size())};
}
inline std::span<std::uint8_t> bytes_of(py::array_t<bool>& a) {
  return {reinterpret_cast<std::uint8_t*>(a.mutable_data()), std::size_t(a.size())};
}

py::dict info_dict(const peak_info& i) {
  py::dict d;
  d["job"] = i.job;
  d["true_peak"] = i.true_peak;
  d["predicted"] = i.predicted;
  d["oom"] = i.oom;
  d["invalid_action"] = i.invalid_action;
  return d;
}

/// One PeakPredict: each reset and step returns a new observation array
/// (Gymnasium's checker asserts that returned data is not reused).
template <class Space>
class single_env {
 public:
  single_env(pool jobs, const std::string& part, double oom_reward, std::int64_t bins)
      : env_(std::move(jobs), options_of(part, oom_reward, bins)) {}

  py::tuple reset(std::optional<std::uint64_t> seed) {
    py::array_t<float> obs(py::ssize_t(env_.observation_space().size()));
    env_.reset(seed, {obs.mutable_data(), std::size_t(obs.size())}, info_);
    return py::make_tuple(obs, info_dict(info_));
  }

  /// Box: `action` is a C-contiguous float32 array (any size: other than one
  /// value is invalid). Discrete: an int64.
  template <class Action>
  py::tuple step(const Action& action) {
    py::array_t<float> obs(py::ssize_t(env_.observation_space().size()));
    dwsr::env::step_result r;
    const std::span<float> out{obs.mutable_data(), std::size_t(obs.size())};
    if constexpr (std::is_same_v<Space, dwsr::env::box_space>)
      r = env_.step(std::span<const float>(action.data(), std::size_t(action.size())), out, info_);
    else
      r = env_.step(action, out, info_);
    return py::make_tuple(obs, r.reward, r.terminated, r.truncated, info_dict(info_));
  }

  const basic_peak_predict<Space>& env() const noexcept { return env_; }

 private:
  basic_peak_predict<Space> env_;
  peak_info info_;
};

/// The C++ batch and the NumPy arrays it writes: the same arrays after every
/// call (no copy crosses the boundary).
template <class Space>
class batch_env {
 public:
  using env_type = basic_peak_predict<Space>;
  using element = typename dwsr::env::action_of<Space>::element;

  batch_env(pool jobs, std::size_t num_envs, const std::string& part, double oom_reward, std::int64_t bins,
            const std::string& mode)
      : env_(make_envs(std::move(jobs), num_envs, options_of(part, oom_reward, bins)), mode_named(mode)),
        observations_({py::ssize_t(num_envs), py::ssize_t(env_.obs_dim())}),
        final_observations_({py::ssize_t(num_envs), py::ssize_t(env_.obs_dim())}),
        rewards_(py::ssize_t(num_envs)),
        terminated_(py::ssize_t(num_envs)),
        truncated_(py::ssize_t(num_envs)),
        infos_(py::ssize_t(num_envs)),
        final_infos_(py::ssize_t(num_envs)) {
    std::fill_n(observations_.mutable_data(), observations_.size(), 0.0f);
    std::fill_n(final_observations_.mutable_data(), final_observations_.size(), 0.0f);
    std::fill_n(rewards_.mutable_data(), num_envs, 0.0);
    std::fill_n(terminated_.mutable_data(), num_envs, false);
    std::fill_n(truncated_.mutable_data(), num_envs, false);
    std::fill_n(infos_.mutable_data(), num_envs, peak_info{});
    std::fill_n(final_infos_.mutable_data(), num_envs, peak_info{});
  }

  void reset(std::optional<std::uint64_t> seed, std::optional<py::array_t<bool, py::array::c_style>> mask) {
    if (mask) {
      const std::span<const std::uint8_t> m(reinterpret_cast<const std::uint8_t*>(mask->data()),
                                            std::size_t(mask->size()));
      py::gil_scoped_release release;
      env_.reset(seed, m, span_of(observations_), span_of(infos_));
    } else {
      py::gil_scoped_release release;
      env_.reset(seed, span_of(observations_), span_of(infos_));
    }
  }

  void step(const py::array_t<element, py::array::c_style | py::array::forcecast>& actions) {
    const std::span<const element> a(actions.data(), std::size_t(actions.size()));
    const dwsr::env::vector_step_buffers<peak_info> out{
        .observations = span_of(observations_),
        .rewards = span_of(rewards_),
        .terminated = bytes_of(terminated_),
        .truncated = bytes_of(truncated_),
        .infos = span_of(infos_),
        .final_observations =
            env_.mode() == autoreset_mode::same_step ? span_of(final_observations_) : std::span<float>{},
        .final_infos = env_.mode() == autoreset_mode::same_step ? span_of(final_infos_) : std::span<peak_info>{}};
    py::gil_scoped_release release;
    env_.step(a, out);
  }

  const env_type& first() const noexcept { return env_[0]; }
  std::size_t size() const noexcept { return env_.size(); }

 private:
  dwsr::env::vector_env<env_type> env_;  // first: the arrays' sizes come from it

 public:
  py::array_t<float> observations_, final_observations_;
  py::array_t<double> rewards_;
  py::array_t<bool> terminated_, truncated_;
  py::array_t<peak_info> infos_, final_infos_;

 private:
  static std::vector<env_type> make_envs(pool jobs, std::size_t n, const dwsr::env::peak_predict_options& o) {
    if (n < 1) throw dwsr::invalid_input("num_envs " + std::to_string(n) + ": expected at least 1");
    // Copies share the pool and the spaces; each keeps its own stream.
    return std::vector<env_type>(n, env_type(std::move(jobs), o));
  }
};

/// The spaces' numbers the Python classes turn into gymnasium spaces.
template <class Env>
py::dict spaces_of(const Env& e) {
  py::dict d;
  d["observation_low"] = copy_of(e.observation_space().low);
  d["observation_high"] = copy_of(e.observation_space().high);
  if constexpr (std::is_same_v<typename Env::action_space_type, dwsr::env::box_space>) {
    d["action_low"] = e.action_space().low[0];
    d["action_high"] = e.action_space().high[0];
  } else {
    d["bins"] = e.action_space().n;
  }
  d["bin_peaks"] = copy_of(e.bin_peaks());
  return d;
}

template <class Space>
void def_env(py::module_& m, const char* single, const char* batch) {
  using action_arg = std::conditional_t<std::is_same_v<Space, dwsr::env::box_space>,
                                        py::array_t<float, py::array::c_style>, std::int64_t>;
  py::class_<single_env<Space>>(m, single)
      .def(py::init<pool, std::string, double, std::int64_t>(), py::arg("jobs"), py::arg("part"), py::arg("oom_reward"),
           py::arg("bins"))
      .def("reset", &single_env<Space>::reset, py::arg("seed"))
      .def("step", &single_env<Space>::template step<action_arg>, py::arg("action"))
      .def("spaces", [](const single_env<Space>& e) { return spaces_of(e.env()); });
  using B = batch_env<Space>;
  py::class_<B>(m, batch)
      .def(py::init<pool, std::size_t, std::string, double, std::int64_t, std::string>(), py::arg("jobs"),
           py::arg("num_envs"), py::arg("part"), py::arg("oom_reward"), py::arg("bins"), py::arg("mode"))
      .def("reset", &B::reset, py::arg("seed"), py::arg("mask"))
      .def("step", &B::step, py::arg("actions"))
      .def("spaces", [](const B& b) { return spaces_of(b.first()); })
      .def_property_readonly("num_envs", &B::size)
      .def_readonly("observations", &B::observations_)
      .def_readonly("final_observations", &B::final_observations_)
      .def_readonly("rewards", &B::rewards_)
      .def_readonly("terminated", &B::terminated_)
      .def_readonly("truncated", &B::truncated_)
      .def_readonly("infos", &B::infos_)
      .def_readonly("final_infos", &B::final_infos_);
}

/// The spaces of a masked environment: observation bounds and the action count.
template <class Env>
py::dict masked_spaces(const Env& e) {
  py::dict d;
  d["observation_low"] = copy_of(e.observation_space().low);
  d["observation_high"] = copy_of(e.observation_space().high);
  d["actions"] = e.action_space().n;
  return d;
}

/// One masked environment. Infos cross as one-element structured arrays
/// (the info type's NumPy dtype); Python turns them into dicts by field.
template <class Env>
class masked_single {
 public:
  using info_type = typename Env::info_type;
  explicit masked_single(const Env& e) : env_(e) {}

  py::tuple reset(std::optional<std::uint64_t> seed) {
    py::array_t<float> obs(py::ssize_t(env_.observation_space().size()));
    py::array_t<info_type> info(1);
    env_.reset(seed, span_of(obs), info.mutable_data()[0]);
    return py::make_tuple(obs, info);
  }
  py::tuple step(std::int64_t action) {
    py::array_t<float> obs(py::ssize_t(env_.observation_space().size()));
    py::array_t<info_type> info(1);
    const auto r = env_.step(action, span_of(obs), info.mutable_data()[0]);
    return py::make_tuple(obs, r.reward, r.terminated, r.truncated, info);
  }
  /// 1 where the action is valid now (a new array).
  py::array_t<std::uint8_t> action_mask() const {
    py::array_t<std::uint8_t> m(py::ssize_t(env_.action_space().n));
    env_.action_mask(span_of(m));
    return m;
  }
  const Env& env() const noexcept { return env_; }

 private:
  Env env_;
};

/// The C++ batch of a masked environment and the NumPy arrays it writes,
/// the same arrays after every call.
template <class Env>
class masked_batch {
 public:
  using info_type = typename Env::info_type;

  masked_batch(const Env& prototype, std::size_t num_envs, const std::string& mode)
      : env_(copies(prototype, num_envs), mode_named(mode)),
        observations_({py::ssize_t(num_envs), py::ssize_t(env_.obs_dim())}),
        final_observations_({py::ssize_t(num_envs), py::ssize_t(env_.obs_dim())}),
        masks_({py::ssize_t(num_envs), py::ssize_t(prototype.action_space().n)}),
        rewards_(py::ssize_t(num_envs)),
        terminated_(py::ssize_t(num_envs)),
        truncated_(py::ssize_t(num_envs)),
        infos_(py::ssize_t(num_envs)),
        final_infos_(py::ssize_t(num_envs)) {
    std::fill_n(observations_.mutable_data(), observations_.size(), 0.0f);
    std::fill_n(final_observations_.mutable_data(), final_observations_.size(), 0.0f);
    std::fill_n(masks_.mutable_data(), masks_.size(), std::uint8_t{0});
    std::fill_n(rewards_.mutable_data(), num_envs, 0.0);
    std::fill_n(terminated_.mutable_data(), num_envs, false);
    std::fill_n(truncated_.mutable_data(), num_envs, false);
    std::fill_n(infos_.mutable_data(), num_envs, info_type{});
    std::fill_n(final_infos_.mutable_data(), num_envs, info_type{});
  }

  void reset(std::optional<std::uint64_t> seed, std::optional<py::array_t<bool, py::array::c_style>> mask) {
    py::gil_scoped_release release;
    if (mask)
      env_.reset(seed, {reinterpret_cast<const std::uint8_t*>(mask->data()), std::size_t(mask->size())},
                 span_of(observations_), span_of(infos_));
    else
      env_.reset(seed, span_of(observations_), span_of(infos_));
    env_.action_masks(span_of(masks_));
  }

  void step(const py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>& actions) {
    const std::span<const std::int64_t> a(actions.data(), std::size_t(actions.size()));
    const bool same = env_.mode() == autoreset_mode::same_step;
    const dwsr::env::vector_step_buffers<info_type> out{
        .observations = span_of(observations_),
        .rewards = span_of(rewards_),
        .terminated = bytes_of(terminated_),
        .truncated = bytes_of(truncated_),
        .infos = span_of(infos_),
        .final_observations = same ? span_of(final_observations_) : std::span<float>{},
        .final_infos = same ? span_of(final_infos_) : std::span<info_type>{}};
    py::gil_scoped_release release;
    env_.step(a, out);
    env_.action_masks(span_of(masks_));
  }

  const Env& first() const noexcept { return env_[0]; }
  std::size_t size() const noexcept { return env_.size(); }

 private:
  dwsr::env::vector_env<Env> env_;  // first: the arrays' sizes come from it

 public:
  py::array_t<float> observations_, final_observations_;
  py::array_t<std::uint8_t> masks_;  ///< N x actions: 1 where valid in the current state
  py::array_t<double> rewards_;
  py::array_t<bool> terminated_, truncated_;
  py::array_t<info_type> infos_, final_infos_;

 private:
  static std::vector<Env> copies(const Env& e, std::size_t n) {
    if (n < 1) throw dwsr::invalid_input("num_envs " + std::to_string(n) + ": expected at least 1");
    return std::vector<Env>(n, e);  // copies share the pool; each keeps its own stream
  }
};

/// Binds Env (built in Python by a factory bound beside it) as `name`, one
/// environment as `name`, and its batch as `name`Batch.
template <class Env>
void def_masked(py::module_& m, const std::string& name) {
  py::class_<Env>(m, (name + "Config").c_str());
  using S = masked_single<Env>;
  py::class_<S>(m, name.c_str())
      .def(py::init<const Env&>(), py::arg("env"))
      .def("reset", &S::reset, py::arg("seed"))
      .def("step", &S::step, py::arg("action"))
      .def("action_mask", &S::action_mask)
      .def("spaces", [](const S& e) { return masked_spaces(e.env()); });
  using B = masked_batch<Env>;
  py::class_<B>(m, (name + "Batch").c_str())
      .def(py::init<const Env&, std::size_t, std::string>(), py::arg("env"), py::arg("num_envs"), py::arg("mode"))
      .def("reset", &B::reset, py::arg("seed"), py::arg("mask"))
      .def("step", &B::step, py::arg("actions"))
      .def("spaces", [](const B& b) { return masked_spaces(b.first()); })
      .def_property_readonly("num_envs", &B::size)
      .def_readonly("observations", &B::observations_)
      .def_readonly("final_observations", &B::final_observations_)
      .def_readonly("masks", &B::masks_)
      .def_readonly("rewards", &B::rewards_)
      .def_readonly("terminated", &B::terminated_)
      .def_readonly("truncated", &B::truncated_)
      .def_readonly("infos", &B::infos_)
      .def_readonly("final_infos", &B::final_infos_);
}

void register_chunk_schedule(py::module_& m) {
  using dwsr::env::chunk_info;
  using dwsr::env::chunk_schedule;
  using dwsr::env::chunk_tasks;
  PYBIND11_NUMPY_DTYPE(chunk_info, task, action, voxels, seconds, peak, budget, density, oom, invalid_action,
                       voxels_per_second, inlines_done, elapsed, episode_voxels_per_second);
  py::class_<chunk_tasks, std::shared_ptr<chunk_tasks>>(m, "ChunkTasks")
      .def_static(
          "generate",
          [](std::uint64_t tasks, std::uint64_t seed) {
            py::gil_scoped_release release;
            return std::make_shared<chunk_tasks>(
                dwsr::env::generate_chunk_tasks(dwsr::operators::catalogue(), {.tasks = tasks, .seed = seed}));
          },
          py::arg("tasks"), py::arg("seed"))
      .def("__len__", &chunk_tasks::size)
      .def_property_readonly("test", [](const chunk_tasks& p) {
        std::vector<bool> t;
        for (const auto& task : p.tasks) t.push_back(task.test);
        return t;
      });
  def_masked<chunk_schedule>(m, "ChunkSchedule");
  m.def(
      "chunk_schedule",
      [](std::shared_ptr<chunk_tasks> tasks, const std::string& part, double retry_seconds, std::uint64_t step_limit) {
        return chunk_schedule(std::move(tasks),
                              {.part = part_named(part), .retry_seconds = retry_seconds, .step_limit = step_limit});
      },
      py::arg("tasks"), py::arg("part"), py::arg("retry_seconds"), py::arg("step_limit"));
  m.def(
      "chunk_advisor_action", [](const masked_single<chunk_schedule>& e) { return dwsr::env::advisor_action(e.env()); },
      py::arg("env"));
}

void register_gpu_pack(py::module_& m) {
  using dwsr::env::gpu_pack;
  using dwsr::env::gpu_pack_info;
  using dwsr::env::gpu_pack_jobs;
  PYBIND11_NUMPY_DTYPE(gpu_pack_info, job, kind, placed, clock, seconds, work, completed, ooms, queued, invalid_action);
  py::class_<gpu_pack_jobs, std::shared_ptr<gpu_pack_jobs>>(m, "GpuPackJobs")
      .def_static(
          "generate",
          [](std::size_t kinds, std::uint64_t seed, const std::string& allocator) {
            py::gil_scoped_release release;
            return std::make_shared<gpu_pack_jobs>(dwsr::env::generate_gpu_pack_jobs(
                dwsr::operators::catalogue(), {.kinds = kinds, .seed = seed, .allocator = allocator}));
          },
          py::arg("kinds"), py::arg("seed"), py::arg("allocator"))
      .def("__len__", &gpu_pack_jobs::size)
      .def_property_readonly("test", [](const gpu_pack_jobs& p) {
        std::vector<bool> t;
        for (const auto& k : p.kinds) t.push_back(k.test);
        return t;
      });
  def_masked<gpu_pack>(m, "GpuPack");
  m.def(
      "gpu_pack",
      [](std::shared_ptr<gpu_pack_jobs> jobs, const std::string& part, const std::vector<std::string>& devices,
         std::size_t arrivals, double load, const std::string& time_cost) {
        dwsr::env::gpu_pack_options o{.part = part_named(part), .jobs = arrivals, .load = load};
        if (!devices.empty()) {
          o.devices.clear();
          for (const auto& d : devices) o.devices.push_back(dwsr::sim::device_named(d));
        }
        if (time_cost == "makespan")
          o.time_cost = dwsr::env::gpu_pack_time_cost::makespan;
        else if (time_cost != "flow_time")
          throw dwsr::invalid_input("time_cost " + dwsr::quote(time_cost) + ": expected flow_time or makespan");
        return gpu_pack(std::move(jobs), o);
      },
      py::arg("jobs"), py::arg("part"), py::arg("devices"), py::arg("arrivals"), py::arg("load"), py::arg("time_cost"));
  m.def(
      "gpu_pack_first_fit_action",
      [](const masked_single<gpu_pack>& e) { return dwsr::env::first_fit_action(e.env()); }, py::arg("env"));
  m.def(
      "gpu_pack_worst_fit_action",
      [](const masked_single<gpu_pack>& e) { return dwsr::env::worst_fit_action(e.env()); }, py::arg("env"));
}

}  // namespace

void register_envs(py::module_& m) {
  PYBIND11_NUMPY_DTYPE(peak_info, job, true_peak, predicted, oom, invalid_action);

  py::class_<peak_jobs, std::shared_ptr<peak_jobs>>(m, "PeakJobs")
      .def_static(
          "generate",
          [](std::uint64_t rows, std::uint64_t seed, std::size_t graphs, const std::vector<std::string>& allocators,
             const std::string& label, const std::string& split) {
            dwsr::dataset_options d{.rows = rows, .seed = seed};
            d.random_graphs = graphs;
            if (!allocators.empty()) d.allocators = allocators;
            py::gil_scoped_release release;
            return std::make_shared<peak_jobs>(
                dwsr::env::generate_peak_jobs(dwsr::operators::catalogue(), d, {.label = label, .split = split}));
          },
          py::arg("rows"), py::arg("seed"), py::arg("graphs"), py::arg("allocators"), py::arg("label"),
          py::arg("split"))
      .def_static(
          "load",
          [](const std::string& dir, const std::string& label, const std::string& split) {
            py::gil_scoped_release release;
            return std::make_shared<peak_jobs>(dwsr::env::load_peak_jobs(dir, {.label = label, .split = split}));
          },
          py::arg("dir"), py::arg("label"), py::arg("split"))
      .def("__len__", &peak_jobs::size)
      .def_property_readonly("dim", &peak_jobs::dim)
      .def_readonly("label", &peak_jobs::label)
      .def_readonly("split", &peak_jobs::split)
      .def_property_readonly("feature_names",
                             [](const peak_jobs& p) {
                               std::vector<std::string> names;
                               for (const auto& c : p.features) names.push_back(c.name);
                               return names;
                             })
      .def_property_readonly("peaks", [](const peak_jobs& p) { return copy_of(p.peak); })
      .def_property_readonly("test", [](const peak_jobs& p) { return copy_of(p.test); })
      .def_property_readonly("rows", [](const peak_jobs& p) { return copy_of(p.row); });

  def_env<dwsr::env::box_space>(m, "PeakPredict", "PeakPredictBatch");
  def_env<dwsr::env::discrete_space>(m, "PeakPredictBins", "PeakPredictBinsBatch");
  register_chunk_schedule(m);
  register_gpu_pack(m);
}
