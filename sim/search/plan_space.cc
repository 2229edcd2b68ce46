#include "sim/search/plan_space.h"

#include <algorithm>
#include <tuple>

#include "sim/memory/memory_model.h"
#include "sim/util/error.h"
#include "sim/workload/layer_ops.h"
#include "sim/workload/placement.h"

namespace stacksim::search {
namespace {

using config::PipelineScheduleKind;
using config::Recompute;
using config::Sharding;

struct ScheduleChoice {
  PipelineScheduleKind kind;
  int vp;
};

// Walks the tree of one scenario (one GPU count). `s` is a private copy whose
// plan is rewritten in place (copying a scenario per check would dominate).
class Enumerator {
 public:
  Enumerator(const SearchSpace& space, config::ScenarioConfig* s, EnumerationCounts* counts,
             std::vector<PlanPoint>* out)
      : space_(space), s_(*s), counts_(*counts), out_(*out) {
    const auto& m = s_.model;
    shardings_ = space.shardings.empty()
                     ? std::vector<Sharding>{Sharding::kNone, Sharding::kZero1, Sharding::kZero2, Sharding::kZero3}
                     : space.shardings;
    recomputes_ = space.recomputes.empty()
                      ? std::vector<Recompute>{Recompute::kNone, Recompute::kSelective, Recompute::kFull}
                      : space.recomputes;
    std::vector<PipelineScheduleKind> kinds =
        space.schedules.empty()
            ? std::vector<PipelineScheduleKind>{PipelineScheduleKind::kOneFOneB, PipelineScheduleKind::kInterleaved,
                                                PipelineScheduleKind::kZeroBubbleH1, PipelineScheduleKind::kDualPipe}
            : space.schedules;
    for (PipelineScheduleKind k : kinds) {
      if (k == PipelineScheduleKind::kInterleaved) {
        for (int64_t vp : Divisors(m.num_layers)) {
          if (vp > 1) schedules_.push_back({k, static_cast<int>(vp)});
        }
      } else {
        schedules_.push_back({k, 1});
      }
    }
    offloads_ = {false};
    if (space.allow_offload && s_.topology.host) offloads_.push_back(true);
    micro_batches_ = Divisors(s_.plan.global_batch);
    has_none_recompute_ = std::find(recomputes_.begin(), recomputes_.end(), Recompute::kNone) != recomputes_.end();
    has_none_sharding_ = std::find(shardings_.begin(), shardings_.end(), Sharding::kNone) != shardings_.end();
  }

  void Run() {
    const int g = s_.gpus;
    std::vector<int64_t> eps = {1};
    if (s_.model.is_moe()) eps = Divisors(s_.model.num_experts);
    for (int64_t tp : Divisors(g)) {
      if (!space_.tensor_parallel.empty() &&
          std::find(space_.tensor_parallel.begin(), space_.tensor_parallel.end(), tp) == space_.tensor_parallel.end()) {
        continue;
      }
      for (int64_t pp : Divisors(g / tp)) {
        for (int64_t cp : space_.allow_context_parallel ? Divisors(g / tp / pp) : std::vector<int64_t>{1}) {
          const int64_t dp = g / tp / pp / cp;
          for (int64_t ep : eps) {
            PlanPoint p;
            p.gpus = g;
            p.tp = static_cast<int>(tp);
            p.pp = static_cast<int>(pp);
            p.cp = static_cast<int>(cp);
            p.dp = static_cast<int>(dp);
            p.ep = static_cast<int>(ep);
            // MoE with TP requires SP: the permissive choice where it is allowed.
            p.sequence_parallel = s_.model.is_moe() && tp > 1 && space_.allow_sequence_parallel;
            Degrees(p);
            if (PipelineInnerChangesPlacement(p)) {
              p.rank_order = config::RankOrder::kTpCpPpDp;
              Degrees(p);
            }
          }
        }
      }
    }
  }

