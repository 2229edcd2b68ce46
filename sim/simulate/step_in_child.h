// One step simulation in a child process: SimGrid allows one simulation
// per process, so a question that replays several steps with --network
// simgrid (cluster's job classes, compare's best plans) runs each in its own
// fork. The child writes its result to a pipe and exits without running
// destructors or exit handlers.
#ifndef STACKSIM_SIM_SIMULATE_STEP_IN_CHILD_H_
#define STACKSIM_SIM_SIMULATE_STEP_IN_CHILD_H_

#include <string>

#include "sim/config/scenario.h"
#include "sim/util/units.h"

namespace stacksim::simulate {

struct StepRun {
  Time iteration;
  bool out_of_memory = false;
};

// simulate::Simulate with options.network = `network`, in this process.
StepRun RunStep(const config::ScenarioConfig& s, const std::string& network);
// The same in a forked child. Bad input in the child is rethrown as
// InputError naming the scenario's file; any other failure as
// std::runtime_error.
StepRun RunStepInChild(const config::ScenarioConfig& s, const std::string& network);

}  // namespace stacksim::simulate

#endif  // STACKSIM_SIM_SIMULATE_STEP_IN_CHILD_H_
