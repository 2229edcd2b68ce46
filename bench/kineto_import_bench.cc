// Time and peak memory of reading a large gzip'd Kineto trace: the streaming
// importer (ingest::ReadKinetoTrace, SAX over the inflating stream) against
// the document tree it replaced (the whole text inflated, then
// nlohmann::json::parse). The trace is synthetic and written once to a
// temporary file: STACKSIM_BENCH_KINETO_STEPS ProfilerSteps (default 30) of
// 10,000 kernels each, every kernel with its cudaLaunchKernel, its aten op
// (input dims, a call stack) and its ac2g flow pair, as torch.profiler writes
// them; about 430 MB of JSON, gzip'd.
// Counters: json_MB / gz_MB (the file), events, and the process's peak
// resident memory so far (VmHWM, MiB): the streaming benchmark runs first, so
// its figure is its own; the tree's is the high-water mark after both.
// Target: the streaming import of a whole job's trace stays within a few
// times the trace's gzip size, independent of its JSON size.
#include <benchmark/benchmark.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/peak_rss.h"
#include "sim/ingest/kineto.h"
#include "sim/util/json_reader.h"

namespace {

using stacksim::bench::PeakRssMiB;

struct Synthetic {
  std::string path;
  double json_bytes = 0, gz_bytes = 0;
  long events = 0;
};

const Synthetic& Trace() {
  static const Synthetic s = [] {
    Synthetic out;
    int steps = 30;
    if (const char* env = std::getenv("STACKSIM_BENCH_KINETO_STEPS")) steps = std::max(1, std::atoi(env));
    const int kernels = 10000;
    out.path = (std::filesystem::temp_directory_path() / fmt::format("stacksim_kineto_bench_{}.json.gz", steps)).string();
    gzFile gz = gzopen(out.path.c_str(), "wb1");
    auto put = [&](const std::string& s) {
      gzwrite(gz, s.data(), static_cast<unsigned>(s.size()));
      out.json_bytes += static_cast<double>(s.size());
    };
    put("{\"schemaVersion\": 1, \"traceEvents\": [\n");
    long corr = 1;
    double ts = 1.7e15;
    for (int st = 0; st < steps; ++st) {
      const double step_begin = ts;
      const double step_dur = kernels * 10.0 + 100;
      put(fmt::format(R"({{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{}", "pid": 1, "tid": 1, "ts": {:.3f}, "dur": {:.3f}, "args": {{"External id": {}}}}},)"
                      "\n",
                      st, step_begin, step_dur, corr));
      for (int k = 0; k < kernels; ++k, ++corr) {
        const double t = step_begin + 5 + k * 10.0;
        put(fmt::format(
            R"({{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": {:.3f}, "dur": 6.5, "args": {{"External id": {}, "Input Dims": [[4096, 4096], [4096, 4096]], "Input type": ["c10::BFloat16", "c10::BFloat16"], "Call stack": "train.py(120): step\nmodel.py(88): forward\ntorch/nn/modules/linear.py(114): forward"}}}},)"
            "\n"
            R"({{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": {:.3f}, "dur": 3.2, "args": {{"External id": {}, "cbid": 211, "correlation": {}}}}},)"
            "\n"
            R"({{"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", "pid": 0, "tid": 7, "ts": {:.3f}, "dur": 8.5, "args": {{"External id": {}, "queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": {}, "registers per thread": 168, "shared memory": 213248, "blocks per SM": 0.5, "warps per SM": 2.0, "grid": [66, 1, 1], "block": [384, 1, 1], "est. achieved occupancy %": 6}}}},)"
            "\n"
            R"({{"ph": "s", "id": {}, "pid": 1, "tid": 1, "ts": {:.3f}, "cat": "ac2g", "name": "ac2g"}},)"
            "\n"
            R"({{"ph": "f", "id": {}, "pid": 0, "tid": 7, "ts": {:.3f}, "cat": "ac2g", "name": "ac2g", "bp": "e"}},)"
            "\n",
            t, corr, t + 1, corr, corr, t + 6, corr, corr, corr, t + 1, corr, t + 6));
        out.events += 5;
      }
      put(fmt::format(R"({{"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 1, "tid": 1, "ts": {:.3f}, "dur": 20, "args": {{"correlation": {}}}}},)"
                      "\n",
                      step_begin + step_dur - 30, corr++));
      out.events += 2;
      ts = step_begin + step_dur + 10;
    }
    put(R"({"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": 0}]})");
    out.events += 1;
    gzclose(gz);
    out.gz_bytes = static_cast<double>(std::filesystem::file_size(out.path));
    return out;
  }();
  return s;
}

void Counters(benchmark::State& state, const Synthetic& s) {
  state.counters["json_MB"] = s.json_bytes / 1e6;
  state.counters["gz_MB"] = s.gz_bytes / 1e6;
  state.counters["events"] = static_cast<double>(s.events);
  state.counters["peak_rss_MiB"] = PeakRssMiB();
  state.SetBytesProcessed(static_cast<int64_t>(s.json_bytes) * state.iterations());
}

void BM_KinetoStreamingImport(benchmark::State& state) {
  const Synthetic& s = Trace();
  for (auto _ : state) {
    stacksim::ingest::KinetoStep step = stacksim::ingest::ReadKinetoTrace(s.path);
    benchmark::DoNotOptimize(step.kernels.data());
  }
  Counters(state, s);
}
BENCHMARK(BM_KinetoStreamingImport)->Unit(benchmark::kSecond)->Iterations(1);

// For comparison only: the document tree of the same file.
void BM_KinetoDocumentTree(benchmark::State& state) {
  const Synthetic& s = Trace();
  for (auto _ : state) {
    nlohmann::json doc = stacksim::ParseJsonText(stacksim::ingest::ReadMaybeGzip(s.path), s.path);
    benchmark::DoNotOptimize(doc.size());
  }
  Counters(state, s);
}
BENCHMARK(BM_KinetoDocumentTree)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