 private:
  // Whether the pipeline-inner rank order places this point differently from
  // the default one, and ValidatePlan allows it (its rank-order rule, decided
  // here without an exception per point). Elsewhere it would only repeat the
  // default order's plans: with pp or dp 1 the two orders are one, with tp x
  // cp filling the domain neither puts pp or dp inside it, and within one
  // domain everything is on NVLink either way.
  bool PipelineInnerChangesPlacement(const PlanPoint& p) const {
    const int64_t domain = workload::DomainSize(s_.topology);
    const int64_t block = static_cast<int64_t>(p.tp) * p.cp * p.pp;
    return p.pp > 1 && p.dp > 1 && p.cp == 1 && p.ep == 1 && !(s_.model.is_moe() && p.tp > 1) &&
           p.tp * p.cp < domain && p.gpus > domain && (domain % block == 0 || block % domain == 0);
  }

  std::vector<bool> SpChoices(const PlanPoint& p) const {
    if (p.tp > 1 && space_.allow_sequence_parallel) return {false, true};
    return {false};
  }
  int64_t SpLeaves(const PlanPoint& p) const { return static_cast<int64_t>(SpChoices(p).size()); }
  int64_t BelowSchedule() const {
    return static_cast<int64_t>(micro_batches_.size()) * static_cast<int64_t>(recomputes_.size());
  }
  int64_t BelowSp() const { return static_cast<int64_t>(schedules_.size()) * BelowSchedule(); }
  int64_t BelowSharding(const PlanPoint& p) const { return SpLeaves(p) * BelowSp(); }
  int64_t BelowDegrees(const PlanPoint& p) const {
    return static_cast<int64_t>(shardings_.size() * offloads_.size()) * BelowSharding(p);
  }

  // Runs ValidatePlan on the point; on failure counts `leaves` plans under its key.
  bool Check(const PlanPoint& p, int64_t leaves) {
    s_.plan = ApplyPoint(s_.plan, p);
    try {
      config::ValidatePlan(s_, s_.file);
      return true;
    } catch (const InputError& e) {
      Invalid(e.key_path(), e.what(), leaves);
      return false;
    }
  }
  void Invalid(const std::string& key, const std::string& message, int64_t leaves) {
    counts_.enumerated += leaves;
    counts_.invalid[key] += leaves;
    if (!counts_.invalid_example.count(key)) counts_.invalid_example[key] = message;
  }

  void Degrees(PlanPoint p) {
    if (!Check(p, BelowDegrees(p))) return;
    for (Sharding sh : shardings_) {
      for (bool off : offloads_) {
        PlanPoint q = p;
        q.sharding = sh;
        q.offload = off;
        if (!Check(q, BelowSharding(q))) continue;
        // zero1 without data parallelism shards nothing: the same trace and
        // memory as none (dense models; MoE experts shard over expert-DP).
        // Its valid plans are counted as equivalent, its invalid ones as such.
        equivalent_subtree_ =
            sh == Sharding::kZero1 && !off && has_none_sharding_ && p.dp * p.cp == 1 && !s_.model.is_moe();
        Sp(q);
        equivalent_subtree_ = false;
      }
    }
  }

  void Sp(const PlanPoint& p) {
    for (bool sp : SpChoices(p)) {
      PlanPoint q = p;
      q.sequence_parallel = sp;
      if (!Check(q, BelowSp())) continue;
      for (const ScheduleChoice& sc : schedules_) {
        PlanPoint r = q;
        r.schedule = sc.kind;
        r.vp = sc.vp;
        r.micro_batch = 1;  // the most micro-batches: the schedules' rules are weakest
        std::string key = ScheduleRule(r);
        if (!key.empty()) {
          Invalid(key, key_message_, BelowSchedule());
          continue;
        }
        if (!Check(r, BelowSchedule())) continue;
        MicroBatches(r);
      }
    }
  }

