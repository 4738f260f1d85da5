#pragma once
/// \file A policy-gradient agent for environments of discrete actions with
/// action masks (MaskedEnvironment, env/env.hpp): ChunkSchedule, GpuPack.
///
/// - softmax_policy: a softmax over the actions of a small network's
///   logits, masked actions held at probability 0 (their logits are -inf).
///   The network sees feature_map's features (env/policies.hpp: each
///   observation value through a signed log, scaled to [0, 1] by the
///   observation space's bounds, then a constant 1) through one hidden layer
///   of tanh units and a linear output layer with a bias, or, with hidden =
///   0, through the output layer alone (a linear policy).
/// - update(batch): one step of REINFORCE (Williams, 1992) over a batch of
///   whole episodes: each step's return-to-go G_t = sum_k gamma^k r_{t+k},
///   minus a baseline (a ridge regression of G on the features fitted on
///   the previous batch, or the batch's mean G), or, for episodes run in
///   groups that share their exogenous inputs (the same reset seed: GpuPack's
///   arrivals, ChunkSchedule's task), each episode's return minus the mean
///   return of the others of its group at every step (the leave-one-out
///   baseline of Kool, van Hoof and Welling, 2019), the advantages normalized
///   to mean 0 and deviation 1 when asked, then an Adam step (Kingma and
///   Ba, 2015) up the gradient of mean_i(A_i log pi(a_i | s_i) + beta H(pi(. | s_i))),
///   beta the entropy bonus.
/// - train_policy_gradient(env, policy, options): runs episodes with
///   sampled actions, updates the policy after each batch of episodes, and
///   returns a learning curve (mean episode return and length per window of
///   episodes), its episodes in groups of one reset seed if asked;
///   evaluate_policy(env, act, episodes, seed) scores any fixed
///   act(observation, mask).
///
/// Deterministic: the weights are drawn from a xoshiro256** stream of the
/// policy's seed and actions sampled from another (core/random.hpp), by
/// inverting the cumulative probabilities with one uniform draw; softmax,
/// tanh and log use core/random.hpp's portable exp and log. The same seeds
/// give the same weights, actions and curves bit for bit on one build; the
/// features go through libm's log2 (feature_map's convention) and Eigen's
/// products may group sums differently on another build or CPU, so other
/// machines may differ in the last bits, and trajectories from there on.
///
/// Memory: the weights, Adam's two moments and the gradient, 4 x (hidden x
/// d + actions x (hidden + 1)) doubles (actions x d for a linear policy;
/// d = observation size + 1, the bias included); a batch holds its steps'
/// observations and masks. act() and greedy() allocate nothing.

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "dwsr/core/random.hpp"
#include "dwsr/env/bandit_training.hpp"
#include "dwsr/env/env.hpp"
#include "dwsr/env/policies.hpp"
#include "dwsr/env/spaces.hpp"
#include "dwsr/error.hpp"

namespace dwsr::env {

/// What REINFORCE subtracts from each return-to-go.
enum class pg_baseline {
  none,        ///< nothing: the plain estimator, of high variance
  batch_mean,  ///< the mean return-to-go of the batch's steps
  linear,      ///< a ridge regression of the return-to-go on the features, fitted on the previous batch
  /// the episode's return minus the mean return of the other episodes of its
  /// group (pg_batch::group episodes of one reset seed), at each of its steps
  group,
};

/// softmax_policy's settings: the network and how update() learns.
struct reinforce_options {
  std::size_t hidden = 32;      ///< tanh units of the hidden layer; 0: a linear policy
  double learning_rate = 0.01;  ///< Adam's step size
  double gamma = 1.0;           ///< discount of the returns-to-go, in [0, 1]
  double entropy = 0.0;         ///< entropy bonus beta, >= 0
  pg_baseline baseline = pg_baseline::linear;
  bool normalize_advantages = true;  ///< scale each batch's advantages to mean 0, deviation 1
  double baseline_ridge = 1e-3;      ///< the linear baseline's ridge lambda, > 0
  double adam_beta1 = 0.9, adam_beta2 = 0.999, adam_epsilon = 1e-8;
  std::uint64_t seed = 0;  ///< the initial weights and the sampling stream
};

/// Whole episodes of experience, their steps in order: what update() learns
/// from. train_policy_gradient fills one; a caller may too (append()).
struct pg_batch {
  std::size_t observation_size = 0, actions = 0;
  std::size_t group = 1;                  ///< consecutive episodes sharing their exogenous inputs (pg_baseline::group)
  std::vector<float> observations;        ///< steps x observation_size
  std::vector<std::uint8_t> masks;        ///< steps x actions, 1 where valid
  std::vector<std::int64_t> taken;        ///< the action of each step
  std::vector<double> rewards;            ///< the reward of each step
  std::vector<std::size_t> episode_ends;  ///< one past each episode's last step
  std::vector<double> advantages;         ///< per step; update() fills it

