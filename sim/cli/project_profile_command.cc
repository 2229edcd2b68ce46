// stacksim project-profile MEASURED --to GPU --out FILE [--step-check DIR]:
// projects a measured profile onto another GPU's datasheet and states the
// error to expect: what the step check on the measured GPU gave
// (sim/stepcheck), or that none was measured.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "calibrate/fit/fit_profile.h"
#include "sim/cli/command.h"
#include "sim/config/profile.h"
#include "sim/config/scenario.h"
#include "sim/stepcheck/step_check.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace stacksim::cli {
namespace {

struct ProjectProfileArgs {
  std::string measured;
  std::string target;
  std::string out;
  std::string step_check;  // raw folder with step_measured.csv; "": stepcheck::DefaultRawDir
};

// The sentence the projection's provenance ends with: the step check of the
// measured profile on its own GPU, a lower bound for the projection's error.
std::string ExpectedError(const ProjectProfileArgs& a, const config::ProfileConfig& measured) {
  const std::string raw = a.step_check.empty() ? stepcheck::DefaultRawDir(a.measured) : a.step_check;
  const std::string csv = (std::filesystem::path(raw) / "step_measured.csv").string();
  if (!std::filesystem::exists(csv)) {
    if (!a.step_check.empty()) throw InputError(csv, "", "no step check measurements here (--step-check DIR)");
    return "Expected error: unknown: no step check was measured beside " + a.measured + " (" + csv +
           "); calibrate's step check measures it (docs/calibrate.md).";
  }
  const stepcheck::StepCheckSummary sum = stepcheck::Summarize(
      stepcheck::RunStepCheck(stepcheck::ReadStepMeasurements(csv), csv, measured, config::DataRoot() + "/models"));
  char figures[160];
  std::snprintf(figures, sizeof(figures), "%d layer steps with mean |error| %.1f%% (largest %.1f%%, %d above %.0f%%)",
                sum.shapes, sum.mean_abs_pct, sum.max_abs_pct, sum.above_target, stepcheck::kTargetErrorPct);
  return "Expected error: the step check on " + measured.gpu + " (" + csv + ") predicted " + figures +
         " with the measured profile; the projection adds the transfer of its efficiencies to " + a.target +
         ", which no step check there has measured: read it as a lower bound.";
}

int RunProjectProfile(const ProjectProfileArgs& a) {
  nlohmann::json measured = ReadJsonFile(a.measured);
  const config::ProfileConfig measured_profile = config::ParseProfile(JsonNode(measured, a.measured, ""));
  std::string target_path = config::ResolveDataFile("profiles", a.target, a.measured);
  nlohmann::json datasheet = ReadJsonFile(target_path);
  config::ParseProfile(JsonNode(datasheet, target_path, ""));
  nlohmann::json projected = calibrate::ProjectProfile(measured, datasheet, a.measured, a.target);
  const std::string expected = ExpectedError(a, measured_profile);
  projected["provenance"] = projected["provenance"].get<std::string>() + " " + expected;
  std::ofstream f(a.out);
  if (!f) throw InputError(a.out, "", "cannot write the projected profile");
  f << projected.dump(2) << "\n";
  if (!f) throw InputError(a.out, "", "cannot write the projected profile");
  std::cerr << "wrote " << a.out << " (" << a.target << " projected from " << a.measured << ")\n" << expected << "\n";
  return 0;
}

}  // namespace

RunFunction AddProjectProfileOptions(CLI::App* cmd) {
  auto a = std::make_shared<ProjectProfileArgs>();
  cmd->add_option("measured", a->measured, "Measured profile JSON")->required();
  cmd->add_option("--to", a->target, "Target GPU profile name or file (e.g. h100-sxm-80gb)")->required();
  cmd->add_option("--out", a->out, "Output profile JSON")->required();
  cmd->add_option("--step-check", a->step_check,
                  "Raw folder with the measured profile's step_measured.csv (default: beside the profile, or "
                  "<MEASURED>.raw): states the error to expect");
  return [a] { return RunProjectProfile(*a); };
}

}  // namespace stacksim::cli
