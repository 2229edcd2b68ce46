// The HTML page of `stacksim compare --html FILE`, built from the blocks in
// sim/report/html.h: the clusters side by side as bar charts (days to train
// the budget, cost, GPU energy, MFU) and a table, each cluster's best plan,
// and that plan's step breakdown and memory per stage when its simulation is
// given.
#ifndef STACKSIM_SIM_REPORT_COMPARE_HTML_H_
#define STACKSIM_SIM_REPORT_COMPARE_HTML_H_

#include <string>
#include <vector>

#include "sim/compare/compare.h"
#include "sim/simulate/simulate.h"

namespace stacksim::report {

// `best_runs[i]`: cluster i's best plan simulated (simulate::Simulate on
// ClusterResult::scenario), or null to leave its step sections out; empty:
// none. Deterministic, self-contained (html.h).
std::string ComparisonHtml(const compare::Comparison& c, const std::vector<const simulate::SimulationResult*>& best_runs);

}  // namespace stacksim::report

#endif  // STACKSIM_SIM_REPORT_COMPARE_HTML_H_
