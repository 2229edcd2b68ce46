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

#include <string>
#include <vector>

#include "sim/simulate/simulate.h"
#include "sim/validate/run_scenario.h"

namespace stacksim::validate {

// Whether every pipeline stage of `s` fits in GPU memory: its allocated peak
// plus the reserve (the allocator's cache, CUDA context, NCCL buffers;
// memory::ReserveFor) at most the GPU's capacity.
bool FitsWithHeadroom(const config::ScenarioConfig& s);

// Fills rs.open_fields in rs.scenario, puts the chosen plan's simulation in
// *result and appends "micro_batch=N", "vp=N", "recompute=..." for the fields
// it chose to *choices. When no candidate fits, the given plan is simulated
// with full recomputation, the smallest micro-batch and vp 1.
void FillOpenFields(RunScenario& rs, simulate::SimulationResult* result, std::vector<std::string>* choices);

}  // namespace stacksim::validate

#endif  // STACKSIM_SIM_VALIDATE_PLAN_CHOICE_H_
