// copy.csv: device-to-device copies 64 KiB..4 GiB (quick: ..1 GiB) and pinned
// host transfers 64 KiB..1 GiB, by cudaMemcpyAsync, in powers of 4 as
// tools/gpu/measure_torch.py measured them. A d2d copy's bandwidth counts the
// bytes read plus the bytes written (the traffic device memory carries); each
// copy takes the next slot of a slab several times the L2, so that small
// copies do not run out of cache.
#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "calibrate/harness/csv.h"
#include "calibrate/harness/device_kernels.h"
#include "calibrate/harness/queued_timing.h"
#include "calibrate/harness/steps.h"
#include "kernels/check_util.h"
#include "kernels/cuda_check.h"

namespace stacksim::calibrate {

namespace {

class PinnedBuffer {
 public:
  explicit PinnedBuffer(size_t bytes) : bytes_(bytes) { CUDA_OK(cudaMallocHost(&ptr_, bytes)); }
  ~PinnedBuffer() { cudaFreeHost(ptr_); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  uint8_t* get() const { return static_cast<uint8_t*>(ptr_); }
  size_t size() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_;
};

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kGiB = size_t{1} << 30;

}  // namespace

void RunCopyStep(StepContext& ctx) {
  size_t d2d_max = ctx.quick() ? kGiB : 4 * kGiB;
  size_t host_max = kGiB;
  size_t free_bytes = 0, total_bytes = 0;
  CUDA_OK(cudaMemGetInfo(&free_bytes, &total_bytes));
  // Source and destination slabs; keep 2 GiB free for the rest of the process.
  while (d2d_max > host_max && 2 * d2d_max + 2 * kGiB > free_bytes) d2d_max /= 4;
  size_t slab = std::max(d2d_max, 4 * ctx.device.l2_bytes);
  if (ctx.Fault("oom")) {
    // Fault "oom": ask for more than the GPU has; CUDA's own error fails the step.
    ctx.log->Line("copy: fault injection (oom): allocating " + std::to_string(2 * total_bytes / kMiB) + " MiB");
    kernels::DeviceBuffer<uint8_t> too_big(2 * total_bytes);
  }
  if (2 * slab + 2 * kGiB > free_bytes) {
    throw kernels::CudaError("copy: only " + std::to_string(free_bytes / kMiB) + " MiB free on the GPU");
  }
  if (d2d_max < (ctx.quick() ? kGiB : 4 * kGiB)) {
    ctx.log->Line("copy: d2d sizes only up to " + std::to_string(d2d_max / kMiB) + " MiB (GPU memory free: " +
                  std::to_string(free_bytes / kMiB) + " MiB)");
  }
  kernels::DeviceBuffer<uint8_t> src(slab), dst(slab);
  FillRandom(src.get(), slab, FillKind::kBytes, ctx.options->seed, 1.0f, ctx.stream);
  FillRandom(dst.get(), slab, FillKind::kBytes, ctx.options->seed + 1, 1.0f, ctx.stream);
  CUDA_OK(cudaStreamSynchronize(ctx.stream));

  std::vector<size_t> d2d_sizes, host_sizes;
  for (size_t n = 64 << 10; n <= d2d_max; n *= 4) d2d_sizes.push_back(n);
  for (size_t n = 64 << 10; n <= host_max; n *= 4) host_sizes.push_back(n);
  int total = static_cast<int>(d2d_sizes.size() + 2 * host_sizes.size());
  Progress progress(ctx.log, ctx.tag, total);
  CsvWriter csv(ctx.RawPath("copy.csv"), {"kind", "bytes", "median_us", "min_us", "gbps_median", "spread", "stable"});
  kernels::TimingOptions topt;
  topt.warmup = 2;
  topt.repeats = ctx.quick() ? 7 : 9;
  int done = 0;
  // One row: the samples of `fn` (retried while unstable), bandwidth from `bytes_moved`.
  auto measure = [&](const std::string& kind, size_t n, double bytes_moved, const std::function<void()>& fn) {
    StableMeasurement m = ctx.MeasureStable([&] { return TimeQueuedSamples(fn, ctx.stream, topt); },
                                            DeviceTimingPolicy(), "copy " + kind + " " + std::to_string(n) + " B");
    const SampleStats& st = m.verdict.stats;
    std::vector<std::string> row = {kind, Num(n), Num(st.median), Num(st.min), Num(bytes_moved / (st.median * 1e-6) / 1e9)};
    for (const std::string& c : StabilityCells(m.verdict)) row.push_back(c);
    csv.Row(row);
  };
  auto over_budget = [&](const char* what) {
    if (!ctx.deadline.Expired()) return false;
    ctx.log->Line(std::string("copy: time budget spent; ") + what + " sizes from here on not measured");
    ctx.stopped_early = true;
    return true;
  };

  for (size_t n : d2d_sizes) {
    if (over_budget("d2d")) break;
    size_t slots = slab / n, i = 0;
    measure("d2d", n, 2.0 * n, [&] {
      size_t off = (i++ % slots) * n;
      CUDA_OK(cudaMemcpyAsync(dst.get() + off, src.get() + off, n, cudaMemcpyDeviceToDevice, ctx.stream));
    });
    progress.Report(++done, "d2d " + std::to_string(n >> 10) + " KiB");
  }

  if (!over_budget("h2d/d2h")) {
    PinnedBuffer host(host_max);
    CUDA_OK(cudaMemcpy(host.get(), src.get(), host_max, cudaMemcpyDeviceToHost));  // random, non-zero bytes
    for (size_t n : host_sizes) {
      if (over_budget("h2d/d2h")) break;
      size_t dev_slots = slab / n, host_slots = host_max / n, i = 0, j = 0;
      measure("h2d_pinned", n, static_cast<double>(n), [&] {
        size_t k = i++;
        CUDA_OK(cudaMemcpyAsync(dst.get() + (k % dev_slots) * n, host.get() + (k % host_slots) * n, n,
                                cudaMemcpyHostToDevice, ctx.stream));
      });
      progress.Report(++done, "h2d " + std::to_string(n >> 10) + " KiB");
      measure("d2h_pinned", n, static_cast<double>(n), [&] {
        CUDA_OK(cudaMemcpyAsync(host.get() + (j % host_slots) * n, src.get() + (j % dev_slots) * n, n,
                                cudaMemcpyDeviceToHost, ctx.stream));
        ++j;
      });
      progress.Report(++done, "d2h " + std::to_string(n >> 10) + " KiB");
    }
  }
  ctx.log->Line("copy: " + std::to_string(csv.rows()) + " rows");
}

}  // namespace stacksim::calibrate
