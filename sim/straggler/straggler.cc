#include "sim/straggler/straggler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <random>

#include "sim/util/error.h"
#include "sim/util/parallel.h"
#include "sim/util/statistics.h"

namespace stacksim::straggler {
namespace {

// Integers and coin flips from the raw 64-bit stream: the standard library's
// distributions may differ between implementations, these do not.
uint64_t UniformBelow(std::mt19937_64& rng, uint64_t n) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;  // reject the uneven tail
  for (;;) {
    uint64_t x = rng();
    if (x < limit) return x % n;
  }
}

double UniformUnit(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

std::mt19937_64 Stream(uint64_t seed, uint64_t step) {
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(step),
                    static_cast<uint32_t>(step >> 32)};
  return std::mt19937_64(seq);
}

// Draws the terms that `take` selects: each takes fraction x population units
// (the fractional part by a coin flip, so that 0.1% of 500 nodes is one node
// half of the time) from those no earlier term of this draw took.
std::vector<SlowUnit> Draw(const StragglerSpec& spec, bool transient, bool transient_default, int64_t nodes,
                           int64_t gpus, std::mt19937_64& rng) {
  std::vector<SlowUnit> out;
  std::vector<uint8_t> taken_nodes, taken_gpus;
  std::vector<int64_t> free;
  for (const StragglerTerm& term : spec.terms) {
    bool is_transient = term.persistence == Persistence::kDefault ? transient_default
                                                                  : term.persistence == Persistence::kTransient;
    if (is_transient != transient) continue;
    const bool node = term.scope == Scope::kNode;
    const int64_t population = node ? nodes : gpus;
    std::vector<uint8_t>& taken = node ? taken_nodes : taken_gpus;
    taken.resize(population, 0);
    double expected = term.fraction * static_cast<double>(population);
    int64_t count = static_cast<int64_t>(std::floor(expected));
    if (UniformUnit(rng) < expected - static_cast<double>(count)) ++count;
    free.clear();
    for (int64_t u = 0; u < population; ++u) {
      if (!taken[u]) free.push_back(u);
    }
    count = std::min<int64_t>(count, static_cast<int64_t>(free.size()));
    for (int64_t i = 0; i < count; ++i) {  // partial Fisher-Yates
      int64_t j = i + static_cast<int64_t>(UniformBelow(rng, free.size() - i));
      std::swap(free[i], free[j]);
      taken[free[i]] = 1;
      out.push_back(SlowUnit{term.scope, free[i], term.slowdown});
    }
  }
  return out;
}

}  // namespace

StragglerReplayer::StragglerReplayer(const config::ScenarioConfig& scenario)
    : plan_(scenario.plan), gpus_(scenario.gpus), gpus_per_node_(scenario.topology.gpus_per_node),
      nodes_(scenario.nodes()) {
  step_ = simulate::BuildStep(scenario);
}

StragglerReplayer::~StragglerReplayer() = default;

std::vector<Pattern> StragglerReplayer::SlowReplicaPatterns(const std::vector<SlowUnit>& slow) const {
  const int stages = step_.trace->rank_count();
  std::map<int, Pattern> replicas;  // ordered: patterns come out in replica order
  auto slow_rank = [&](int64_t rank, double slowdown) {
    if (rank < 0 || rank >= gpus_) return;  // a partly filled last node
    ReplicaPosition p = PositionOfRank(plan_, rank);
    auto [it, added] = replicas.try_emplace(p.replica, Pattern(stages, 1.0));
    it->second[p.stage] = std::max(it->second[p.stage], slowdown);
  };
  for (const SlowUnit& u : slow) {
    if (u.slowdown <= 1.0) continue;
    if (u.scope == Scope::kGpu) {
      slow_rank(u.id, u.slowdown);
    } else {
      for (int64_t r = u.id * gpus_per_node_; r < (u.id + 1) * gpus_per_node_; ++r) slow_rank(r, u.slowdown);
    }
  }
  std::vector<Pattern> out;
  for (auto& [replica, pattern] : replicas) out.push_back(std::move(pattern));
  return out;
}

Time StragglerReplayer::Replay(const std::vector<Pattern>& patterns) const {
  return ReplayPatterns(*step_.trace, patterns, *step_.cost, *step_.network);
}

void CheckStragglerOptions(const StragglerOptions& options) {
  if (options.network != "analytic") {
    throw InputError("", "--stragglers",
                     "needs --network analytic (it replays the step many times; SimGrid allows one replay per process)");
  }
  if (options.steps < 1) throw InputError("", "--straggler-steps", "must be at least 1");
}