  std::size_t steps() const noexcept { return taken.size(); }
  std::size_t episodes() const noexcept { return episode_ends.size(); }
  /// Adds one step. Throws invalid_input for buffers of the wrong size.
  void append(std::span<const float> obs, std::span<const std::uint8_t> mask, std::int64_t action, double reward) {
    if (obs.size() != observation_size || mask.size() != actions)
      throw invalid_input("a step of " + std::to_string(obs.size()) + " observation values and " +
                          std::to_string(mask.size()) + " mask bytes; expected " + std::to_string(observation_size) +
                          " and " + std::to_string(actions));
    observations.insert(observations.end(), obs.begin(), obs.end());
    masks.insert(masks.end(), mask.begin(), mask.end());
    taken.push_back(action);
    rewards.push_back(reward);
  }
  /// Ends the episode of the steps appended since the last end.
  void end_episode() { episode_ends.push_back(steps()); }
  /// Empties the batch, keeping its sizes and capacity.
  void clear() noexcept {
    observations.clear();
    masks.clear();
    taken.clear();
    rewards.clear();
    episode_ends.clear();
    advantages.clear();
  }
};

namespace detail {

/// tanh from portable_exp: (1 - e^-2|x|) / (1 + e^-2|x|), signed.
inline double portable_tanh(double x) noexcept {
  const double a = std::fabs(x);
  if (a > 20) return std::copysign(1.0, x);
  const double t = portable_exp(-2 * a);
  return std::copysign((1 - t) / (1 + t), x);
}

/// e^x for x <= 0, 0 below -80 (e^-80 ~ 1.8e-35: nothing beside the largest term, e^0).
inline double softmax_exp(double x) noexcept { return x < -80 ? 0.0 : portable_exp(x); }

}  // namespace detail

/// A softmax policy over masked discrete actions (see the file comment).
class softmax_policy {
 public:
  /// A policy for observations of `space` and actions of `actions`, its
  /// hidden weights drawn uniformly in +-sqrt(6 / (fan in + fan out)) from
  /// the seed's stream, its output layer zero (the first policy is uniform
  /// over the valid actions). Throws invalid_input for no action or a
  /// setting out of range.
  softmax_policy(const box_space& space, discrete_space actions, const reinforce_options& o = {})
      : map_(space), options_(o), n_(actions.n), rng_(stream_key(o.seed, 2, 0)) {
    validate(o, actions);
    const auto d = Eigen::Index(map_.dim());
    const auto h = Eigen::Index(o.hidden);
    const auto n = Eigen::Index(n_);
    const Eigen::Index size = h == 0 ? n * d : h * d + n * (h + 1);
    theta_ = Eigen::VectorXd::Zero(size);
    m_ = v_ = grad_ = Eigen::VectorXd::Zero(size);
    x_.resize(d);
    hid_.resize(h);
    z_.resize(n);
    p_.resize(n);
    lp_.resize(n);
    gz_.resize(n);
    gh_.resize(h);
    if (h > 0) {
      xoshiro256ss init(stream_key(o.seed, 2, 1));
      const double bound = std::sqrt(6.0 / double(d + h));
      for (Eigen::Index k = 0; k < h * d; ++k) theta_[k] = init.uniform(-bound, bound);
    }
    baseline_w_ = Eigen::VectorXd::Zero(d);
  }

  /// An action drawn from the policy for `obs` among the valid actions of
  /// `mask` (one byte per action, nonzero where valid; a masked action is
  /// never drawn). Throws invalid_input for buffers of the wrong size or a
  /// mask without a valid action.
  std::int64_t act(std::span<const float> obs, std::span<const std::uint8_t> mask) {
    probabilities(obs, mask);
    const double u = rng_.uniform();
    double cum = 0;
    std::int64_t last = -1;
    for (std::int64_t k = 0; k < n_; ++k) {
      if (!mask[std::size_t(k)]) continue;
      last = k;
      cum += p_[k];
      if (u < cum) return k;
    }
    return last;  // u beyond the rounded sum of the probabilities
  }

  /// The most probable valid action for `obs` (the lowest of ties): how a
  /// trained policy is scored. Throws as act() does.
  std::int64_t greedy(std::span<const float> obs, std::span<const std::uint8_t> mask) {
    logits(obs, mask);
    std::int64_t best = -1;
    for (std::int64_t k = 0; k < n_; ++k)
      if (mask[std::size_t(k)] && (best < 0 || z_[k] > z_[best])) best = k;
    return best;
  }

  /// The probability of each action for `obs` under `mask` (0 where masked).
  /// Throws as act() does.
  Eigen::VectorXd action_probabilities(std::span<const float> obs, std::span<const std::uint8_t> mask) {
    probabilities(obs, mask);
    return p_;
  }

