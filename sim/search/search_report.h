// A search's ranking as text (people), JSON (scripts) and CSV (spreadsheets).
//
// JSON is one object: what was searched, the objective, "pruning" (plans
// left out, by reason; they add up to "enumerated") and "plans", the ranking
// best first. Each plan has its degrees and choices, the full plan object
// (config::PlanToJson: paste it into a scenario), step time, tokens/s, MFU,
// peak memory, capacity and headroom in bytes, the objective's value, and its
// gap to the best and to the plan ranked above it in percent. Nothing in it
// depends on the machine or the thread count (no timings), so two runs of the
// same search print the same bytes.
//
// Every plan also carries "uncertainty" (uncertainty::StepRangeJson, or null
// without an error table), "warnings" (coverage warnings), "plan_family"
// ({"name", "validated_runs", "validated"}), "pessimistic_step_s" and its
// memory reserve; the top level says how plans were ranked ("ranking"), the
// reserve's basis and, in words, how far the runner-up is behind the best
// ("gap_to_next_plan").
#ifndef STACKSIM_SIM_SEARCH_SEARCH_REPORT_H_
#define STACKSIM_SIM_SEARCH_SEARCH_REPORT_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/search/search.h"

namespace stacksim::search {

nlohmann::json SearchJson(const SearchResult& r);
// One header line, then one line per ranked plan (the JSON's plan fields,
// flattened; no plan object).
std::string SearchCsv(const SearchResult& r);
std::string SearchText(const SearchResult& r);

// How far `next` (ranked `next_rank`) is behind `best` (ranked `best_rank`),
// as a sentence a person reads: the gap in percent and whether it is larger
// than the likely ranges, i.e. whether the simulator can tell the two apart.
std::string GapSentence(const SearchResult& r, size_t best, size_t next);
// Whether the likely ranges of plans `best` and `next`, in the units of the
// score, do not overlap (false when either has no range).
bool RangesApart(const SearchResult& r, size_t best, size_t next);
// "5.12-6.03" (seconds), or "-" without a range.
std::string RangeCell(const RankedPlan& p);
// Coverage warnings of the ranked plans, each once, with the ranks it
// applies to: "[1-3, 5] pipeline schedule dualpipe was never validated".
std::vector<std::string> GroupedWarnings(const std::vector<RankedPlan>& plans);

}  // namespace stacksim::search

#endif  // STACKSIM_SIM_SEARCH_SEARCH_REPORT_H_
