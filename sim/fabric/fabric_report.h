// `stacksim topology`'s text and JSON renderings of a FabricSummary
// (fabric_metrics.h). JSON bandwidths are bytes/s per direction.
#ifndef STACKSIM_SIM_FABRIC_FABRIC_REPORT_H_
#define STACKSIM_SIM_FABRIC_FABRIC_REPORT_H_

#include <string>

#include <nlohmann/json.hpp>

#include "sim/fabric/fabric_graph.h"
#include "sim/fabric/fabric_metrics.h"

namespace stacksim::fabric {

std::string SummaryText(const FabricGraph& fabric, const FabricSummary& s);
nlohmann::json SummaryJson(const FabricGraph& fabric, const FabricSummary& s);

}  // namespace stacksim::fabric

#endif  // STACKSIM_SIM_FABRIC_FABRIC_REPORT_H_
