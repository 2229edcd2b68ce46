// serve-search output: the cheapest configurations that meet the SLOs, with
// the pruning counts, as a text table or JSON (schema stacksim.serve-search/1).
#ifndef STACKSIM_SIM_SERVE_SERVE_SEARCH_REPORT_H_
#define STACKSIM_SIM_SERVE_SERVE_SEARCH_REPORT_H_

#include <string>

#include <nlohmann/json.hpp>

#include "sim/serve/serve_search.h"

namespace stacksim::serve {

// `top`: ranked configurations to show (the unpriced and SLO-unmet lists
// are cut to the same length).
std::string ServeSearchText(const ServeSearchResult& r, int top);
nlohmann::json ServeSearchJson(const ServeSearchResult& r, int top);

}  // namespace stacksim::serve

#endif  // STACKSIM_SIM_SERVE_SERVE_SEARCH_REPORT_H_
