#include "sim/search/search.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <limits>
#include <optional>
#include <map>
#include <memory>
#include <queue>

#include "sim/engine/engine.h"
#include "sim/memory/memory_model.h"
#include "sim/search/step_bound.h"
#include "sim/simulate/simulate.h"
#include "sim/simulate/step_replay.h"
#include "sim/util/error.h"
#include "sim/util/parallel.h"
#include "sim/workload/placement.h"
#include "sim/workload/training_step.h"

namespace stacksim::search {
namespace {

struct Candidate {
  PlanPoint point;
  int scenario = 0;   // index into the per-GPU-count scenarios
  Time bound;
  double risk = 1;    // pessimistic: the range's high end per predicted second
  double score_bound = 0;
};

struct MemoryCheck {
  bool fits = true;       // with the planning reserve
  bool fits_hbm = true;   // without it
  bool host_fits = true;
  Bytes peak;
  memory::PlanReserve reserve;
};

struct Evaluated {
  size_t candidate = 0;
  Time step;
  double score = 0;
  Bytes peak;
};

// Plans whose traces are the same in every task: zero1 and zero2 differ only
// in memory (training_step treats them alike), and without data parallelism
// a dense model's optimizer shards nothing (no reduction, same optimizer
// step). Tested in search_test.cc against built traces.
PlanPoint TraceKey(const PlanPoint& p, bool moe) {
  PlanPoint k = p;
  if (k.sharding == config::Sharding::kZero2) k.sharding = config::Sharding::kZero1;
  if (!moe && p.dp * p.cp == 1 && k.sharding != config::Sharding::kZero3) k.sharding = config::Sharding::kNone;
  return k;
}

// Model FLOPs of one step (what MFU divides by) as simulate::Simulate counts
// them; they depend on model, sequence and batch only. Simulate computes them
// before its memory check, so a copy with no HBM returns right there, without
// building a trace: one formula, in simulate.cc.
double ModelFlops(const config::ScenarioConfig& s, const config::PlanConfig& any_valid_plan) {
  config::ScenarioConfig probe = s;
  probe.plan = any_valid_plan;
  probe.profile.hbm_capacity.value = Bytes{0};
  return simulate::Simulate(probe).model_flops.value;
}

}  // namespace

const char* ObjectiveName(Objective o) {
  switch (o) {
    case Objective::kTime: return "time";
    case Objective::kThroughput: return "throughput";
    case Objective::kCost: return "cost";
    case Objective::kEnergy: return "energy";
  }
  return "?";
}

Objective ParseObjective(const std::string& text, const std::string& origin) {
  for (Objective o : {Objective::kTime, Objective::kThroughput, Objective::kCost, Objective::kEnergy}) {
    if (text == ObjectiveName(o)) return o;
  }
  throw InputError(origin, "", "unknown objective '" + text + "' (time, throughput, cost, energy)");
}

const char* RankingName(Ranking r) { return r == Ranking::kPessimistic ? "pessimistic" : "expected"; }

Ranking ParseRanking(const std::string& text, const std::string& origin) {
  for (Ranking r : {Ranking::kExpected, Ranking::kPessimistic}) {
    if (text == RankingName(r)) return r;
  }
  throw InputError(origin, "", "unknown ranking '" + text + "' (expected, pessimistic)");
}

Time SimulateStep(const config::ScenarioConfig& scenario, const config::PlanConfig& plan) {
  config::ScenarioConfig s = scenario;
  s.plan = plan;
  return simulate::ReplayStep(simulate::BuildStep(s)).makespan;
}

ThreadRunner::ThreadRunner(int threads)
    : threads_(Workers(threads)) {}

std::vector<Time> ThreadRunner::Run(const std::vector<SimulationJob>& jobs) const {
  std::vector<Time> out(jobs.size());
  ParallelFor(static_cast<int64_t>(jobs.size()), threads_,
              [&](int64_t i, int) { out[i] = SimulateStep(*jobs[i].scenario, jobs[i].plan); });
  return out;
}

std::vector<int> GpuCountsInRange(int lo, int hi, const config::TopologyConfig& topology) {
  if (lo < 1 || hi < lo) {
    throw InputError("--gpus", "", "expected a positive count or a range LO..HI with LO <= HI (got " +
                                       std::to_string(lo) + ".." + std::to_string(hi) + ")");
  }
  const int g = std::max(1, topology.gpus_per_node);
  std::vector<int> out;
  if (lo == hi && lo < g) return {lo};
  for (int n = (lo + g - 1) / g * g; n <= hi; n += g) out.push_back(n);
  if (out.empty()) {
    throw InputError("--gpus", "", "no whole number of " + std::to_string(g) + "-GPU nodes of topology " +
                                       topology.name + " lies in " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  return out;
}

std::vector<int> ParseGpuRange(const std::string& text, const config::TopologyConfig& topology) {
  auto number = [&](const std::string& t) {
    if (t.empty() || t.size() > 9 || t.find_first_not_of("0123456789") != std::string::npos) {
      throw InputError("--gpus", "", "expected a GPU count N or a range LO..HI, got '" + text + "'");
    }
    return std::stoi(t);
  };
  const size_t dots = text.find("..");
  if (dots == std::string::npos) {
    int n = number(text);
    return GpuCountsInRange(n, n, topology);
  }
  return GpuCountsInRange(number(text.substr(0, dots)), number(text.substr(dots + 2)), topology);
}

namespace {

// GPU counts beyond the topology file's max_nodes grow its fabric
// (config::GrowFabricTo), once for the largest count: the smaller ones keep
// every level they reached before, so one grown fabric serves them all.
SearchSpace WithFabricForLargestCount(const SearchSpace& requested) {
  SearchSpace space = requested;
  config::TopologyConfig& t = space.scenario.topology;
  int64_t gpus = space.scenario.gpus;
  for (int g : space.gpu_counts) gpus = std::max<int64_t>(gpus, g);
  if (t.gpus_per_node > 0) config::GrowFabricTo(t, (gpus + t.gpus_per_node - 1) / t.gpus_per_node);
  return space;
}

}  // namespace

SearchResult Search(const SearchSpace& requested, const SearchOptions& options) {
  const SearchSpace space = WithFabricForLargestCount(requested);
  const auto wall0 = std::chrono::steady_clock::now();
  if (options.top < 1) throw InputError("--top", "", "must be at least 1");
  if (options.batch < 1) throw InputError("--batch", "", "must be at least 1");
  const config::ScenarioConfig& base = space.scenario;
  SearchResult result;
  result.objective = options.objective;
  result.economics = options.economics;
  result.tokens_per_step = base.tokens_per_step();
  result.scenario = base.name;
  result.model = base.model.name;
  result.topology = base.topology.name;
  result.gpu = base.topology.gpu;
  result.seq_len = base.seq_len;
  result.global_batch = base.plan.global_batch;
  result.domain_gpus = workload::DomainSize(base.topology);
  result.threads = Workers(options.threads);
  result.top = options.top;
  const Economics& econ = options.economics;
  const std::string topology_where =
      base.topology_file.empty() ? std::string("topology ") + base.topology.name : base.topology_file;
  if (options.objective == Objective::kCost && econ.gpu_hour_usd <= 0) {
    throw InputError(topology_where, "gpu_hour_usd",
                     "--objective cost needs a GPU-hour price for GPU '" + base.topology.gpu +
                         "': give the topology a \"gpu_hour_usd\" (USD per GPU-hour), add it to " + config::DataRoot() +
                         "/economics/gpus.json, or pass --gpu-hour-usd");
  }
  if (options.objective == Objective::kEnergy && econ.gpu_watts <= 0) {
    throw InputError(config::DataRoot() + "/economics/gpus.json", "gpus." + base.topology.gpu + ".tdp_watts",
                     "--objective energy needs the power of GPU '" + base.topology.gpu +
                         "': add its tdp_watts there or pass --gpu-watts");
  }
  result.objective_unit = options.objective == Objective::kCost     ? "USD per 1M tokens"
                          : options.objective == Objective::kEnergy ? "kWh per 1M tokens"
                                                                    : "s";

  // The error table: ranges for ranked plans, and the pessimistic factors.
  std::optional<uncertainty::ErrorTable> owned_table;
  const uncertainty::ErrorTable* table = options.error_table;
  if (table == nullptr && !options.error_table_path.empty() && std::filesystem::exists(options.error_table_path)) {
    owned_table = uncertainty::LoadErrorTableFile(options.error_table_path);
    table = &*owned_table;
    // Relative to the data root, so that the output is the same in every checkout.
    const std::string root = config::DataRoot() + "/";
    result.error_table = options.error_table_path.rfind(root, 0) == 0 ? options.error_table_path.substr(root.size())
                                                                       : options.error_table_path;
  }
  if (options.ranking == Ranking::kPessimistic && (table == nullptr || table->runs.empty())) {
    throw InputError(options.error_table_path, "",
                     "--rank pessimistic needs the validation error table (no runs found): regenerate it with "
                     "`stacksim validate ... --write-error-table`");
  }
  result.ranking = options.ranking;
  result.headroom = options.headroom;
  result.reserve_basis = memory::PlanningReserveBasis(options.headroom);

  // 1. Enumerate.
  std::vector<PlanPoint> points = EnumeratePlans(space, &result.counts.enumeration);
  result.gpu_counts = space.gpu_counts.empty() ? std::vector<int>{base.gpus} : space.gpu_counts;
  std::sort(result.gpu_counts.begin(), result.gpu_counts.end());
  result.gpu_counts.erase(std::unique(result.gpu_counts.begin(), result.gpu_counts.end()), result.gpu_counts.end());
  std::vector<config::ScenarioConfig> scenarios;
  std::map<int, int> scenario_of;
  for (int g : result.gpu_counts) {
    scenario_of[g] = static_cast<int>(scenarios.size());
    scenarios.push_back(base);
    scenarios.back().gpus = g;
  }
  const double mtokens = static_cast<double>(result.tokens_per_step) / 1e6;
  // Pessimistic: the range's high end per predicted second, which depends on
  // the scale band (GPU count) and parallelism family only (the GPU class is
  // the search's): one range per pair, looked up per candidate.
  const bool moe_model = base.model.is_moe();
  std::map<std::pair<int, std::string>, double> high_factor;
  if (options.ranking == Ranking::kPessimistic) {
    for (size_t i = 0; i < scenarios.size(); ++i) {
      uncertainty::RunFeatures f = uncertainty::FeaturesOf(scenarios[i]);
      for (const char* family : uncertainty::kParallelismFamilies) {
        f.family = family;
        auto range = uncertainty::EstimateStepRange(*table, f, 1.0, uncertainty::OptionsFor(*table));
        high_factor[{scenarios[i].gpus, family}] = range ? range->high_s : 1.0;
      }
    }
  }
  auto risk = [&](const PlanPoint& p, const config::PlanConfig& plan) {
    if (options.ranking != Ranking::kPessimistic) return 1.0;
    return high_factor.at({p.gpus, uncertainty::ParallelismFamily(plan, moe_model)});
  };
  auto score_factor = [&](int gpus) {
    switch (options.objective) {
      case Objective::kTime:
      case Objective::kThroughput:
        return 1.0;
      case Objective::kCost:
        return econ.gpu_hour_usd * gpus / 3600.0 / mtokens;
      case Objective::kEnergy:
        return econ.gpu_watts * gpus / 3.6e6 / mtokens;
    }
    return 1.0;
  };

  // 2. Bound and sort. Per-layer costs are what a bound costs (op lists,
  // collective prices) and depend on (tp, cp, ep, sp, micro-batch) only, so
  // each thread takes whole groups of candidates sharing them.
  const int workers = Workers(options.threads);
  std::vector<std::unique_ptr<StepTimeBound>> bounds;
  for (int w = 0; w < workers; ++w) bounds.push_back(std::make_unique<StepTimeBound>(base));
  std::vector<Candidate> cands(points.size());
  {
    auto cost_key = [](const PlanPoint& p) {
      return std::make_tuple(p.tp, p.cp, p.ep, p.sequence_parallel, p.micro_batch,
                             p.schedule == config::PipelineScheduleKind::kDualPipe);
    };
    std::vector<size_t> order(points.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return cost_key(points[a]) < cost_key(points[b]); });
    std::vector<size_t> group_begin;
    for (size_t i = 0; i < order.size(); ++i) {
      if (i == 0 || cost_key(points[order[i]]) != cost_key(points[order[i - 1]])) group_begin.push_back(i);
    }
    group_begin.push_back(order.size());
    ParallelFor(static_cast<int64_t>(group_begin.size()) - 1, options.threads, [&](int64_t g, int worker) {
      for (size_t k = group_begin[g]; k < group_begin[g + 1]; ++k) {
        const size_t i = order[k];
        Candidate& c = cands[i];
        c.point = points[i];
        c.scenario = scenario_of.at(c.point.gpus);
        const config::PlanConfig plan = ApplyPoint(base.plan, c.point);
        c.bound = bounds[worker]->Bound(plan, c.point.gpus);
        c.risk = risk(c.point, plan);
        c.score_bound = score_factor(c.point.gpus) * c.risk * c.bound.seconds();
      }
    });
  }
  std::sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
    if (a.score_bound != b.score_bound) return a.score_bound < b.score_bound;
    return a.point < b.point;
  });

