#pragma once
/// \file Policies for contextual bandits with discrete actions, such as
/// PeakPredict's quantile bins (env/peak_predict.hpp):
///
/// - random_policy: each action equally likely, from a seeded stream; the
///   baseline a learner must beat;
/// - linucb: LinUCB (Li et al., 2010, disjoint arms): per action a ridge
///   regression of the reward on the observation's features; it picks the
///   action whose predicted reward plus alpha standard errors is highest,
///   so an action it knows little about gets tried.
///
/// Both satisfy BanditPolicy: act(observation) picks an action,
/// learn(observation, action, reward) takes the outcome.
///
/// linucb sees the observation through feature_map: each value through a
/// signed log, sign(x) log2(1 + |x|) (dataset features span bytes and
/// counts over many orders of magnitude), scaled to [0, 1] by the
/// observation space's bounds through the same transform, then a constant 1.
/// It learns from rewards clipped below at reward_floor (the out-of-memory
/// cost by default): PeakPredict's idle-memory cost is unbounded, and one
/// huge over-prediction would otherwise outweigh every other sample of a
/// least-squares fit. What counts as a loss stays the environment's.
///
/// Memory: linucb holds, per action, a d x d matrix and two d-vectors of
/// doubles, d = observation size + 1. act() costs actions x d^2, learn() d^2
/// (the inverse is updated by Sherman-Morrison, never recomputed).
/// Deterministic: the same seed and the same outcomes give the same
/// actions; ties go to the lowest action.

#include <Eigen/Dense>

#include <cmath>
#include <concepts>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dwsr/core/random.hpp"
#include "dwsr/env/peak_predict.hpp"
#include "dwsr/env/spaces.hpp"
#include "dwsr/error.hpp"

namespace dwsr::env {

/// A policy for a contextual bandit with discrete actions (see the file comment).
template <class P>
concept BanditPolicy = requires(P& p, std::span<const float> obs, std::int64_t action, double reward) {
  { p.act(obs) } -> std::same_as<std::int64_t>;
  { p.learn(obs, action, reward) } -> std::same_as<void>;
};

/// The features a linear policy sees (see the file comment): observation
/// size + 1 values, each in [0, 1] for an observation within the space.
class feature_map {
 public:
  /// The map of observations of `space`.
  explicit feature_map(const box_space& space) : lo_(space.size()), scale_(space.size()) {
    for (std::size_t k = 0; k < space.size(); ++k) {
      lo_[k] = squash(space.low[k]);
      const double width = squash(space.high[k]) - lo_[k];
      scale_[k] = width > 0 ? 1 / width : 0;  // a constant feature says nothing
    }
  }
  /// Values of a feature vector: the observation's and the bias.
  std::size_t dim() const noexcept { return lo_.size() + 1; }
  /// Writes the features of `obs` (observation size values) into `out` (dim()).
  void operator()(std::span<const float> obs, Eigen::Ref<Eigen::VectorXd> out) const {
    if (obs.size() != lo_.size())
      throw invalid_input("an observation of " + std::to_string(obs.size()) + " values; expected " +
                          std::to_string(lo_.size()));
    for (std::size_t k = 0; k < lo_.size(); ++k) out[Eigen::Index(k)] = (squash(obs[k]) - lo_[k]) * scale_[k];
    out[Eigen::Index(lo_.size())] = 1;
  }
  /// The signed log: sign(x) log2(1 + |x|).
  static double squash(double x) noexcept { return std::copysign(std::log2(1 + std::fabs(x)), x); }

 private:
  std::vector<double> lo_, scale_;
};

/// Uniformly random actions 0 to n - 1 from a seeded xoshiro256** stream.
class random_policy {
 public:
  /// A policy over `actions`, its stream seeded with `seed`. Throws
  /// invalid_input for a space without actions.
  random_policy(discrete_space actions, std::uint64_t seed) : n_(actions.n), rng_(stream_key(seed, 1, 0)) {
    if (n_ < 1) throw invalid_input("a random policy over " + std::to_string(n_) + " actions; expected at least 1");
  }
  /// An action drawn uniformly (the observation is not looked at).
  std::int64_t act(std::span<const float>) { return std::int64_t(rng_.next() % std::uint64_t(n_)); }
  /// Nothing to learn.
  void learn(std::span<const float>, std::int64_t, double) {}