  // The schedule/vp and micro-batch rules of ValidatePlan, in its order and
  // under its keys, without an exception per plan ("" when they pass).
  // ValidatePlan still checks every plan that passes them.
  std::string ScheduleRule(const PlanPoint& p) {
    const int64_t layers = s_.model.num_layers;
    const int64_t per_step = static_cast<int64_t>(p.micro_batch) * p.dp;
    if (p.vp > 1 && p.pp < 2) return Rule("plan.vp", "vp > 1 needs pp > 1");
    if (!s_.plan.uneven_stages && layers % (static_cast<int64_t>(p.pp) * p.vp) != 0) {
      return Rule("plan.vp", "pp x vp does not divide the layers");
    }
    if (s_.plan.uneven_stages && layers < static_cast<int64_t>(p.pp) * p.vp) {
      return Rule("plan.pp", "fewer layers than pp x vp");
    }
    if (s_.plan.global_batch % per_step != 0) {
      return Rule("training.global_batch", "global batch is not a multiple of micro_batch x dp");
    }
    const int64_t m = s_.plan.global_batch / per_step;
    if (p.schedule == PipelineScheduleKind::kInterleaved && m % p.pp != 0) {
      return Rule("training.global_batch", "interleaving needs micro-batches % pp == 0");
    }
    if (p.schedule == PipelineScheduleKind::kDualPipe) {
      if (p.pp % 2 != 0) return Rule("plan.pp", "DualPipe needs an even pp");
      if (m % 2 != 0 || m < 2 * p.pp) return Rule("training.global_batch", "DualPipe needs an even number of at least 2 x pp micro-batches");
    }
    return "";
  }
  std::string Rule(const char* key, const char* message) {
    key_message_ = s_.file + ": " + key + ": " + message;
    return key;
  }

  void MicroBatches(const PlanPoint& p) {
    for (int64_t mb : micro_batches_) {
      PlanPoint q = p;
      q.micro_batch = static_cast<int>(mb);
      const int64_t leaves = static_cast<int64_t>(recomputes_.size());
      std::string key = ScheduleRule(q);
      if (!key.empty()) {
        Invalid(key, key_message_, leaves);
        continue;
      }
      if (!Check(q, leaves)) continue;
      const bool selective_is_none = has_none_recompute_ && SelectiveIsNone(q);
      for (Recompute r : recomputes_) {
        PlanPoint leaf = q;
        leaf.recompute = r;
        if ((r == Recompute::kSelective && selective_is_none) || equivalent_subtree_) {
          ++counts_.enumerated;
          ++counts_.equivalent;
          continue;
        }
        if (!Check(leaf, 1)) continue;  // (ValidatePlan has no recompute rule today)
        ++counts_.enumerated;
        ++counts_.candidates;
        out_.push_back(leaf);
      }
    }
  }

  // Selective recomputation re-runs core attention only when the attention
  // kernel stores its score matrix; with fused (flash) attention it has no
  // ops and saves nothing, so it is plan "none" under another name.
  bool SelectiveIsNone(const PlanPoint& p) {
    auto key = std::make_tuple(p.tp, p.cp, p.ep, p.sequence_parallel, p.micro_batch);
    auto it = selective_cache_.find(key);
    if (it != selective_cache_.end()) return it->second;
    s_.plan = ApplyPoint(s_.plan, p);
    auto shape = workload::LayerShape::From(s_.model, s_.plan, s_.seq_len, s_.profile);
    std::vector<workload::LayerShape> shapes = {shape};
    if (s_.model.is_moe()) shapes.push_back(shape.Moe(s_.model, s_.plan));
    bool same = true;
    for (const auto& sh : shapes) {
      same = same && workload::SelectiveRecompute(sh).empty() &&
             memory::LayerActivations(sh, Recompute::kSelective) == memory::LayerActivations(sh, Recompute::kNone);
    }
    selective_cache_[key] = same;
    return same;
  }

