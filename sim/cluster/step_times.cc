#include "sim/cluster/step_times.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "sim/config/scenario.h"
#include "sim/simulate/simulate.h"

namespace stacksim::cluster {
namespace {

struct StepRun {
  Time iteration;
  bool out_of_memory = false;
};

StepRun RunStep(const config::ScenarioConfig& s, const std::string& network) {
  simulate::Options o;
  o.network = network;
  simulate::SimulationResult r = simulate::Simulate(s, o);
  return {r.iteration, r.out_of_memory};
}

// One step simulation in a child process (SimGrid runs once per process).
// The child writes "ok <ns> <oom>", "input <message>" or "error <message>"
// to a pipe and exits without running destructors or exit handlers.
StepRun RunStepInChild(const config::ScenarioConfig& s, const std::string& network) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("cluster: cannot create a pipe for a step simulation");
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("cluster: cannot fork a step simulation");
  if (pid == 0) {
    close(fds[0]);
    std::string out;
    try {
      StepRun r = RunStep(s, network);
      out = "ok " + std::to_string(r.iteration.ns()) + " " + (r.out_of_memory ? "1" : "0");
    } catch (const InputError& e) {
      out = std::string("input ") + e.what();
    } catch (const std::exception& e) {
      out = std::string("error ") + e.what();
    }
    size_t done = 0;
    while (done < out.size()) {
      const ssize_t n = write(fds[1], out.data() + done, out.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (text.rfind("ok ", 0) == 0) {
    std::istringstream in(text.substr(3));
    int64_t ns = 0;
    int oom = 0;
    in >> ns >> oom;
    return {Time::Ns(ns), oom != 0};
  }
  if (text.rfind("input ", 0) == 0) throw InputError(s.file, "", text.substr(6));
  throw std::runtime_error("cluster: step simulation failed: " + (text.empty() ? "no result" : text));
}

}  // namespace

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
