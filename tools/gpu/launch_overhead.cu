// Kernel launch overhead on the local GPU, without any framework in the way.
//
// Prints CSV (units in the column names):
//   host_issue_us_per_launch  host time per cudaLaunchKernel of an empty
//                             kernel, back to back (the CPU-side cost)
//   device_us_per_kernel      device time per empty kernel in an eager burst
//                             (CUDA events), i.e. the spacing the GPU sees
//   graph_us_per_kernel       the same kernels captured in one CUDA graph
//   graph_launch_us           host time of one cudaGraphLaunch of a 1-node graph
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "sim/util/statistics.h"

#define CHECK(x)                                                                    \
  do {                                                                              \
    cudaError_t err_ = (x);                                                         \
    if (err_ != cudaSuccess) {                                                      \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x,               \
                   cudaGetErrorString(err_));                                       \
      std::exit(1);                                                                 \
    }                                                                               \
  } while (0)

__global__ void Empty(int* sink) {
  if (sink != nullptr && threadIdx.x == 1024) *sink = 1;  // never true; keeps the kernel
}

// The high median: a sample that was measured (sim/util/statistics.h).
static double Median(const std::vector<double>& v) { return stacksim::HighMedian(stacksim::Sorted(v)); }

int main() {
  constexpr int kBurst = 4000;
  constexpr int kSamples = 9;
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < 1000; ++i) Empty<<<1, 32, 0, stream>>>(nullptr);
  CHECK(cudaGetLastError());
  CHECK(cudaStreamSynchronize(stream));

  std::vector<double> host, device;
  for (int s = 0; s < kSamples; ++s) {
    CHECK(cudaEventRecord(start, stream));
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kBurst; ++i) Empty<<<1, 32, 0, stream>>>(nullptr);
    auto t1 = std::chrono::steady_clock::now();
    CHECK(cudaEventRecord(stop, stream));
    CHECK(cudaEventSynchronize(stop));
    CHECK(cudaGetLastError());
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    host.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / kBurst);
    device.push_back(ms * 1e3 / kBurst);
  }

  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < kBurst; ++i) Empty<<<1, 32, 0, stream>>>(nullptr);
  CHECK(cudaStreamEndCapture(stream, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(cudaGraphLaunch(exec, stream));
  CHECK(cudaStreamSynchronize(stream));
  std::vector<double> graph_kernel;
  for (int s = 0; s < kSamples; ++s) {
    CHECK(cudaEventRecord(start, stream));
    CHECK(cudaGraphLaunch(exec, stream));
    CHECK(cudaEventRecord(stop, stream));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    graph_kernel.push_back(ms * 1e3 / kBurst);
  }

  cudaGraph_t one;
  cudaGraphExec_t one_exec;
  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  Empty<<<1, 32, 0, stream>>>(nullptr);
  CHECK(cudaStreamEndCapture(stream, &one));
  CHECK(cudaGraphInstantiate(&one_exec, one, 0));
  std::vector<double> graph_launch;
  for (int s = 0; s < kSamples; ++s) {
    CHECK(cudaStreamSynchronize(stream));
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 1000; ++i) CHECK(cudaGraphLaunch(one_exec, stream));
    auto t1 = std::chrono::steady_clock::now();
    graph_launch.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / 1000);
  }
  CHECK(cudaStreamSynchronize(stream));

  std::printf("metric,median_us,min_us,max_us\n");
  auto row = [](const char* name, const std::vector<double>& v) {
    std::printf("%s,%.4f,%.4f,%.4f\n", name, Median(v), *std::min_element(v.begin(), v.end()),
                *std::max_element(v.begin(), v.end()));
  };
  row("host_issue_us_per_launch", host);
  row("device_us_per_kernel", device);
  row("graph_us_per_kernel", graph_kernel);
  row("graph_launch_us", graph_launch);
  return 0;
}
