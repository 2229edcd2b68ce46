// The subcommands of the stacksim command, as main()'s table lists them (the
// shape of Ninja's tool table, src/ninja.cc): a name and a one-line
// description for --help, and a function that declares the command's own
// arguments and returns the function that runs it. One file per command,
// sim/cli/<name>_command.cc; the flags several commands share are in flags.h.
//
// Exit status of a run: 0 success, 2 bad input. Bad input may also be thrown
// as InputError, anything else as std::exception: main() reports both.
#ifndef STACKSIM_SIM_CLI_COMMAND_H_
#define STACKSIM_SIM_CLI_COMMAND_H_

#include <CLI/CLI.hpp>

#include <functional>

namespace stacksim::cli {

// Runs a command on the values its arguments were parsed into.
using RunFunction = std::function<int()>;

// Declares a command's arguments on `cmd`, bound to storage that the
// returned run function owns (so a command keeps no global state).
using AddOptionsFunction = RunFunction (*)(CLI::App* cmd);

struct Command {
  const char* name;
  const char* description;
  AddOptionsFunction add_options;
};

RunFunction AddSimulateOptions(CLI::App* cmd);
RunFunction AddReplayChakraOptions(CLI::App* cmd);
RunFunction AddValidateOptions(CLI::App* cmd);
RunFunction AddValidateMemoryOptions(CLI::App* cmd);
RunFunction AddSearchOptions(CLI::App* cmd);
RunFunction AddDiagnoseOptions(CLI::App* cmd);
RunFunction AddCompareOptions(CLI::App* cmd);
RunFunction AddClusterOptions(CLI::App* cmd);
RunFunction AddRunCampaignOptions(CLI::App* cmd);
RunFunction AddServeOptions(CLI::App* cmd);
RunFunction AddServeValidateOptions(CLI::App* cmd);
RunFunction AddServeSearchOptions(CLI::App* cmd);
RunFunction AddCalibrateOptions(CLI::App* cmd);
RunFunction AddReplayOptions(CLI::App* cmd);
RunFunction AddProjectProfileOptions(CLI::App* cmd);
RunFunction AddTopologyOptions(CLI::App* cmd);
RunFunction AddImportOptions(CLI::App* cmd);

}  // namespace stacksim::cli

#endif  // STACKSIM_SIM_CLI_COMMAND_H_
