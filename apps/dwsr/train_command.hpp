#pragma once
// `dwsr train`: trains a policy in an environment and writes it with its
// learning curve (env/peak_training.hpp; docs/env.md).

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include "cli_common.hpp"
#include "dwsr/env/peak_training.hpp"

namespace dwsr::cli {

inline void add_train_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "train",
      "train a policy in an environment (PeakPredict's bins: random or LinUCB) and write it with its "
      "learning curve");
  static std::string environment = "peak_predict", out, data, label = "peak_requested", split = "random";
  static env::peak_training_request r;
  static std::uint64_t rows = 20000, pool_seed = 0;
  static bool json = false;
  cmd->add_option("--env", environment, "environment: peak_predict (its Discrete variant over quantile bins)")
      ->capture_default_str();
  cmd->add_option("--policy", r.policy, "random, or linucb (a contextual bandit over the bins)")->capture_default_str();
  cmd->add_option("--steps", r.steps, "training steps")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40))
      ->capture_default_str();
  cmd->add_option("--seed", r.seed, "seed of the episodes and of the random policy (same options, same files)")
      ->capture_default_str();
  cmd->add_option("-o,--out", out, "directory for policy.json and curve.csv (created when missing)")->required();
  cmd->add_option("--dataset", data, "jobs from a `dwsr dataset --task peak` directory (default: generated)");
  cmd->add_option("--rows", rows, "generated jobs: rows of the pool")
      ->check(CLI::Range(std::uint64_t{1}, dataset_max_rows))
      ->capture_default_str();
  cmd->add_option("--pool-seed", pool_seed, "generated jobs: the pool's seed")->capture_default_str();
  cmd->add_option("--label", label, "the true peak: peak_requested or peak_reserved_MODEL")->capture_default_str();
  cmd->add_option("--split", split, "the dataset's split into train and test: random, family or extrapolation")
      ->capture_default_str();
  cmd->add_option("--bins", r.bins, "quantile bins of the train peaks (the actions)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 12))
      ->capture_default_str();
  cmd->add_option("--alpha", r.linucb.alpha, "linucb: exploration, standard errors added to the predicted reward")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  cmd->add_option("--window", r.window, "training steps per point of the learning curve")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40))
      ->capture_default_str();
  cmd->add_option("--eval-episodes", r.eval_episodes, "test episodes the policy and the random baseline are scored on")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 32))
      ->capture_default_str();
  cmd->add_flag("--json", json, "print a JSON summary instead of a line");
  cmd->callback([] {
    if (environment != "peak_predict") throw invalid_input("--env " + quote(environment) + ": expected peak_predict");
    if (r.policy != "random" && r.policy != "linucb")
      throw invalid_input("--policy " + quote(r.policy) + ": expected random or linucb");
    const env::peak_jobs_options po{.label = label, .split = split};
    std::shared_ptr<const env::peak_jobs> jobs;
    if (!data.empty()) {
      jobs = std::make_shared<const env::peak_jobs>(env::load_peak_jobs(data, po));
      r.pool = {{"dataset", data}};
    } else {
      dataset_options d{.rows = rows, .seed = pool_seed};
      d.allocators = {"exact", "host_pages"};
      if (label.rfind("peak_reserved_", 0) == 0) d.allocators.push_back(label.substr(14));
      jobs = std::make_shared<const env::peak_jobs>(env::generate_peak_jobs(operators::catalogue(), d, po));
      r.pool = {{"generated", {{"rows", rows}, {"seed", pool_seed}, {"allocators", d.allocators}}}};
    }
    const bool tty = ::isatty(STDERR_FILENO) != 0;
    const auto started = std::chrono::steady_clock::now();
    auto last = started;
    r.progress = [&](std::uint64_t done) {
      const auto now = std::chrono::steady_clock::now();
      if (!tty || (now - last < std::chrono::milliseconds(200) && done != r.steps)) return;
      last = now;
      std::fprintf(stderr, "\r\033[Ktrain: %llu/%llu steps", static_cast<unsigned long long>(done),
                   static_cast<unsigned long long>(r.steps));
    };
    const auto t = env::train_peak_predict(jobs, r);
    r.progress = {};  // it refers to this callback's locals
    if (tty) std::fprintf(stderr, "\r\033[K");
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    remove_stale_partials_of(std::filesystem::path(out) / "policy.json");
    env::write_peak_training(out, t);
    if (json)
      return print_json({{"env", environment},
                         {"policy", r.policy},
                         {"steps", r.steps},
                         {"seconds", seconds},
                         {"out", out},
                         {"test", t.policy["test"]},
                         {"random_test", t.policy["random_test"]}});
    std::printf("%s trained %llu steps on %llu train jobs in %.2f s\n", r.policy.c_str(),
                static_cast<unsigned long long>(r.steps),
                static_cast<unsigned long long>(t.policy["pool"]["train_jobs"].get<std::uint64_t>()), seconds);
    std::printf("  test jobs: mean reward %.4g (random %.4g), out of memory %.1f%% (random %.1f%%)\n",
                t.test.mean_reward, t.random_test.mean_reward, 100 * t.test.oom_rate, 100 * t.random_test.oom_rate);
    std::printf("wrote %s/policy.json, curve.csv\n", out.c_str());
  });
}

}  // namespace dwsr::cli