  /// One REINFORCE step over `batch` (see the file comment): fills its
  /// advantages, moves the weights by Adam up the objective's gradient, and
  /// refits the linear baseline on the batch. Throws invalid_input for an
  /// empty batch, one whose steps do not all belong to an episode, or of
  /// other sizes than the policy's; under the group baseline, for a group
  /// of fewer than 2 episodes or a batch of other than whole groups.
  void update(pg_batch& batch) {
    check(batch);
    advantages(batch);
    gradient(batch, batch.advantages, grad_);
    adam_step();
    if (options_.baseline == pg_baseline::linear) fit_baseline(batch);
    ++updates_;
  }

  /// The objective update() climbs, for `batch` with `weights` per step in
  /// place of the advantages: mean_i(w_i log pi(a_i | s_i) + beta H(pi(. | s_i))).
  double objective(const pg_batch& batch, std::span<const double> weights) {
    check_weights(batch, weights);
    double sum = 0;
    for (std::size_t i = 0; i < batch.steps(); ++i) {
      const auto [logp, ent] = sample(batch, i);
      sum += weights[i] * logp + options_.entropy * ent;
    }
    return sum / double(batch.steps());
  }

  /// The gradient of objective(batch, weights) with respect to parameters(),
  /// written into `out` (resized to parameter_count()).
  void gradient(const pg_batch& batch, std::span<const double> weights, Eigen::VectorXd& out) {
    check_weights(batch, weights);
    out = Eigen::VectorXd::Zero(theta_.size());
    const auto d = Eigen::Index(map_.dim()), h = Eigen::Index(options_.hidden), n = Eigen::Index(n_);
    for (std::size_t i = 0; i < batch.steps(); ++i) {
      const auto [logp, ent] = sample(batch, i);
      (void)logp;
      // d/dz of w log p_a: w (onehot(a) - p); of beta H: -beta p_k (log p_k + H), both 0 where masked.
      const auto mask = std::span(batch.masks).subspan(i * batch.actions, batch.actions);
      for (Eigen::Index k = 0; k < n; ++k) {
        double g = 0;
        if (mask[std::size_t(k)] && p_[k] > 0) g = -weights[i] * p_[k] - options_.entropy * p_[k] * (lp_[k] + ent);
        gz_[k] = g;
      }
      gz_[batch.taken[i]] += weights[i];
      if (h == 0) {
        Eigen::Map<Eigen::MatrixXd>(out.data(), n, d).noalias() += gz_ * x_.transpose();
      } else {
        Eigen::Map<Eigen::MatrixXd> g1(out.data(), h, d), g2(out.data() + h * d, n, h + 1);
        g2.leftCols(h).noalias() += gz_ * hid_.transpose();
        g2.col(h) += gz_;
        gh_.noalias() = w2().leftCols(h).transpose() * gz_;
        gh_.array() *= 1 - hid_.array().square();
        g1.noalias() += gh_ * x_.transpose();
      }
    }
    out /= double(batch.steps());
  }

  /// The weights, flat: a linear policy's actions x d matrix, or the hidden
  /// layer's hidden x d matrix then the output layer's actions x (hidden +
  /// 1) (its last column the bias), each in column-major order.
  const Eigen::VectorXd& parameters() const noexcept { return theta_; }
  /// Replaces the weights (parameter_count() values; Adam's moments stay).
  void set_parameters(const Eigen::VectorXd& theta) {
    if (theta.size() != theta_.size())
      throw invalid_input("a policy of " + std::to_string(theta_.size()) + " weights given " +
                          std::to_string(theta.size()));
    theta_ = theta;
  }
  std::size_t parameter_count() const noexcept { return std::size_t(theta_.size()); }
  std::size_t actions() const noexcept { return std::size_t(n_); }
  /// Features per observation (observation size + 1).
  std::size_t dim() const noexcept { return map_.dim(); }
  const reinforce_options& options() const noexcept { return options_; }
  /// update() calls so far.
  std::uint64_t updates() const noexcept { return updates_; }

  /// The learned policy as JSON: the network's settings and its layers, each
  /// a list of rows (from_json reads it back; Adam's moments, the baseline
  /// and the sampling stream's position are training state, not kept).
  nlohmann::json to_json() const {
    nlohmann::json layers = nlohmann::json::array();
    auto rows = [](const auto& m) {
      nlohmann::json r = nlohmann::json::array();
      for (Eigen::Index i = 0; i < m.rows(); ++i) {
        std::vector<double> row(std::size_t(m.cols()));
        for (Eigen::Index j = 0; j < m.cols(); ++j) row[std::size_t(j)] = m(i, j);
        r.push_back(std::move(row));
      }
      return r;
    };
    if (options_.hidden > 0) layers.push_back(rows(w1()));
    layers.push_back(rows(w2()));
    return {{"policy", "softmax"},          {"hidden", options_.hidden}, {"features", map_.dim()},
            {"actions", std::uint64_t(n_)}, {"gamma", options_.gamma},   {"entropy", options_.entropy},
            {"seed", options_.seed},        {"updates", updates_},       {"layers", std::move(layers)}};
  }

