#include "sim/workload/moe_routing.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace stacksim::workload {
namespace {

double D(int64_t v) { return static_cast<double>(v); }

// log Gamma(x) without std::lgamma's write of the global signgam, which
// races when runs are simulated on several threads.
double LogGamma(double x) {
  int sign = 0;
  return lgamma_r(x, &sign);
}

// log C(n, k); -infinity when k is out of range.
double LogChoose(double n, double k) {
  if (k < 0 || k > n) return -std::numeric_limits<double>::infinity();
  return LogGamma(n + 1) - LogGamma(k + 1) - LogGamma(n - k + 1);
}

// Per-expert share of routed tokens under the plan's routing.
std::vector<double> ExpertShares(const config::ModelConfig& model, const config::PlanConfig& plan) {
  const int64_t E = model.num_experts;
  std::vector<double> w(static_cast<size_t>(E), 1.0);
  if (plan.routing == config::Routing::kZipf) {
    for (int64_t i = 0; i < E; ++i) w[i] = std::pow(D(i + 1), -plan.zipf_exponent);
  } else if (plan.routing == config::Routing::kHistogram && static_cast<int64_t>(plan.routing_histogram.size()) == E) {
    w = plan.routing_histogram;
  }
  double sum = 0;
  for (double x : w) sum += x;
  for (double& x : w) x /= sum;
  // With top-k routing an expert takes at most 1/k of the copies (a token
  // never picks the same expert twice).
  const double cap = 1.0 / D(std::max<int64_t>(1, model.experts_per_token));
  bool changed = true;
  for (int it = 0; it < 64 && changed; ++it) {
    changed = false;
    double excess = 0, room = 0;
    for (double& x : w) {
      if (x > cap + 1e-12) {
        excess += x - cap;
        x = cap;
        changed = true;
      } else if (x < cap) {
        room += x;
      }
    }
    if (excess > 0 && room > 0) {
      for (double& x : w) {
        if (x < cap) x += excess * x / room;
      }
    }
  }
  return w;
}

}  // namespace

double ExpectedDistinctUnits(int64_t experts, int64_t top_k, int64_t units, int64_t groups, int64_t groups_per_token) {
  if (units <= 1 || experts <= 0) return units == 1 ? 1.0 : 0.0;
  // Without group limits: one group holding every expert, always chosen.
  if (groups <= 1 || groups_per_token <= 0 || groups_per_token >= groups) {
    groups = 1;
    groups_per_token = 1;
  }
  const int64_t per_group = experts / groups;
  const int64_t per_unit = experts / units;
  const double pool = D(groups_per_token * per_group);  // experts a token picks from
  const double log_pool = LogChoose(pool, D(top_k));
  const double log_groups = LogChoose(D(groups), D(groups_per_token));
  double distinct = 0;
  for (int64_t u = 0; u < units; ++u) {
    const int64_t lo = u * per_unit, hi = lo + per_unit;
    // The unit's experts in each group it overlaps (contiguous blocks).
    std::vector<int64_t> in_group;
    for (int64_t g = lo / per_group; g * per_group < hi; ++g) {
      in_group.push_back(std::min(hi, (g + 1) * per_group) - std::max(lo, g * per_group));
    }
    const int c = static_cast<int>(in_group.size());
    // ways[j][x]: sets of j of those groups holding x of the unit's experts.
    std::vector<std::vector<double>> ways(c + 1, std::vector<double>(per_unit + 1, 0.0));
    ways[0][0] = 1;
    for (int64_t a : in_group) {
      for (int j = c - 1; j >= 0; --j) {
        for (int64_t x = per_unit - a; x >= 0; --x) ways[j + 1][x + a] += ways[j][x];
      }
    }
    // P(unit missed) = sum over the chosen groups' overlap with the unit of
    // P(that choice) x P(all top_k experts fall outside the unit's x).
    double missed = 0;
    for (int j = 0; j <= c; ++j) {
      const double log_choice = LogChoose(D(groups - c), D(groups_per_token - j)) - log_groups;
      if (!std::isfinite(log_choice)) continue;
      for (int64_t x = 0; x <= per_unit; ++x) {
        if (ways[j][x] == 0) continue;
        const double log_miss = LogChoose(pool - D(x), D(top_k)) - log_pool;
        if (std::isfinite(log_miss)) missed += ways[j][x] * std::exp(log_choice + log_miss);
      }
    }
    distinct += 1.0 - missed;
  }
  return distinct;
}

double MoeLoadFactor(const config::ModelConfig& model, const config::PlanConfig& plan) {
  if (!model.is_moe()) return 1.0;
  if (plan.capacity_factor > 0) return plan.capacity_factor;
  const std::vector<double> w = ExpertShares(model, plan);
  const int64_t per_rank = model.num_experts / plan.ep;
  double busiest = 0;
  for (int r = 0; r < plan.ep; ++r) {
    double share = 0;
    for (int64_t i = r * per_rank; i < (r + 1) * per_rank; ++i) share += w[i];
    busiest = std::max(busiest, share);
  }
  return std::max(1.0, busiest * plan.ep);
}

double MoeDroppedFraction(const config::ModelConfig& model, const config::PlanConfig& plan) {
  if (!model.is_moe() || plan.capacity_factor <= 0) return 0;
  const std::vector<double> w = ExpertShares(model, plan);
  const double cap = plan.capacity_factor / D(model.num_experts);
  double dropped = 0;
  for (double x : w) dropped += std::max(0.0, x - cap);
  return dropped;
}

}  // namespace stacksim::workload
