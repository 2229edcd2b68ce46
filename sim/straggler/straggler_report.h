// The "stragglers" section of simulate's text report and object of its JSON
// report (docs/stragglers.md lists the JSON fields). Times in seconds.
#ifndef STACKSIM_SIM_STRAGGLER_STRAGGLER_REPORT_H_
#define STACKSIM_SIM_STRAGGLER_STRAGGLER_REPORT_H_

#include <string>

#include <nlohmann/json.hpp>

#include "sim/straggler/straggler.h"

namespace stacksim::straggler {

std::string StragglerText(const StragglerResult& r);
nlohmann::json StragglerJson(const StragglerResult& r);

}  // namespace stacksim::straggler

#endif  // STACKSIM_SIM_STRAGGLER_STRAGGLER_REPORT_H_
