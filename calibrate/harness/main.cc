// stacksim-calibrate: measures the local GPU (docs/calibrate.md) and, with
// --out, fits a hardware profile from the measurements.
//
// Steps run in order, each with a time budget (the whole full sweep stays
// under 10 minutes on an H100/H200, --quick near 3); a step that fails is
// logged and marked in log.txt and in <raw>/outcome.json, and the next one
// still runs; the fit then writes a partial profile ("partial": true, with
// what is missing and why). Before the steps a preflight checks that no one
// else uses the GPU (preflight.h). Exit status: 0 all measured (and fitted;
// collectives may be out of reach of one GPU); 1 a correctness check, a step,
// a measurement or the fit failed, timings stayed unstable, or fewer GPUs
// than --gpus were visible; 2 bad arguments, no CUDA GPU visible, a driver
// older than the toolkit, or a GPU this build has no kernel image for (each
// one line: calibrate/fit/gpu_support.h).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "calibrate/fit/gpu_support.h"
#include "calibrate/harness/base_profile.h"
#include "calibrate/harness/device_kernels.h"
#include "calibrate/harness/log.h"
#include "calibrate/harness/options.h"
#include "calibrate/harness/preflight.h"
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
      {"gemm", 180, 45, RunGemmStep},
      {"attention", 105, 35, RunAttentionStep},
      {"nccl", 60, 15, RunNcclStep},
      {"step", 60, 35, RunStepCheckStep},
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
  if (r.profile.value("partial", false)) {
    std::string sections;
    for (const auto& m : r.profile["missing"]) sections += (sections.empty() ? "" : ", ") + m["section"].get<std::string>();
    log.Line("fit: the profile is PARTIAL (\"partial\": true): not measured: " + sections +
             "; those fields keep the base profile's values, each source beginning \"datasheet fallback: \"; "
             "see \"missing\" in the profile and the Partial profile section of " + report_path);
  }
  return true;
#else
  log.Line("fit: not run: this harness was built without calibrate/fit/fit_profile.h; no profile written");
  return false;
#endif
}

// Writes outcome.json; a failure to write is logged, not fatal (the CSVs stand).
void WriteOutcome(const RunOutcome& outcome, const Options& opt, Log& log) {
  try {
    outcome.Write((std::filesystem::path(opt.raw_dir) / "outcome.json").string());
  } catch (const std::exception& e) {
    log.Line(std::string("outcome.json not written: ") + e.what());
  }
}

// The CUDA architectures this harness was built for (CMake passes them).
#ifndef STACKSIM_CUDA_ARCHITECTURES
#define STACKSIM_CUDA_ARCHITECTURES ""
#endif

// A driver older than the toolkit: one line saying so (true), else false.
// Without any driver (version 0) the usual "no CUDA GPU visible" line stands.
bool DriverTooOld(cudaError_t err) {
  if (err != cudaErrorInsufficientDriver) return false;
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  if (driver <= 0) return false;
  std::fprintf(stderr, "%s\n", DriverTooOldMessage(driver, runtime).c_str());
  return true;
}

// Whether this build holds code the GPU can run: asking for a kernel's
// attributes loads its module, which fails without an image for the GPU's
// architecture (and no PTX the driver could compile).
bool KernelImageAvailable(const cudaDeviceProp& props) {
  cudaFuncAttributes attr{};
  cudaError_t err = cudaFuncGetAttributes(&attr, EmptyKernel());
  if (err != cudaErrorNoKernelImageForDevice && err != cudaErrorInvalidDeviceFunction) return true;
  cudaGetLastError();
  std::fprintf(stderr, "%s\n",
               NoKernelImageMessage(props.name, props.major, props.minor, STACKSIM_CUDA_ARCHITECTURES).c_str());
  return false;
}

