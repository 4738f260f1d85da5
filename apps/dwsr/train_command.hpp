#pragma once
// `dwsr train`: trains a policy in an environment and writes it with its
// learning curve (env/peak_training.hpp, env/chunk_training.hpp; docs/env.md).

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli_common.hpp"
#include "dwsr/env/chunk_real.hpp"
#include "dwsr/env/chunk_training.hpp"
#include "dwsr/env/pack_real.hpp"
#include "dwsr/env/pack_training.hpp"
#include "dwsr/env/peak_real.hpp"
#include "dwsr/env/peak_training.hpp"

namespace dwsr::cli {

namespace detail {

/// The options of `lists`, joined.
using option_lists = std::initializer_list<std::vector<CLI::Option*>>;

/// "--a, --b": the options of `lists` the user gave.
inline std::string given_options(option_lists lists) {
  std::string out;
  for (const auto& l : lists)
    for (const auto* o : l)
      if (o->count() > 0) out += (out.empty() ? "" : ", ") + o->get_name();
  return out;
}

/// Throws when any option of `lists` was given: they do not apply to `what`.
inline void refuse_options(option_lists lists, const std::string& what) {
  const auto given = given_options(lists);
  if (given.empty()) return;
  const bool one = given.find(',') == std::string::npos;
  throw invalid_input(given + (one ? " does" : " do") + " not apply to " + what);
}

/// Redraws "train: ..." on stderr at most every 200 ms (and at the end) when
/// it is a terminal.
class train_progress {
 public:
  train_progress() : tty_(::isatty(STDERR_FILENO) != 0), last_(std::chrono::steady_clock::now()) {}
  void operator()(std::uint64_t done, std::uint64_t total, const char* unit) {
    const auto now = std::chrono::steady_clock::now();
    if (!tty_ || (now - last_ < std::chrono::milliseconds(200) && done != total)) return;
    last_ = now;
    drawn_ = true;
    if (total)
      std::fprintf(stderr, "\r\033[Ktrain: %llu/%llu %s", static_cast<unsigned long long>(done),
                   static_cast<unsigned long long>(total), unit);
    else
      std::fprintf(stderr, "\r\033[Ktrain: %llu %s", static_cast<unsigned long long>(done), unit);
  }
  void clear() {
    if (tty_) std::fprintf(stderr, "\r\033[K");
  }
  bool tty() const noexcept { return tty_; }