StragglerResult AnalyzeStragglers(const config::ScenarioConfig& scenario, const StragglerSpec& spec,
                                  const StragglerOptions& options) {
  auto wall0 = std::chrono::steady_clock::now();
  CheckStragglerOptions(options);
  config::ValidatePlan(scenario, scenario.file);
  StragglerReplayer replayer(scenario);
  StragglerResult res;
  res.spec = spec;
  res.options = options;
  res.nodes = replayer.nodes();
  res.gpus = replayer.gpus();

  // The draws: persistent units once, transient ones per step, each from its
  // own stream so that no draw depends on another's count.
  const bool transient_default = options.steps > 1;
  std::mt19937_64 job_rng = Stream(options.seed, 0);
  std::vector<SlowUnit> persistent = Draw(spec, false, transient_default, res.nodes, res.gpus, job_rng);
  std::vector<std::vector<SlowUnit>> transient(options.steps);
  double transient_total = 0;
  for (int step = 0; step < options.steps; ++step) {
    std::mt19937_64 rng = Stream(options.seed, static_cast<uint64_t>(step) + 1);
    transient[step] = Draw(spec, true, transient_default, res.nodes, res.gpus, rng);
    transient_total += static_cast<double>(transient[step].size());
  }
  res.persistent_slow = static_cast<int>(persistent.size());
  res.transient_slow = transient_total / options.steps;

  // Replacing the slowest first: the recovery rows drop a prefix of this order.
  std::stable_sort(persistent.begin(), persistent.end(),
                   [](const SlowUnit& a, const SlowUnit& b) { return a.slowdown > b.slowdown; });
  std::vector<int> replaced_counts = {0};
  for (int k = 1; k < res.persistent_slow; k *= 2) replaced_counts.push_back(k);
  if (res.persistent_slow > 0) replaced_counts.push_back(res.persistent_slow);

  // Every (replacement, step) names a pruned pattern set; equal sets share a replay.
  std::map<std::vector<Pattern>, size_t> index;
  std::vector<const std::vector<Pattern>*> sets;
  auto key_of = [&](std::vector<Pattern> key) {
    auto [it, added] = index.try_emplace(std::move(key), sets.size());
    if (added) sets.push_back(&it->first);
    return it->second;
  };
  const size_t baseline_key = key_of({});
  std::vector<std::vector<size_t>> keys(replaced_counts.size(), std::vector<size_t>(options.steps));
  std::vector<SlowUnit> slow;
  for (size_t c = 0; c < replaced_counts.size(); ++c) {
    for (int step = 0; step < options.steps; ++step) {
      slow.assign(persistent.begin() + replaced_counts[c], persistent.end());
      slow.insert(slow.end(), transient[step].begin(), transient[step].end());
      std::vector<Pattern> replicas = replayer.SlowReplicaPatterns(slow);
      if (c == 0) res.slow_replicas_max = std::max(res.slow_replicas_max, static_cast<int>(replicas.size()));
      keys[c][step] = key_of(PruneDominated(std::move(replicas)));
    }
  }

  std::vector<Time> times(sets.size());
  if (options.progress) options.progress->AddWork(static_cast<int64_t>(sets.size()));
  ParallelFor(static_cast<int64_t>(sets.size()), std::max(1, options.threads), [&](int64_t i, int) {
    times[static_cast<size_t>(i)] = replayer.Replay(*sets[static_cast<size_t>(i)]);
    if (options.progress) options.progress->Add();
  });
  res.replays = static_cast<int>(sets.size());
  for (const auto* set : sets) res.variants_max = std::max(res.variants_max, static_cast<int>(set->size()));
  res.baseline = times[baseline_key];

  auto mean_of = [&](const std::vector<size_t>& ks) {
    double sum = 0;
    for (size_t k : ks) sum += times[k].seconds();
    return Time::FromSeconds(sum / static_cast<double>(ks.size()));
  };
  for (size_t k : keys[0]) res.step_times.push_back(times[k]);
  std::vector<Time> sorted = res.step_times;
  std::sort(sorted.begin(), sorted.end());
  res.mean = mean_of(keys[0]);
  // Nearest rank: a step time that occurred (sim/util/statistics.h).
  res.p50 = NearestRankQuantile(sorted, 0.50);
  res.p90 = NearestRankQuantile(sorted, 0.90);
  res.p99 = NearestRankQuantile(sorted, 0.99);
  res.max = sorted.back();
  res.slowdown = res.mean.seconds() / res.baseline.seconds();
  for (size_t c = 1; c < replaced_counts.size(); ++c) {
    Recovery r;
    r.replaced = replaced_counts[c];
    r.remaining = res.persistent_slow - r.replaced;
    r.mean_step = mean_of(keys[c]);
    r.slowdown = r.mean_step.seconds() / res.baseline.seconds();
    res.recovery.push_back(r);
  }
  res.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return res;
}

}  // namespace stacksim::straggler
