// stacksim replay-chakra DIR --scenario FILE: replays Chakra execution traces
// on the scenario's hardware (topology and profile price the communication;
// the scenario's model and plan are unused).
#include <iostream>
#include <memory>
#include <string>

#include "sim/chakra/chakra.h"
#include "sim/cli/command.h"
#include "sim/cli/flags.h"
#include "sim/config/scenario.h"
#include "sim/engine/engine.h"
#include "sim/net/network_factory.h"

namespace stacksim::cli {
namespace {

struct ReplayChakraArgs {
  std::string dir;
  std::string scenario;
  config::ScenarioOptions opts;
  std::string network = "analytic";
  bool recorded_comm = false;
  std::string format = "text";
};

int RunReplayChakra(const ReplayChakraArgs& a) {
  config::ScenarioConfig scenario = config::LoadScenario(a.scenario, a.opts);
  chakra::ImportOptions import;
  import.recorded_comm_durations = a.recorded_comm;
  import.ranks_per_node = scenario.topology.gpus_per_node;
  import.roofline = &scenario.profile;
  trace::Trace t = chakra::ReadChakraDirectory(a.dir, import);
  std::unique_ptr<engine::NetworkModel> network =
      net::MakeNetwork(a.network, scenario.topology, scenario.profile, scenario.gpus, scenario.node_order);
  engine::FixedCostModel no_compute(FlopRate{1});  // imported compute nodes are fixed-duration tasks
  engine::ReplayResult replay = engine::Engine(no_compute, *network).Replay(t);
  if (a.format == "json") {
    PrintJson({{"chakra_dir", a.dir},
               {"ranks", t.rank_count()},
               {"tasks", t.size()},
               {"network_model", network->name()},
               {"step_time_s", replay.makespan.seconds()},
               {"step_time_ns", replay.makespan.ns()}});
  } else {
    std::cout << "Chakra trace " << a.dir << ": " << t.rank_count() << " ranks, " << t.size() << " tasks\n"
              << "network model: " << network->name() << "\n"
              << "step time: " << replay.makespan.ms() << " ms\n";
  }
  return 0;
}

}  // namespace

RunFunction AddReplayChakraOptions(CLI::App* cmd) {
  auto a = std::make_shared<ReplayChakraArgs>();
  cmd->add_option("dir", a->dir, "Directory of Chakra files (JSON or protobuf .et), one per rank")->required();
  cmd->add_option("--scenario", a->scenario, "Scenario whose topology and profile price the communication")
      ->required();
  AddSet(cmd, &a->opts.overrides);
  AddNetwork(cmd, &a->network);
  cmd->add_flag("--recorded-comm", a->recorded_comm, "Time collectives by their recorded duration_micros");
  AddFormat(cmd, &a->format);
  return [a] { return RunReplayChakra(*a); };
}

}  // namespace stacksim::cli
