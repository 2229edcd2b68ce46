// The parallel layout a published run leaves open. The validation schema
// allows null plan fields: the simulator then chooses what a tuned run of
// the framework would use, the fastest layout that fits in memory, and says
// which it chose (shared/validation/README.md). The layout is tp, pp, dp,
// cp and, for a mixture-of-experts model, ep. Each candidate layout is the
// run with those fields filled; it becomes a scenario as a run that gave
// them would (so the framework's defaults that depend on tp, such as
// sequence parallelism, follow the layout), its own open fields are chosen
// as FillOpenFields chooses them, and the fastest simulated step among the
// layouts that fit wins.
#ifndef STACKSIM_SIM_VALIDATE_LAYOUT_CHOICE_H_
#define STACKSIM_SIM_VALIDATE_LAYOUT_CHOICE_H_

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/simulate/simulate.h"
#include "sim/validate/plan_choice.h"
#include "sim/validate/run_scenario.h"

namespace stacksim::validate {

// Whether the run leaves tp, pp, dp or cp null (or out), or ep of a
// mixture-of-experts model.
bool LayoutIsOpen(const nlohmann::json& run);

// The layouts a tuned run could use: every (tp, pp, dp, cp, ep) with the
// given ones kept, tp a power of two within one NVLink domain and at most 8,
// pp at most the layers, an open cp a power of two that leaves pieces of at
// least 4,096 tokens, tp x pp x dp x cp = the run's GPUs, dp dividing the
// global batch, and an open ep (mixture-of-experts models) a power of two
// up to the experts and tp x dp x cp; each as a copy of `run` with the
// fields set, smallest tp first, then pp, cp and ep. Throws InputError
// (file, path + ".plan") when no layout has these properties.
std::vector<nlohmann::json> LayoutCandidates(const nlohmann::json& run, const std::string& file,
                                             const std::string& path);

// What the choice settled on: the scenario (open fields filled), its
// simulation and the choices made, the layout's first.
struct LayoutOutcome {
  RunScenario run;
  simulate::SimulationResult result;
  std::vector<std::string> choices;
};

// Builds every candidate layout (prepare applies what the validation applies
// to each scenario before its search, e.g. fitted constants) with the plans
// its own open fields allow (CandidatePlans), and returns the fastest plan
// that fits in memory. The plans of all layouts are searched together in
// the order of their step bounds (FastestByBound), so a plan that cannot
// beat the best simulated step is never simulated; the choice is the one
// simulating every layout gives. When none fits, the fastest of every
// layout's own choice (its simulation says it is out of memory). Candidates
// that are not valid plans (heads or experts that tp or ep do not divide) are
// skipped. Throws InputError (file, path + ".plan") when none is valid.
// `workers` says how many plans to simulate at once (FastestByBound); the
// outcome does not depend on it.
LayoutOutcome ChooseLayout(const nlohmann::json& run, const std::string& file, const std::string& path,
                           const std::function<void(RunScenario&)>& prepare, const WorkerCount& workers = {});

}  // namespace stacksim::validate

#endif  // STACKSIM_SIM_VALIDATE_LAYOUT_CHOICE_H_
