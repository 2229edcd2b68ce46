#include "sim/validate/plan_choice.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "sim/memory/memory_model.h"
#include "sim/memory/reserve.h"
#include "sim/search/step_bound.h"
#include "sim/util/error.h"
#include "sim/util/parallel.h"

namespace stacksim::validate {
namespace {

// The schedule of a candidate with v virtual stages: the framework's
// DualPipe stays (it has no virtual stages), else interleaved 1F1B or 1F1B.
config::PipelineScheduleKind ScheduleFor(const config::PlanConfig& base, int v) {
  if (base.schedule == config::PipelineScheduleKind::kDualPipe) return base.schedule;
  return v > 1 ? config::PipelineScheduleKind::kInterleaved : config::PipelineScheduleKind::kOneFOneB;
}

// A run that states virtual stages whose micro-batches are no multiple of pp
// ran Megatron-Core's interleaved schedule in micro-batch groups
// (microbatch_group_size_per_vp_stage; its default, pp, would refuse the
// run): the smallest group of at least pp whose last group holds none or at
// least pp micro-batches (schedules.py), or 0 where none exists.
int GroupForInterleaving(const config::PlanConfig& plan) {
  const int64_t m = plan.micro_batches();
  if (plan.schedule != config::PipelineScheduleKind::kInterleaved || m % plan.pp == 0) return 0;
  for (int64_t g = plan.pp; g <= m; ++g) {
    if (m % g == 0 || m % g >= plan.pp) return static_cast<int>(g);
  }
  return 0;
}

// The search bounds for open plan fields: micro-batches beyond 16 sequences
// and more than 16 virtual stages per rank are not what tuned runs use.
constexpr int64_t kLargestMicroBatch = 16;
constexpr int kLargestVirtualStages = 16;

// Steps of more micro-batches than this are priced from two shorter ones
// (SimulateStep).
constexpr int64_t kExtrapolateAbove = 256;

// One candidate's step. A step of m micro-batches under 1F1B (or interleaved
// 1F1B, or none without pipelining) is its warm-up and cool-down plus the
// same steady-state period per micro-batch, and what follows the last
// backward (the gradient reduction, the optimizer) is the same for any m:
// the step time is affine in m once m is past the warm-up. A long step
// (more than kExtrapolateAbove micro-batches) is therefore simulated at two
// micro-batch counts m1 < m2 of the same residue modulo the schedule's
// period (pp, or the micro-batch group), both well past the warm-up, and
// its time extrapolated to m;
// the peak memory is reached within the warm-up, so m2's is m's. The result
// otherwise is m2's step. The extrapolation is exact: every development
// run it applies to (up to 1,120 micro-batches) is predicted to the
// nanosecond as the whole simulation does; a 2,048-micro-batch step of a
// 70B model goes from 25 s to under 1 s.
simulate::SimulationResult SimulateStep(const config::ScenarioConfig& s, const simulate::Options& o) {
  const config::PlanConfig& plan = s.plan;
  const int64_t m = plan.micro_batches();
  const bool affine = plan.schedule == config::PipelineScheduleKind::kOneFOneB ||
                      plan.schedule == config::PipelineScheduleKind::kInterleaved || plan.pp == 1;
  if (m <= kExtrapolateAbove || !affine || plan.dp_sync.method != config::DpSyncMethod::kEveryStep) return simulate::Simulate(s, o);
  const int64_t period = plan.schedule == config::PipelineScheduleKind::kInterleaved && plan.microbatch_group > 0
                             ? plan.microbatch_group
                             : plan.pp;
  // Past the deepest warm-up, 2 (pp-1) + (vp-1) x period chunk forwards,
  // with room to spare.
  const int64_t warm_up = 2 * (2 * static_cast<int64_t>(plan.pp) + (std::max(plan.vp, 1) - 1) * period);
  int64_t m1 = m % period;
  while (m1 < warm_up) m1 += period;
  const int64_t m2 = m1 + ((warm_up + period - 1) / period) * period;
  if (m2 >= m) return simulate::Simulate(s, o);
  auto shortened = [&](int64_t micro_batches) {
    config::ScenarioConfig c = s;
    c.plan.global_batch = micro_batches * plan.micro_batch * plan.dp;
    return c;
  };
  const Time t1 = simulate::Simulate(shortened(m1), o).iteration;
  simulate::SimulationResult r = simulate::Simulate(shortened(m2), o);
  const double per_micro_batch = (r.iteration - t1).seconds() / static_cast<double>(m2 - m1);
  r.iteration = r.iteration + Time::FromSeconds(per_micro_batch * static_cast<double>(m - m2));
  r.scenario = s;
  return r;
}

}  // namespace

bool FitsWithHeadroom(const config::ScenarioConfig& s) {
  // The allocated peak (tensors and the workspaces the caching allocator
  // hands out) plus what the process holds beyond it: the allocator's cache
  // (the fitted fraction), the CUDA context and NCCL's buffers
  // (memory::ReserveFor, sourced in sim/memory/reserve.cc).
  const Bytes outside = memory::RuntimeMemory(s).outside_allocator();
  for (const auto& f : memory::EstimateMemory(s)) {
    const Bytes allocated = f.total() - outside;
    if ((allocated + memory::ReserveFor(s, allocated).total()).value > s.profile.hbm_capacity.value.value) return false;
  }
  return true;
}

OpenFieldPlans CandidatePlans(const RunScenario& rs, bool with_bounds) {
  const config::ScenarioConfig& base = rs.scenario;
  auto open = [&](const char* f) {
    return std::find(rs.open_fields.begin(), rs.open_fields.end(), f) != rs.open_fields.end();
  };
  std::vector<int64_t> mbs = {base.plan.micro_batch};
  if (open("micro_batch")) {
    // Every micro-batch size that divides the local batch, up to 16 sequences.
    mbs.clear();
    for (int64_t mb = 1; mb <= kLargestMicroBatch; ++mb) {
      if (base.plan.global_batch % (mb * base.plan.dp) == 0) mbs.push_back(mb);
    }
    if (mbs.empty()) mbs.push_back(1);
  }
  // Virtual stages: equal ones, or Megatron-Core's split that counts the
  // embedding and the loss as a layer each (account_for_embedding/
  // loss_in_pipeline_split: layers + 2 divide into pp x vp, and the first
  // and last virtual stages hold one layer fewer).
  struct VirtualStages {
    int vp;
    bool uneven;
  };
  std::vector<VirtualStages> vps = {{base.plan.vp, base.plan.uneven_stages}};
  if (open("vp")) {
    vps = {{1, base.plan.uneven_stages}};
    const int64_t layers = base.model.PipelineLayerCount();
    for (int v = 2; base.plan.pp > 1 && v <= kLargestVirtualStages && vps.size() < 4; ++v) {
      const int64_t n = static_cast<int64_t>(base.plan.pp) * v;
      if (layers % n == 0) {
        vps.push_back({v, false});
      } else if ((layers + 2) % n == 0 && layers >= n) {
        vps.push_back({v, true});
      }
    }
  }
  // Recomputation settings, cheapest first: none, selective with the default
  // modules and then each wider set the framework's guide turns to, full.
  struct RecomputeSetting {
    config::Recompute mode;
    config::RecomputeModules modules;
  };
  std::vector<RecomputeSetting> modes = {{base.plan.recompute, base.plan.recompute_modules}};
  if (open("recompute")) {
    modes = {{config::Recompute::kNone, base.plan.recompute_modules},
             {config::Recompute::kSelective, base.plan.recompute_modules}};
    for (const config::RecomputeModules& m : rs.recompute_escalation) {
      if (!(m == base.plan.recompute_modules)) modes.push_back({config::Recompute::kSelective, m});
    }
    modes.push_back({config::Recompute::kFull, base.plan.recompute_modules});
    // Selective recomputation arrived with Korthikanti et al. (2022); before
    // it Megatron-LM could only checkpoint whole layers.
    if (rs.predates_selective_recompute) modes = {modes.front(), modes.back()};
  }

  OpenFieldPlans out;
  // group: micro-batch groups for a stated vp whose plans are otherwise all
  // invalid (GroupForInterleaving).
  int valid_plans = 0;
  auto collect = [&](bool group) {
    for (int64_t mb : mbs) {
      for (const VirtualStages& vs : vps) {
        const int v = vs.vp;
        config::ScenarioConfig c = base;
        c.plan.micro_batch = mb;
        c.plan.vp = v;
        c.plan.uneven_stages = vs.uneven;
        c.plan.schedule = ScheduleFor(base.plan, v);
        c.plan.moe_a2a_overlap = rs.recipe_a2a_overlap && config::MoeA2aOverlapRuns(c.plan);
        if (group && c.plan.microbatch_group == 0) c.plan.microbatch_group = GroupForInterleaving(c.plan);
        try {
          config::ValidatePlan(c, c.file);
        } catch (const InputError&) {
          continue;
        }
        ++valid_plans;
        bool fits = false;
        for (const RecomputeSetting& mode : modes) {
          c.plan.recompute = mode.mode;
          c.plan.recompute_modules = mode.modules;
          if (FitsWithHeadroom(c)) {
            fits = true;
            break;
          }
        }
        if (!fits && (open("micro_batch") || open("vp"))) continue;  // a tuned run would not pick it
        out.candidates.push_back({std::move(c.plan), Time::Zero(), fits});
      }
    }
  };
  collect(/*group=*/false);
  out.grouped = valid_plans == 0 && !open("vp") && base.plan.vp > 1;
  if (out.grouped) collect(/*group=*/true);
  std::optional<search::StepTimeBound> bound;
  if (with_bounds || out.candidates.size() > 1) {
    bound.emplace(base);
    for (PlanCandidate& c : out.candidates) c.bound = bound->PipelineBound(c.plan, base.gpus);
  }

  // Nothing fits by our memory model: the given plan is simulated anyway.
  config::PlanConfig& f = out.fallback;
  f = base.plan;
  if (open("recompute")) f.recompute = config::Recompute::kFull;
  if (open("micro_batch")) f.micro_batch = mbs.front();
  if (open("vp")) f.vp = 1;
  f.schedule = ScheduleFor(base.plan, f.vp);
  f.moe_a2a_overlap = rs.recipe_a2a_overlap && config::MoeA2aOverlapRuns(f);
  if (out.grouped && f.microbatch_group == 0) f.microbatch_group = GroupForInterleaving(f);
  if (with_bounds) {
    config::ScenarioConfig c = base;
    c.plan = f;
    try {
      config::ValidatePlan(c, c.file);
      out.fallback_bound = bound->PipelineBound(f, base.gpus);
    } catch (const InputError&) {
      // Not a valid plan: its simulation says why; no bound.
    }
  }
  return out;
}

std::optional<Fastest> FastestByBound(
    const std::vector<Time>& bounds, const std::function<Simulated(size_t)>& simulate,
    const std::function<std::optional<simulate::SimulationResult>(size_t, Simulated&&)>& accept,
    const WorkerCount& workers) {
  // Simulated by increasing bound; the first of equally fast steps in
  // candidate order wins, as an exhaustive search in that order would pick.
  std::vector<size_t> order(bounds.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return bounds[a] < bounds[b]; });
  std::optional<Fastest> best;
  auto can_win = [&](size_t i) { return !best || bounds[i] < best->result.iteration; };
  for (size_t next = 0; next < order.size() && can_win(order[next]);) {
    // The next candidates the best so far leaves, simulated together.
    const int at_once = workers ? std::max(workers(), 1) : 1;
    const size_t batch_size = static_cast<size_t>(at_once);
    size_t n = 0;
    while (n < batch_size && next + n < order.size() && can_win(order[next + n])) ++n;
    std::vector<Simulated> outcomes(n);
    ParallelFor(static_cast<int64_t>(n), at_once,
                [&](int64_t k, int /*worker*/) { outcomes[k] = simulate(order[next + static_cast<size_t>(k)]); });
    // Taken in order, as one worker would: a step found here may rule out
    // the rest of the batch.
    for (size_t k = 0; k < n; ++k) {
      const size_t i = order[next + k];
      if (!can_win(i)) break;
      std::optional<simulate::SimulationResult> r = accept(i, std::move(outcomes[k]));
      if (!r) continue;
      if (!best || r->iteration < best->result.iteration || (r->iteration == best->result.iteration && i < best->index)) {
        best = Fastest{i, std::move(*r)};
      }
    }
    next += n;
  }
  return best;
}