  // 3. Rounds, best bound first. Candidates are refined in fixed chunks (in
  // sorted order, as far as the threshold allows): memory checks, then the
  // pipeline bound of those that fit. Refined candidates wait in a heap
  // ordered by their refined bound; a round takes the best `batch` of them
  // while no unrefined candidate could still be better.
  ThreadRunner local(options.threads);
  const PlanRunner& runner = options.runner ? *options.runner : static_cast<const PlanRunner&>(local);
  const bool moe = base.model.is_moe();
  std::vector<config::ScenarioConfig> scratch(workers, base);
  std::vector<MemoryCheck> memory(cands.size());
  std::vector<double> refined(cands.size(), 0);
  constexpr size_t kRefineChunk = 64;  // fixed: results must not depend on threads
  SearchCounts& counts = result.counts;
  auto heap_after = [&](size_t a, size_t b) {  // min-heap on (refined score, point)
    if (refined[a] != refined[b]) return refined[a] > refined[b];
    return cands[b].point < cands[a].point;
  };
  std::priority_queue<size_t, std::vector<size_t>, decltype(heap_after)> heap(heap_after);
  size_t pos = 0;  // next candidate to refine
  double threshold = std::numeric_limits<double>::infinity();
  auto refine_next_chunk = [&] {
    size_t end = pos;
    while (end < cands.size() && end - pos < kRefineChunk && cands[end].score_bound <= threshold) ++end;
    const size_t begin = pos;
    ParallelFor(static_cast<int64_t>(end - begin), options.threads, [&](int64_t k, int worker) {
      const size_t j = begin + static_cast<size_t>(k);
      config::ScenarioConfig& s = scratch[worker];
      s.gpus = cands[j].point.gpus;
      s.plan = ApplyPoint(base.plan, cands[j].point);
      MemoryCheck m;
      for (const auto& f : memory::EstimateMemory(s)) m.peak = std::max(m.peak, f.total());
      m.reserve = memory::PlanningReserve(s, m.peak, options.headroom);
      m.fits_hbm = m.peak <= s.profile.hbm_capacity.value;
      m.fits = m.peak + m.reserve.required <= s.profile.hbm_capacity.value;
      if (m.fits && s.plan.offload_optimizer != config::OffloadTarget::kNone) {
        try {
          memory::CheckOffloadCapacity(s, s.file);
        } catch (const InputError&) {
          m.host_fits = false;
        }
      }
      memory[j] = m;
      if (m.fits && m.host_fits) {
        const Time b = bounds[worker]->PipelineBound(s.plan, s.gpus);
        cands[j].bound = std::max(cands[j].bound, b);
        refined[j] = score_factor(cands[j].point.gpus) * cands[j].risk * cands[j].bound.seconds();
      }
    });
    for (size_t j = begin; j < end; ++j) {
      ++counts.memory_checks;
      if (!memory[j].fits) {
        ++counts.out_of_memory;
        if (memory[j].fits_hbm) ++counts.inside_reserve;
      } else if (!memory[j].host_fits) {
        ++counts.host_memory;
      } else {
        heap.push(j);
      }
    }
    pos = end;
  };

