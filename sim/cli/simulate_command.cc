// stacksim simulate SCENARIO: one training step, with its likely range, and
// optionally straggler analysis, a Perfetto trace, Chakra traces and a page.
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "sim/chakra/chakra.h"
#include "sim/cli/command.h"
#include "sim/cli/flags.h"
#include "sim/config/scenario.h"
#include "sim/report/html.h"
#include "sim/report/html_pages.h"
#include "sim/report/json_report.h"
#include "sim/report/perfetto.h"
#include "sim/report/text_report.h"
#include "sim/simulate/critical_path.h"
#include "sim/simulate/simulate.h"
#include "sim/straggler/straggler.h"
#include "sim/straggler/straggler_report.h"
#include "sim/memory/reserve.h"
#include "sim/uncertainty/assessment.h"
#include "sim/util/json_reader.h"
#include "sim/util/progress.h"

namespace stacksim::cli {
namespace {

struct SimulateArgs {
  std::string scenario;
  config::ScenarioOptions opts;
  std::string format = "text";
  std::string trace_path;
  bool print_config = false;
  std::string network = "analytic";
  std::string html_path;
  std::string stragglers;  // --stragglers: text form or a distribution file (.json)
  int straggler_steps = 1;
  uint64_t seed = 1;
  int threads = 1;
  std::string chakra_dir;
  std::string chakra_format = "json";
  std::string min_headroom;
  bool critical_path = false;
};

int RunSimulate(const SimulateArgs& a) {
  config::ScenarioConfig scenario = config::LoadScenario(a.scenario, a.opts);
  if (a.print_config) {
    PrintJson(config::ResolvedConfigJson(scenario));
    return 0;
  }
  simulate::Options sim_opts;
  sim_opts.keep_trace = !a.trace_path.empty() || !a.html_path.empty() || !a.chakra_dir.empty() ||  // the page draws a timeline
                        a.critical_path;
  sim_opts.network = a.network;
  // Straggler input errors before the (possibly long) simulation.
  std::optional<straggler::StragglerSpec> spec;
  straggler::StragglerOptions straggler_opts;
  straggler_opts.steps = a.straggler_steps;
  straggler_opts.seed = a.seed;
  straggler_opts.threads = a.threads;
  straggler_opts.network = a.network;
  if (!a.stragglers.empty()) {
    spec = straggler::ParseStragglerArgument(a.stragglers, "--stragglers");
    straggler::CheckStragglerOptions(straggler_opts);
  }
  simulate::SimulationResult result = simulate::Simulate(scenario, sim_opts);
  std::optional<straggler::StragglerResult> stragglers;
  if (spec && result.out_of_memory) {
    std::cerr << "note: no straggler analysis: the plan was not simulated (out of memory)\n";
  } else if (spec) {
    ProgressMeter progress("stragglers", "replays", 0);
    straggler_opts.progress = &progress;
    stragglers = straggler::AnalyzeStragglers(scenario, *spec, straggler_opts);
  }
  if (!a.trace_path.empty()) {
    if (result.trace) {
      report::WritePerfettoTraceFile(*result.trace, *result.replay, scenario.name, a.trace_path);
    } else {
      std::cerr << "note: no trace written: the plan was not simulated (out of memory)\n";
    }
  }
  if (!a.chakra_dir.empty()) {
    if (result.trace) {
      chakra::WriteChakraDirectory(*result.trace, *result.replay, a.chakra_dir,
                                   a.chakra_format == "et" ? chakra::FileForm::kEt : chakra::FileForm::kJson);
    } else {
      std::cerr << "note: no Chakra trace written: the plan was not simulated (out of memory)\n";
    }
  }
  // How far the step can be trusted: a range from validated runs like it.
  uncertainty::Assessment trust = uncertainty::AssessPrediction(
      scenario, result.out_of_memory ? 0.0 : result.iteration.seconds(), a.network,
      uncertainty::DefaultErrorTablePath());
  memory::HeadroomPolicy headroom;
  if (!a.min_headroom.empty()) headroom.fixed = ParseBytes(a.min_headroom, "--min-headroom", "");
  Bytes peak;
  for (const auto& m : result.memory) peak = std::max(peak, m.total());
  if (std::string w = memory::ReserveWarning(scenario, peak, headroom); !w.empty()) trust.warnings.push_back(w);
  std::optional<simulate::CriticalPath> critical;
  if (a.critical_path && result.trace) critical = simulate::FindCriticalPath(*result.trace, *result.replay);
  if (a.format == "json") {
    nlohmann::json j = report::JsonReport(result);
    if (critical) j["critical_path"] = simulate::CriticalPathJson(*result.trace, *result.replay, *critical);
    if (stragglers) j["stragglers"] = straggler::StragglerJson(*stragglers);
    j["uncertainty"] = trust.range ? uncertainty::StepRangeJson(*trust.range) : nlohmann::json(nullptr);
    j["warnings"] = trust.warnings;
    j["plan_family"] = uncertainty::PlanFamilyJson(trust);
    PrintJson(j);
  } else {
    std::cout << report::TextReport(result, trust);
    if (stragglers) std::cout << straggler::StragglerText(*stragglers);
    if (critical) std::cout << simulate::CriticalPathText(*result.trace, *result.replay, *critical);
  }
  if (!a.html_path.empty()) report::WriteHtmlFile(report::SimulateHtml(result, trust), a.html_path);
  // Out of memory is an answer (printed above), told apart by exit status 3.
  return result.out_of_memory ? 3 : 0;
}

}  // namespace

RunFunction AddSimulateOptions(CLI::App* cmd) {
  auto a = std::make_shared<SimulateArgs>();
  cmd->add_option("scenario", a->scenario, "Scenario JSON file")->required();
  AddFormat(cmd, &a->format);
  cmd->add_option("--trace", a->trace_path, "Write a Chrome/Perfetto trace of the step to FILE");
  AddSet(cmd, &a->opts.overrides);
  AddProfile(cmd, &a->opts.profile_path);
  AddNetwork(cmd, &a->network);
  cmd->add_flag("--print-config", a->print_config, "Print the fully resolved configuration and exit");
  AddHtml(cmd, &a->html_path);
  AddMinHeadroom(cmd, &a->min_headroom);
  CLI::Option* stragglers = cmd->add_option(
      "--stragglers", a->stragglers,
      "Slow nodes/GPUs: FRACTION%:SLOWDOWNx terms (e.g. 0.1%:1.5x,gpu:0.5%:1.2x) or a distribution .json");
  cmd->add_option("--straggler-steps", a->straggler_steps, "Steps to simulate; transient stragglers are redrawn each")
      ->check(WholeIn(1, 100000))
      ->needs(stragglers);
  cmd->add_option("--seed", a->seed, "Seed of the straggler draws")->check(SeedValue());
  cmd->add_flag("--critical-path", a->critical_path,
                "Print the chain of tasks that set the step time (longest path through the replayed DAG)");
  AddThreads(cmd, &a->threads, "Threads for the straggler replays (results do not depend on it)");
  CLI::Option* chakra = cmd->add_option(
      "--chakra", a->chakra_dir, "Write the replayed step as Chakra execution traces (one file per rank) to DIR");
  cmd->add_option("--chakra-format", a->chakra_format,
                  "Form of the --chakra files: json (as Chakra's jsonizer) or et (protobuf)")
      ->check(CLI::IsMember({"json", "et"}))
      ->needs(chakra);
  return [a] { return RunSimulate(*a); };
}

}  // namespace stacksim::cli
