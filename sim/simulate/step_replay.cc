#include "sim/simulate/step_replay.h"

#include "sim/cost/comm_overlap.h"
#include "sim/cost/profile_cost_model.h"
#include "sim/engine/engine.h"
#include "sim/net/network_factory.h"
#include "sim/workload/training_step.h"

namespace stacksim::simulate {

StepModels BuildStep(const config::ScenarioConfig& s, const std::string& network, workload::DpSyncPhase phase) {
  StepModels m;
  m.trace = std::make_shared<trace::Trace>(workload::BuildTrainingStep(s, phase));
  auto cost = std::make_unique<cost::ProfileCostModel>(s.profile, s.plan.cuda_graphs, s.plan.comm_sms,
                                                       cost::OverlapCommSms(s.plan, s.profile));
  m.clock = cost->TraceClockState(*m.trace);
  cost->set_clock(m.clock);
  m.cost = std::move(cost);
  m.network = net::MakeNetwork(network, s.topology, s.profile, s.gpus, s.node_order);
  return m;
}

trace::ReplayResult ReplayStep(const StepModels& step) {
  return engine::Engine(*step.cost, *step.network).Replay(*step.trace);
}

}  // namespace stacksim::simulate
