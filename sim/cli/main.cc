// The stacksim command: parses arguments and calls the library.
//
// Exit status: 0 success, 2 bad input (InputError, bad arguments), 1 internal failure.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "sim/config/scenario.h"
#include "sim/report/json_report.h"
#include "sim/report/perfetto.h"
#include "sim/report/text_report.h"
#include "sim/simulate/simulate.h"
#include "sim/util/error.h"
#include "sim/validate/validate.h"

namespace {

using namespace stacksim;

int RunSimulate(const std::string& path, const config::ScenarioOptions& opts, const std::string& format,
                const std::string& trace_path, bool print_config) {
  config::ScenarioConfig scenario = config::LoadScenario(path, opts);
  if (print_config) {
    std::cout << config::ResolvedConfigJson(scenario).dump(2) << "\n";
    return 0;
  }
  simulate::Options sim_opts;
  sim_opts.keep_trace = !trace_path.empty();
  simulate::SimulationResult result = simulate::Simulate(scenario, sim_opts);
  if (!trace_path.empty()) {
    if (result.trace) {
      report::WritePerfettoTraceFile(*result.trace, *result.replay, scenario.name, trace_path);
    } else {
      std::cerr << "note: no trace written: the plan was not simulated (out of memory)\n";
    }
  }
  if (format == "json") {
    std::cout << report::JsonReport(result).dump(2) << "\n";
  } else {
    std::cout << report::TextReport(result);
  }
  return 0;
}

int RunValidate(const std::string& path, const std::string& format, const std::string& only) {
  validate::ValidationOptions opts;
  opts.only_id = only;
  validate::ValidationReport rep = validate::RunValidation(path, opts);
  if (format == "json") {
    std::cout << validate::ValidationJson(rep).dump(2) << "\n";
  } else {
    std::cout << validate::ValidationText(rep);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"stacksim: predict how large-model training runs on GPU clusters"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for all subcommands");

  std::string format = "text";
  auto add_format = [&](CLI::App* cmd) {
    cmd->add_option("--format", format, "Output format")->check(CLI::IsMember({"text", "json"}));
  };

  CLI::App* sim = app.add_subcommand("simulate", "Simulate one training step of a scenario");
  std::string scenario_path, trace_path, network = "analytic";
  config::ScenarioOptions opts;
  bool print_config = false;
  sim->add_option("scenario", scenario_path, "Scenario JSON file")->required();
  add_format(sim);
  sim->add_option("--trace", trace_path, "Write a Chrome/Perfetto trace of the step to FILE");
  sim->add_option("--set", opts.overrides, "Override a scenario field: key.path=value (repeatable)");
  sim->add_option("--profile", opts.profile_path, "Use this hardware profile instead of the topology's");
  sim->add_option("--network", network, "Network model")->check(CLI::IsMember({"analytic", "simgrid"}));
  sim->add_flag("--print-config", print_config, "Print the fully resolved configuration and exit");

  CLI::App* val = app.add_subcommand("validate", "Compare predictions with published training runs");
  std::string validation_path, only;
  val->add_option("file", validation_path, "Validation file (schema stacksim.validation.training/1)")->required();
  val->add_option("--run", only, "Validate only the run with this id");
  add_format(val);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }

  try {
    if (sim->parsed()) {
      if (network == "simgrid") {
        std::cerr << "error: --network simgrid: the SimGrid flow-level backend is not built yet; use --network analytic\n";
        return 2;
      }
      return RunSimulate(scenario_path, opts, format, trace_path, print_config);
    }
    if (val->parsed()) return RunValidate(validation_path, format, only);
  } catch (const stacksim::InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
