#include "calibrate/harness/options.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace stacksim::calibrate {

const std::vector<std::string>& StepNames() {
  static const std::vector<std::string> kSteps = {"env",  "kernels",   "copy", "launch",
                                                  "gemm", "attention", "nccl", "step", "fit"};
  return kSteps;
}

std::string UsageText() {
  return "usage: stacksim-calibrate [--quick] [--out PROFILE.json] [--raw DIR] [--base PROFILE.json]\n"
         "                          [--data-dir DIR] [--seed N] [--skip STEP,...] [--gpus N]\n"
         "  --quick        a subset of every sweep (about 3 minutes instead of at most 10)\n"
         "  --out FILE     fit the measurements into a hardware profile written here\n"
         "  --raw DIR      raw measurements (CSV, env.json, log.txt); default <out>.raw\n"
         "  --base FILE    profile whose values stay where nothing was measured (needed with --out\n"
         "                 unless --data-dir lets the harness pick it by GPU name)\n"
         "  --data-dir DIR folder holding profiles/ (what 'stacksim calibrate' passes)\n"
         "  --seed N       seed of all random inputs (default 1)\n"
         "  --skip LIST    steps to leave out: env,kernels,copy,launch,gemm,attention,nccl,step,fit\n"
         "  --gpus N       GPUs the collectives use (default: every visible one); with fewer visible\n"
         "                 the run uses those, says so, and the profile records both numbers\n"
         "environment: STACKSIM_CALIBRATE_FAULT=busy,oom,cuda-error,nccl-init,nccl-missing injects\n"
         "             failures to exercise the harness's error paths (the profile says so)\n"
         "exit status: 0 all measured and fitted; 1 a correctness check, a step or a measurement\n"
         "             failed, timings stayed unstable, or fewer GPUs than --gpus were visible;\n"
         "             2 bad arguments or no CUDA GPU visible\n"
         "CUDA only: the harness measures NVIDIA GPUs (cuBLASLt, CUPTI, NCCL); it has no ROCm/HIP port and\n"
         "             cannot measure AMD Instinct GPUs, whose profiles (mi300x, mi325x) are datasheet\n"
         "             projections with no validated run (docs/calibrate.md)\n";
}

namespace {

int ParseGpus(const std::string& text) {
  if (text.empty() || text.size() > 6 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }) || std::stoi(text) < 1) {
    throw UsageError("--gpus wants a positive integer, got '" + text + "'");
  }
  return std::stoi(text);
}

uint64_t ParseSeed(const std::string& text) {
  if (text.empty() || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    throw UsageError("--seed wants a non-negative integer, got '" + text + "'");
  }
  errno = 0;
  unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE) throw UsageError("--seed is out of range: '" + text + "'");
  return v;
}

std::set<std::string> ParseSkip(const std::string& text) {
  std::set<std::string> out;
  std::stringstream ss(text);
  std::string name;
  while (std::getline(ss, name, ',')) {
    const auto& steps = StepNames();
    if (std::find(steps.begin(), steps.end(), name) == steps.end()) {
      throw UsageError("--skip: unknown step '" + name +
                       "' (steps: env,kernels,copy,launch,gemm,attention,nccl,step,fit)");
    }
    out.insert(name);
  }
  if (out.empty()) throw UsageError("--skip wants a list of steps");
  return out;
}

}  // namespace

Options ParseOptions(const std::vector<std::string>& args) {
  Options o;
  std::set<std::string> seen;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::string value;
    bool inline_value = false;
    if (auto eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      inline_value = true;
    }
    if (flag == "-h" || flag == "--help") {
      o.help = true;
      continue;
    }
    if (!seen.insert(flag).second) throw UsageError(flag + " given twice");
    if (flag == "--quick") {
      if (inline_value) throw UsageError("--quick takes no value");
      o.quick = true;
      continue;
    }
    static const std::set<std::string> kWithValue = {"--out",  "--raw",  "--base",
                                                     "--seed", "--skip", "--data-dir", "--gpus"};
    if (!kWithValue.count(flag)) throw UsageError("unknown argument '" + args[i] + "'");
    if (!inline_value) {
      if (i + 1 >= args.size()) throw UsageError(flag + " needs a value");
      value = args[++i];
    }
    if (value.empty()) throw UsageError(flag + " needs a non-empty value");
    if (flag == "--out") o.out_path = value;
    if (flag == "--raw") o.raw_dir = value;
    if (flag == "--base") o.base_path = value;
    if (flag == "--data-dir") o.data_dir = value;
    if (flag == "--seed") o.seed = ParseSeed(value);
    if (flag == "--skip") o.skip = ParseSkip(value);
    if (flag == "--gpus") o.gpus = ParseGpus(value);
  }
  if (o.help) return o;
  if (o.raw_dir.empty()) {
    if (o.out_path.empty()) throw UsageError("give --out PROFILE.json or --raw DIR (or both)");
    o.raw_dir = o.out_path + ".raw";
  }
  if (o.out_path.empty() && !o.base_path.empty()) throw UsageError("--base is only used with --out");
  if (!o.out_path.empty() && o.skip.count("fit")) throw UsageError("--out asks for the fit that --skip fit leaves out");
  if (!o.out_path.empty() && o.base_path.empty() && o.data_dir.empty()) {
    throw UsageError("--out needs --base PROFILE.json (or --data-dir DIR to pick it by GPU name)");
  }
  if (!o.base_path.empty() && !std::filesystem::is_regular_file(o.base_path)) {
    throw UsageError("--base: no such file '" + o.base_path + "'");
  }
  if (!o.data_dir.empty() && !std::filesystem::is_directory(o.data_dir)) {
    throw UsageError("--data-dir: no such folder '" + o.data_dir + "'");
  }
  return o;
}

}  // namespace stacksim::calibrate
