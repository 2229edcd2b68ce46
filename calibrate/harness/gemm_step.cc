// gemm.csv: cuBLASLt matrix products over measure_torch.py's shape list.
// bf16 takes every shape; fp8 e4m3 (compute capability >= 8.9), fp16 and tf32
// the squares, odd sizes and the TP 1 and TP 8 layers (tf32 without the
// backward GEMMs), as the PyTorch sweep did; --quick: bf16 every shape, the
// others the squares. Precisions run in the order bf16, fp8, fp16, tf32, so
// that a sweep cut at the deadline loses the least used ones. Inputs are
// random and non-zero, and each timed call takes the next of several buffer
// sets, together more than the L2.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "calibrate/harness/csv.h"
#include "calibrate/harness/cupti_recorder.h"
#include "calibrate/harness/device_kernels.h"
#include "calibrate/harness/gemm_runner.h"
#include "calibrate/harness/gemm_shapes.h"
#include "calibrate/harness/queued_timing.h"
#include "calibrate/harness/steps.h"
#include "kernels/check_util.h"
#include "kernels/cuda_check.h"
#include "kernels/timing.h"

namespace stacksim::calibrate {

namespace {

constexpr size_t kWorkspaceBytes = 32u << 20;
constexpr size_t kAlign = 256;
constexpr size_t kMiB = size_t{1} << 20;

size_t AlignUp(size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

struct Plan {
  GemmDtype dtype;
  std::vector<GemmShape> shapes;
};

bool Contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }
bool EndsWith(const std::string& s, const std::string& end) {
  return s.size() >= end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
}

std::vector<Plan> MakePlans(StepContext& ctx) {
  const std::vector<GemmShape> all = GemmShapes();
  std::vector<Plan> plans = {{GemmDtype::kBf16, all}};
  std::vector<GemmDtype> others = {GemmDtype::kFp16, GemmDtype::kTf32};
  if (ctx.device.cc_major * 10 + ctx.device.cc_minor >= 89) {
    others.insert(others.begin(), GemmDtype::kFp8E4m3);
  } else {
    ctx.log->Line("gemm: fp8_e4m3 not measured: needs compute capability 8.9, this GPU has " +
                  std::to_string(ctx.device.cc_major) + "." + std::to_string(ctx.device.cc_minor));
  }
  for (GemmDtype d : others) {
    Plan p{d, {}};
    int not_multiple_of_16 = 0;
    for (const GemmShape& s : all) {
      const bool serving = s.label.rfind(kServingPrefix, 0) == 0;  // bf16 only
      bool take = ctx.quick() ? s.label == "square"
                              : (s.label == "square" || s.label == "odd" ||
                                 (!serving && (Contains(s.label, "/tp1/") || Contains(s.label, "/tp8/"))));
      if (take && !ctx.quick() && d == GemmDtype::kTf32 && (EndsWith(s.label, "dgrad") || EndsWith(s.label, "wgrad"))) {
        take = false;
      }
      if (take && d == GemmDtype::kFp8E4m3 && (s.m % 16 || s.n % 16 || s.k % 16)) {
        ++not_multiple_of_16;
        take = false;
      }
      if (take) p.shapes.push_back(s);
    }
    if (not_multiple_of_16 > 0) {
      ctx.log->Line("gemm: fp8_e4m3: " + std::to_string(not_multiple_of_16) +
                    " shapes left out (cuBLASLt FP8 needs m, n and k multiples of 16)");
    }
    plans.push_back(std::move(p));
  }
  return plans;
}

// Device memory for the buffer sets of one shape, grown when a larger shape
// needs more and refilled with random values of the precision at hand.
class Arena {
 public:
  // Returns the base pointer, or nullptr (with *why) when the GPU lacks the memory.
  uint8_t* Get(size_t bytes, FillKind kind, uint64_t seed, cudaStream_t stream, std::string* why) {
    if (buf_.size() < bytes) {
      buf_ = kernels::DeviceBuffer<uint8_t>();  // free first
      size_t free_bytes = 0, total = 0;
      CUDA_OK(cudaMemGetInfo(&free_bytes, &total));
      if (bytes + (size_t{1} << 30) > free_bytes) {
        *why = "needs " + std::to_string(bytes / kMiB) + " MiB, " + std::to_string(free_bytes / kMiB) + " MiB free";
        return nullptr;
      }
      buf_ = kernels::DeviceBuffer<uint8_t>(bytes);
      filled_ = false;
    }
    if (!filled_ || kind_ != kind) {
      FillRandom(buf_.get(), buf_.size() / FillElementBytes(kind), kind, seed, 1.0f, stream);
      CUDA_OK(cudaStreamSynchronize(stream));
      kind_ = kind;
      filled_ = true;
    }
    return buf_.get();
  }

