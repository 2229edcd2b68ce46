// Wall time of `stacksim validate` on both shipped development files
// (validation/training_runs.json and modern_training_runs.json, 274 runs) in
// one call, as the command runs it (runs on every core), and on one thread.
// Counters: runs validated, and the process's peak resident memory so far
// (VmHWM from /proc/self/status, MiB; the high-water mark of the whole
// benchmark process, so read it from the first benchmark when run alone with
// --benchmark_filter). Target: under 30 s and 1 GiB on a 2-core machine.
#include <benchmark/benchmark.h>

#include <fstream>
#include <string>
#include <vector>

#include "bench/peak_rss.h"
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

BENCHMARK(BM_ValidateBothFiles)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_ValidateBothFilesOneThread)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
