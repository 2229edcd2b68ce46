// The remedy rules of diagnose: a table of named rules, each belonging to one
// layer of the stack and proposing zero or more changes of the scenario's
// plan (or of its node order, the one placement choice that is not a plan
// key) from what the step's accounting shows. Each proposal is one change, or
// one coupled set (tp / 2 with dp x 2). Rules are tried in the table's order,
// and the candidates come out in that order; remedy.h evaluates them.
//
// TP never spans NVLink domains here: ValidatePlan rejects it, so "move TP
// into the domain" cannot arise. A communication stream that costs under 1%
// of the step is noise, not a reason to reshape the plan.
//
// Times are stacksim::Time. The context refers to structs the caller owns.
#ifndef STACKSIM_SIM_DIAGNOSE_REMEDY_RULES_H_
#define STACKSIM_SIM_DIAGNOSE_REMEDY_RULES_H_

#include <string>
#include <vector>

#include "sim/config/scenario.h"
#include "sim/diagnose/layer_split.h"
#include "sim/diagnose/stack_layer.h"
#include "sim/diagnose/step_accounting.h"
#include "sim/simulate/simulate.h"

namespace stacksim::diagnose {

// A change of the plan (and node order) that a rule proposes, before
// simulation.
struct Candidate {
  StackLayer layer = StackLayer::kModelDefinition;  // the rule's
  const char* rule = "";                            // the rule's name
  std::string finding;                              // what was observed
  std::string change;                               // the change, in words
  config::PlanConfig plan;                          // the scenario's plan, changed
  config::NodeOrder node_order = config::NodeOrder::kPacked;  // the scenario's, changed
};

// What the rules read: the simulated step as given, its accounting and its
// five-layer split.
struct RemedyContext {
  const simulate::SimulationResult& result;
  const StepAccounting& accounting;
  const LayerSplit& split;

  const config::ScenarioConfig& scenario() const { return result.scenario; }
  const config::PlanConfig& plan() const { return result.scenario.plan; }
  const simulate::Breakdown& breakdown() const { return result.breakdown; }
  Time step() const { return split.step; }
};

struct RemedyRule {
  const char* name;  // e.g. "fused-kernels"
  StackLayer layer;
  // The candidates (layer and rule left for Candidates to fill in).
  std::vector<Candidate> (*propose)(const RemedyContext& c);
};

// Every rule, in the order they are tried.
const std::vector<RemedyRule>& RemedyRules();

// Every rule's candidates, in the table's order, with their layer and rule.
std::vector<Candidate> Candidates(const RemedyContext& c);

}  // namespace stacksim::diagnose

#endif  // STACKSIM_SIM_DIAGNOSE_REMEDY_RULES_H_
