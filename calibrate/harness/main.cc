// stacksim-calibrate: measures the local GPU (docs/calibrate.md) and, with
// --out, fits a hardware profile from the measurements.
//
// Steps run in order, each with a time budget (the whole full sweep stays
// under 10 minutes on an H100/H200, --quick near 3); a step that fails is
// logged and marked in log.txt and the next one still runs. Exit status: 0
// all measured (and fitted); 1 a correctness check, a step or the fit failed;
// 2 bad arguments or no CUDA GPU visible.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "calibrate/harness/base_profile.h"
#include "calibrate/harness/log.h"
#include "calibrate/harness/options.h"
#include "calibrate/harness/steps.h"

#if __has_include("calibrate/fit/fit_profile.h")
#include "calibrate/fit/fit_profile.h"
#define STACKSIM_HAVE_FIT 1
#endif

namespace stacksim::calibrate {
namespace {

struct StepSpec {
  const char* name;
  double full_s;   // budget of the full sweep
  double quick_s;  // budget with --quick
  std::function<void(StepContext&)> run;
};

// Budgets sum to 9.5 minutes (full) and 3.3 (quick); a sweep stops starting
// new measurements at its budget or at the run's end, whichever is first.
const std::vector<StepSpec>& Steps() {
  static const std::vector<StepSpec> kSteps = {
      {"env", 10, 5, RunEnvStep},
      {"kernels", 100, 40, RunKernelsStep},
      {"copy", 40, 15, RunCopyStep},
      {"launch", 15, 10, RunLaunchStep},
      {"gemm", 240, 80, RunGemmStep},
      {"attention", 105, 35, RunAttentionStep},
      {"nccl", 60, 15, RunNcclStep},
  };
  return kSteps;
}

void NoGpu(const std::string& reason) {
  std::fprintf(stderr, "stacksim calibrate: no CUDA GPU visible (%s); nothing measured\n", reason.c_str());
}

// Fits the profile; true when it was written.
bool Fit(const Options& opt, Log& log) {
#ifdef STACKSIM_HAVE_FIT
  FitOptions fo;
  fo.raw_dir = opt.raw_dir;
  fo.base_profile_path = opt.base_path;
  fo.quick = opt.quick;
  FitResult r = FitProfile(fo);
  std::string report_path = (std::filesystem::path(opt.raw_dir) / "fit_report.md").string();
  std::ofstream report(report_path);
  report << r.report;
  if (!report) throw std::runtime_error("cannot write " + report_path);
  std::ofstream out(opt.out_path);
  out << r.profile.dump(2) << "\n";
  if (!out) throw std::runtime_error("cannot write " + opt.out_path);
  log.Line("fit: wrote " + opt.out_path + " (base " + opt.base_path + "); residuals in " + report_path);
  return true;
#else
  log.Line("fit: not run: this harness was built without calibrate/fit/fit_profile.h; no profile written");
  return false;
#endif
}

int Run(Options opt) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    NoGpu(err != cudaSuccess ? cudaGetErrorString(err) : "cudaGetDeviceCount found 0 devices");
    return 2;
  }
  DeviceInfo dev;
  dev.device_count = count;
  if ((err = cudaSetDevice(0)) != cudaSuccess || (err = cudaGetDeviceProperties(&dev.props, 0)) != cudaSuccess) {
    NoGpu(std::string("device 0: ") + cudaGetErrorString(err));
    return 2;
  }
  dev.l2_bytes = static_cast<size_t>(dev.props.l2CacheSize);
  dev.cc_major = dev.props.major;
  dev.cc_minor = dev.props.minor;

  if (!opt.out_path.empty() && opt.base_path.empty()) {
    std::string name = BaseProfileName(dev.props.name, dev.props.totalGlobalMem);
    std::filesystem::path base = std::filesystem::path(opt.data_dir) / "profiles" / (name + ".json");
    if (name.empty() || !std::filesystem::is_regular_file(base)) {
      std::fprintf(stderr, "stacksim calibrate: no base profile for '%s' under %s/profiles; pass --base PROFILE.json\n",
                   dev.props.name, opt.data_dir.c_str());
      return 2;
    }
    opt.base_path = base.string();
  }
  std::error_code ec;
  std::filesystem::create_directories(opt.raw_dir, ec);
  if (ec || !std::filesystem::is_directory(opt.raw_dir)) {
    std::fprintf(stderr, "stacksim calibrate: cannot create the raw folder %s: %s\n", opt.raw_dir.c_str(),
                 ec.message().c_str());
    return 2;
  }