  /// The policy to_json() wrote, for observations of `space` (the space it
  /// was trained on); its sampling stream restarts from the stored seed.
  /// Throws invalid_input naming the first entry that is missing, of the
  /// wrong size or not a number.
  static softmax_policy from_json(const box_space& space, const nlohmann::json& doc) {
    auto field = [&](const nlohmann::json& j, const char* key) -> const nlohmann::json& {
      if (!j.is_object() || !j.contains(key)) throw invalid_input(std::string("softmax policy state without ") + key);
      return j[key];
    };
    auto count = [&](const char* key) {
      const auto& j = field(doc, key);
      if (!j.is_number_unsigned()) throw invalid_input(std::string("softmax policy state: ") + key + " is not a count");
      return j.get<std::uint64_t>();
    };
    auto number = [&](const nlohmann::json& j, const std::string& what) {
      if (!j.is_number()) throw invalid_input("softmax policy state: " + what + " is not a number");
      return j.get<double>();
    };
    reinforce_options o;
    o.hidden = std::size_t(count("hidden"));
    o.seed = count("seed");
    o.gamma = number(field(doc, "gamma"), "gamma");
    o.entropy = number(field(doc, "entropy"), "entropy");
    const auto n = count("actions");
    softmax_policy p(space, {std::int64_t(n)}, o);
    if (count("features") != p.dim())
      throw invalid_input("softmax policy state of " + std::to_string(count("features")) +
                          " features for an observation space of " + std::to_string(p.dim() - 1) +
                          " values; expected " + std::to_string(p.dim()));
    p.updates_ = count("updates");
    const auto& layers = field(doc, "layers");
    const std::size_t expected = o.hidden > 0 ? 2 : 1;
    if (!layers.is_array() || layers.size() != expected)
      throw invalid_input("softmax policy state: layers is not an array of " + std::to_string(expected));
    auto read = [&](const nlohmann::json& j, auto m, const std::string& what) {
      if (!j.is_array() || j.size() != std::size_t(m.rows()))
        throw invalid_input("softmax policy state: " + what + " is not " + std::to_string(m.rows()) + " rows");
      for (Eigen::Index i = 0; i < m.rows(); ++i) {
        const auto& row = j[std::size_t(i)];
        if (!row.is_array() || row.size() != std::size_t(m.cols()))
          throw invalid_input("softmax policy state: " + what + " row " + std::to_string(i) + " is not " +
                              std::to_string(m.cols()) + " numbers");
        for (Eigen::Index c = 0; c < m.cols(); ++c)
          m(i, c) = number(row[std::size_t(c)], what + " row " + std::to_string(i));
      }
    };
    if (o.hidden > 0) read(layers[0], p.w1(), "the hidden layer");
    read(layers[expected - 1], p.w2(), "the output layer");
    return p;
  }

 private:
  using matrix_map = Eigen::Map<Eigen::MatrixXd>;
  using const_matrix_map = Eigen::Map<const Eigen::MatrixXd>;

  static void validate(const reinforce_options& o, discrete_space actions) {
    if (actions.n < 1)
      throw invalid_input("a softmax policy over " + std::to_string(actions.n) + " actions; expected at least 1");
    if (o.hidden > 4096)
      throw invalid_input("a hidden layer of " + std::to_string(o.hidden) + " units; expected 0 to 4096");
    if (!(o.learning_rate > 0) || !std::isfinite(o.learning_rate))
      throw invalid_input("learning rate " + std::to_string(o.learning_rate) + ": expected a finite number > 0");
    if (!(o.gamma >= 0 && o.gamma <= 1)) throw invalid_input("gamma " + std::to_string(o.gamma) + ": expected 0 to 1");
    if (!(o.entropy >= 0) || !std::isfinite(o.entropy))
      throw invalid_input("entropy bonus " + std::to_string(o.entropy) + ": expected a finite number >= 0");
    if (!(o.baseline_ridge > 0) || !std::isfinite(o.baseline_ridge))
      throw invalid_input("baseline ridge " + std::to_string(o.baseline_ridge) + ": expected a finite number > 0");
    if (!(o.adam_beta1 >= 0 && o.adam_beta1 < 1) || !(o.adam_beta2 >= 0 && o.adam_beta2 < 1) || !(o.adam_epsilon > 0) ||
        !std::isfinite(o.adam_epsilon))
      throw invalid_input("Adam betas " + std::to_string(o.adam_beta1) + ", " + std::to_string(o.adam_beta2) +
                          " and epsilon " + std::to_string(o.adam_epsilon) + ": expected betas in [0, 1), epsilon > 0");
  }

