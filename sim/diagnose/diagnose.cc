#include "sim/diagnose/diagnose.h"

#include <utility>

#include "sim/diagnose/remedy_rules.h"
#include "sim/simulate/critical_path.h"
#include "sim/util/error.h"

namespace stacksim::diagnose {

Diagnosis Diagnose(const config::ScenarioConfig& scenario, const DiagnoseOptions& options) {
  Diagnosis d;
  simulate::Options so;
  so.keep_trace = true;
  so.network = options.network;
  d.result = simulate::Simulate(scenario, so);
  if (d.result.out_of_memory) {
    throw InputError(scenario.file, "plan", "the plan does not fit in GPU memory: nothing to diagnose (try stacksim search)");
  }
  const StepAccounting accounting = AccountStep(d.result);
  const LayerSplit split = SplitByLayer(d.result, accounting);
  d.ideal = split.ideal;
  d.step = split.step;
  d.layer_gap = split.gap;
  d.layer_findings = split.findings;
  d.layer_parts = split.parts;
  d.step_class = split.step_class;
  d.ops = accounting.ops;
  if (options.simulate_remedies) {
    const config::ScenarioConfig& s = d.result.scenario;
    const RemedyContext context{d.result, accounting, split};
    d.remedies = EvaluateCandidates(s, Candidates(context), d.step, options.network);
    d.combined = CombineRemedies(s, d.remedies, d.step, options.network);
  }
  const simulate::CriticalPath path = simulate::FindCriticalPath(*d.result.trace, *d.result.replay);
  d.critical_path = path.length;
  d.critical_path_tasks = path.tasks.size();
  d.critical_path_by_role = simulate::TimeOnPathByRole(*d.result.trace, *d.result.replay, path);
  d.result.trace.reset();
  d.result.replay.reset();
  return d;
}

}  // namespace stacksim::diagnose
