// Discrete-event replay of an execution trace.
//
// Each rank's streams run their tasks in order; a task starts when the task
// before it on its stream has finished, its dependencies have finished and,
// for a collective, every task of its instance is ready. Compute time comes
// from the CostModel, communication time from the NetworkModel: a latency
// phase, then a bandwidth phase that a FlowSession shares with concurrent
// ones (the network model's own, or EqualShareLinks: transfers that use the
// same link of the same rank at the same time share its bandwidth equally).
// A compute task that starts while a collective of its rank is in flight
// takes CostModel::ComputeTimeBesideComm (the collective's kernels hold SMs);
// the choice is made once, at the start.
//
// The engine knows nothing about what the tasks mean. It is deterministic:
// ties in time resolve by task id. No global state: engines are independent.
#ifndef STACKSIM_SIM_ENGINE_ENGINE_H_
#define STACKSIM_SIM_ENGINE_ENGINE_H_

#include <string>
#include <vector>

#include "sim/engine/cost_model.h"
#include "sim/engine/network_model.h"
#include "sim/trace/replay_result.h"
#include "sim/trace/trace.h"
#include "sim/util/units.h"

namespace stacksim::engine {

// The result types live with the trace (sim/trace/replay_result.h), so that
// what reads a replay needs no engine.
using trace::ReplayResult;
using trace::TaskTiming;

class Engine {
 public:
  // The models must outlive the engine.
  Engine(const CostModel& cost, const NetworkModel& network) : cost_(cost), network_(network) {}

  // REQUIRES: trace.Check() == "" (the engine throws std::logic_error otherwise,
  // or if the trace deadlocks).
  ReplayResult Replay(const trace::Trace& trace) const;

 private:
  const CostModel& cost_;
  const NetworkModel& network_;
};

}  // namespace stacksim::engine

#endif  // STACKSIM_SIM_ENGINE_ENGINE_H_