 private:
  std::int64_t n_;
  xoshiro256ss rng_;
};

/// linucb's settings.
struct linucb_options {
  double alpha = 1.0;                     ///< exploration: standard errors added to the predicted reward
  double ridge = 1.0;                     ///< the ridge regression's lambda (each arm starts from lambda I)
  double reward_floor = peak_oom_reward;  ///< rewards below are learned as this value
};

/// LinUCB with disjoint arms over feature_map (see the file comment).
class linucb {
 public:
  /// A policy for observations of `space` and actions of `actions`, nothing
  /// learned yet. Throws invalid_input for no action, a negative or NaN
  /// alpha, a ridge not positive, or a reward floor that is not finite.
  linucb(const box_space& space, discrete_space actions, const linucb_options& o = {})
      : map_(space), options_(o), x_(Eigen::Index(map_.dim())) {
    if (actions.n < 1)
      throw invalid_input("LinUCB over " + std::to_string(actions.n) + " actions; expected at least 1");
    if (!(o.alpha >= 0) || !std::isfinite(o.alpha))
      throw invalid_input("LinUCB alpha " + std::to_string(o.alpha) + ": expected a finite number >= 0");
    if (!(o.ridge > 0) || !std::isfinite(o.ridge))
      throw invalid_input("LinUCB ridge " + std::to_string(o.ridge) + ": expected a finite number > 0");
    if (!std::isfinite(o.reward_floor))
      throw invalid_input("LinUCB reward floor " + std::to_string(o.reward_floor) + ": expected a finite number");
    const auto d = Eigen::Index(map_.dim());
    arms_.assign(std::size_t(actions.n),
                 arm{Eigen::MatrixXd::Identity(d, d) / o.ridge, Eigen::VectorXd::Zero(d), Eigen::VectorXd::Zero(d), 0});
  }

  /// The action of highest upper confidence bound for `obs`.
  std::int64_t act(std::span<const float> obs) { return best(obs, options_.alpha); }
  /// The action of highest predicted reward (no exploration): how the
  /// learned policy is evaluated.
  std::int64_t greedy(std::span<const float> obs) { return best(obs, 0); }

  /// Adds the outcome of `action` for `obs` to that action's regression.
  /// Throws invalid_input for an action out of range or a NaN reward.
  void learn(std::span<const float> obs, std::int64_t action, double reward) {
    if (action < 0 || action >= std::int64_t(arms_.size()))
      throw invalid_input("LinUCB learns action " + std::to_string(action) + "; expected 0 to " +
                          std::to_string(arms_.size() - 1));
    if (std::isnan(reward)) throw invalid_input("LinUCB learns a NaN reward; expected a number");
    map_(obs, x_);
    auto& a = arms_[std::size_t(action)];
    const Eigen::VectorXd ax = a.a_inv * x_;
    a.a_inv -= (ax * ax.transpose()) / (1 + x_.dot(ax));
    a.b += std::max(reward, options_.reward_floor) * x_;
    a.theta = a.a_inv * a.b;
    ++a.pulls;
  }

  /// Actions.
  std::size_t actions() const noexcept { return arms_.size(); }
  /// Features per observation (observation size + 1).
  std::size_t dim() const noexcept { return map_.dim(); }
  const linucb_options& options() const noexcept { return options_; }
  /// Action k's learned coefficients (dim() values: the features', then the bias).
  const Eigen::VectorXd& theta(std::size_t k) const { return arms_.at(k).theta; }
  /// Action k's inverse design matrix (dim() x dim()).
  const Eigen::MatrixXd& a_inverse(std::size_t k) const { return arms_.at(k).a_inv; }
  /// Action k's sum of reward x features (dim() values).
  const Eigen::VectorXd& b(std::size_t k) const { return arms_.at(k).b; }
  /// Times action k was learned from.
  std::uint64_t pulls(std::size_t k) const { return arms_.at(k).pulls; }

