// launch.csv: kernel launch overhead with an empty kernel, measured exactly
// as tools/gpu/launch_overhead.cu does (bursts of 4000 launches, 9 samples):
//   host_issue_us_per_launch  host time per cudaLaunchKernel, back to back
//   device_us_per_kernel      device time per kernel of an eager burst (CUDA events)
//   graph_us_per_kernel       the same kernels captured in one CUDA graph
//   graph_launch_us           host time of one cudaGraphLaunch of a 1-node graph
// and, where CUPTI records kernels, their device-side durations and the gaps
// between consecutive kernels (cupti_kernel_us, cupti_gap_us eager;
// cupti_graph_gap_us inside the graph).
#include <cuda_runtime.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "calibrate/harness/csv.h"
#include "calibrate/harness/cupti_recorder.h"
#include "calibrate/harness/device_kernels.h"
#include "calibrate/harness/event_pair.h"
#include "calibrate/harness/steps.h"
#include "kernels/cuda_check.h"

namespace stacksim::calibrate {

namespace {

constexpr int kBurst = 4000;
constexpr int kSamples = 9;
const std::vector<std::string> kLaunchHeader = {"metric", "median_us", "min_us", "max_us", "spread", "stable"};

// A graph and its executable, destroyed on every exit path.
struct Graph {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ~Graph() {
    if (exec != nullptr) cudaGraphExecDestroy(exec);
    if (graph != nullptr) cudaGraphDestroy(graph);
  }
};

void Capture(cudaStream_t stream, int launches, const std::function<void()>& launch, Graph* g) {
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    for (int i = 0; i < launches; ++i) launch();
  } catch (...) {
    cudaStreamEndCapture(stream, &g->graph);  // leave the stream usable
    throw;
  }
  CUDA_OK(cudaStreamEndCapture(stream, &g->graph));
  CUDA_OK(cudaGraphInstantiate(&g->exec, g->graph, 0));
}

double SinceUs(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

// A row of a judged metric (repeated bursts): its verdict's spread and stability.
void Row(CsvWriter& csv, const std::string& metric, const std::vector<double>& v, const StabilityVerdict& verdict) {
  Summary s = Summarize(v);
  std::vector<std::string> row = {metric, Num(s.median), Num(s.min), Num(s.max)};
  for (const std::string& c : StabilityCells(verdict)) row.push_back(c);
  csv.Row(row);
}

// A CUPTI row: the distribution of single kernels or gaps, not repeats of
// one measurement, so its spread is recorded but not judged.
void DistributionRow(CsvWriter& csv, const std::string& metric, const std::vector<double>& v) {
  Summary s = Summarize(v);
  csv.Row({metric, Num(s.median), Num(s.min), Num(s.max), Num(v.empty() ? 0 : Stats(v).spread), "1"});
}

}  // namespace

void WriteCuptiRows(StepContext& ctx, const std::string& prefix, const std::vector<KernelSpan>& spans) {
  CsvWriter csv(ctx.RawPath("launch.csv"), kLaunchHeader, CsvWriter::Mode::kAppend);
  DistributionRow(csv, "cupti_" + prefix + "kernel_us", KernelDurationsUs(spans));
  if (spans.size() > 1) DistributionRow(csv, "cupti_" + prefix + "gap_us", KernelGapsUs(spans));
}

void RunLaunchStep(StepContext& ctx) {
  cudaStream_t stream = ctx.stream;
  const void* empty = EmptyKernel();
  int* sink = nullptr;
  void* args[] = {&sink};
  auto launch = [&] { CUDA_OK(cudaLaunchKernel(empty, dim3(1), dim3(32), args, 0, stream)); };
  EventPair ev;
  Progress progress(ctx.log, ctx.tag, 5);
  if (ctx.Fault("cuda-error")) {
    // Fault "cuda-error": a launch with 0 threads per block; CUDA's own error fails the step.
    ctx.log->Line("launch: fault injection (cuda-error): launching with an invalid configuration");
    CUDA_OK(cudaLaunchKernel(empty, dim3(1), dim3(0), args, 0, stream));
  }
  for (int i = 0; i < 1000; ++i) launch();
  CUDA_OK(cudaStreamSynchronize(stream));

  // Eager bursts: host issue time and device time per launch, retried while
  // the host times spread (the device times of the last try are judged too).
  std::vector<double> device;
  StableMeasurement host_m = ctx.MeasureStable(
      [&] {
        std::vector<double> host;
        device.clear();
        for (int s = 0; s < kSamples; ++s) {
          CUDA_OK(cudaEventRecord(ev.start, stream));
          auto t0 = std::chrono::steady_clock::now();
          for (int i = 0; i < kBurst; ++i) launch();
          host.push_back(SinceUs(t0) / kBurst);
          CUDA_OK(cudaEventRecord(ev.stop, stream));
          CUDA_OK(cudaEventSynchronize(ev.stop));
          CUDA_LAUNCH_OK();
          device.push_back(ev.ElapsedUs() / kBurst);
        }
        return host;
      },
      HostTimingPolicy(), "launch host_issue_us_per_launch");
  const std::vector<double>& host = host_m.samples;
  StabilityVerdict device_v = Judge(device, HostTimingPolicy());
  ctx.RecordVerdict(device_v, "launch device_us_per_kernel");
  progress.Report(1, "eager");

  // The same burst in one graph.
  Graph burst;
  Capture(stream, kBurst, launch, &burst);
  CUDA_OK(cudaGraphLaunch(burst.exec, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  std::vector<double> graph_kernel;
  for (int s = 0; s < kSamples; ++s) {
    CUDA_OK(cudaEventRecord(ev.start, stream));
    CUDA_OK(cudaGraphLaunch(burst.exec, stream));
    CUDA_OK(cudaEventRecord(ev.stop, stream));
    CUDA_OK(cudaEventSynchronize(ev.stop));
    graph_kernel.push_back(ev.ElapsedUs() / kBurst);
  }
  progress.Report(2, "graph");

  // Host cost of launching a one-node graph.
  Graph one;
  Capture(stream, 1, launch, &one);
  std::vector<double> graph_launch;
  for (int s = 0; s < kSamples; ++s) {
    CUDA_OK(cudaStreamSynchronize(stream));
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 1000; ++i) CUDA_OK(cudaGraphLaunch(one.exec, stream));
    graph_launch.push_back(SinceUs(t0) / 1000);
  }
  CUDA_OK(cudaStreamSynchronize(stream));
  progress.Report(3, "graph launch");
  {
    StabilityVerdict graph_v = Judge(graph_kernel, HostTimingPolicy());
    StabilityVerdict graph_launch_v = Judge(graph_launch, HostTimingPolicy());
    ctx.RecordVerdict(graph_v, "launch graph_us_per_kernel");
    ctx.RecordVerdict(graph_launch_v, "launch graph_launch_us");
    CsvWriter csv(ctx.RawPath("launch.csv"), kLaunchHeader);
    Row(csv, "host_issue_us_per_launch", host, host_m.verdict);
    Row(csv, "device_us_per_kernel", device, device_v);
    Row(csv, "graph_us_per_kernel", graph_kernel, graph_v);
    Row(csv, "graph_launch_us", graph_launch, graph_launch_v);
  }
  ctx.log->Line("launch: host " + Num(Summarize(host).median) + " us/launch, device " +
                Num(Summarize(device).median) + " us/kernel, graph " + Num(Summarize(graph_kernel).median) +
                " us/kernel, graph launch " + Num(Summarize(graph_launch).median) + " us");

  // Kernel-only durations and gaps from CUPTI, after the event timings so that
  // CUPTI's own overhead stays out of them.
  KernelActivityRecorder rec;
  std::string why;
  if (!rec.Start(&why)) {
    ctx.log->Line("launch: CUPTI not used: " + why);
    return;
  }
  for (int i = 0; i < kBurst; ++i) launch();
  CUDA_OK(cudaStreamSynchronize(stream));
  std::vector<KernelSpan> eager = rec.Stop();
  progress.Report(4, "cupti eager");
  if (!rec.Start(&why)) {
    ctx.log->Line("launch: CUPTI failed to restart: " + why);
    return;
  }
  CUDA_OK(cudaGraphLaunch(burst.exec, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  std::vector<KernelSpan> graph = rec.Stop();
  progress.Report(5, "cupti graph");
  if (eager.empty()) {
    ctx.log->Line("launch: CUPTI recorded no kernels; no cupti_* rows");
    return;
  }
  WriteCuptiRows(ctx, "", eager);
  if (graph.size() > 1) {
    CsvWriter csv(ctx.RawPath("launch.csv"), kLaunchHeader, CsvWriter::Mode::kAppend);
    DistributionRow(csv, "cupti_graph_gap_us", KernelGapsUs(graph));
  }
  ctx.log->Line("launch: CUPTI " + std::to_string(eager.size()) + " kernels, median " +
                Num(Summarize(KernelDurationsUs(eager)).median) + " us each, gap " +
                Num(Summarize(KernelGapsUs(eager)).median) + " us");
}

}  // namespace stacksim::calibrate
