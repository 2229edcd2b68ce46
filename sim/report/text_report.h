// A short, readable report of one simulated training step, for people.
//
// Renders a SimulationResult as plain text (under ~50 lines for a large job):
// what was simulated (scenario, model, cluster, plan, network model, where the
// profile's numbers come from), the headline numbers (step time in seconds,
// tokens/s, MFU/HFU in percent, model TFLOP/s per GPU), memory per GPU by
// pipeline stage in GiB, where the step's time goes (seconds, percent of the
// step, a '#' bar), collective algorithms and notes. Scripts should read
// JsonReport instead; this text may change. With an uncertainty assessment
// (what `simulate` prints) it also says how far the step can be trusted.
#ifndef STACKSIM_SIM_REPORT_TEXT_REPORT_H_
#define STACKSIM_SIM_REPORT_TEXT_REPORT_H_

#include <string>

#include "sim/simulate/simulate.h"
#include "sim/uncertainty/assessment.h"

namespace stacksim::report {

// The report, ending in a newline. When result.out_of_memory it shows the
// memory table and why, and no time breakdown (the step does not run).
std::string TextReport(const simulate::SimulationResult& result);
// The report with how far its step can be trusted: the likely range under
// the step time, and the uncertainty section (range, basis, coverage
// warnings) after the report.
std::string TextReport(const simulate::SimulationResult& result, const uncertainty::Assessment& trust);

// The plan in one line, as the report's "plan" row shows it: "TP 8 PP 8 DP 16
// VP 3, micro-batch 1, global batch 1536 (...), SP on, recompute selective, ...".
std::string PlanLine(const config::PlanConfig& plan);

}  // namespace stacksim::report

#endif  // STACKSIM_SIM_REPORT_TEXT_REPORT_H_
