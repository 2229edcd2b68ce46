// stacksim project-profile MEASURED --to GPU --out FILE: projects a measured
// profile onto another GPU's datasheet.
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "calibrate/fit/fit_profile.h"
#include "sim/cli/command.h"
#include "sim/config/profile.h"
#include "sim/config/scenario.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace stacksim::cli {
namespace {

struct ProjectProfileArgs {
  std::string measured;
  std::string target;
  std::string out;
};

int RunProjectProfile(const ProjectProfileArgs& a) {
  nlohmann::json measured = ReadJsonFile(a.measured);
  config::ParseProfile(JsonNode(measured, a.measured, ""));  // validate
  std::string target_path = config::ResolveDataFile("profiles", a.target, a.measured);
  nlohmann::json datasheet = ReadJsonFile(target_path);
  config::ParseProfile(JsonNode(datasheet, target_path, ""));
  nlohmann::json projected = calibrate::ProjectProfile(measured, datasheet, a.measured, a.target);
  std::ofstream f(a.out);
  if (!f) throw InputError(a.out, "", "cannot write the projected profile");
  f << projected.dump(2) << "\n";
  if (!f) throw InputError(a.out, "", "cannot write the projected profile");
  std::cerr << "wrote " << a.out << " (" << a.target << " projected from " << a.measured << ")\n";
  return 0;
}

}  // namespace

RunFunction AddProjectProfileOptions(CLI::App* cmd) {
  auto a = std::make_shared<ProjectProfileArgs>();
  cmd->add_option("measured", a->measured, "Measured profile JSON")->required();
  cmd->add_option("--to", a->target, "Target GPU profile name or file (e.g. h100-sxm-80gb)")->required();
  cmd->add_option("--out", a->out, "Output profile JSON")->required();
  return [a] { return RunProjectProfile(*a); };
}

}  // namespace stacksim::cli
