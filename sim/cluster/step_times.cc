#include "sim/cluster/step_times.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "sim/config/scenario.h"
#include "sim/simulate/simulate.h"
#include "sim/simulate/step_in_child.h"

namespace stacksim::cluster {

using simulate::RunStep;
using simulate::RunStepInChild;
using simulate::StepRun;

SimulatedStepTimes::SimulatedStepTimes(PlanLibrary plans, nlohmann::json topology, std::string network)
    : plans_(std::move(plans)), topology_(std::move(topology)), network_(std::move(network)) {}

StepTimes SimulatedStepTimes::Times(const JobSpec& job) {
  auto key = std::make_tuple(job.model, job.plan, job.gpus);
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  auto entry = plans_.plans.find(job.plan);
  if (entry == plans_.plans.end()) {
    throw InputError(job.file, job.row + ": plan",
                     "no plan '" + job.plan + "' in the cluster scenario's \"plans\" (" + plans_.file + ")");
  }
  nlohmann::json doc = entry->second;  // {"training", "plan"}
  doc["name"] = job.model + " / " + job.plan + " on " + std::to_string(job.gpus) + " GPUs";
  doc["model"] = job.model;
  doc["topology"] = topology_;
  doc["gpus"] = job.gpus;
  StepTimes t;
  try {
    config::ScenarioConfig s = config::ParseScenario(doc, plans_.file, {});
    t.tokens_per_step = s.tokens_per_step();
    auto check = [&](const StepRun& r) {
      if (r.out_of_memory) throw InputError(plans_.file, "plans." + job.plan, "does not fit in GPU memory");
      return r.iteration;
    };
    if (network_ == "analytic") {
      t.packed = t.scattered = check(RunStep(s, "analytic"));
      ++simulations_;
    } else {
      s.node_order = config::NodeOrder::kPacked;
      t.packed = t.scattered = check(RunStepInChild(s, network_));
      ++simulations_;
      const auto& levels = s.topology.fabric.levels;
      if (!levels.empty() && s.nodes() > levels[0].nodes_below) {
        s.node_order = config::NodeOrder::kScattered;
        t.scattered = check(RunStepInChild(s, network_));
        ++simulations_;
      }
    }
  } catch (const InputError& e) {
    throw InputError(job.file, job.row + ": plan",
                     "plan '" + job.plan + "' cannot run " + job.model + " on " + std::to_string(job.gpus) +
                         " GPUs: " + e.what());
  }
  cache_.emplace(key, t);
  return t;
}

void ResolveModelJobs(std::vector<JobSpec>& jobs, StepTimeModel& model) {
  for (JobSpec& j : jobs) {
    if (!j.is_model_job()) continue;
    const StepTimes t = model.Times(j);
    const int64_t steps = (j.tokens + t.tokens_per_step - 1) / t.tokens_per_step;
    j.duration = Time::Ns(t.packed.ns() * steps);
    j.scattered_slowdown = t.packed > Time::Zero() ? std::max(1.0, t.scattered.seconds() / t.packed.seconds()) : 1.0;
  }
}

}  // namespace stacksim::cluster
