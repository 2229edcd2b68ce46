// The HTML pages of `stacksim simulate`, `search` and `diagnose` (--html),
// built from the blocks in html.h. Each returns a whole self-contained
// document (no network requests; see html.h) and is deterministic: nothing
// machine-dependent such as wall-clock time is shown.
//
// Times are drawn in seconds when the step takes at least one second, else in
// milliseconds; memory in GiB (2^30 bytes).
#ifndef STACKSIM_SIM_REPORT_HTML_PAGES_H_
#define STACKSIM_SIM_REPORT_HTML_PAGES_H_

#include <string>

#include "sim/diagnose/diagnose.h"
#include "sim/search/search.h"
#include "sim/simulate/simulate.h"
#include "sim/uncertainty/assessment.h"

namespace stacksim::report {

// Setup, headline numbers, the step breakdown (slowest rank), the breakdown
// per pipeline stage, memory per stage against HBM capacity, a timeline of
// the step when r.trace and r.replay are set (simulate::Options::keep_trace),
// collectives and notes. Out of memory: the memory section says which stages
// do not fit, and there is no time section. `trust`: the step's likely
// range and coverage warnings (the headline shows the range, a section the
// basis and warnings), as simulate prints them.
std::string SimulateHtml(const simulate::SimulationResult& r, const uncertainty::Assessment& trust);

// The ranking (objective per plan as bars, a table with step time, MFU and
// memory headroom, the likely range and whether the plan family was ever
// validated), how far to trust the ranking (the gap to the next plan in
// words, coverage warnings by rank, the memory reserve), what the search
// pruned and why; with `best` (the top plan simulated with keep_trace), its
// breakdown, memory and timeline.
std::string SearchHtml(const search::SearchResult& r, const simulate::SimulationResult* best);

// The ideal step and the five layers' gaps as a waterfall to the simulated
// step, findings per layer, remedies ranked by predicted step time against
// the current one, and the baseline's breakdown and memory (d.result has no
// trace, so no timeline). `trust`: the simulated step's likely range and
// coverage warnings.
std::string DiagnosisHtml(const diagnose::Diagnosis& d, const uncertainty::Assessment& trust);

// The likely range, its basis, the plan family's validation and the
// coverage warnings of one prediction, as an html fragment.
std::string UncertaintyHtml(const uncertainty::Assessment& a);

// Sections of SimulateHtml as html fragments, for other pages that show a
// simulated step (search's best plan; compare). Each is "" when the result
// has nothing to draw (out of memory: no breakdown; no trace: no timeline).
std::string StepBreakdownHtml(const simulate::SimulationResult& r);
std::string StageBreakdownHtml(const simulate::SimulationResult& r);
std::string StageMemoryHtml(const simulate::SimulationResult& r);
std::string StepTimelineHtml(const simulate::SimulationResult& r);

}  // namespace stacksim::report

#endif  // STACKSIM_SIM_REPORT_HTML_PAGES_H_