 private:
  kernels::DeviceBuffer<uint8_t> buf_;
  FillKind kind_ = FillKind::kBytes;
  bool filled_ = false;
};

struct LtHandle {
  cublasLtHandle_t h = nullptr;
  LtHandle() { CheckCublas(cublasLtCreate(&h), "cublasLtCreate"); }
  ~LtHandle() { cublasLtDestroy(h); }
};

// Buffer sets of one shape inside the arena: set i's A, B, C.
struct Sets {
  uint8_t* base = nullptr;
  size_t stride = 0, b_offset = 0, c_offset = 0;
  int count = 1;
};

Sets LayOut(const LtMatmul& g, size_t l2_bytes) {
  Sets s;
  s.b_offset = AlignUp(g.a_bytes());
  s.c_offset = s.b_offset + AlignUp(g.b_bytes());
  s.stride = s.c_offset + AlignUp(g.c_bytes());
  s.count = kernels::RotationCount(s.stride, l2_bytes);
  return s;
}

std::string ShapeText(const GemmShape& s) {
  return s.label + " " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
}

// Kernel-only time and inter-kernel gaps of one bf16 GEMM burst, from CUPTI.
void CuptiGemm(StepContext& ctx, cublasLtHandle_t handle, Arena& arena, void* workspace, const float* one) {
  GemmShape shape{"square", 4096, 4096, 4096};
  LtMatmul g(handle, GemmDtype::kBf16, shape, kWorkspaceBytes, one);
  Sets s = LayOut(g, ctx.device.l2_bytes);
  std::string why;
  s.base = arena.Get(s.stride * s.count, FillKind::kBf16, ctx.options->seed, ctx.stream, &why);
  if (s.base == nullptr) {
    ctx.log->Line("gemm: CUPTI GEMM not run: " + why);
    return;
  }
  auto run = [&](int i) {
    uint8_t* p = s.base + (i % s.count) * s.stride;
    g.Run(p, p + s.b_offset, p + s.c_offset, workspace, ctx.stream);
  };
  for (int i = 0; i < 3; ++i) run(i);
  CUDA_OK(cudaStreamSynchronize(ctx.stream));
  KernelActivityRecorder rec;
  if (!rec.Start(&why)) {
    ctx.log->Line("gemm: CUPTI not used: " + why);
    return;
  }
  for (int i = 0; i < 50; ++i) run(i);
  CUDA_OK(cudaStreamSynchronize(ctx.stream));
  std::vector<KernelSpan> spans = rec.Stop();
  if (spans.empty()) {
    ctx.log->Line("gemm: CUPTI recorded no kernels");
    return;
  }
  WriteCuptiRows(ctx, "gemm_", spans);
  ctx.log->Line("gemm: CUPTI bf16 " + ShapeText(shape) + ": " + std::to_string(spans.size()) +
                " kernels for 50 GEMMs, median " + Num(Summarize(KernelDurationsUs(spans)).median) + " us, gap " +
                Num(Summarize(KernelGapsUs(spans)).median) + " us; kernel " + spans.front().name);
}

}  // namespace

void RunGemmStep(StepContext& ctx) {
  std::vector<Plan> plans = MakePlans(ctx);
  int total = 0;
  for (const Plan& p : plans) total += static_cast<int>(p.shapes.size());
  LtHandle handle;
  kernels::DeviceBuffer<uint8_t> workspace(kWorkspaceBytes);
  kernels::DeviceBuffer<float> one(1);
  one.Upload({1.0f});
  Arena arena;
  CsvWriter csv(ctx.RawPath("gemm.csv"),
                {"dtype", "label", "m", "n", "k", "median_us", "min_us", "tflops_median", "spread", "stable"});
  kernels::TimingOptions topt;
  topt.warmup = 3;
  topt.repeats = ctx.quick() ? 7 : 9;
  Progress progress(ctx.log, ctx.tag, total);
  int done = 0;
  bool oom_injected = false;
  for (const Plan& plan : plans) {
    const char* dname = GemmDtypeName(plan.dtype);
    int i_shape = 0, not_measured = 0;
    for (const GemmShape& shape : plan.shapes) {
      ++i_shape;
      if (ctx.deadline.Expired()) {
        ctx.log->Line("gemm: time budget spent at " + std::string(dname) + " " + std::to_string(i_shape) + "/" +
                      std::to_string(plan.shapes.size()) + "; " + std::to_string(total - done) +
                      " GEMMs not measured");
        ctx.stopped_early = true;
        progress.Report(total, "stopped");
        return;
      }
      try {
        LtMatmul g(handle.h, plan.dtype, shape, kWorkspaceBytes, one.get());
        Sets s = LayOut(g, ctx.device.l2_bytes);
        if (ctx.Fault("oom") && !oom_injected) {
          // Fault "oom": this shape asks for more memory than the GPU has.
          oom_injected = true;
          ctx.log->Line("gemm: fault injection (oom) at " + ShapeText(shape));
          kernels::DeviceBuffer<uint8_t> too_big(2 * ctx.device.props.totalGlobalMem);
        }
        std::string why;
        s.base = arena.Get(s.stride * s.count, GemmInputFill(plan.dtype), ctx.options->seed, ctx.stream, &why);
        if (s.base == nullptr) throw GemmUnsupported(why);
        int i = 0;
        auto run = [&] {
          uint8_t* p = s.base + (i++ % s.count) * s.stride;
          g.Run(p, p + s.b_offset, p + s.c_offset, workspace.get(), ctx.stream);
        };
        StableMeasurement m = ctx.MeasureStable([&] { return TimeQueuedSamples(run, ctx.stream, topt); },
                                                DeviceTimingPolicy(), "gemm " + std::string(dname) + " " + ShapeText(shape));
        const SampleStats& st = m.verdict.stats;
        double flops = 2.0 * shape.m * shape.n * shape.k;
        std::vector<std::string> row = {dname, shape.label, Num(shape.m), Num(shape.n), Num(shape.k),
                                        Num(st.median), Num(st.min), Num(flops / (st.median * 1e-6) / 1e12)};
        for (const std::string& c : StabilityCells(m.verdict)) row.push_back(c);
        csv.Row(row);
      } catch (const GemmUnsupported& e) {
        ++not_measured;
        ctx.log->Line("gemm " + std::string(dname) + " " + ShapeText(shape) + ": not measured: " + e.what());
      } catch (const std::exception& e) {
        ++ctx.items_failed;
        ++not_measured;
        ctx.log->Line("gemm " + std::string(dname) + " " + ShapeText(shape) + ": FAILED: " + e.what());
        std::string why;
        if (!CudaContextUsable(&why)) throw kernels::CudaError("CUDA unusable after a GEMM: " + why);
      }
      progress.Report(++done, std::string(dname) + " " + std::to_string(i_shape) + "/" +
                                  std::to_string(plan.shapes.size()));
    }
    ctx.log->Line("gemm " + std::string(dname) + ": " + std::to_string(plan.shapes.size() - not_measured) + " of " +
                  std::to_string(plan.shapes.size()) + " shapes measured");
  }
  CuptiGemm(ctx, handle.h, arena, workspace.get(), one.get());
}

}  // namespace stacksim::calibrate
