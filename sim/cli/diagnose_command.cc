// stacksim diagnose SCENARIO: attributes the gap to an ideal step to the
// five layers and re-simulates remedies.
#include <iostream>
#include <memory>
#include <string>

#include "sim/cli/command.h"
#include "sim/cli/flags.h"
#include "sim/config/scenario.h"
#include "sim/diagnose/diagnose.h"
#include "sim/diagnose/diagnosis_report.h"
#include "sim/report/html.h"
#include "sim/report/html_pages.h"

namespace stacksim::cli {
namespace {

struct DiagnoseArgs {
  std::string scenario;
  config::ScenarioOptions opts;
  std::string format = "text";
  std::string html;
};

int RunDiagnose(const DiagnoseArgs& a) {
  config::ScenarioConfig scenario = config::LoadScenario(a.scenario, a.opts);
  diagnose::DiagnoseOptions options;
  options.network = "analytic";
  diagnose::Diagnosis d = diagnose::Diagnose(scenario, options);
  PrintResult(a.format, [&] { return diagnose::DiagnosisJson(d); },
              [&] { return diagnose::DiagnosisText(d); });
  if (!a.html.empty()) report::WriteHtmlFile(report::DiagnosisHtml(d), a.html);
  return 0;
}

}  // namespace

RunFunction AddDiagnoseOptions(CLI::App* cmd) {
  auto a = std::make_shared<DiagnoseArgs>();
  cmd->add_option("scenario", a->scenario, "Scenario JSON file")->required();
  AddFormat(cmd, &a->format);
  AddSet(cmd, &a->opts.overrides);
  AddProfile(cmd, &a->opts.profile_path);
  AddHtml(cmd, &a->html);
  return [a] { return RunDiagnose(*a); };
}

}  // namespace stacksim::cli