  Eigen::Index hidden() const noexcept { return Eigen::Index(options_.hidden); }
  matrix_map w1() noexcept { return {theta_.data(), hidden(), Eigen::Index(map_.dim())}; }
  const_matrix_map w1() const noexcept { return {theta_.data(), hidden(), Eigen::Index(map_.dim())}; }
  matrix_map w2() noexcept {
    const auto h = hidden();
    return h == 0 ? matrix_map(theta_.data(), n_, Eigen::Index(map_.dim()))
                  : matrix_map(theta_.data() + h * Eigen::Index(map_.dim()), n_, h + 1);
  }
  const_matrix_map w2() const noexcept {
    const auto h = hidden();
    return h == 0 ? const_matrix_map(theta_.data(), n_, Eigen::Index(map_.dim()))
                  : const_matrix_map(theta_.data() + h * Eigen::Index(map_.dim()), n_, h + 1);
  }

  /// z_ = the logits of `obs` (x_ its features, hid_ the hidden layer); the
  /// mask's size and at least one valid action checked.
  void logits(std::span<const float> obs, std::span<const std::uint8_t> mask) {
    if (mask.size() != std::size_t(n_))
      throw invalid_input("an action mask of " + std::to_string(mask.size()) + " bytes; expected " +
                          std::to_string(n_));
    if (std::none_of(mask.begin(), mask.end(), [](std::uint8_t b) { return b != 0; }))
      throw invalid_input("an action mask with every one of the " + std::to_string(n_) +
                          " actions masked; expected at least one valid action in the state");
    map_(obs, x_);
    const auto h = hidden();
    if (h == 0) {
      z_.noalias() = w2() * x_;
      return;
    }
    hid_.noalias() = w1() * x_;
    for (Eigen::Index k = 0; k < h; ++k) hid_[k] = detail::portable_tanh(hid_[k]);
    const auto w = w2();
    z_.noalias() = w.leftCols(h) * hid_;
    z_ += w.col(h);
  }

  /// p_ = the masked softmax of the logits, lp_ its logarithm (0 where masked);
  /// returns the entropy.
  double probabilities(std::span<const float> obs, std::span<const std::uint8_t> mask) {
    logits(obs, mask);
    double top = 0;
    bool any = false;
    for (Eigen::Index k = 0; k < n_; ++k)
      if (mask[std::size_t(k)] && (!any || z_[k] > top)) top = z_[k], any = true;
    double sum = 0;
    for (Eigen::Index k = 0; k < n_; ++k) sum += p_[k] = mask[std::size_t(k)] ? detail::softmax_exp(z_[k] - top) : 0;
    const double log_sum = portable_log(sum);
    double ent = 0;
    for (Eigen::Index k = 0; k < n_; ++k) {
      if (!mask[std::size_t(k)]) {
        p_[k] = lp_[k] = 0;
        continue;
      }
      p_[k] /= sum;
      lp_[k] = z_[k] - top - log_sum;
      if (p_[k] > 0) ent -= p_[k] * lp_[k];
    }
    return ent;
  }

  /// log pi(a_i | s_i) and the entropy of step i of `batch` (p_, lp_ and the
  /// network's scratch left as that step's).
  std::pair<double, double> sample(const pg_batch& batch, std::size_t i) {
    const auto obs = std::span(batch.observations).subspan(i * batch.observation_size, batch.observation_size);
    const auto mask = std::span(batch.masks).subspan(i * batch.actions, batch.actions);
    const double ent = probabilities(obs, mask);
    const auto a = batch.taken[i];
    if (!mask[std::size_t(a)])
      throw invalid_input("a batch step " + std::to_string(i) + " took action " + std::to_string(a) +
                          ", which its mask marks invalid");
    return {lp_[a], ent};
  }

  void check(const pg_batch& b) const {
    if (b.observation_size != map_.dim() - 1 || b.actions != std::size_t(n_))
      throw invalid_input("a batch of " + std::to_string(b.observation_size) + " observation values and " +
                          std::to_string(b.actions) + " actions; expected " + std::to_string(map_.dim() - 1) + " and " +
                          std::to_string(n_));
    if (b.steps() == 0) throw invalid_input("a batch of 0 steps; expected at least 1");
    if (b.episode_ends.empty() || b.episode_ends.back() != b.steps() ||
        !std::is_sorted(b.episode_ends.begin(), b.episode_ends.end()))
      throw invalid_input("a batch whose episodes end at other than its last step; expected end_episode() after each");
    if (b.observations.size() != b.steps() * b.observation_size || b.masks.size() != b.steps() * b.actions ||
        b.rewards.size() != b.steps())
      throw invalid_input("a batch whose buffers disagree on its " + std::to_string(b.steps()) + " steps");
    for (auto a : b.taken)
      if (a < 0 || a >= n_)
        throw invalid_input("a batch action " + std::to_string(a) + "; expected 0 to " + std::to_string(n_ - 1));
  }
  void check_weights(const pg_batch& b, std::span<const double> w) const {
    check(b);
    if (w.size() != b.steps())
      throw invalid_input(std::to_string(w.size()) + " weights for a batch of " + std::to_string(b.steps()) +
                          " steps; expected one per step");
  }

