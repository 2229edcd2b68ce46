// The plan fields a published run leaves open (null micro-batch, virtual
// stages, recomputation), chosen as a tuned run of its framework would: the
// fastest valid choice that fits in memory. Micro-batch sizes and virtual
// stages are searched by simulation, recomputation is the cheapest mode that
// fits. Candidates are simulated in the order of a lower bound on their step
// (search::StepTimeBound), and one whose bound is no better than the best
// simulated step so far is skipped: it cannot win, so the choice is the one an
// exhaustive search makes (ties go to the first in micro-batch, vp order).
#ifndef STACKSIM_SIM_VALIDATE_PLAN_CHOICE_H_
#define STACKSIM_SIM_VALIDATE_PLAN_CHOICE_H_

#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/plan.h"
#include "sim/simulate/simulate.h"
#include "sim/util/units.h"
#include "sim/validate/run_scenario.h"

namespace stacksim::validate {

// Whether every pipeline stage of `s` fits in GPU memory: its allocated peak
// plus the reserve (the allocator's cache, CUDA context, NCCL buffers;
// memory::ReserveFor) at most the GPU's capacity.
bool FitsWithHeadroom(const config::ScenarioConfig& s);

// One way to fill a scenario's open fields: its plan, a lower bound on its
// step (search::StepTimeBound::PipelineBound) and whether it fits in memory
// with headroom (FitsWithHeadroom).
struct PlanCandidate {
  config::PlanConfig plan;
  Time bound;
  bool fits = false;
};

// The plans rs.open_fields allow: every valid micro-batch size and vp
// (micro-batch, then vp order), each with the cheapest recomputation that
// fits; plans that fit with none are left out when the micro-batch or vp is
// open (a tuned run would not pick them). `fallback` is the plan simulated
// when none is left: the given one with full recomputation, the smallest
// micro-batch and vp 1. `grouped`: a stated vp whose plans are all invalid
// runs in micro-batch groups (Megatron-Core's microbatch_group_size_per_vp_stage).
struct OpenFieldPlans {
  std::vector<PlanCandidate> candidates;
  config::PlanConfig fallback;
  Time fallback_bound;  // with_bounds (zero where the fallback is no valid plan)
  bool grouped = false;
};

// Bounds are computed when there are several candidates or `with_bounds`.
OpenFieldPlans CandidatePlans(const RunScenario& rs, bool with_bounds);

// The fastest of bounds.size() candidates by simulation: simulated in order
// of their bounds, and one whose bound is no better than the best step so
// far is skipped (it cannot win), so the choice is the one an exhaustive
// search makes; ties go to the lowest index. simulate(i) gives candidate i's
// outcome; accept(i, outcome) turns it into its step, or nullopt where it
// does not count (refused, out of memory), in bound order, one at a time.
// `workers` is asked before each round how many candidates to simulate at
// once (none: one); the next candidates that the best so far leaves are
// simulated that many at a time (simulate must be safe to call
// concurrently), and accept still sees exactly the candidates, in the
// order, that one worker would simulate, so the choice and everything
// accept records do not depend on `workers`. nullopt when none counts.
using WorkerCount = std::function<int()>;
struct Fastest {
  size_t index = 0;
  simulate::SimulationResult result;
};
// One candidate's simulation: its step, or the input error it raised.
struct Simulated {
  std::optional<simulate::SimulationResult> result;
  std::exception_ptr error;  // an InputError; empty when result is set
};
std::optional<Fastest> FastestByBound(
    const std::vector<Time>& bounds, const std::function<Simulated(size_t)>& simulate,
    const std::function<std::optional<simulate::SimulationResult>(size_t, Simulated&&)>& accept,
    const WorkerCount& workers = {});

// Runs `simulate` and keeps an InputError it throws in the outcome.
Simulated SimulateCatching(const std::function<simulate::SimulationResult()>& simulate);

// The step of `plan` in `base` (simulated even when out of memory; a step of
// many micro-batches from two shorter ones, exactly).
simulate::SimulationResult SimulatePlan(const config::ScenarioConfig& base, const config::PlanConfig& plan);

// Sets rs.scenario's plan to `chosen` (one of `plans`) and appends
// "micro_batch=N", "vp=N", "recompute=..." for the fields it fills to *choices.
void RecordChoice(RunScenario& rs, const OpenFieldPlans& plans, const config::PlanConfig& chosen,
                  std::vector<std::string>* choices);

// The fastest of `plans` (the fallback when it has none): its step, and its
// plan in *chosen. Candidates are simulated `workers` at a time.
simulate::SimulationResult ChooseAmong(const RunScenario& rs, const OpenFieldPlans& plans, config::PlanConfig* chosen,
                                       const WorkerCount& workers = {});

// Fills rs.open_fields in rs.scenario, puts the chosen plan's simulation in
// *result and appends the choices (RecordChoice) to *choices. The choice
// does not depend on `workers` (candidates simulated at once).
void FillOpenFields(RunScenario& rs, simulate::SimulationResult* result, std::vector<std::string>* choices,
                    const WorkerCount& workers = {});

}  // namespace stacksim::validate

#endif  // STACKSIM_SIM_VALIDATE_PLAN_CHOICE_H_
