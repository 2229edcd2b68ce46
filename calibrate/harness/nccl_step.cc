// nccl.csv: collectives over every local GPU from this one process
// (ncclCommInitAll), sizes 1 KiB..4 GiB in powers of 4 (quick: ..256 MiB),
// float data. Sizes follow nccl-tests: the whole buffer (all_gather: the
// gathered output; reduce_scatter: the input; all_to_all: what one rank
// sends); algbw = bytes / time, busbw = algbw x nccl-tests' factor
// (all_reduce 2(n-1)/n; all_gather, reduce_scatter, all_to_all (n-1)/n;
// broadcast and sendrecv 1). sendrecv is one send from GPU 0 to GPU 1.
// With one GPU, built without NCCL, NCCL missing at run time (it is opened
// with dlopen, nccl_library.h) or ncclCommInitAll failing, the file has its
// header only and the step is "not_measurable" in outcome.json with NCCL's
// own error string: nothing is invented.
#ifdef STACKSIM_HAVE_NCCL
#include "calibrate/harness/nccl_library.h"
#endif
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "calibrate/harness/csv.h"
#include "calibrate/harness/device_kernels.h"
#include "calibrate/harness/steps.h"
#include "kernels/cuda_check.h"

namespace stacksim::calibrate {

#ifdef STACKSIM_HAVE_NCCL
namespace {

constexpr double kWaitTimeoutS = 60;

void CheckNccl(const NcclLibrary& lib, ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw std::runtime_error(std::string(what) + ": " + lib.ErrorString(r));
}
#define NCCL_OK(call) CheckNccl(lib, (call), #call)

enum class Collective { kAllReduce, kAllGather, kReduceScatter, kSendRecv, kAllToAll, kBroadcast };

const char* Name(Collective c) {
  switch (c) {
    case Collective::kAllReduce: return "all_reduce";
    case Collective::kAllGather: return "all_gather";
    case Collective::kReduceScatter: return "reduce_scatter";
    case Collective::kSendRecv: return "sendrecv";
    case Collective::kAllToAll: return "all_to_all";
    case Collective::kBroadcast: return "broadcast";
  }
  return "?";
}

double BusFactor(Collective c, int n) {
  switch (c) {
    case Collective::kAllReduce: return 2.0 * (n - 1) / n;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll: return static_cast<double>(n - 1) / n;
    case Collective::kSendRecv:
    case Collective::kBroadcast: return 1.0;
  }
  return 1.0;
}

struct Rank {
  int device = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  float* send = nullptr;
  float* recv = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
};

// Every rank's communicator, stream, buffers and events; released on every
// exit path (aborted, not destroyed, when a collective hung).
class Ranks {
 public:
  Ranks(const NcclLibrary& lib, int n) : lib_(lib), ranks_(n) {}
  ~Ranks() {
    for (auto& r : ranks_) {
      cudaSetDevice(r.device);
      if (r.comm != nullptr) (aborted_ ? lib_.CommAbort(r.comm) : lib_.CommDestroy(r.comm));
      if (r.start != nullptr) cudaEventDestroy(r.start);
      if (r.stop != nullptr) cudaEventDestroy(r.stop);
      if (r.send != nullptr) cudaFree(r.send);
      if (r.recv != nullptr) cudaFree(r.recv);
      if (r.stream != nullptr) cudaStreamDestroy(r.stream);
    }
    cudaSetDevice(0);
  }
  std::vector<Rank>& all() { return ranks_; }
  const NcclLibrary& lib() const { return lib_; }
  void MarkAborted() { aborted_ = true; }

