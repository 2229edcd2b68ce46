// A cluster scenario (scenarios/cluster-*.json): a topology and a node count,
// the jobs (a trace file or a generator), the training setups model jobs
// name, and the scheduler's settings. docs/cluster.md describes the keys.
#ifndef STACKSIM_SIM_CLUSTER_CLUSTER_SCENARIO_H_
#define STACKSIM_SIM_CLUSTER_CLUSTER_SCENARIO_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/cluster/cluster_sim.h"
#include "sim/cluster/job_trace.h"
#include "sim/cluster/node_pool.h"
#include "sim/cluster/step_times.h"
#include "sim/config/topology.h"

namespace stacksim::cluster {

struct ClusterScenario {
  std::string name, question, notes, source;
  std::string file;
  nlohmann::json topology_ref;  // the "topology" value as written (name, path or object)
  config::TopologyConfig topology;
  std::string topology_file;
  int nodes = 0;
  ClusterShape shape;
  ClusterOptions options;       // the scenario's scheduler and placement (the CLI may override)
  PlanLibrary plans;
  std::string network = "simgrid";  // step simulations of model jobs: "simgrid" or "analytic"
  std::string trace_file;       // "" when the jobs are generated
  std::vector<JobSpec> jobs;    // model jobs still without durations
};

// Throws InputError naming the file and key (or the trace's file, row and field).
ClusterScenario LoadClusterScenario(const std::string& path);
ClusterScenario ParseClusterScenario(const nlohmann::json& doc, const std::string& file);

// Simulates the model jobs' steps (SimulatedStepTimes), then the cluster
// under `options` (the scenario's own, or the command line's).
ClusterResult RunClusterScenario(const ClusterScenario& scenario, const ClusterOptions& options);

}  // namespace stacksim::cluster

#endif  // STACKSIM_SIM_CLUSTER_CLUSTER_SCENARIO_H_