Simulated SimulateCatching(const std::function<simulate::SimulationResult()>& simulate) {
  Simulated out;
  try {
    out.result = simulate();
  } catch (const InputError&) {
    out.error = std::current_exception();
  }
  return out;
}

simulate::SimulationResult SimulatePlan(const config::ScenarioConfig& base, const config::PlanConfig& plan) {
  config::ScenarioConfig s = base;
  s.plan = plan;
  simulate::Options o;
  o.simulate_if_out_of_memory = true;
  return SimulateStep(s, o);
}

void RecordChoice(RunScenario& rs, const OpenFieldPlans& plans, const config::PlanConfig& chosen,
                  std::vector<std::string>* choices) {
  auto open = [&](const char* f) {
    return std::find(rs.open_fields.begin(), rs.open_fields.end(), f) != rs.open_fields.end();
  };
  const config::PlanConfig& given = rs.scenario.plan;
  if (plans.grouped && chosen.microbatch_group > 0) {
    choices->push_back("microbatch_group=" + std::to_string(chosen.microbatch_group) + " (" +
                       std::to_string(chosen.micro_batches()) + " micro-batches are no multiple of pp " +
                       std::to_string(chosen.pp) +
                       ": the interleaved schedule ran them in groups, Megatron-Core's "
                       "microbatch_group_size_per_vp_stage)");
  }
  if (open("micro_batch")) choices->push_back("micro_batch=" + std::to_string(chosen.micro_batch));
  if (open("vp")) choices->push_back("vp=" + std::to_string(chosen.vp));
  if (open("recompute")) {
    std::string text = std::string("recompute=") + config::RecomputeName(chosen.recompute);
    if (chosen.recompute == config::Recompute::kSelective && !(chosen.recompute_modules == given.recompute_modules)) {
      text += " [" + config::RecomputeModulesText(chosen.recompute_modules) +
              "] (the framework's next wider modules: the default ones do not fit)";
    }
    choices->push_back(text);
  }
  rs.scenario.plan = chosen;
}

