// stacksim replay-chakra DIR --scenario FILE: replays Chakra execution traces
// on the scenario's hardware (topology and profile price the communication;
// the scenario's model and plan are unused). The network spans the larger of
// the scenario's GPUs and the GPUs the trace's ranks and groups place.
#include <algorithm>
#include <iostream>
#include <limits>
#include <memory>
#include <string>

#include "sim/chakra/chakra.h"
#include "sim/cli/command.h"
#include "sim/cli/flags.h"
#include "sim/config/scenario.h"
#include "sim/engine/engine.h"
#include "sim/net/network_factory.h"
#include "sim/util/error.h"

namespace stacksim::cli {
namespace {

struct ReplayChakraArgs {
  std::string dir;
  std::string scenario;
  config::ScenarioOptions opts;
  std::string network = "analytic";
  bool recorded_comm = false;
  std::string ctrl_deps = "auto";
  std::string format = "text";
};

int RunReplayChakra(const ReplayChakraArgs& a) {
  config::ScenarioConfig scenario = config::LoadScenario(a.scenario, a.opts);
  chakra::ImportOptions import;
  import.recorded_comm_durations = a.recorded_comm;
  import.ranks_per_node = scenario.topology.gpus_per_node;
  import.roofline = &scenario.profile;
  import.ctrl_deps = a.ctrl_deps == "follow"   ? chakra::CtrlDeps::kFollow
                     : a.ctrl_deps == "ignore" ? chakra::CtrlDeps::kIgnore
                                               : chakra::CtrlDeps::kAuto;
  chakra::ImportNotes notes;
  trace::Trace t = chakra::ReadChakraDirectory(a.dir, import, &notes);
  // A trace of more ranks than the scenario's GPUs gets a fabric of its own
  // size on the scenario's nodes (a smaller one would leave ranks off it).
  const int64_t spanned = chakra::GpusSpanned(t);
  if (spanned > std::numeric_limits<int>::max()) {
    throw InputError(a.dir, "", "the trace places ranks up to " + std::to_string(spanned - 1) + ": too many GPUs");
  }
  const int gpus = std::max(scenario.gpus, static_cast<int>(spanned));
  std::unique_ptr<engine::NetworkModel> network =
      net::MakeNetwork(a.network, scenario.topology, scenario.profile, gpus, scenario.node_order);
  engine::FixedCostModel no_compute(FlopRate{1});  // imported compute nodes are fixed-duration tasks
  engine::ReplayResult replay = engine::Engine(no_compute, *network).Replay(t);
  if (a.format == "json") {
    PrintJson({{"chakra_dir", a.dir},
               {"ranks", t.rank_count()},
               {"tasks", t.size()},
               {"streams", t.streams().size()},
               {"network_model", network->name()},
               {"network_gpus", gpus},
               {"absent_dependencies_ignored", notes.absent_dependencies},
               {"self_dependencies_ignored", notes.self_dependencies},
               {"ctrl_deps_ignored", notes.ignored_ctrl_deps},
               {"ctrl_deps_cycle", notes.ctrl_cycle},
               {"host_side_collectives", notes.host_collectives},
               {"step_time_s", replay.makespan.seconds()},
               {"step_time_ns", replay.makespan.ns()}});
  } else {
    std::cout << "Chakra trace " << a.dir << ": " << t.rank_count() << " ranks, " << t.size() << " tasks on "
              << t.streams().size() << " streams\n"
              << "network model: " << network->name() << " (" << gpus << " GPUs)\n";
    if (notes.absent_dependencies + notes.self_dependencies > 0) {
      std::cout << "ignored: " << notes.absent_dependencies << " dependencies on nodes not in the files, "
                << notes.self_dependencies << " on the node itself\n";
    }
    if (!notes.ctrl_cycle.empty()) {
      std::cout << "ignored: all " << notes.ignored_ctrl_deps << " ctrl deps, which close a cycle (as Chakra's feeder, "
                << "data deps only; --ctrl-deps follow to refuse): " << notes.ctrl_cycle.substr(0, 300) << "\n";
    } else if (notes.ignored_ctrl_deps > 0) {
      std::cout << "ignored: " << notes.ignored_ctrl_deps << " ctrl deps (--ctrl-deps ignore)\n";
    }
    if (notes.host_collectives > 0) {
      std::cout << notes.host_collectives << " collective nodes on the CPU replayed as host delays\n";
    }
    std::cout
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
  cmd->add_option("--ctrl-deps", a->ctrl_deps,
                  "auto (default): follow ctrl_deps unless they close a cycle, then ignore them; "
                  "follow: ctrl_deps order nodes (ASTRA-sim); ignore: data_deps only (Chakra's feeder)")
      ->check(CLI::IsMember({"auto", "follow", "ignore"}));
  AddFormat(cmd, &a->format);
  return [a] { return RunReplayChakra(*a); };
}

}  // namespace stacksim::cli