  const SearchSpace& space_;
  config::ScenarioConfig& s_;
  EnumerationCounts& counts_;
  std::vector<PlanPoint>& out_;
  std::vector<Sharding> shardings_;
  std::vector<Recompute> recomputes_;
  std::vector<ScheduleChoice> schedules_;
  std::vector<bool> offloads_;
  std::vector<int64_t> micro_batches_;
  bool has_none_recompute_ = true;
  bool has_none_sharding_ = true;
  bool equivalent_subtree_ = false;
  std::string key_message_;
  std::map<std::tuple<int, int, int, bool, int>, bool> selective_cache_;
};

}  // namespace

std::vector<int64_t> Divisors(int64_t n) {
  std::vector<int64_t> small, large;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    small.push_back(d);
    if (d != n / d) large.push_back(n / d);
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

config::PlanConfig ApplyPoint(const config::PlanConfig& base, const PlanPoint& p) {
  config::PlanConfig c = base;
  c.tp = p.tp;
  c.pp = p.pp;
  c.dp = p.dp;
  c.cp = p.cp;
  c.ep = p.ep;
  c.vp = p.vp;
  c.rank_order = p.rank_order;
  c.micro_batch = p.micro_batch;
  c.schedule = p.schedule;
  c.recompute = p.recompute;
  c.sharding = p.sharding;
  c.sequence_parallel = p.sequence_parallel;
  c.offload_optimizer = p.offload ? config::OffloadTarget::kHost : config::OffloadTarget::kNone;
  c.offload_optimizer_fraction = 1.0;
  c.offload_params = config::OffloadTarget::kNone;
  // The scenario's all-to-all overlap (its own or its framework's recipe)
  // holds on every plan that can run it.
  c.moe_a2a_overlap = base.moe_a2a_overlap && config::MoeA2aOverlapRuns(c);
  return c;
}

std::string PlanName(const PlanPoint& p) {
  std::string s = "tp" + std::to_string(p.tp) + " pp" + std::to_string(p.pp) + " dp" + std::to_string(p.dp);
  if (p.cp > 1) s += " cp" + std::to_string(p.cp);
  if (p.ep > 1) s += " ep" + std::to_string(p.ep);
  if (p.vp > 1) s += " vp" + std::to_string(p.vp);
  s += " mb" + std::to_string(p.micro_batch);
  s += std::string(" ") + config::ScheduleName(p.schedule);
  if (p.sequence_parallel) s += " sp";
  s += std::string(" recompute=") + config::RecomputeName(p.recompute);
  s += std::string(" ") + config::ShardingName(p.sharding);
  if (p.offload) s += " offload=host";
  if (p.rank_order != config::RankOrder::kTpCpDpPp) s += std::string(" order=") + config::RankOrderName(p.rank_order);
  return s;
}

std::string PlacementText(const PlanPoint& p, int domain_gpus) {
  // Ranks walk tp fastest, then cp, then dp and pp in the plan's order. A
  // dimension has min(degree, room) ranks in a domain, where room is what
  // the faster dimensions leave of it.
  struct Dim {
    const char* name;
    int degree;
  };
  const bool pp_inner = p.rank_order == config::RankOrder::kTpCpPpDp;
  const Dim dims[] = {{"tp", p.tp}, {"cp", p.cp}, pp_inner ? Dim{"pp", p.pp} : Dim{"dp", p.dp},
                      pp_inner ? Dim{"dp", p.dp} : Dim{"pp", p.pp}};
  std::string out;
  int64_t room = std::max(1, domain_gpus);
  for (const Dim& d : dims) {
    if (room <= 1) break;
    if (d.degree <= 1) continue;
    int64_t inside = std::min<int64_t>(d.degree, room);
    // Only whole strides share a domain: the count must divide the room.
    while (inside > 1 && room % inside != 0) --inside;
    if (inside <= 1) break;
    if (!out.empty()) out += " ";
    out += std::string(d.name) + std::to_string(inside);
    room /= inside;
  }
  return out.empty() ? "-" : out;
}

int64_t EnumerationCounts::invalid_total() const {
  int64_t n = 0;
  for (const auto& [key, count] : invalid) n += count;
  return n;
}

std::vector<PlanPoint> EnumeratePlans(const SearchSpace& space, EnumerationCounts* counts) {
  std::vector<int> gpus = space.gpu_counts;
  if (gpus.empty()) gpus.push_back(space.scenario.gpus);
  std::sort(gpus.begin(), gpus.end());
  gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
  std::vector<PlanPoint> out;
  for (int g : gpus) {
    if (g < 1) throw InputError("", "--gpus", "a GPU count must be positive (got " + std::to_string(g) + ")");
    config::ScenarioConfig s = space.scenario;
    s.gpus = g;
    Enumerator(space, &s, counts, &out).Run();
  }
  return out;
}

}  // namespace stacksim::search