simulate::SimulationResult ChooseAmong(const RunScenario& rs, const OpenFieldPlans& plans, config::PlanConfig* chosen,
                                       const WorkerCount& workers) {
  std::vector<Time> bounds;
  for (const PlanCandidate& c : plans.candidates) bounds.push_back(c.bound);
  std::optional<Fastest> best = FastestByBound(
      bounds,
      [&](size_t i) { return SimulateCatching([&] { return SimulatePlan(rs.scenario, plans.candidates[i].plan); }); },
      [](size_t, Simulated&& s) {
        if (s.error) std::rethrow_exception(s.error);  // as simulating one at a time would throw it
        return std::move(s.result);
      },
      workers);
  if (best) {
    *chosen = plans.candidates[best->index].plan;
    return std::move(best->result);
  }
  *chosen = plans.fallback;
  return SimulatePlan(rs.scenario, plans.fallback);
}

void FillOpenFields(RunScenario& rs, simulate::SimulationResult* best_result, std::vector<std::string>* choices,
                    const WorkerCount& workers) {
  const OpenFieldPlans plans = CandidatePlans(rs, /*with_bounds=*/false);
  config::PlanConfig chosen;
  *best_result = ChooseAmong(rs, plans, &chosen, workers);
  RecordChoice(rs, plans, chosen, choices);
}

}  // namespace stacksim::validate
