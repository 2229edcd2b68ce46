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
#ifndef STACKSIM_SIM_SEARCH_SEARCH_REPORT_H_
#define STACKSIM_SIM_SEARCH_SEARCH_REPORT_H_

#include <string>

#include <nlohmann/json.hpp>

#include "sim/search/search.h"

namespace stacksim::search {

nlohmann::json SearchJson(const SearchResult& r);
// One header line, then one line per ranked plan (the JSON's plan fields,
// flattened; no plan object).
std::string SearchCsv(const SearchResult& r);
std::string SearchText(const SearchResult& r);

}  // namespace stacksim::search

#endif  // STACKSIM_SIM_SEARCH_SEARCH_REPORT_H_
