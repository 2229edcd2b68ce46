// Wall time of `stacksim validate` on both shipped development files
// (validation/training_runs.json and modern_training_runs.json, 274 runs) in
// one call, as the command runs it (runs on every core), and on one thread.
// Counters: runs validated, and the process's peak resident memory so far
// (VmHWM from /proc/self/status, MiB; the high-water mark of the whole
// benchmark process, so read it from the first benchmark when run alone with
// --benchmark_filter). Target: under 30 s and 1 GiB on a 2-core machine.
//
// BM_ValidateOpenLayouts: four development runs of the largest models with
// every plan field but the batch and precision left null (Llama 3.1 405B on
// 1,024 H100s and on 1,152 GB200s, Qwen3-235B-A22B on 256 B200s, 405B on
// 2,304 H100s), so that validate chooses each layout among 55-161 valid
// ones: the time a user waits for runs that state no plan.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/peak_rss.h"
#include "sim/util/allocator.h"
#include "sim/validate/validate.h"

namespace {

using stacksim::bench::PeakRssMiB;

void ValidateShippedFiles(benchmark::State& state, int threads) {
  const std::string dir = std::string(STACKSIM_SOURCE_DIR) + "/validation/";
  const std::vector<std::string> files = {dir + "training_runs.json", dir + "modern_training_runs.json"};
  stacksim::validate::ValidationOptions options;
  options.threads = threads;
  size_t runs = 0;
  for (auto _ : state) {
    auto report = stacksim::validate::RunValidation(files, options);
    runs = report.runs.size();
    benchmark::DoNotOptimize(report.mape_pct);
  }
  state.counters["runs"] = static_cast<double>(runs);
  state.counters["peak_rss_MiB"] = PeakRssMiB();
}

void BM_ValidateBothFiles(benchmark::State& state) { ValidateShippedFiles(state, 0); }
void BM_ValidateBothFilesOneThread(benchmark::State& state) { ValidateShippedFiles(state, 1); }

// The development runs `ids` of the modern file on another GPU each, their
// plans left open, written to a temporary file; its path.
std::string OpenLayoutFile() {
  const std::string dir = std::string(STACKSIM_SOURCE_DIR) + "/validation/";
  std::ifstream in(dir + "modern_training_runs.json");
  nlohmann::json file = nlohmann::json::parse(in);
  struct Case {
    const char* id;
    const char* gpu;
    int gpus, gpus_per_node;
  };
  const Case cases[] = {{"mbridge-26.04.01-LLAMA3.1_405B-1024gpu-fp8", "h100-sxm-80gb", 1024, 8},
                        {"mbridge-26.04.01-LLAMA3.1_405B-1024gpu-fp8", "gb200", 1152, 72},
                        {"mbridge-26.04.01-Qwen3_235B_a22B-256gpu-fp8", "b200", 256, 8},
                        {"dgxc-llama3.1-405b-bf16-2304gpu", "h100-sxm-80gb", 2304, 8}};
  nlohmann::json runs = nlohmann::json::array();
  for (const Case& c : cases) {
    for (const nlohmann::json& r : file["runs"]) {
      if (r["id"] != c.id) continue;
      nlohmann::json run = r;
      run["id"] = std::string(c.id) + "-open-" + c.gpu;
      run["hardware"]["gpu"] = c.gpu;
      run["hardware"]["gpus"] = c.gpus;
      run["hardware"]["gpus_per_node"] = c.gpus_per_node;
      for (auto& [key, value] : run["plan"].items()) {
        if (key != "global_batch" && key != "precision") value = nullptr;
      }
      runs.push_back(run);
    }
  }
  file["runs"] = runs;
  const std::string path = (std::filesystem::temp_directory_path() / "stacksim_open_layouts.json").string();
  std::ofstream(path) << file.dump();
  return path;
}

void BM_ValidateOpenLayouts(benchmark::State& state) {
  const std::string path = OpenLayoutFile();
  size_t modelled = 0;
  for (auto _ : state) {
    auto report = stacksim::validate::RunValidation(std::vector<std::string>{path});
    modelled = 0;
    for (const auto& r : report.runs) modelled += r.predicted_s ? 1 : 0;
    benchmark::DoNotOptimize(report.mape_pct);
  }
  std::filesystem::remove(path);
  state.counters["runs_modelled"] = static_cast<double>(modelled);
  state.counters["peak_rss_MiB"] = PeakRssMiB();
}

BENCHMARK(BM_ValidateBothFiles)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_ValidateBothFilesOneThread)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_ValidateOpenLayouts)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

}  // namespace

// As the stacksim command sets up its heap (sim/util/allocator.h).
int main(int argc, char** argv) {
  stacksim::KeepFreedMemory();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
