// Which layer of the stack holds a training step back, and what to change.
//
// Diagnose simulates a scenario, accounts for its step on the breakdown rank
// (step_accounting.h), splits the gap between the simulated step and an
// ideal step over the five layers of DESIGN.md (layer_split.h), then tries
// every remedy that fits the findings (remedy_rules.h): each is applied to a
// copy of the plan, validated, checked for memory and re-simulated, and the
// remedies are ranked by the step time they save (remedy.h).
// diagnosis_report.h renders the result as text and JSON.
//
// Times are stacksim::Time (the JSON writes seconds). Owns nothing global.
#ifndef STACKSIM_SIM_DIAGNOSE_DIAGNOSE_H_
#define STACKSIM_SIM_DIAGNOSE_DIAGNOSE_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/config/scenario.h"
#include "sim/diagnose/layer_split.h"
#include "sim/diagnose/remedy.h"
#include "sim/diagnose/stack_layer.h"
#include "sim/diagnose/step_accounting.h"
#include "sim/simulate/simulate.h"
#include "sim/util/units.h"

namespace stacksim::diagnose {

struct Diagnosis {
  simulate::SimulationResult result;  // the scenario as given (keep_trace off)
  Time ideal;
  Time step;
  PerLayer<Time> layer_gap;
  PerLayer<std::vector<std::string>> layer_findings;  // lines, per layer
  // Parts (seconds) that make up each layer's gap, for the JSON.
  PerLayer<nlohmann::json> layer_parts;
  StepClass step_class = StepClass::kComputeBound;
  std::vector<OpStat> ops;           // by time beyond ideal, largest first
  std::vector<Remedy> remedies;      // simulated ones by gain, largest first; then the rest
  // The remedies that gain, applied together where they change different plan
  // keys (CombineRemedies); status kNone when fewer than two combine.
  Remedy combined;
  // The chain of tasks that set the step (simulate/critical_path.h): its
  // length, task count and time by task kind and role, largest first.
  Time critical_path;
  size_t critical_path_tasks = 0;
  std::vector<std::pair<std::string, Time>> critical_path_by_role;
};

struct DiagnoseOptions {
  // The analytic model: every remedy is a further simulation, and SimGrid
  // allows one session per process.
  std::string network = "analytic";
  bool simulate_remedies = true;
};

// Throws InputError when the scenario itself cannot run, or does not fit in
// memory (nothing to diagnose).
Diagnosis Diagnose(const config::ScenarioConfig& scenario, const DiagnoseOptions& options = {});

}  // namespace stacksim::diagnose

#endif  // STACKSIM_SIM_DIAGNOSE_DIAGNOSE_H_
