// Text and JSON reports of a cluster simulation (stacksim cluster).
#ifndef STACKSIM_SIM_CLUSTER_CLUSTER_REPORT_H_
#define STACKSIM_SIM_CLUSTER_CLUSTER_REPORT_H_

#include <string>

#include <nlohmann/json.hpp>

#include "sim/cluster/cluster_sim.h"

namespace stacksim::cluster {

// Units in the keys: "_s" seconds, "_gpu_h" GPU-hours; "series" holds one
// array per quantity, options.resolution apart (for charts).
nlohmann::json ClusterJson(const ClusterResult& r);
// For people: the summary, then the time series folded to at most ~30 rows.
std::string ClusterText(const ClusterResult& r);

}  // namespace stacksim::cluster

#endif  // STACKSIM_SIM_CLUSTER_CLUSTER_REPORT_H_
