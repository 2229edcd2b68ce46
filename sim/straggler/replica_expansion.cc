#include "sim/straggler/replica_expansion.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

#include "sim/engine/engine.h"

namespace stacksim::straggler {

ReplicaPosition PositionOfRank(const config::PlanConfig& plan, int64_t rank) {
  int64_t rest = rank / (static_cast<int64_t>(plan.tp) * plan.cp);  // drop tp and cp: same position
  ReplicaPosition p;
  if (plan.rank_order == config::RankOrder::kTpCpPpDp) {
    p.stage = static_cast<int>(rest % plan.pp);
    p.replica = static_cast<int>(rest / plan.pp);
  } else {
    p.replica = static_cast<int>(rest % plan.dp);
    p.stage = static_cast<int>(rest / plan.dp);
  }
  return p;
}

// Why a dominated pattern can be dropped. Take patterns a <= b (at every
// pipeline rank). Their variants are clones of one DAG, tied only by the
// replica-spanning collectives, which start when their last member is ready
// and end together for all members. Walk the replay in time order: a
// compute task of a waits for the same kinds of predecessors as its clone in
// b, which (inductively) end no later, and runs no longer; a TP/CP
// collective or pipeline send of a costs what its clone costs; a spanning
// collective ends at the same time for both. So every task of a ends no
// later than its clone in b, and a is never the last member of a spanning
// collective that b also joins: removing a moves no other task, and the step
// (the last end) is unchanged. The healthy pattern is dominated by any slow
// one, so healthy replicas never need simulating once one replica is slow.
//
// The argument needs replay to be monotone in task durations with a fixed
// order per stream, which the engine's dependency and stream rules are. Link
// sharing bends it: transfers on one simulated rank share its links, and a
// spanning collective holds the links of all its members, so a fast
// variant's pipeline send may share a link with a spanning collective in
// the unpruned trace. That couples variants through bandwidth only; the
// tests compare pruned and unpruned expansions.
std::vector<Pattern> PruneDominated(std::vector<Pattern> patterns) {
  std::sort(patterns.begin(), patterns.end(), std::greater<>());
  patterns.erase(std::unique(patterns.begin(), patterns.end()), patterns.end());
  auto dominates = [](const Pattern& big, const Pattern& small) {
    for (size_t i = 0; i < big.size(); ++i) {
      if (small[i] > big[i]) return false;
    }
    return true;
  };
  // Sorted descending, a pattern can only be dominated by an earlier one.
  std::vector<Pattern> kept;
  for (Pattern& p : patterns) {
    bool dominated = false;
    for (const Pattern& k : kept) {
      if (dominates(k, p)) {
        dominated = true;
        break;
      }
    }
    if (!dominated) kept.push_back(std::move(p));
  }
  return kept;
}

bool SpansReplicas(const trace::CommGroup& group) {
  return group.role == trace::GroupRole::kDp || group.role == trace::GroupRole::kExpertDp ||
         group.role == trace::GroupRole::kEp || group.role == trace::GroupRole::kStage;
}

trace::Trace ExpandReplicas(const trace::Trace& base, int variants) {
  const int ranks = base.rank_count();
  const int32_t tasks = static_cast<int32_t>(base.size());
  trace::Trace out;
  out.SetRankCount(ranks * variants);
  // Same ids for labels and streams; names are mapped as met.
  for (const std::string& l : base.labels()) out.InternLabel(l);
  for (const std::string& s : base.streams()) out.InternStream(s);
  out.SetComputeStream(base.compute_stream());
  std::vector<int32_t> name_of;
  for (const trace::Task& t : base.tasks()) {
    if (t.name >= static_cast<int32_t>(name_of.size())) name_of.resize(t.name + 1, -1);
    if (name_of[t.name] < 0) name_of[t.name] = out.InternName(base.name(t.name));
  }

  // Group g of variant v: one group for all variants when it spans
  // replicas, else a copy per variant.
  std::vector<trace::GroupId> group_of(base.groups().size() * variants);
  for (size_t g = 0; g < base.groups().size(); ++g) {
    const trace::CommGroup& group = base.group(static_cast<trace::GroupId>(g));
    if (SpansReplicas(group)) {
      trace::CommGroup joined = group;
      joined.simulated.clear();
      for (trace::RankId r : group.simulated) {
        for (int v = 0; v < variants; ++v) joined.simulated.push_back(v * ranks + r);
      }
      trace::GroupId id = out.AddGroup(std::move(joined));
      for (int v = 0; v < variants; ++v) group_of[g * variants + v] = id;
    } else {
      for (int v = 0; v < variants; ++v) {
        trace::CommGroup copy = group;
        for (trace::RankId& r : copy.simulated) r += v * ranks;
        group_of[g * variants + v] = out.AddGroup(std::move(copy));
      }
    }
  }

  // Collective instances: instance i of variant v is i * variants + v; a
  // spanning call shares one instance across variants: i * variants for a
  // call that already had one, a fresh one past all of those for a
  // single-member call (one per base task).
  int32_t instances = 0;
  for (const trace::Task& t : base.tasks()) {
    if (t.kind == trace::TaskKind::kCollective) instances = std::max(instances, t.comm.instance + 1);
  }
  const int64_t fresh = static_cast<int64_t>(instances) * variants;
  if (fresh + tasks > INT32_MAX) throw std::logic_error("ExpandReplicas: too many collective instances");

  std::vector<trace::TaskId> deps;
  for (int v = 0; v < variants; ++v) {
    const trace::TaskId offset = v * tasks;
    for (trace::TaskId id = 0; id < tasks; ++id) {
      trace::Task t = base.task(id);
      t.rank += v * ranks;
      t.name = name_of[t.name];
      if (t.kind == trace::TaskKind::kCollective) {
        const bool spans = SpansReplicas(base.group(t.comm.group));
        if (spans) {
          t.comm.instance = t.comm.instance >= 0 ? t.comm.instance * variants : static_cast<int32_t>(fresh + id);
        } else if (t.comm.instance >= 0) {
          t.comm.instance = t.comm.instance * variants + v;
        }
        t.comm.group = group_of[static_cast<size_t>(t.comm.group) * variants + v];
      } else if (t.kind == trace::TaskKind::kTransfer) {
        t.transfer.dst += v * ranks;
        t.transfer.group = group_of[static_cast<size_t>(t.transfer.group) * variants + v];
      }
      deps.clear();
      for (const trace::TaskId* d = base.deps_begin(id); d != base.deps_end(id); ++d) deps.push_back(*d + offset);
      out.Add(t, deps);
    }
  }
  return out;
}

Time SlowRankCostModel::Scaled(Time t, trace::RankId rank) const {
  if (rank < 0 || rank >= static_cast<trace::RankId>(factors_.size()) || factors_[rank] == 1.0) return t;
  return t * factors_[rank];
}

Time SlowRankCostModel::ComputeTimeOnRank(const trace::ComputeOp& op, trace::RankId rank) const {
  return Scaled(base_.ComputeTime(op), rank);
}

Time SlowRankCostModel::ComputeTimeBesideComm(const trace::ComputeOp& op, trace::RankId rank) const {
  // The base model's contended time of the same op (its ranks run alike).
  return Scaled(base_.ComputeTimeBesideComm(op, 0), rank);
}

Time ReplayPatterns(const trace::Trace& base, const std::vector<Pattern>& patterns, const engine::CostModel& cost,
                    const engine::NetworkModel& network) {
  if (patterns.empty()) return engine::Engine(cost, network).Replay(base).makespan;
  const int ranks = base.rank_count();
  std::vector<double> factors;
  for (const Pattern& p : patterns) {
    if (static_cast<int>(p.size()) != ranks) throw std::logic_error("ReplayPatterns: pattern size is not the rank count");
    factors.insert(factors.end(), p.begin(), p.end());
  }
  trace::Trace expanded = ExpandReplicas(base, static_cast<int>(patterns.size()));
  SlowRankCostModel slow(cost, std::move(factors));
  return engine::Engine(slow, network).Replay(expanded).makespan;
}

}  // namespace stacksim::straggler
