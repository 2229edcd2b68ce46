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
#include "sim/uncertainty/assessment.h"

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
  // How far the simulated step can be trusted, as simulate says it.
  const uncertainty::Assessment trust = uncertainty::AssessPrediction(
      scenario, d.result.out_of_memory ? 0.0 : d.step.seconds(), options.network, uncertainty::DefaultErrorTablePath());
  PrintResult(
      a.format,
      [&] {
        nlohmann::json j = diagnose::DiagnosisJson(d);
        j["uncertainty"] = trust.range ? uncertainty::StepRangeJson(*trust.range) : nlohmann::json(nullptr);
        j["warnings"] = trust.warnings;
        j["plan_family"] = uncertainty::PlanFamilyJson(trust);
        return j;
      },
      [&] { return diagnose::DiagnosisText(d) + uncertainty::AssessmentText(trust); });
  if (!a.html.empty()) report::WriteHtmlFile(report::DiagnosisHtml(d, trust), a.html);
  return d.result.out_of_memory ? 3 : 0;
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
