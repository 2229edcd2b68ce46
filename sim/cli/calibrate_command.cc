// stacksim calibrate ...: runs the calibration harness, a separate program
// (it needs CUDA) that sits beside this one when the build found CUDA.
// Everything after 'calibrate' goes to the harness. When the harness has
// fitted a profile and timed the step check's layers, the simulator's side of
// the step check runs here (sim/stepcheck/: the harness may not include the
// simulator). `calibrate --check-only PROFILE [--raw DIR]` runs only that
// side, on the CPU, against an earlier run's measurements.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "calibrate/harness/options.h"
#include "sim/cli/command.h"
#include "sim/config/scenario.h"
#include "sim/stepcheck/step_check.h"
#include "sim/util/error.h"

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

// Runs the simulator's side of the step check on `raw_dir` with `profile`
// and says in one line where it wrote what. Returns 0, or 2 on bad input.
int StepCheck(const std::string& raw_dir, const std::string& profile) {
  std::vector<stepcheck::StepCheckRow> rows =
      stepcheck::CheckRawFolder(raw_dir, profile, config::DataRoot() + "/models");
  const stepcheck::StepCheckSummary sum = stepcheck::Summarize(rows);
  char mean[32];
  std::snprintf(mean, sizeof(mean), "%.1f%%", sum.mean_abs_pct);
  std::cerr << "stacksim calibrate: step check: " << rows.size() << " shapes, mean |error| " << mean << ", "
            << sum.above_target << " above " << stepcheck::kTargetErrorPct << "%: " << raw_dir << "/step_check.csv and the "
            << "Step check section of " << raw_dir << "/fit_report.md\n";
  return 0;
}

// calibrate --check-only PROFILE [--raw DIR]: DIR defaults to <PROFILE>.raw,
// or the profile's own folder when that holds step_measured.csv (as
// tools/gpu/run_calibrate.sh leaves it).
int RunCheckOnly(const std::vector<std::string>& args) {
  std::string profile, raw;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if ((a == "--check-only" || a == "--raw") && i + 1 < args.size()) {
      (a == "--raw" ? raw : profile) = args[++i];
    } else {
      std::cerr << "stacksim calibrate: --check-only takes PROFILE and optionally --raw DIR, not '" << a << "'\n";
      return 2;
    }
  }
  if (profile.empty()) {
    std::cerr << "stacksim calibrate: --check-only needs a PROFILE\n";
    return 2;
  }
  if (raw.empty()) raw = stepcheck::DefaultRawDir(profile);
  return StepCheck(raw, profile);
}

int RunCalibrate(std::vector<std::string> args) {
  if (std::find(args.begin(), args.end(), "--check-only") != args.end()) return RunCheckOnly(args);
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
  std::cout.flush();
  pid_t child = fork();
  if (child < 0) {
    std::cerr << "stacksim calibrate: cannot start " << harness << "\n";
    return 1;
  }
  if (child == 0) {
    execv(harness.c_str(), argv.data());
    std::cerr << "stacksim calibrate: cannot run " << harness << "\n";
    _exit(1);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return 1;
  }
  int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  // The simulator's side of the step check, when the harness timed the steps
  // and fitted a profile (exit status 0 or 1: it ran).
  calibrate::Options opt;
  try {
    opt = calibrate::ParseOptions(std::vector<std::string>(args.begin() + 1, args.end()));
  } catch (const calibrate::UsageError&) {
    return rc;
  }
  if (rc > 1 || opt.out_path.empty() || !std::filesystem::exists(opt.out_path) ||
      !std::filesystem::exists(std::filesystem::path(opt.raw_dir) / "step_measured.csv")) {
    return rc;
  }
  try {
    StepCheck(opt.raw_dir, opt.out_path);
  } catch (const InputError& e) {
    std::cerr << "stacksim calibrate: step check failed: " << e.what() << "\n";
    return 1;
  }
  return rc;
}

}  // namespace

RunFunction AddCalibrateOptions(CLI::App* cmd) {
  cmd->prefix_command();
  // Everything after 'calibrate' goes to the harness, so CLI11 knows none of
  // its options: --help shows the harness's own list.
  cmd->footer("Options after 'calibrate' go to the calibration harness:\n" + calibrate::UsageText() +
              "stacksim calibrate --check-only PROFILE [--raw DIR]\n"
              "  the step check alone, on the CPU: predicts the layers timed in DIR/step_measured.csv with\n"
              "  PROFILE and writes DIR/step_check.csv and the Step check section of DIR/fit_report.md\n"
              "  (DIR: default <PROFILE>.raw, or PROFILE's folder when it holds step_measured.csv)\n");
  return [cmd] { return RunCalibrate(cmd->remaining()); };
}

}  // namespace stacksim::cli
