// The stacksim command: looks the subcommand up in a table and runs it (the
// shape of Ninja's tool table). Each command declares its own arguments and
// calls the library; see command.h.
//
// Exit status: 0 success, 2 bad input (InputError, bad arguments), 1 internal failure.
#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>
#include <utility>
#include <vector>

#include "sim/cli/command.h"
#include "sim/util/allocator.h"
#include "sim/util/error.h"
#include "sim/util/version.h"

namespace {

using stacksim::cli::Command;

// In the order --help lists them.
constexpr Command kCommands[] = {
    {"simulate", "Simulate one training step of a scenario", stacksim::cli::AddSimulateOptions},
    {"replay-chakra", "Replay Chakra execution traces (DIR/NAME.RANK.json or .et)",
     stacksim::cli::AddReplayChakraOptions},
    {"validate", "Compare predictions with published training runs", stacksim::cli::AddValidateOptions},
    {"validate-memory", "Compare predicted per-GPU peak memory with measured peaks",
     stacksim::cli::AddValidateMemoryOptions},
    {"search", "Search parallel plans for a scenario's model, cluster and batch", stacksim::cli::AddSearchOptions},
    {"diagnose", "Attribute the gap to an ideal step to the five layers and re-simulate remedies",
     stacksim::cli::AddDiagnoseOptions},
    {"compare", "Compare clusters for one model and token budget: best plan, days, cost, energy",
     stacksim::cli::AddCompareOptions},
    {"cluster", "Simulate many jobs sharing one cluster: scheduler, placement, failures",
     stacksim::cli::AddClusterOptions},
    {"run-campaign", "Monte Carlo of a whole training run: failures, restarts, checkpoints, time to train",
     stacksim::cli::AddRunCampaignOptions},
    {"serve", "Simulate serving requests: batching, KV cache, TTFT/TPOT, goodput, cost",
     stacksim::cli::AddServeOptions},
    {"serve-validate", "Compare serving predictions with published measurements",
     stacksim::cli::AddServeValidateOptions},
    {"serve-search", "Cheapest serving configuration that meets latency SLOs at a load",
     stacksim::cli::AddServeSearchOptions},
    {"calibrate", "Measure the local GPU and write a hardware profile (needs CUDA)",
     stacksim::cli::AddCalibrateOptions},
    {"replay", "Replay a PyTorch profiler (Kineto) trace; what-if on another GPU or DP scale",
     stacksim::cli::AddReplayOptions},
    {"project-profile", "Project a measured profile onto another GPU's datasheet",
     stacksim::cli::AddProjectProfileOptions},
    {"topology", "Print a fabric as a graph: links by kind, bisection, diameter, injection, oversubscription",
     stacksim::cli::AddTopologyOptions},
    {"import", "Turn a Megatron-LM launch script, DeepSpeed config or torchtitan TOML into a scenario",
     stacksim::cli::AddImportOptions},
};

}  // namespace

int main(int argc, char** argv) {
  stacksim::KeepFreedMemory();
  CLI::App app{"stacksim: predict how large-model training runs on GPU clusters"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for all subcommands");
  app.set_version_flag("--version", "stacksim " + stacksim::BuildVersion(), "Print the build (git describe) and exit");
  std::vector<std::pair<CLI::App*, stacksim::cli::RunFunction>> commands;
  for (const Command& c : kCommands) {
    CLI::App* cmd = app.add_subcommand(c.name, c.description);
    commands.emplace_back(cmd, c.add_options(cmd));
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }

  try {
    for (const auto& [cmd, run] : commands) {
      if (cmd->parsed()) return run();
    }
  } catch (const stacksim::InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