int Run(Options opt, const std::set<std::string>& faults) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (DriverTooOld(err)) return 2;
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
  if (!KernelImageAvailable(dev.props)) return 2;
  dev.gpus = opt.gpus > 0 ? std::min(opt.gpus, count) : count;
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
  RunOutcome outcome;
  if (opt.gpus > 0) outcome.gpus_requested = opt.gpus;
  outcome.gpus_visible = count;
  outcome.gpus_used = dev.gpus;
  outcome.faults.assign(faults.begin(), faults.end());
  if (!faults.empty()) {
    std::string list;
    for (const auto& f : faults) list += (list.empty() ? "" : ",") + f;
    log.Line("FAULT INJECTION (STACKSIM_CALIBRATE_FAULT=" + list + "): failures are made on purpose; the profile says so");
  }
  if (opt.gpus > count) {
    log.Line("gpus: --gpus " + std::to_string(opt.gpus) + " asked for, " + std::to_string(count) +
             " visible: measuring with " + std::to_string(count) +
             (count < 2 ? " (collectives need at least 2, so none are measured)" : "") +
             "; the profile records gpus_requested and gpus_used");
  }
  cudaStream_t stream = nullptr;
  if ((err = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)) != cudaSuccess) {
    log.Line(std::string("cannot create a CUDA stream: ") + cudaGetErrorString(err) + "; nothing measured");
    return 1;
  }
  try {
    BusyVerdict busy = CheckGpuIdle(log, dev.props, stream, faults.count("busy") > 0);
    outcome.busy = busy.busy;
    outcome.busy_reason = busy.Text();
  } catch (const std::exception& e) {
    outcome.busy_reason = std::string("not checked: the probe failed: ") + e.what();
    log.Line("preflight: " + outcome.busy_reason);
    CudaContextUsable(nullptr);  // clears a non-sticky error for the steps
  }
  WriteOutcome(outcome, opt, log);

  const int total_steps = static_cast<int>(StepNames().size());
  double budget_sum = 0;
  for (const auto& s : Steps()) budget_sum += opt.quick ? s.quick_s : s.full_s;
  const Deadline run_deadline = Deadline::In(budget_sum);
  std::vector<std::string> failed;
  int checks_failed = 0, unstable = 0;
  bool cuda_broken = false;
  std::string broken_why;
  for (size_t i = 0; i < Steps().size(); ++i) {
    const StepSpec& spec = Steps()[i];
    std::string tag = "[" + std::to_string(i + 1) + "/" + std::to_string(total_steps) + "] " + spec.name;
    SectionOutcome& section = outcome.Section(spec.name);
    if (opt.skip.count(spec.name)) {
      log.Line(tag + ": skipped (--skip); files it wrote in an earlier run, if any, are kept");
      section.status = SectionStatus::kSkipped;
      section.reason = "--skip; files of an earlier run in the raw folder, if any, are kept";
      WriteOutcome(outcome, opt, log);
      continue;
    }
    if (cuda_broken) {
      log.Line(tag + ": FAILED: not run, CUDA is unusable (" + broken_why + ")");
      section.status = SectionStatus::kFailed;
      section.reason = "not run, CUDA is unusable (" + broken_why + ")";
      failed.push_back(spec.name);
      WriteOutcome(outcome, opt, log);
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
    ctx.section = &section;
    ctx.faults = &faults;
    log.Line(tag + ": start (budget " + FormatDuration(budget) + ")");
    double t0 = log.ElapsedS();
    try {
      spec.run(ctx);
      std::string status = ctx.stopped_early ? "ok, stopped early at its time budget" : "ok";
      if (ctx.items_failed > 0) status += ", " + std::to_string(ctx.items_failed) + " measurement(s) failed";
      if (ctx.checks_failed > 0) status = "CHECKS FAILED (" + std::to_string(ctx.checks_failed) + ")";
      if (section.unstable > 0) status += ", " + std::to_string(section.unstable) + " of " +
                                          std::to_string(section.measured) + " measurement(s) UNSTABLE";
      if (section.status == SectionStatus::kNotMeasurable) status = "NOT MEASURED: " + section.reason;
      log.Line(tag + ": " + status + " in " + FormatDuration(log.ElapsedS() - t0));
      if (ctx.items_failed > 0 || (section.status == SectionStatus::kNotMeasurable && !ctx.expected_gap)) {
        failed.push_back(spec.name);
      }
      if (ctx.checks_failed > 0 && section.status == SectionStatus::kOk) {
        section.status = SectionStatus::kFailed;
        section.reason = std::to_string(ctx.checks_failed) +
                         " correctness check(s) failed (checks.csv); those kernel families were not timed";
      }
    } catch (const std::exception& e) {
      log.Line(tag + ": FAILED after " + FormatDuration(log.ElapsedS() - t0) + ": " + e.what());
      section.status = SectionStatus::kFailed;
      section.reason = e.what();
      failed.push_back(spec.name);
      if (!CudaContextUsable(&broken_why)) {
        cuda_broken = true;
        log.Line("CUDA is unusable from here on (" + broken_why + "); later GPU steps are not run");
      }
    }
    section.failed_items = ctx.items_failed;
    section.stopped_early = ctx.stopped_early;
    unstable += section.unstable;
    checks_failed += ctx.checks_failed;
    WriteOutcome(outcome, opt, log);
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
  if (unstable > 0) summary += "; " + std::to_string(unstable) + " measurement(s) UNSTABLE (marked stable=0, not fitted)";
  bool short_of_gpus = opt.gpus > count;
  if (short_of_gpus) summary += "; fewer GPUs than --gpus";
  if (checks_failed == 0 && failed.empty() && unstable == 0 && !short_of_gpus) summary += "; all steps ok";
  log.Line(summary);
  for (const std::string& p : outcome.Problems()) log.Line("  " + p);
  return checks_failed > 0 || !failed.empty() || unstable > 0 || short_of_gpus ? 1 : 0;
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
  std::set<std::string> faults;
  try {
    const char* env = std::getenv("STACKSIM_CALIBRATE_FAULT");
    faults = ParseFaults(env != nullptr ? env : "");
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "stacksim calibrate: %s\n", e.what());
    return 2;
  }
  try {
    return Run(opt, faults);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stacksim calibrate: %s\n", e.what());
    return 1;
  }
}
