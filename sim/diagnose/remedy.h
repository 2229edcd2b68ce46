// A remedy: a candidate change of the plan (remedy_rules.h) applied to a copy
// of the scenario, validated (config::ValidatePlan), checked for memory and
// re-simulated; and the combination of the remedies that gain.
//
// Times are stacksim::Time (step times and gains). Each evaluation runs its
// own simulation; nothing is shared or kept between them.
#ifndef STACKSIM_SIM_DIAGNOSE_REMEDY_H_
#define STACKSIM_SIM_DIAGNOSE_REMEDY_H_

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/config/scenario.h"
#include "sim/diagnose/remedy_rules.h"
#include "sim/diagnose/stack_layer.h"
#include "sim/util/units.h"

namespace stacksim::diagnose {

// What came of trying a remedy.
enum class RemedyStatus {
  kNone,          // not tried: the combined remedy when fewer than two combine
  kSimulated,
  kInvalid,       // ValidatePlan said why
  kOutOfMemory,
  kNotSimulated,  // the network model in use cannot see the change (node order under the analytic model)
};
// "", "simulated", "invalid", "out of memory", "not simulated".
const char* RemedyStatusName(RemedyStatus s);

// A finding and the change proposed for it, re-simulated.
struct Remedy {
  std::optional<StackLayer> layer;  // the rule's; none for the combined remedy
  std::string finding;       // what was observed
  std::string change;        // the concrete plan change, e.g. "kernels fused"
  // {"kernels": "fused"}: plan keys and their new values; also "node_order",
  // the one scenario key a remedy may change.
  nlohmann::json plan_changes;
  RemedyStatus status = RemedyStatus::kNone;
  std::string reason;        // for invalid / out of memory / not simulated
  Time predicted;            // simulated step with the change (status kSimulated)
  Time gain;                 // step - predicted (may be negative: the change hurts)
  config::PlanConfig plan;   // the changed plan
  config::NodeOrder node_order = config::NodeOrder::kPacked;  // the scenario's, with the change
};

// Applies one candidate to `base` and simulates it with the network model
// `network` ("analytic" or "simgrid"); `step` is base's step time.
Remedy Evaluate(const config::ScenarioConfig& base, const Candidate& c, Time step, const std::string& network);

// Evaluates every candidate that changes the plan or node order (once per
// distinct change, the first candidate's words kept): simulated ones by gain,
// largest first; then the rest, in the candidates' order.
std::vector<Remedy> EvaluateCandidates(const config::ScenarioConfig& base, const std::vector<Candidate>& candidates,
                                       Time step, const std::string& network);

// The remedies that gain, applied together where they change different plan
// keys: greedily, best first, each kept only if the plan with it is valid,
// fits and is faster than without it; re-simulated. Status kNone when fewer
// than two combine. REQUIRES: `remedies` ranked as EvaluateCandidates ranks them.
Remedy CombineRemedies(const config::ScenarioConfig& base, const std::vector<Remedy>& remedies, Time step,
                       const std::string& network);

}  // namespace stacksim::diagnose

#endif  // STACKSIM_SIM_DIAGNOSE_REMEDY_H_