  /// batch.advantages = returns-to-go minus the baseline, normalized if asked.
  void advantages(pg_batch& b) {
    const std::size_t steps = b.steps();
    b.advantages.assign(steps, 0);
    std::size_t begin = 0;
    for (auto end : b.episode_ends) {
      double g = 0;
      for (std::size_t i = end; i-- > begin;) b.advantages[i] = g = b.rewards[i] + options_.gamma * g;
      begin = end;
    }
    returns_ = b.advantages;
    if (options_.baseline == pg_baseline::group) {
      group_advantages(b);
    } else if (options_.baseline == pg_baseline::batch_mean) {
      double mean = 0;
      for (double g : returns_) mean += g;
      mean /= double(steps);
      for (auto& a : b.advantages) a -= mean;
    } else if (options_.baseline == pg_baseline::linear && fitted_) {
      for (std::size_t i = 0; i < steps; ++i) {
        map_(std::span(b.observations).subspan(i * b.observation_size, b.observation_size), x_);
        b.advantages[i] -= baseline_w_.dot(x_);
      }
    }
    if (options_.normalize_advantages && steps > 1) {
      double mean = 0, var = 0;
      for (double a : b.advantages) mean += a;
      mean /= double(steps);
      for (double a : b.advantages) var += (a - mean) * (a - mean);
      const double sd = std::sqrt(var / double(steps));
      for (auto& a : b.advantages) a = sd > 1e-12 ? (a - mean) / sd : 0;
    }
  }

  /// Every step of episode i: R_i - the mean of R_j over the other episodes
  /// j of its group, R the episode's (discounted) return from its first step.
  void group_advantages(pg_batch& b) const {
    const std::size_t k = b.group, n = b.episodes();
    if (k < 2 || n % k != 0)
      throw invalid_input("a batch of " + std::to_string(n) + " episodes in groups of " + std::to_string(k) +
                          " under the group baseline; expected whole groups of at least 2 episodes");
    std::vector<double> ret(n);
    std::size_t begin = 0;
    for (std::size_t e = 0; e < n; ++e) {
      ret[e] = returns_[begin];
      begin = b.episode_ends[e];
    }
    for (std::size_t g = 0; g < n; g += k) {
      double sum = 0;
      for (std::size_t e = g; e < g + k; ++e) sum += ret[e];
      for (std::size_t e = g; e < g + k; ++e) {
        const double a = ret[e] - (sum - ret[e]) / double(k - 1);
        for (std::size_t i = e ? b.episode_ends[e - 1] : 0; i < b.episode_ends[e]; ++i) b.advantages[i] = a;
      }
    }
  }

  /// The ridge regression of the batch's returns-to-go on its features.
  void fit_baseline(const pg_batch& b) {
    const auto d = Eigen::Index(map_.dim());
    Eigen::MatrixXd xtx = Eigen::MatrixXd::Identity(d, d) * options_.baseline_ridge;
    Eigen::VectorXd xty = Eigen::VectorXd::Zero(d);
    for (std::size_t i = 0; i < b.steps(); ++i) {
      map_(std::span(b.observations).subspan(i * b.observation_size, b.observation_size), x_);
      xtx.selfadjointView<Eigen::Lower>().rankUpdate(x_);
      xty += returns_[i] * x_;
    }
    baseline_w_ = xtx.selfadjointView<Eigen::Lower>().ldlt().solve(xty);
    fitted_ = true;
  }

  /// theta += lr mhat / (sqrt(vhat) + eps): Adam, ascending.
  void adam_step() {
    const double b1 = options_.adam_beta1, b2 = options_.adam_beta2;
    b1_power_ *= b1;
    b2_power_ *= b2;
    m_ = b1 * m_ + (1 - b1) * grad_;
    v_ = b2 * v_ + (1 - b2) * grad_.cwiseProduct(grad_);
    const double c1 = 1 - b1_power_, c2 = 1 - b2_power_;
    for (Eigen::Index k = 0; k < theta_.size(); ++k)
      theta_[k] += options_.learning_rate * (m_[k] / c1) / (std::sqrt(v_[k] / c2) + options_.adam_epsilon);
  }

