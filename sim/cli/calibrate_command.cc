// stacksim calibrate ...: runs the calibration harness, a separate program
// (it needs CUDA) that sits beside this one when the build found CUDA.
// Everything after 'calibrate' goes to the harness.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "calibrate/harness/options.h"
#include "sim/cli/command.h"
#include "sim/config/scenario.h"

namespace stacksim::cli {
namespace {

// "" when this build has no harness.
std::string HarnessPath() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  auto harness = self.parent_path() / "stacksim-calibrate";
  return std::filesystem::exists(harness) ? harness.string() : "";
}

int RunCalibrate(std::vector<std::string> args) {
  std::string harness = HarnessPath();
  if (harness.empty()) {
    std::cerr << "stacksim calibrate: this build has no calibration harness (CUDA was not found when it was "
                 "configured); nothing measured\n";
    // /dev/kfd is the AMD GPU compute driver's device (ROCm).
    if (std::filesystem::exists("/dev/kfd")) {
      std::cerr << "stacksim calibrate: this machine has an AMD GPU driver (ROCm); the harness is CUDA-only and "
                   "cannot measure AMD GPUs: use the datasheet profiles profiles/mi300x.json or mi325x.json "
                   "(projections, no validated run; docs/calibrate.md)\n";
    }
    return 2;
  }
  args.insert(args.begin(), harness);
  if (std::find(args.begin(), args.end(), "--data-dir") == args.end()) {
    args.push_back("--data-dir");
    args.push_back(config::DataRoot());
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  execv(harness.c_str(), argv.data());
  std::cerr << "stacksim calibrate: cannot run " << harness << "\n";
  return 1;
}

}  // namespace

RunFunction AddCalibrateOptions(CLI::App* cmd) {
  cmd->prefix_command();
  // Everything after 'calibrate' goes to the harness, so CLI11 knows none of
  // its options: --help shows the harness's own list.
  cmd->footer("Options after 'calibrate' go to the calibration harness:\n" + calibrate::UsageText());
  return [cmd] { return RunCalibrate(cmd->remaining()); };
}

}  // namespace stacksim::cli