  /// The policy to_json() wrote, for observations of `space` (the space it
  /// was trained on). Throws invalid_input naming the first entry that is
  /// missing, of the wrong size or not a number.
  static linucb from_json(const box_space& space, const nlohmann::json& doc) {
    auto number = [&](const nlohmann::json& j, const std::string& what) {
      if (!j.is_number()) throw invalid_input("LinUCB state: " + what + " is not a number");
      return j.get<double>();
    };
    auto vector = [&](const nlohmann::json& j, std::size_t n, const std::string& what) {
      if (!j.is_array() || j.size() != n)
        throw invalid_input("LinUCB state: " + what + " is not an array of " + std::to_string(n) + " numbers");
      Eigen::VectorXd v(static_cast<Eigen::Index>(n));
      for (std::size_t k = 0; k < n; ++k) v[Eigen::Index(k)] = number(j[k], what);
      return v;
    };
    auto field = [&](const nlohmann::json& j, const char* key) -> const nlohmann::json& {
      if (!j.is_object() || !j.contains(key)) throw invalid_input(std::string("LinUCB state without ") + key);
      return j[key];
    };
    const linucb_options o{.alpha = number(field(doc, "alpha"), "alpha"),
                           .ridge = number(field(doc, "ridge"), "ridge"),
                           .reward_floor = number(field(doc, "reward_floor"), "reward_floor")};
    const auto& arms = field(doc, "arms");
    if (!arms.is_array()) throw invalid_input("LinUCB state: arms is not an array");
    linucb p(space, {std::int64_t(arms.size())}, o);
    const auto d = p.dim();
    for (std::size_t k = 0; k < arms.size(); ++k) {
      const auto where = "arm " + std::to_string(k);
      auto& a = p.arms_[k];
      const auto& rows = field(arms[k], "a_inverse");
      if (!rows.is_array() || rows.size() != d)
        throw invalid_input("LinUCB state: " + where + "'s a_inverse is not " + std::to_string(d) + " rows");
      for (std::size_t r = 0; r < d; ++r) a.a_inv.row(Eigen::Index(r)) = vector(rows[r], d, where + "'s a_inverse row");
      a.b = vector(field(arms[k], "b"), d, where + "'s b");
      a.theta = vector(field(arms[k], "theta"), d, where + "'s theta");
      const auto& pulls = field(arms[k], "pulls");
      if (!pulls.is_number_unsigned()) throw invalid_input("LinUCB state: " + where + "'s pulls is not a count");
      a.pulls = pulls.get<std::uint64_t>();
    }
    return p;
  }

  /// The learned state as JSON: the options, and per action its inverse
  /// design matrix (rows), b, theta and pulls (from_json reads it back).
  nlohmann::json to_json() const {
    nlohmann::json arms = nlohmann::json::array();
    for (const auto& a : arms_) {
      nlohmann::json rows = nlohmann::json::array();
      for (Eigen::Index r = 0; r < a.a_inv.rows(); ++r)
        rows.push_back(std::vector<double>(a.a_inv.row(r).begin(), a.a_inv.row(r).end()));
      arms.push_back({{"a_inverse", std::move(rows)},
                      {"b", std::vector<double>(a.b.begin(), a.b.end())},
                      {"theta", std::vector<double>(a.theta.begin(), a.theta.end())},
                      {"pulls", a.pulls}});
    }
    return {{"alpha", options_.alpha},
            {"ridge", options_.ridge},
            {"reward_floor", options_.reward_floor},
            {"features", map_.dim()},
            {"arms", std::move(arms)}};
  }

 private:
  struct arm {
    Eigen::MatrixXd a_inv;  ///< (lambda I + sum x x^T)^-1
    Eigen::VectorXd b;      ///< sum of reward x
    Eigen::VectorXd theta;  ///< a_inv b
    std::uint64_t pulls;
  };

  std::int64_t best(std::span<const float> obs, double alpha) {
    map_(obs, x_);
    std::int64_t best = 0;
    double top = 0;
    for (std::size_t k = 0; k < arms_.size(); ++k) {
      const auto& a = arms_[k];
      const double score = a.theta.dot(x_) + alpha * std::sqrt(std::max(0.0, x_.dot(a.a_inv * x_)));
      if (k == 0 || score > top) {
        top = score;
        best = std::int64_t(k);
      }
    }
    return best;
  }

  feature_map map_;
  linucb_options options_;
  std::vector<arm> arms_;
  Eigen::VectorXd x_;  // scratch: the features of the observation at hand
};

static_assert(BanditPolicy<random_policy>);
static_assert(BanditPolicy<linucb>);

}  // namespace dwsr::env