  feature_map map_;
  reinforce_options options_;
  std::int64_t n_;
  xoshiro256ss rng_;
  Eigen::VectorXd theta_, m_, v_, grad_;
  double b1_power_ = 1, b2_power_ = 1;
  std::uint64_t updates_ = 0;
  Eigen::VectorXd baseline_w_;
  bool fitted_ = false;
  std::vector<double> returns_;
  // scratch: the features, hidden units, logits, probabilities, log-probabilities and gradients at hand
  Eigen::VectorXd x_, hid_, z_, p_, lp_, gz_, gh_;
};

/// Uniformly random valid actions from a seeded xoshiro256** stream: the
/// baseline a masked learner must beat.
class masked_random_policy {
 public:
  /// A policy over `actions`, its stream seeded with `seed`. Throws
  /// invalid_input for a space without actions.
  masked_random_policy(discrete_space actions, std::uint64_t seed) : n_(actions.n), rng_(stream_key(seed, 3, 0)) {
    if (n_ < 1) throw invalid_input("a random policy over " + std::to_string(n_) + " actions; expected at least 1");
  }
  /// One of the valid actions of `mask`, each equally likely. Throws
  /// invalid_input for a mask of the wrong size or without a valid action.
  std::int64_t act(std::span<const float>, std::span<const std::uint8_t> mask) {
    if (mask.size() != std::size_t(n_))
      throw invalid_input("an action mask of " + std::to_string(mask.size()) + " bytes; expected " +
                          std::to_string(n_));
    const auto valid = std::uint64_t(std::count_if(mask.begin(), mask.end(), [](std::uint8_t b) { return b != 0; }));
    if (valid == 0)
      throw invalid_input("an action mask with every one of the " + std::to_string(n_) +
                          " actions masked; expected at least one valid action in the state");
    auto pick = rng_.next() % valid;
    for (std::int64_t k = 0;; ++k)
      if (mask[std::size_t(k)] && pick-- == 0) return k;
  }