  std::map<PlanPoint, Time> replays;  // by trace key
  std::vector<Evaluated> evaluated;
  std::priority_queue<double> best;   // the top-K scores (largest on top)
  while (true) {
    std::vector<size_t> batch;
    while (static_cast<int>(batch.size()) < options.batch) {
      const double next_unrefined = pos < cands.size() ? cands[pos].score_bound : std::numeric_limits<double>::infinity();
      const double next_refined = heap.empty() ? std::numeric_limits<double>::infinity() : refined[heap.top()];
      if (next_unrefined <= threshold && next_unrefined < next_refined) {
        refine_next_chunk();
      } else if (!heap.empty() && next_refined <= threshold) {  // (both infinite before the top list fills)
        batch.push_back(heap.top());
        heap.pop();
      } else {
        break;
      }
    }
    if (batch.empty()) break;
    std::vector<SimulationJob> jobs;
    std::vector<PlanPoint> job_keys;
    for (size_t i : batch) {
      PlanPoint key = TraceKey(cands[i].point, moe);
      if (replays.count(key) || std::find(job_keys.begin(), job_keys.end(), key) != job_keys.end()) continue;
      job_keys.push_back(key);
      jobs.push_back({&scenarios[cands[i].scenario], ApplyPoint(base.plan, cands[i].point)});
    }
    std::vector<Time> times = runner.Run(jobs);
    counts.simulations += static_cast<int64_t>(jobs.size());
    for (size_t j = 0; j < jobs.size(); ++j) replays[job_keys[j]] = times[j];
    for (size_t i : batch) {
      Evaluated e;
      e.candidate = i;
      e.step = replays.at(TraceKey(cands[i].point, moe));
      e.score = score_factor(cands[i].point.gpus) * cands[i].risk * e.step.seconds();
      e.peak = memory[i].peak;
      evaluated.push_back(e);
      best.push(e.score);
      if (static_cast<int>(best.size()) > options.top) best.pop();
    }
    counts.evaluated += static_cast<int64_t>(batch.size());
    if (static_cast<int>(best.size()) == options.top) threshold = best.top();
    if (options.progress) {
      const int64_t settled = counts.evaluated + counts.out_of_memory + counts.host_memory;
      options.progress(settled, static_cast<int64_t>(cands.size()));
    }
  }
  counts.bounded = static_cast<int64_t>(cands.size() - pos + heap.size());
  if (options.progress) options.progress(static_cast<int64_t>(cands.size()), static_cast<int64_t>(cands.size()));