 private:
  bool tty_, drawn_ = false;
  std::chrono::steady_clock::time_point last_;
};

/// Writes a training's files together with `write(dir, extra)`; an earlier
/// run's real.csv, when this run has none, is removed: it would not belong
/// to this policy.
template <class Write>
void write_training_files(const std::filesystem::path& dir, const std::vector<env::extra_file>& extra, Write&& write) {
  remove_stale_partials_of(dir / "policy.json");
  write(dir, extra);
  if (std::none_of(extra.begin(), extra.end(), [](const env::extra_file& f) { return f.name == "real.csv"; })) {
    std::error_code ignored;
    std::filesystem::remove(dir / "real.csv", ignored);
  }
}

/// Real mode's runs: `run(k, tool, scratch)` for k = 0 to n - 1, each
/// executing with this very tool in a scratch directory inside `dir`, which
/// is removed afterwards (and `dir` too, after a failure, when this created
/// it and it stayed empty); progress on a terminal.
template <class Run>
auto run_real(const std::filesystem::path& dir, std::size_t n, train_progress& meter, Run&& run) {
  const auto tool = std::filesystem::read_symlink("/proc/self/exe");
  std::vector<decltype(run(std::size_t{}, tool, tool))> rows;
  const bool existed = std::filesystem::exists(dir);
  std::filesystem::create_directories(dir);
  const auto scratch = dir / ".dwsr-train-real";
  std::filesystem::create_directories(scratch);
  auto clean = [&] {
    meter.clear();
    std::error_code ignored;
    std::filesystem::remove_all(scratch, ignored);
  };
  try {
    for (std::size_t k = 0; k < n; ++k) {
      if (meter.tty()) std::fprintf(stderr, "\r\033[Kreal: run %zu/%zu", k + 1, n);
      rows.push_back(run(k, tool, scratch));
    }
  } catch (...) {
    clean();
    std::error_code ignored;
    if (!existed) std::filesystem::remove(dir, ignored);  // only when empty
    throw;
  }
  clean();
  return rows;
}

/// Prints what a ChunkSchedule or GpuPack training gave (`heuristic`: the
/// environment's, scored beside random), as lines or as JSON.
inline void report_episodic(const std::string& environment, const std::string& policy, const std::string& heuristic,
                            const env::episodic_training_result& t, double seconds, const std::string& out, bool json,
                            const std::vector<env::chunk_real_row>& runs) {
  const auto& d = t.document;
  if (json) {
    nlohmann::json summary{{"env", environment},
                           {"policy", policy},
                           {"training", d["training"]},
                           {"seconds", seconds},
                           {"out", out},
                           {"test", d["test"]},
                           {"random_test", d["random_test"]},
                           {heuristic + "_test", d[heuristic + "_test"]}};
    if (d.contains("sampled_test")) summary["sampled_test"] = d["sampled_test"];
    if (d.contains("real")) summary["real"] = d["real"];
    return print_json(summary);
  }
  const char* unit = environment == "gpu_pack" ? "kinds" : "tasks";
  if (t.trained)
    std::printf("%s trained %llu episodes (%llu steps) on %llu train %s in %.2f s\n", policy.c_str(),
                static_cast<unsigned long long>(d["training"]["episodes"].get<std::uint64_t>()),
                static_cast<unsigned long long>(d["training"]["steps"].get<std::uint64_t>()),
                static_cast<unsigned long long>(d["pool"][std::string("train_") + unit].get<std::uint64_t>()), unit,
                seconds);
  else
    std::printf("%s scored (no training) in %.2f s\n", policy.c_str(), seconds);
  std::printf(
      "  test %s: mean return %.4f (random %.4f, %s %.4f), episodes out of memory %.1f%% (random %.1f%%, "
      "%s %.1f%%)\n",
      unit, t.test.mean_return, t.random_test.mean_return, heuristic.c_str(), t.heuristic_test.mean_return,
      100 * t.test.oom_rate, 100 * t.random_test.oom_rate, heuristic.c_str(), 100 * t.heuristic_test.oom_rate);
  if (t.trained)
    std::printf("  sampling its actions instead of taking the most probable: mean return %.4f, out of memory %.1f%%\n",
                t.sampled_test.mean_return, 100 * t.sampled_test.oom_rate);
  if (environment == "gpu_pack" && d.contains("real")) {
    const auto& r = d["real"];
    std::printf(
        "  real: %zu kinds replayed, |measured peak / simulated peak - 1|: mean %.4f, worst %.4f; "
        "reserved bytes differ from the allocator model after %llu events\n",
        r["kinds"].size(), r["mean_abs_ratio_error"].get<double>(), r["worst_abs_ratio_error"].get<double>(),
        static_cast<unsigned long long>(r["reserved_mismatches"].get<std::uint64_t>()));
    for (const char* who : {"chosen", "first_fit"}) {
      if (who == std::string_view("first_fit") && policy == "first_fit") break;  // the same runs
      const auto& w = r[who];
      std::printf(
          "  real, %s: mean return %.4f with the measured profiles, %.4f simulated (mean |difference| "
          "%.4g); jobs out of memory %llu measured, %llu simulated (%llu of %llu episodes differ)\n",
          who == std::string_view("chosen") ? policy.c_str() : who, w["mean_measured_return"].get<double>(),
          w["mean_simulated_return"].get<double>(), w["mean_abs_difference"].get<double>(),
          static_cast<unsigned long long>(w["measured_ooms"].get<std::uint64_t>()),
          static_cast<unsigned long long>(w["simulated_ooms"].get<std::uint64_t>()),
          static_cast<unsigned long long>(w["episodes_with_other_ooms"].get<std::uint64_t>()),
          static_cast<unsigned long long>(w["episodes"].get<std::uint64_t>()));
    }
  }
  if (!runs.empty()) {
    const auto agree = env::agree(runs);
    std::printf("  real: %zu runs, |RSS increase / simulated pages - 1|: mean %.4f, worst %.4f\n", runs.size(),
                agree.mean, agree.worst);
    std::vector<std::string> choosers{policy};
    if (heuristic != policy) choosers.push_back(heuristic);
    for (const auto& who : choosers) {
      const auto s = env::chunk_real_summary(runs, who);
      std::printf("  real, %s's chunks: %zu of %zu runs out of memory, %.2f s in all, %.1f%% of the budgets idle\n",
                  who.c_str(), s.out_of_memory, s.runs, s.seconds, 100 * s.idle_share);
    }
  }
  std::printf("wrote %s/policy.json, curve.csv%s\n", out.c_str(), d.contains("real") ? ", real.csv" : "");
}

}  // namespace detail

inline void add_train_command(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("train",
                         "train a policy in an environment (PeakPredict's bins: random, LinUCB or REINFORCE; "
                         "ChunkSchedule: random, advisor or REINFORCE; GpuPack: random, first_fit, worst_fit or "
                         "REINFORCE) and write it with its learning curve");
  static std::string environment = "peak_predict", policy, out, data, label = "peak_requested", split = "random";
  static env::peak_training_request r;
  static env::episodic_training_request c;
  static std::uint64_t rows = 20000, pool_seed = 0, steps = 100000, window = 1000, seed = 0, eval = 10000;
  static std::uint64_t tasks = 256, real = 0, real_max_mib = env::real_max_cube_bytes >> 20;
  static std::uint64_t kinds = 64, arrivals = 32;
  static double load = 2;
  static std::string allocator = "torch_cuda_caching", time_cost = "flow_time", runner, overhead;
  static std::vector<std::string> devices;
  static bool json = false;
  cmd->add_option("--env", environment,
                  "environment: peak_predict (its Discrete variant over quantile bins), chunk_schedule or gpu_pack")
      ->capture_default_str();
  cmd->add_option("--policy", policy,
                  "peak_predict: random, linucb (a contextual bandit over the bins; the default) or reinforce (a "
                  "softmax over the bins learned by policy gradient, one-step episodes); chunk_schedule: "
                  "random, advisor (both only scored) or reinforce (a policy-gradient agent; the default); gpu_pack: "
                  "random, first_fit, worst_fit (the three only scored) or reinforce (the default)");
  auto* steps_opt =
      cmd->add_option("--steps", steps,
                      "training steps (peak_predict); chunk_schedule and gpu_pack, reinforce: whole episodes "
                      "until this many steps, instead of --episodes")
          ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40))
          ->capture_default_str();
  cmd->add_option("--seed", seed,
                  "seed of the episodes, the random policy and the network's weights (same options, same files)")
      ->capture_default_str();
  cmd->add_option("-o,--out", out, "directory for policy.json and curve.csv (created when missing)")->required();
  auto* dataset_opt = cmd->add_option(
      "--dataset", data, "peak_predict: jobs from a `dwsr dataset --task peak` directory (default: generated)");
  auto* rows_opt = cmd->add_option("--rows", rows, "peak_predict: generated jobs, rows of the pool")
                       ->check(CLI::Range(std::uint64_t{1}, dataset_max_rows))
                       ->capture_default_str();
  cmd->add_option("--pool-seed", pool_seed, "the generated pool's seed (jobs, tasks or job kinds)")
      ->capture_default_str();
  auto* label_opt =
      cmd->add_option("--label", label, "peak_predict: the true peak, peak_requested or peak_reserved_MODEL")
          ->capture_default_str();
  auto* split_opt = cmd->add_option("--split", split,
                                    "peak_predict: the dataset's split into train and test: random, family or "
                                    "extrapolation")
                        ->capture_default_str();
  auto* bins_opt = cmd->add_option("--bins", r.bins, "peak_predict: quantile bins of the train peaks (the actions)")
                       ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 12))
                       ->capture_default_str();
  auto* alpha_opt = cmd->add_option("--alpha", r.linucb.alpha,
                                    "peak_predict, linucb: exploration, standard errors added to the predicted reward")
                        ->check(CLI::Range(0.0, 1e6))
                        ->capture_default_str();
  auto* window_opt = cmd->add_option("--window", window,
                                     "points of the learning curve: training steps (peak_predict) or episodes "
                                     "(chunk_schedule, gpu_pack) per point")
                         ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40))
                         ->capture_default_str();
  cmd->add_option("--eval-episodes", eval,
                  "test episodes each policy is scored on (the policy, the random baseline and the environment's "
                  "heuristic: chunk_schedule's advisor, gpu_pack's first_fit; the same episodes)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 32))
      ->capture_default_str();
  auto* tasks_opt = cmd->add_option("--tasks", tasks, "chunk_schedule: tasks of the generated pool (both parts)")
                        ->check(CLI::Range(std::uint64_t{5}, std::uint64_t{1} << 20))
                        ->capture_default_str();
  auto* episodes_opt = cmd->add_option("--episodes", c.episodes,
                                       "chunk_schedule and gpu_pack, reinforce: training episodes (gpu_pack: 50000)")
                           ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40))
                           ->capture_default_str();
  auto* hidden_opt =
      cmd->add_option("--hidden", c.reinforce.hidden,
                      "reinforce: tanh units (0: a linear policy; peak_predict's and gpu_pack's default)")
          ->check(CLI::Range(std::size_t{0}, std::size_t{4096}))
          ->capture_default_str();
  auto* lr_opt = cmd->add_option("--lr", c.reinforce.learning_rate, "reinforce: Adam's step size")
                     ->check(CLI::Range(1e-9, 10.0))
                     ->capture_default_str();
  auto* entropy_opt =
      cmd->add_option("--entropy", c.reinforce.entropy, "reinforce: entropy bonus of the objective (gpu_pack: 0.02)")
          ->check(CLI::Range(0.0, 100.0))
          ->capture_default_str();
  auto* group_opt =
      cmd->add_option("--group", c.group,
                      "chunk_schedule and gpu_pack, reinforce: episodes that share one reset seed (arrivals, task); "
                      "above 1, each episode's return is measured against the mean of the others of its group "
                      "(gpu_pack: 8); it divides --batch and --episodes")
          ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 20))
          ->capture_default_str();
  auto* batch_opt = cmd->add_option("--batch", c.batch, "reinforce: episodes per update (peak_predict: steps)")
                        ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 20))
                        ->capture_default_str();
  auto* real_opt = cmd->add_option("--real", real,
                                   "after scoring, run the policy's choice for real on this many test tasks "
                                   "(chunk_schedule: its first chunk) or jobs (peak_predict: each job, its predicted "
                                   "peak's reward against the measured peak; label peak_requested) with small cubes "
                                   "and a peak that does not depend on the data, or job kinds (gpu_pack: each kind "
                                   "replayed on a GPU by --real-runner, the rewards again with the measured "
                                   "profiles), and write real.csv")
                       ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{1000}))
                       ->capture_default_str();
  auto* real_max_opt =
      cmd->add_option("--real-max-mib", real_max_mib, "--real: the largest cube run for real, MiB of float32")
          ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 20))
          ->capture_default_str();
  auto* runner_opt = cmd->add_option("--real-runner", runner,
                                     "gpu_pack --real: the command that replays a job kind's trace on a GPU and "
                                     "reads its device memory, given TRACE OUT (words split at spaces), e.g. "
                                     "\"python3 scripts/gpu/pack_replay.py\"");
  std::vector<CLI::Option*> pack_opts{
      cmd->add_option("--kinds", kinds, "gpu_pack: job kinds of the generated pool (both parts)")
          ->check(CLI::Range(std::uint64_t{5}, std::uint64_t{1} << 16))
          ->capture_default_str(),
      cmd->add_option("--allocator", allocator, "gpu_pack: the job kinds' allocator model")->capture_default_str(),
      cmd->add_option("--context-overhead", overhead,
                      "gpu_pack: device memory each job's process holds beside its allocator (the CUDA context; "
                      "default 512MiB; --real measures it)"),
      cmd->add_option("--devices", devices,
                      "gpu_pack: the devices jobs are placed on, comma-separated (" + sim::known_devices() +
                          "; default: an H100 80 GB and its 3g.40gb, 2g.20gb and 1g.10gb slices)")
          ->delimiter(','),
      cmd->add_option("--arrivals", arrivals, "gpu_pack: jobs arriving per episode")
          ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 20))
          ->capture_default_str(),
      cmd->add_option("--load", load, "gpu_pack: arrival rate relative to what the devices run")
          ->check(CLI::Range(1e-6, 1e6))
          ->capture_default_str(),
      cmd->add_option("--time-cost", time_cost, "gpu_pack: what time costs, flow_time or makespan")
          ->capture_default_str()};
  cmd->add_flag("--json", json, "print a JSON summary instead of lines");
  cmd->callback([=] {
    std::vector<CLI::Option*> chunk_opts{tasks_opt};
    std::vector<CLI::Option*> real_opts{real_opt, real_max_opt};
    if (real == 0 && real_max_opt->count() > 0) throw invalid_input("--real-max-mib applies only with --real N");
    if (real == 0 && runner_opt->count() > 0) throw invalid_input("--real-runner applies only with --real N");
    std::vector<CLI::Option*> peak_opts{dataset_opt, rows_opt, label_opt, split_opt, bins_opt, alpha_opt};
    std::vector<CLI::Option*> network_opts{hidden_opt, lr_opt, entropy_opt, batch_opt, group_opt};
    if (environment == "peak_predict") {
      detail::refuse_options({chunk_opts, pack_opts, {episodes_opt, runner_opt, group_opt}}, "--env peak_predict");
      r.policy = policy.empty() ? "linucb" : policy;
      if (r.policy != "random" && r.policy != "linucb" && r.policy != "reinforce")
        throw invalid_input("--policy " + quote(r.policy) +
                            ": expected random, linucb or reinforce for --env peak_predict");
      if (r.policy != "reinforce") detail::refuse_options({network_opts}, "--policy " + r.policy);
      // The network options are shared with the episodic agents; peak_predict keeps pg_bandit's defaults.
      if (hidden_opt->count() > 0) r.reinforce.policy.hidden = c.reinforce.hidden;
      if (lr_opt->count() > 0) r.reinforce.policy.learning_rate = c.reinforce.learning_rate;
      if (entropy_opt->count() > 0) r.reinforce.policy.entropy = c.reinforce.entropy;
      if (batch_opt->count() > 0) r.reinforce.batch = c.batch;
    } else if (environment == "chunk_schedule" || environment == "gpu_pack") {
      const bool chunk = environment == "chunk_schedule";
      detail::refuse_options({peak_opts, chunk ? pack_opts : chunk_opts}, "--env " + environment);
      if (chunk) detail::refuse_options({{runner_opt}}, "--env chunk_schedule (its tasks run with this tool)");
      if (!chunk) detail::refuse_options({{real_max_opt}}, "--env gpu_pack (its jobs' cubes are not computed)");
      if (!chunk && real > 0 && runner.empty())
        throw invalid_input("--env gpu_pack --real " + std::to_string(real) +
                            " needs --real-runner COMMAND: a program that replays a job kind's trace on a GPU "
                            "(e.g. \"python3 scripts/gpu/pack_replay.py\", which needs PyTorch and NVML)");
      const auto names = chunk ? env::chunk_heuristic().policies() : env::pack_heuristic().policies();
      c.policy = policy.empty() ? "reinforce" : policy;
      if (std::find(names.begin(), names.end(), c.policy) == names.end())
        throw invalid_input("--policy " + quote(c.policy) + ": expected " + env::one_of(names) + " for --env " +
                            environment);
      if (c.policy != "reinforce")
        detail::refuse_options({{episodes_opt}, network_opts, {steps_opt, window_opt}},
                               "--policy " + c.policy + " (it is only scored; reinforce trains)");
      if (steps_opt->count() > 0 && episodes_opt->count() > 0)
        throw invalid_input("--steps and --episodes: expected one of them (training length)");
      // Each environment's own defaults for the options not given.
      const auto d = chunk ? env::episodic_training_request{} : env::pack_training_request();
      if (episodes_opt->count() == 0) c.episodes = d.episodes;
      if (hidden_opt->count() == 0) c.reinforce.hidden = d.reinforce.hidden;
      if (lr_opt->count() == 0) c.reinforce.learning_rate = d.reinforce.learning_rate;
      if (entropy_opt->count() == 0) c.reinforce.entropy = d.reinforce.entropy;
      if (group_opt->count() == 0) c.group = d.group;
      c.reinforce.baseline = c.group > 1 ? env::pg_baseline::group : env::pg_baseline::linear;
      if (c.policy == "reinforce" && (c.batch % c.group != 0 || (steps_opt->count() == 0 && c.episodes % c.group != 0)))
        throw invalid_input("--group " + std::to_string(c.group) + ": expected a divisor of --batch (" +
                            std::to_string(c.batch) + ")" +
                            (steps_opt->count() ? "" : " and of --episodes (" + std::to_string(c.episodes) + ")"));
      if (time_cost != "flow_time" && time_cost != "makespan")
        throw invalid_input("--time-cost " + quote(time_cost) + ": expected flow_time or makespan");
    } else {
      throw invalid_input("--env " + quote(environment) + ": expected peak_predict, chunk_schedule or gpu_pack");
    }
    detail::train_progress meter;
    const auto started = std::chrono::steady_clock::now();
    if (environment == "peak_predict") {
      r.steps = steps;
      r.seed = seed;
      r.window = window;
      r.eval_episodes = eval;
      const env::peak_jobs_options po{.label = label, .split = split};
      std::shared_ptr<const env::peak_jobs> jobs;
      if (!data.empty()) {
        jobs = std::make_shared<const env::peak_jobs>(env::load_peak_jobs(data, po));
        r.pool = {{"dataset", data}};
      } else {
        dataset_options d{.rows = rows, .seed = pool_seed};
        d.allocators = {"exact", "host_pages"};
        const auto model = label.rfind("peak_reserved_", 0) == 0 ? label.substr(14) : std::string();
        if (!model.empty() && std::find(d.allocators.begin(), d.allocators.end(), model) == d.allocators.end())
          d.allocators.push_back(model);
        jobs = std::make_shared<const env::peak_jobs>(env::generate_peak_jobs(operators::catalogue(), d, po));
        r.pool = {{"generated", {{"rows", rows}, {"seed", pool_seed}, {"allocators", d.allocators}}}};
      }
      // Real mode's jobs, checked before training.
      const auto chosen =
          env::peak_real_jobs(operators::catalogue(), *jobs, real, {.max_cube_bytes = real_max_mib << 20});
      if (chosen.size() < real)
        throw invalid_input("--real " + std::to_string(real) + ": the pool's test part has " +
                            std::to_string(chosen.size()) +
                            " jobs with a known graph, dwsr's own execution, at most one worker per core, a peak "
                            "that does not depend on the data, 32 MiB of pages or more and a cube of at most " +
                            std::to_string(real_max_mib) +
                            " MiB; expected at least that many (more --rows, another --pool-seed or a larger "
                            "--real-max-mib)");
      r.progress = [&](std::uint64_t done) { meter(done, r.steps, "steps"); };
      auto t = env::train_peak_predict(jobs, r);
      r.progress = {};  // it refers to this callback's locals
      meter.clear();
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

      // Real mode: the policy's prediction for each chosen test job, the job run by this very tool.
      std::vector<env::peak_real_row> runs;
      std::vector<env::extra_file> extra;
      if (real > 0) {
        const auto bin_peaks = t.policy["bin_peaks"].get<std::vector<double>>();
        env::random_policy random(env::discrete_space{r.bins}, seed);
        runs = detail::run_real(out, chosen.size(), meter, [&](std::size_t k, const auto& tool, const auto& scratch) {
          const auto j = chosen[k];
          const std::span<const float> obs(jobs->x.data() + j * jobs->dim(), jobs->dim());
          const auto action = t.greedy ? t.greedy(obs) : random.act(obs);
          return env::run_peak_real(operators::catalogue(), *jobs, j, bin_peaks[std::size_t(action)], tool, scratch);
        });
        const auto agree = env::agree(runs);
        const auto rewards = env::peak_real_compare(runs, r.oom_reward);
        t.policy["real"] = {{"jobs", chosen},
                            {"file", "real.csv"},
                            {"mean_abs_ratio_error", agree.mean},
                            {"worst_abs_ratio_error", agree.worst},
                            {"mean_simulated_reward", rewards.mean_simulated},
                            {"mean_real_reward", rewards.mean_real},
                            {"mean_abs_reward_difference", rewards.mean_abs_difference},
                            {"oom_disagreements", rewards.oom_disagreements}};
        extra.push_back({"real.csv", env::peak_real_csv(runs, r.oom_reward)});
      }
      detail::write_training_files(
          out, extra, [&](const auto& dir, const auto& files) { env::write_peak_training(dir, t, files); });
      if (json) {
        nlohmann::json summary{{"env", environment},
                               {"policy", r.policy},
                               {"steps", r.steps},
                               {"seconds", seconds},
                               {"out", out},
                               {"test", t.policy["test"]},
                               {"random_test", t.policy["random_test"]}};
        if (t.policy.contains("real")) summary["real"] = t.policy["real"];
        return print_json(summary);
      }
      std::printf("%s trained %llu steps on %llu train jobs in %.2f s\n", r.policy.c_str(),
                  static_cast<unsigned long long>(r.steps),
                  static_cast<unsigned long long>(t.policy["pool"]["train_jobs"].get<std::uint64_t>()), seconds);
      std::printf("  test jobs: mean reward %.4g (random %.4g), out of memory %.1f%% (random %.1f%%)\n",
                  t.test.mean_reward, t.random_test.mean_reward, 100 * t.test.oom_rate, 100 * t.random_test.oom_rate);
      if (!runs.empty()) {
        const auto& d = t.policy["real"];
        std::printf("  real: %zu runs, |RSS increase / simulated pages - 1|: mean %.4f, worst %.4f\n", runs.size(),
                    d["mean_abs_ratio_error"].get<double>(), d["worst_abs_ratio_error"].get<double>());
        std::printf(
            "  real: mean reward %.4g against the measured peaks, %.4g simulated (mean |difference| %.4g, "
            "%llu out-of-memory verdicts differ)\n",
            d["mean_real_reward"].get<double>(), d["mean_simulated_reward"].get<double>(),
            d["mean_abs_reward_difference"].get<double>(),
            static_cast<unsigned long long>(d["oom_disagreements"].get<std::uint64_t>()));
      }
      std::printf("wrote %s/policy.json, curve.csv%s\n", out.c_str(), runs.empty() ? "" : ", real.csv");
      return;
    }

    // chunk_schedule and gpu_pack
    c.seed = seed;
    c.window = window;
    c.eval_episodes = eval;
    c.steps = steps_opt->count() > 0 ? steps : 0;
    c.progress = [&](std::uint64_t done) { meter(done, c.steps ? 0 : c.episodes, "episodes"); };
    const auto dir = std::filesystem::path(out);
    if (environment == "gpu_pack") {
      env::gpu_pack_options o{.jobs = arrivals, .load = load};
      if (!devices.empty()) {
        o.devices.clear();
        for (const auto& d : devices) o.devices.push_back(sim::device_named(d));
      }
      if (time_cost == "makespan") o.time_cost = env::gpu_pack_time_cost::makespan;
      const env::gpu_pack_jobs_options jo{
          .kinds = kinds,
          .seed = pool_seed,
          .allocator = allocator,
          .overhead = overhead.empty() ? sim::default_process_overhead : parse_bytes(overhead)};
      const auto jobs =
          std::make_shared<const env::gpu_pack_jobs>(env::generate_gpu_pack_jobs(operators::catalogue(), jo));
      c.pool = {{"seed", pool_seed}, {"allocator", allocator}, {"context_overhead", jo.overhead}};
      // Real mode's kinds, checked before training: each leaves 1 GiB of the smallest of the largest
      // device and the recovery GPU, so that a measured context above the model's still fits.
      std::uint64_t largest = 0;
      for (const auto& d : o.devices) largest = std::max(largest, d.capacity);
      const auto room = std::min(largest, o.recovery.capacity);
      const std::uint64_t margin = std::uint64_t{1} << 30;
      const auto chosen = env::pack_real_kinds(*jobs, real, room > margin ? room - margin : 0);
      if (chosen.size() < real)
        throw invalid_input("--real " + std::to_string(real) + ": the pool's test part has " +
                            std::to_string(chosen.size()) +
                            " kinds that peak at least 1 GiB below the largest "
                            "device and the recovery GPU; expected at least that many (more --kinds or another "
                            "--pool-seed)");
      auto t = env::train_gpu_pack(jobs, c, o);
      c.progress = {};
      meter.clear();
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      std::vector<env::pack_real_row> runs;
      std::vector<env::extra_file> extra;
      if (real > 0) {
        std::vector<std::string> argv;
        for (std::size_t at = 0; at < runner.size();) {
          const auto b = runner.find_first_not_of(' ', at);
          if (b == std::string::npos) break;
          const auto e = std::min(runner.find(' ', b), runner.size());
          argv.push_back(runner.substr(b, e - b));
          at = e;
        }
        runs = detail::run_real(dir, chosen.size(), meter, [&](std::size_t k, const auto&, const auto& scratch) {
          return env::run_pack_real(operators::catalogue(), jo, *jobs, chosen[k], argv, scratch);
        });
        env::gpu_pack test(jobs, {.part = env::pool_part::test});
        env::masked_random_policy random(test.action_space(), seed);
        const auto heuristics = env::pack_heuristic();
        const auto* scored = heuristics.find(c.policy);  // a heuristic chosen with --policy, or none
        auto policy_act = [&t, random, scored](const env::gpu_pack& e, std::span<const float> obs,
                                               std::span<const std::uint8_t> m) mutable {
          if (t.trained) return t.trained->greedy(obs, m);
          return scored ? (*scored)(e) : random.act(obs, m);
        };
        auto first_fit = [](const env::gpu_pack& e, std::span<const float>, std::span<const std::uint8_t>) {
          return env::first_fit_action(e);
        };
        auto rewards_json = [](const env::pack_real_rewards& w) {
          return nlohmann::json{{"episodes", w.episodes},
                                {"mean_simulated_return", w.mean_simulated_return},
                                {"mean_measured_return", w.mean_measured_return},
                                {"mean_abs_difference", w.mean_abs_difference},
                                {"simulated_ooms", w.simulated_ooms},
                                {"measured_ooms", w.measured_ooms},
                                {"episodes_with_other_ooms", w.episodes_with_other_ooms}};
        };
        // First fit's runs serve as the chosen policy's when it is first fit.
        const auto heuristic = rewards_json(env::pack_real_compare(jobs, runs, o, first_fit, eval, seed));
        const auto chosen_rewards = c.policy == "first_fit"
                                        ? heuristic
                                        : rewards_json(env::pack_real_compare(jobs, runs, o, policy_act, eval, seed));
        const auto agree = env::agree(runs);
        std::uint64_t mismatches = 0;
        for (const auto& row : runs) mismatches += row.reserved_mismatches;
        t.document["real"] = {{"kinds", chosen},
                              {"file", "real.csv"},
                              {"runner", runner},
                              {"mean_abs_ratio_error", agree.mean},
                              {"worst_abs_ratio_error", agree.worst},
                              {"reserved_mismatches", mismatches},
                              {"chosen", chosen_rewards},
                              {"first_fit", heuristic}};
        extra.push_back({"real.csv", env::pack_real_csv(runs)});
      }
      detail::write_training_files(
          dir, extra, [&](const auto& d, const auto& files) { env::write_episodic_training(d, t, files); });
      detail::report_episodic(environment, c.policy, "first_fit", t, seconds, out, json, {});
      return;
    }
    c.pool = nlohmann::json::object();
    const auto pool = std::make_shared<const env::chunk_tasks>(
        env::generate_chunk_tasks(operators::catalogue(), {.tasks = tasks, .seed = pool_seed}));
    // Real mode's tasks, checked before training.
    const auto chosen = env::chunk_real_tasks(*pool, real, real_max_mib << 20);
    if (chosen.size() < real)
      throw invalid_input("--real " + std::to_string(real) + ": the pool's test part has " +
                          std::to_string(chosen.size()) + " tasks without event_picks and a cube of at most " +
                          std::to_string(real_max_mib) +
                          " MiB; expected at least that many (more --tasks, another "
                          "--pool-seed or a larger --real-max-mib)");
    auto t = env::train_chunk_schedule(pool, c);
    c.progress = {};
    meter.clear();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

    // Real mode: the policy's first action on each chosen test task, then the advisor's (the same run
    // when it picks the same candidate), run by this very tool.
    std::vector<env::chunk_real_row> runs;
    std::vector<env::extra_file> extra;
    if (real > 0) {
      env::chunk_schedule test(pool, {.part = env::pool_part::test});
      env::masked_random_policy random(test.action_space(), seed);
      std::vector<float> obs(test.observation_space().size());
      std::vector<std::uint8_t> mask(env::chunk_candidates);
      env::chunk_info info;
      const std::size_t per_task = c.policy == "advisor" ? 1 : 2;
      env::chunk_real_row chosen_run;
      runs = detail::run_real(
          dir, chosen.size() * per_task, meter, [&](std::size_t k, const auto& tool, const auto& scratch) {
            const auto task = chosen[k / per_task];
            test.reset_task(task, seed, obs, info);
            test.action_mask(mask);
            if (k % per_task == 1) {  // the advisor's, beside the policy's
              const auto action = std::size_t(env::advisor_action(test));
              auto row = action == chosen_run.action ? chosen_run
                                                     : env::run_chunk_real(operators::catalogue(), *pool, task, action,
                                                                           "advisor", tool, scratch);
              row.chooser = "advisor";
              return row;
            }
            const std::int64_t action = c.policy == "advisor" ? env::advisor_action(test)
                                        : t.trained           ? t.trained->greedy(obs, mask)
                                                              : random.act(obs, mask);
            chosen_run =
                env::run_chunk_real(operators::catalogue(), *pool, task, std::size_t(action), c.policy, tool, scratch);
            return chosen_run;
          });
      const auto agree = env::agree(runs);
      auto summary = [&](const std::string& chooser) {
        const auto s = env::chunk_real_summary(runs, chooser);
        return nlohmann::json{{"runs", s.runs},
                              {"out_of_memory", s.out_of_memory},
                              {"seconds", s.seconds},
                              {"mean_idle_share", s.idle_share}};
      };
      t.document["real"] = {{"tasks", chosen},
                            {"file", "real.csv"},
                            {"mean_abs_ratio_error", agree.mean},
                            {"worst_abs_ratio_error", agree.worst},
                            {"chosen", summary(c.policy)},
                            {"advisor", summary("advisor")}};
      extra.push_back({"real.csv", env::chunk_real_csv(runs)});
    }
    detail::write_training_files(dir, extra,
                                 [&](const auto& d, const auto& files) { env::write_episodic_training(d, t, files); });
    detail::report_episodic(environment, c.policy, "advisor", t, seconds, out, json, runs);
  });
}

}  // namespace dwsr::cli