  Log log((std::filesystem::path(opt.raw_dir) / "log.txt").string());
  log.Line(std::string("stacksim-calibrate ") + (opt.quick ? "--quick" : "full sweep") + " on " + dev.props.name +
           " (" + std::to_string(count) + " GPU(s) visible), raw " + opt.raw_dir + ", seed " +
           std::to_string(opt.seed) + (opt.out_path.empty() ? "" : ", base " + opt.base_path));
  cudaStream_t stream = nullptr;
  if ((err = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)) != cudaSuccess) {
    log.Line(std::string("cannot create a CUDA stream: ") + cudaGetErrorString(err) + "; nothing measured");
    return 1;
  }

  const int total_steps = static_cast<int>(StepNames().size());
  double budget_sum = 0;
  for (const auto& s : Steps()) budget_sum += opt.quick ? s.quick_s : s.full_s;
  const Deadline run_deadline = Deadline::In(budget_sum);
  std::vector<std::string> failed;
  int checks_failed = 0;
  bool cuda_broken = false;
  std::string broken_why;
  for (size_t i = 0; i < Steps().size(); ++i) {
    const StepSpec& spec = Steps()[i];
    std::string tag = "[" + std::to_string(i + 1) + "/" + std::to_string(total_steps) + "] " + spec.name;
    if (opt.skip.count(spec.name)) {
      log.Line(tag + ": skipped (--skip); files it wrote in an earlier run, if any, are kept");
      continue;
    }
    if (cuda_broken) {
      log.Line(tag + ": FAILED: not run, CUDA is unusable (" + broken_why + ")");
      failed.push_back(spec.name);
      continue;
    }
    double budget = opt.quick ? spec.quick_s : spec.full_s;
    StepContext ctx;
    ctx.options = &opt;
    ctx.log = &log;
    ctx.device = dev;
    ctx.stream = stream;
    ctx.tag = tag;
    ctx.deadline = Deadline(std::min(Deadline::In(budget).end(), run_deadline.end()));
    log.Line(tag + ": start (budget " + FormatDuration(budget) + ")");
    double t0 = log.ElapsedS();
    try {
      spec.run(ctx);
      std::string status = ctx.stopped_early ? "ok, stopped early at its time budget" : "ok";
      if (ctx.items_failed > 0) status += ", " + std::to_string(ctx.items_failed) + " measurement(s) failed";
      if (ctx.checks_failed > 0) status = "CHECKS FAILED (" + std::to_string(ctx.checks_failed) + ")";
      log.Line(tag + ": " + status + " in " + FormatDuration(log.ElapsedS() - t0));
      if (ctx.items_failed > 0) failed.push_back(spec.name);
    } catch (const std::exception& e) {
      log.Line(tag + ": FAILED after " + FormatDuration(log.ElapsedS() - t0) + ": " + e.what());
      failed.push_back(spec.name);
      if (!CudaContextUsable(&broken_why)) {
        cuda_broken = true;
        log.Line("CUDA is unusable from here on (" + broken_why + "); later GPU steps are not run");
      }
    }
    checks_failed += ctx.checks_failed;
  }
  cudaStreamDestroy(stream);

  std::string fit_tag = "[" + std::to_string(total_steps) + "/" + std::to_string(total_steps) + "] fit";
  if (opt.skip.count("fit")) {
    log.Line(fit_tag + ": skipped (--skip)");
  } else if (opt.out_path.empty()) {
    log.Line(fit_tag + ": skipped: no --out, so no profile is fitted");
  } else {
    log.Line(fit_tag + ": start");
    try {
      if (!Fit(opt, log)) failed.push_back("fit");
    } catch (const std::exception& e) {
      log.Line(fit_tag + ": FAILED: " + e.what());
      failed.push_back("fit");
    }
  }

  std::string summary = "done in " + FormatDuration(log.ElapsedS());
  if (checks_failed > 0) summary += "; " + std::to_string(checks_failed) + " correctness check(s) FAILED";
  if (!failed.empty()) {
    summary += "; failed steps:";
    for (const auto& f : failed) summary += " " + f;
  }
  if (checks_failed == 0 && failed.empty()) summary += "; all steps ok";
  log.Line(summary);
  return checks_failed > 0 || !failed.empty() ? 1 : 0;
}

}  // namespace
}  // namespace stacksim::calibrate

int main(int argc, char** argv) {
  using namespace stacksim::calibrate;
  Options opt;
  try {
    opt = ParseOptions(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const UsageError& e) {
    std::fprintf(stderr, "stacksim calibrate: %s (see --help)\n", e.what());
    return 2;
  }
  if (opt.help) {
    std::fputs(UsageText().c_str(), stdout);
    return 0;
  }
  try {
    return Run(opt);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stacksim calibrate: %s\n", e.what());
    return 1;
  }
}