 private:
  const NcclLibrary& lib_;
  std::vector<Rank> ranks_;
  bool aborted_ = false;
};

// Enqueues one collective of `count` floats on every rank taking part.
void Enqueue(const NcclLibrary& lib, std::vector<Rank>& ranks, Collective c, size_t count) {
  const int n = static_cast<int>(ranks.size());
  NCCL_OK(lib.GroupStart());
  for (int i = 0; i < n; ++i) {
    Rank& r = ranks[i];
    switch (c) {
      case Collective::kAllReduce:
        NCCL_OK(lib.AllReduce(r.send, r.recv, count, ncclFloat, ncclSum, r.comm, r.stream));
        break;
      case Collective::kAllGather:
        NCCL_OK(lib.AllGather(r.send, r.recv, count / n, ncclFloat, r.comm, r.stream));
        break;
      case Collective::kReduceScatter:
        NCCL_OK(lib.ReduceScatter(r.send, r.recv, count / n, ncclFloat, ncclSum, r.comm, r.stream));
        break;
      case Collective::kAllToAll:
        for (int peer = 0; peer < n; ++peer) {
          size_t chunk = count / n;
          NCCL_OK(lib.Send(r.send + peer * chunk, chunk, ncclFloat, peer, r.comm, r.stream));
          NCCL_OK(lib.Recv(r.recv + peer * chunk, chunk, ncclFloat, peer, r.comm, r.stream));
        }
        break;
      case Collective::kBroadcast:
        NCCL_OK(lib.Broadcast(r.send, r.recv, count, ncclFloat, 0, r.comm, r.stream));
        break;
      case Collective::kSendRecv:
        if (i == 0) NCCL_OK(lib.Send(r.send, count, ncclFloat, 1, r.comm, r.stream));
        if (i == 1) NCCL_OK(lib.Recv(r.recv, count, ncclFloat, 0, r.comm, r.stream));
        break;
    }
  }
  NCCL_OK(lib.GroupEnd());
}

// Waits for every rank's `stop` event, polling, so that a hung collective
// ends the step (communicators aborted) instead of the whole run.
void WaitAll(Ranks& ranks, const char* what) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(kWaitTimeoutS);
  for (Rank& r : ranks.all()) {
    for (;;) {
      cudaError_t e = cudaEventQuery(r.stop);
      if (e == cudaSuccess) break;
      if (e != cudaErrorNotReady) CUDA_OK(e);
      if (std::chrono::steady_clock::now() > until) {
        ranks.MarkAborted();
        throw std::runtime_error(std::string("nccl: ") + what + " did not finish in " +
                                 std::to_string(static_cast<int>(kWaitTimeoutS)) + " s; communicators aborted");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
}

// Microseconds per collective over `inner` back-to-back ones: the slowest rank's span.
double TimeBurst(Ranks& ranks, Collective c, size_t count, int inner) {
  for (Rank& r : ranks.all()) CUDA_OK(cudaEventRecord(r.start, r.stream));
  for (int i = 0; i < inner; ++i) Enqueue(ranks.lib(), ranks.all(), c, count);
  for (Rank& r : ranks.all()) CUDA_OK(cudaEventRecord(r.stop, r.stream));
  WaitAll(ranks, Name(c));
  double worst = 0;
  for (Rank& r : ranks.all()) {
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, r.start, r.stop));
    worst = std::max(worst, ms * 1000.0);
  }
  return worst / inner;
}

}  // namespace
#endif

namespace {

// The step measures nothing: said in the log and in outcome.json. `expected`:
// because of what the machine is (one GPU, a build without NCCL), not a failure.
void NotMeasurable(StepContext& ctx, const std::string& why, bool expected = false) {
  ctx.expected_gap = expected;
  ctx.log->Line("nccl: collectives not measured: " + why + "; nccl.csv has its header only");
  if (ctx.section != nullptr) {
    ctx.section->status = SectionStatus::kNotMeasurable;
    ctx.section->reason = why;
  }
}

}  // namespace

void RunNcclStep(StepContext& ctx) {
  CsvWriter csv(ctx.RawPath("nccl.csv"),
                {"collective", "gpus", "bytes", "median_us", "algbw_gbps", "busbw_gbps", "spread", "stable"});
#ifndef STACKSIM_HAVE_NCCL
  NotMeasurable(ctx, "stacksim-calibrate was built without NCCL (nccl.h not found at build time)", true);
#else
  NcclLibrary lib(ctx.Fault("nccl-missing"));
  if (!lib.ok()) {
    NotMeasurable(ctx, "NCCL missing at run time: " + lib.error());
    return;
  }
  const int n = ctx.device.gpus;
  if (ctx.Fault("nccl-init")) {
    NotMeasurable(ctx, "ncclCommInitAll: " + lib.ErrorString(ncclSystemError) + " (fault injection: nccl-init)");
    return;
  }
  if (n < 2) {
    NotMeasurable(ctx, std::to_string(n) + " GPU used (" + std::to_string(ctx.device.device_count) +
                           " visible), a collective needs at least 2", true);
    return;
  }
  size_t max_bytes = ctx.quick() ? (size_t{256} << 20) : (size_t{4} << 30);
  for (int d = 0; d < n; ++d) {
    size_t free_bytes = 0, total = 0;
    CUDA_OK(cudaSetDevice(d));
    CUDA_OK(cudaMemGetInfo(&free_bytes, &total));
    while (max_bytes > (size_t{1} << 20) && 2 * max_bytes + (size_t{2} << 30) > free_bytes) max_bytes /= 4;
  }
  CUDA_OK(cudaSetDevice(0));
  Ranks ranks(lib, n);
  std::vector<ncclComm_t> comms(n);
  std::vector<int> devices(n);
  for (int d = 0; d < n; ++d) devices[d] = d;
  if (ncclResult_t r = lib.CommInitAll(comms.data(), n, devices.data()); r != ncclSuccess) {
    cudaSetDevice(0);
    NotMeasurable(ctx, "ncclCommInitAll over " + std::to_string(n) + " GPUs: " + lib.ErrorString(r));
    return;
  }
  for (int d = 0; d < n; ++d) {
    ranks.all()[d].device = d;
    ranks.all()[d].comm = comms[d];
  }
  for (int d = 0; d < n; ++d) {
    Rank& r = ranks.all()[d];
    CUDA_OK(cudaSetDevice(d));
    CUDA_OK(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking));
    CUDA_OK(cudaEventCreate(&r.start));
    CUDA_OK(cudaEventCreate(&r.stop));
    CUDA_OK(cudaMalloc(&r.send, max_bytes));
    CUDA_OK(cudaMalloc(&r.recv, max_bytes));
    FillRandom(r.send, max_bytes / 4, FillKind::kFp32, ctx.options->seed + d, 1.0f, r.stream);
    FillRandom(r.recv, max_bytes / 4, FillKind::kFp32, ctx.options->seed + n + d, 1.0f, r.stream);
    CUDA_OK(cudaStreamSynchronize(r.stream));
  }
  CUDA_OK(cudaSetDevice(0));
  std::vector<size_t> sizes;
  for (size_t b = 1024; b <= max_bytes; b *= 4) sizes.push_back(b);
  const Collective order[] = {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                              Collective::kSendRecv,  Collective::kAllToAll,  Collective::kBroadcast};
  const int repeats = ctx.quick() ? 5 : 7;
  Progress progress(ctx.log, ctx.tag, static_cast<int>(std::size(order) * sizes.size()));
  int done = 0;
  ctx.log->Line("nccl: " + std::to_string(n) + " GPUs (" + lib.path() + "), sizes 1 KiB.." +
                std::to_string(max_bytes >> 20) + " MiB");
  for (Collective c : order) {
    const int gpus = c == Collective::kSendRecv ? 2 : n;
    for (size_t bytes : sizes) {
      if (ctx.deadline.Expired()) {
        ctx.log->Line(std::string("nccl: time budget spent at ") + Name(c) + " " + std::to_string(bytes) +
                      " B; the rest not measured");
        ctx.stopped_early = true;
        return;
      }
      size_t count = bytes / 4 / n * n;  // divisible among the ranks
      if (count == 0) continue;
      Enqueue(lib, ranks.all(), c, count);  // warm-up (connections are set up lazily)
      Enqueue(lib, ranks.all(), c, count);
      double probe = TimeBurst(ranks, c, count, 1);
      int inner = std::max(1, std::min(50, static_cast<int>(500.0 / std::max(1.0, probe)) + 1));
      StableMeasurement m = ctx.MeasureStable(
          [&] {
            std::vector<double> samples;
            for (int r = 0; r < repeats; ++r) samples.push_back(TimeBurst(ranks, c, count, inner));
            return samples;
          },
          HostTimingPolicy(), std::string("nccl ") + Name(c) + " " + std::to_string(bytes) + " B");
      double us = m.verdict.stats.median;
      double actual = static_cast<double>(count) * 4;
      double algbw = actual / (us * 1e-6) / 1e9;
      std::vector<std::string> row = {Name(c), Num(gpus), Num(actual), Num(us), Num(algbw), Num(algbw * BusFactor(c, n))};
      for (const std::string& cell : StabilityCells(m.verdict)) row.push_back(cell);
      csv.Row(row);
      progress.Report(++done, std::string(Name(c)) + " " + std::to_string(bytes >> 10) + " KiB");
    }
  }
  ctx.log->Line("nccl: " + std::to_string(csv.rows()) + " rows");
#endif
}

}  // namespace stacksim::calibrate
