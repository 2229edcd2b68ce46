// Durations of model jobs: a token budget over the step time that stacksim's
// step simulator gives for the job's model, plan and GPU count.
//
// The simulator's scenario key node_order tells a job on consecutive nodes
// (packed) from one whose nodes are spread round-robin over its leaf switch
// groups (scattered). StepTimes holds both for a job class; the cluster
// simulation interpolates between them by the share of the job's nodes
// outside its minimal leaf set. One simulation per distinct (model, plan, GPUs): ten
// thousand jobs of a few classes cost a few simulations.
#ifndef STACKSIM_SIM_CLUSTER_STEP_TIMES_H_
#define STACKSIM_SIM_CLUSTER_STEP_TIMES_H_

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/cluster/job_trace.h"
#include "sim/util/units.h"

namespace stacksim::cluster {

struct StepTimes {
  Time packed;                  // one optimizer step, nodes under the fewest leaves
  Time scattered;               // the same with the nodes spread over the leaf groups
  int64_t tokens_per_step = 0;  // global batch x sequence length
};

// The seam between the cluster simulation and the step simulator: tests use
// FixedStepTimes.
class StepTimeModel {
 public:
  virtual ~StepTimeModel() = default;
  // Throws InputError naming job.file and job.row when the job's plan cannot
  // run its model on its GPUs.
  virtual StepTimes Times(const JobSpec& job) = 0;
};

// Training setups that model jobs name: {"training": {...}, "plan": {...}}
// as a scenario writes them (docs/formats.md), by name.
struct PlanLibrary {
  std::map<std::string, nlohmann::json> plans;
  std::string file;  // the cluster scenario (model paths resolve against it)
};

// Runs simulate::Simulate for each job class. network "simgrid" (the
// default): the flow-level network model, once with node_order packed and
// once scattered, so the step time sees how the job's rings cross the leaf
// uplinks. SimGrid allows one simulation per process, so each runs in a
// child process (fork); a job that fits in one leaf group gets one run, as
// the simulator's scattered order keeps it in one group. network "analytic":
// one in-process run; the analytic model prices any group spanning leaf
// groups at the full oversubscription whatever the order (its loaded-fabric
// view, which equals the flow-level scattered step in docs/network.md's contention
// scenario (a)), so packed = scattered and placement costs nothing.
class SimulatedStepTimes : public StepTimeModel {
 public:
  // topology: the cluster scenario's "topology" value (name, path or object).
  SimulatedStepTimes(PlanLibrary plans, nlohmann::json topology, std::string network = "simgrid");
  StepTimes Times(const JobSpec& job) override;
  // Step simulations run so far (two per class with simgrid, unless it fits one leaf).
  int simulations() const { return simulations_; }
  int job_classes() const { return static_cast<int>(cache_.size()); }

 private:
  PlanLibrary plans_;
  nlohmann::json topology_;
  std::string network_;
  int simulations_ = 0;
  std::map<std::tuple<std::string, std::string, int>, StepTimes> cache_;
};

// The same times for every job (tests).
class FixedStepTimes : public StepTimeModel {
 public:
  explicit FixedStepTimes(StepTimes t) : t_(t) {}
  StepTimes Times(const JobSpec&) override { return t_; }

 private:
  StepTimes t_;
};

// Gives each model job its duration (ceil(tokens / tokens per step) packed
// steps) and scattered_slowdown (scattered / packed step).
void ResolveModelJobs(std::vector<JobSpec>& jobs, StepTimeModel& model);

}  // namespace stacksim::cluster

#endif  // STACKSIM_SIM_CLUSTER_STEP_TIMES_H_