 private:
  std::int64_t n_;
  xoshiro256ss rng_;
};

/// One point of an episodic learning curve: the episodes of its window,
/// ending with episode `episode`.
struct episode_curve_point {
  std::uint64_t episode = 0;  ///< episodes finished so far (the window's last)
  std::uint64_t step = 0;     ///< steps taken so far
  double mean_return = 0;     ///< undiscounted, over the window's episodes
  double mean_length = 0;     ///< steps per episode over the window
  bool operator==(const episode_curve_point&) const = default;
};

/// train_policy_gradient's settings.
struct pg_training_options {
  std::uint64_t episodes = 2000;  ///< episodes to learn from (when steps is 0)
  std::uint64_t steps = 0;        ///< when nonzero: learn from episodes until this many steps (the last one finished)
  std::uint64_t seed = 0;         ///< the environment's first reset
  std::uint64_t batch = 16;       ///< episodes per update (the last batch may hold fewer)
  std::uint64_t window = 100;     ///< episodes per point of the curve (the last point may hold fewer)
  /// Consecutive episodes reset with one seed (the same exogenous inputs,
  /// different actions), a seed per group from a stream of `seed`; 1: the
  /// environment's stream continues from episode to episode.
  std::uint64_t group = 1;
  std::uint64_t max_episode_steps = 1'000'000;  ///< an episode longer than this is an error, not a hang
  /// Called after each window with the episodes finished so far (progress reports).
  std::function<void(std::uint64_t)> progress = {};
};

/// Trains `policy` in `env` for o.episodes episodes of actions sampled from
/// it (or, with o.steps, until the group of the episode that reaches o.steps
/// steps ends), one update() per o.batch episodes, and returns the learning
/// curve. With o.group 1 the environment is seeded once, with o.seed, and
/// continues its stream; otherwise each group of o.group episodes is reset
/// with one seed. Throws invalid_input for 0 episodes, a batch, window or
/// group of 0, a batch or episode count that is not a multiple of the group,
/// the group baseline with groups of 1, an episode longer than
/// o.max_episode_steps, or a state without a valid action.
template <MaskedEnvironment Env>
std::vector<episode_curve_point> train_policy_gradient(Env& env, softmax_policy& policy, const pg_training_options& o) {
  if (o.episodes == 0 && o.steps == 0) throw invalid_input("training for 0 episodes; expected at least 1");
  if (o.batch == 0) throw invalid_input("a batch of 0 episodes; expected at least 1");
  if (o.window == 0) throw invalid_input("a learning-curve window of 0 episodes; expected at least 1");
  if (o.group == 0 || o.batch % o.group != 0 || (o.steps == 0 && o.episodes % o.group != 0))
    throw invalid_input("episodes in groups of " + std::to_string(o.group) + " with batches of " +
                        std::to_string(o.batch) + (o.steps ? "" : " and " + std::to_string(o.episodes) + " episodes") +
                        "; expected a group of at least 1 that divides both");
  if (policy.options().baseline == pg_baseline::group && o.group < 2)
    throw invalid_input("the group baseline with episodes in groups of " + std::to_string(o.group) +
                        "; expected groups of at least 2");
  const std::size_t n = std::size_t(env.action_space().n);
  std::vector<float> obs(env.observation_space().size());
  std::vector<std::uint8_t> mask(n);
  typename Env::info_type info{};
  pg_batch batch{.observation_size = obs.size(), .actions = n, .group = std::size_t(o.group)};
  xoshiro256ss group_seeds(stream_key(o.seed, 4, 0));
  std::uint64_t group_seed = 0;
  std::vector<episode_curve_point> curve;
  std::uint64_t steps = 0, in_window = 0, window_steps = 0;
  double window_return = 0;
  for (std::uint64_t e = 1;; ++e) {
    if (o.group > 1) {
      if (e % o.group == 1) group_seed = group_seeds.next();
      env.reset(group_seed, obs, info);
    } else if (e == 1) {
      env.reset(o.seed, obs, info);
    } else {
      env.reset(std::nullopt, obs, info);
    }
    double ret = 0;
    for (std::uint64_t t = 1;; ++t) {
      if (t > o.max_episode_steps)
        throw invalid_input("an episode longer than " + std::to_string(o.max_episode_steps) +
                            " steps; expected the environment to end it (or a larger max_episode_steps)");
      env.action_mask(mask);
      const auto action = policy.act(obs, mask);
      batch.observations.insert(batch.observations.end(), obs.begin(), obs.end());
      batch.masks.insert(batch.masks.end(), mask.begin(), mask.end());
      const auto r = env.step(action, obs, info);
      batch.taken.push_back(action);
      batch.rewards.push_back(r.reward);
      ret += r.reward;
      ++steps;
      ++window_steps;
      if (r.terminated || r.truncated) break;
    }
    batch.end_episode();
    window_return += ret;
    ++in_window;
    const bool last = e % o.group == 0 && (o.steps ? steps >= o.steps : e == o.episodes);
    if (batch.episodes() == o.batch || last) {
      policy.update(batch);
      batch.clear();
    }
    if (in_window == o.window || last) {
      curve.push_back({e, steps, window_return / double(in_window), double(window_steps) / double(in_window)});
      window_return = 0;
      in_window = window_steps = 0;
      if (o.progress) o.progress(e);
    }
    if (last) return curve;
  }
}

/// What evaluate_policy reports.
struct policy_score {
  std::uint64_t episodes = 0;
  double mean_return = 0;     ///< undiscounted
  double mean_length = 0;     ///< steps per episode
  double truncated_rate = 0;  ///< share of episodes cut short rather than terminated
  double oom_rate = 0;        ///< share of episodes with a step that ran out of memory (an info with `oom`)
};

/// Runs `act` (observation, mask -> action; not learning) in `env` for
/// `episodes` episodes from `seed`, and scores it. A heuristic that reads the
/// environment's state instead (advisor_action) takes (env, observation,
/// mask): it is given evaluate_policy's own copy. Throws invalid_input for 0
/// episodes or an episode longer than max_episode_steps.
template <MaskedEnvironment Env, class Act>
policy_score evaluate_policy(Env env, Act&& act, std::uint64_t episodes, std::uint64_t seed,
                             std::uint64_t max_episode_steps = 1'000'000) {
  if (episodes == 0) throw invalid_input("evaluating over 0 episodes; expected at least 1");
  std::vector<float> obs(env.observation_space().size());
  std::vector<std::uint8_t> mask(std::size_t(env.action_space().n));
  typename Env::info_type info{};
  policy_score score{.episodes = episodes};
  for (std::uint64_t e = 0; e < episodes; ++e) {
    if (e == 0)
      env.reset(seed, obs, info);
    else
      env.reset(std::nullopt, obs, info);
    bool oom = false;
    for (std::uint64_t t = 1;; ++t) {
      if (t > max_episode_steps)
        throw invalid_input("an episode longer than " + std::to_string(max_episode_steps) +
                            " steps; expected the environment to end it");
      env.action_mask(mask);
      const auto o = std::span<const float>(obs);
      const auto m = std::span<const std::uint8_t>(mask);
      std::int64_t action;
      if constexpr (std::is_invocable_v<Act&, const Env&, std::span<const float>, std::span<const std::uint8_t>>)
        action = act(std::as_const(env), o, m);
      else
        action = act(o, m);
      const auto r = env.step(action, obs, info);
      score.mean_return += r.reward;
      score.mean_length += 1;
      oom = oom || detail::ran_out(info);
      if (r.terminated || r.truncated) {
        score.truncated_rate += r.truncated && !r.terminated;
        break;
      }
    }
    score.oom_rate += oom;
  }
  score.mean_return /= double(episodes);
  score.mean_length /= double(episodes);
  score.truncated_rate /= double(episodes);
  score.oom_rate /= double(episodes);
  return score;
}

}  // namespace dwsr::env