  // 4. Rank: a total order, so equal scores come out the same every time.
  std::sort(evaluated.begin(), evaluated.end(), [&](const Evaluated& a, const Evaluated& b) {
    if (a.score != b.score) return a.score < b.score;
    if (a.step != b.step) return a.step < b.step;
    if (a.peak != b.peak) return a.peak < b.peak;
    return cands[a.candidate].point < cands[b.candidate].point;
  });
  if (static_cast<int>(evaluated.size()) > options.top) evaluated.resize(options.top);
  const auto& profile = base.profile;
  const auto peak = profile.Peak(base.plan.precision == config::Precision::kFp32 ? config::Precision::kTf32
                                                                                 : base.plan.precision);
  const double model_flops =
      evaluated.empty() ? 0.0 : ModelFlops(scenarios[cands[evaluated.front().candidate].scenario],
                                           ApplyPoint(base.plan, cands[evaluated.front().candidate].point));
  const int domain = workload::DomainSize(base.topology);
  for (const Evaluated& e : evaluated) {
    const Candidate& c = cands[e.candidate];
    RankedPlan r;
    r.point = c.point;
    r.plan = ApplyPoint(base.plan, c.point);
    r.step = e.step;
    r.bound = c.bound;
    r.objective =
        options.objective == Objective::kThroughput ? result.tokens_per_step / (e.step.seconds() * c.risk) : e.score;
    r.score = e.score;
    r.tokens_per_s = result.tokens_per_step / e.step.seconds();
    r.mfu = peak ? model_flops / e.step.seconds() / c.point.gpus / peak->value : 0.0;
    r.peak_memory = e.peak;
    r.capacity = profile.hbm_capacity.value;
    if (econ.gpu_hour_usd > 0) r.cost_per_mtok_usd = econ.gpu_hour_usd * c.point.gpus * e.step.seconds() / 3600.0 / mtokens;
    if (econ.gpu_watts > 0) r.energy_per_mtok_kwh = econ.gpu_watts * c.point.gpus * e.step.seconds() / 3.6e6 / mtokens;
    r.placement = PlacementText(c.point, domain);
    r.reserve = memory[e.candidate].reserve;
    config::ScenarioConfig ranked = scenarios[c.scenario];
    ranked.plan = r.plan;
    if (table != nullptr) {
      r.assessment = uncertainty::AssessScenario(*table, ranked, e.step.seconds());
    } else {
      r.assessment.warnings.push_back("no validation error table at " + options.error_table_path +
                                      ": no range, coverage unknown");
    }
    r.pessimistic_s = r.assessment.range ? r.assessment.range->high_s : e.step.seconds();
    result.plans.push_back(r);
  }
  if (options.objective == Objective::kThroughput) result.objective_unit = "tokens/s";
  result.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return result;
}

}  // namespace stacksim::search
