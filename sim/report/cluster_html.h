// The HTML page of `stacksim cluster --html FILE`, built from the blocks in
// sim/report/html.h: headline numbers, where the GPU-time went (busy and each
// idle reason), GPUs over time by state (the time series folded to at most
// kMaxRows windows), queue length over time, waits, and the jobs placement
// slowed most. Deterministic and self-contained (html.h).
#ifndef STACKSIM_SIM_REPORT_CLUSTER_HTML_H_
#define STACKSIM_SIM_REPORT_CLUSTER_HTML_H_

#include <string>

#include "sim/cluster/cluster_sim.h"

namespace stacksim::report {

std::string ClusterHtml(const cluster::ClusterResult& r);

}  // namespace stacksim::report

#endif  // STACKSIM_SIM_REPORT_CLUSTER_HTML_H_
