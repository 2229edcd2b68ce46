#include "sim/ingest/kineto.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "sim/engine/network_model.h"
#include "sim/replay/replay.h"
#include "sim/util/error.h"

namespace stacksim::ingest {
namespace {

using replay::Breakdown;
using replay::BuildStepTrace;
using replay::DpInsertion;
using replay::MeasuredCostModel;
using replay::StepBreakdown;
using replay::StepTrace;

const char* kTrace = STACKSIM_SOURCE_DIR "/tests/data/kineto/h200-gpt-small-step.json.gz";

TEST(Kineto, ClassifiesKernelsByName) {
  EXPECT_EQ(ClassifyKernel("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"), KernelClass::kCompute);
  EXPECT_EQ(ClassifyKernel("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob"), KernelClass::kCompute);
  EXPECT_EQ(ClassifyKernel("sm90_xmma_gemm_bf16bf16_bf16f32"), KernelClass::kCompute);
  EXPECT_EQ(ClassifyKernel("void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float>>"),
            KernelClass::kMemory);
  EXPECT_EQ(ClassifyKernel("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float>"),
            KernelClass::kMemory);
  EXPECT_EQ(ClassifyKernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            KernelClass::kCommunication);
}

TEST(Kineto, ImportsTheProfiledStep) {
  KinetoStep step = ReadKinetoTrace(kTrace);
  EXPECT_EQ(step.step_name, "ProfilerStep#3");
  EXPECT_EQ(step.events, 5246);
  EXPECT_EQ(step.kernels.size(), 385u + 66u);  // kernels + memsets
  int launched = 0, compute = 0;
  for (const KinetoKernel& k : step.kernels) {
    launched += k.launch >= 0;
    compute += k.kernel_class == KernelClass::kCompute;
  }
  EXPECT_EQ(launched, 451);
  EXPECT_GT(compute, 80);
  EXPECT_NEAR(step.span.ms(), 25.92, 0.01);  // ProfilerStep#3 ends after its last kernel
}

// The replay of the measured kernels and host gaps must reproduce the step:
// within 2% of the step's wall span, and of the step time PyTorch measured
// around it (meta: step_s_profiled_active = 0.025823 s).
TEST(KinetoReplay, OwnHardwareMatchesRecordedStep) {
  KinetoStep step = ReadKinetoTrace(kTrace);
  StepTrace built = BuildStepTrace(step);
  MeasuredCostModel cost(step);
  engine::FixedNetworkModel net(Time::Zero(), Bandwidth{1e9});
  engine::ReplayResult r = engine::Engine(cost, net).Replay(built.trace);
  double err = r.makespan.seconds() / step.span.seconds() - 1;
  EXPECT_LT(std::abs(err), 0.02) << r.makespan.ms() << " ms vs " << step.span.ms();
  EXPECT_LT(std::abs(r.makespan.seconds() / 0.025822638 - 1), 0.02);
  StepBreakdown b = Breakdown(step, built, r);
  EXPECT_GT(b.compute.ms(), 5);
  EXPECT_GT(b.memory.ms(), 5);
  EXPECT_NEAR((b.compute + b.memory + b.gpu_idle).ms(), r.makespan.ms(), 0.01);
}

TEST(KinetoReplay, SlowerKernelsLengthenTheStep) {
  KinetoStep step = ReadKinetoTrace(kTrace);
  StepTrace built = BuildStepTrace(step);
  engine::FixedNetworkModel net(Time::Zero(), Bandwidth{1e9});
  MeasuredCostModel own(step), slow(step, std::vector<double>(step.kernels.size(), 2.0));
  Time a = engine::Engine(own, net).Replay(built.trace).makespan;
  Time b = engine::Engine(slow, net).Replay(built.trace).makespan;
  EXPECT_GT(b.seconds(), a.seconds() * 1.5);
}

TEST(KinetoReplay, InsertsDataParallelBuckets) {
  KinetoStep step = ReadKinetoTrace(kTrace);
  DpInsertion dp;
  dp.size = 64;
  dp.ranks_per_node = 8;
  dp.nodes = 8;
  dp.gradient_bytes = Bytes{128139264.0 * 4};
  StepTrace built = BuildStepTrace(step, dp);
  EXPECT_EQ(built.buckets, 21);  // 512.6 MB / 25 MB
  EXPECT_NE(built.inserted.find("no NCCL"), std::string::npos);
  MeasuredCostModel cost(step);
  engine::FixedNetworkModel net(Time::Zero(), Bandwidth{50e9});  // 25 MB bucket: 0.5 ms
  Time with = engine::Engine(cost, net).Replay(built.trace).makespan;
  Time without = engine::Engine(cost, net).Replay(BuildStepTrace(step).trace).makespan;
  EXPECT_GT(with, without);
}

// --- malformed input: an InputError naming the file and where, never a crash.

std::string WriteTemp(const std::string& name, const std::string& bytes) {
  std::string path = testing::TempDir() + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string ErrorOf(const std::string& path) {
  try {
    ReadKinetoTrace(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(KinetoErrors, TruncatedGzip) {
  std::ifstream in(kTrace, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string path = WriteTemp("half.json.gz", bytes.substr(0, bytes.size() / 2));
  std::string err = ErrorOf(path);
  EXPECT_NE(err.find(path), std::string::npos) << err;
  EXPECT_NE(err.find("truncated"), std::string::npos) << err;
}

TEST(KinetoErrors, CorruptJson) {
  std::string path = WriteTemp("bad.json", "{\"traceEvents\": [ {\"ph\": \"X\", ");
  std::string err = ErrorOf(path);
  EXPECT_NE(err.find(path), std::string::npos) << err;
}

const char* kKernel =
    R"({"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":10,"dur":5,"args":{"stream":7,"correlation":1}})";

TEST(KinetoErrors, MissingFieldNamesEventAndField) {
  std::string path = WriteTemp("nodur.json", std::string("{\"traceEvents\":[") + kKernel +
                                                 R"(,{"ph":"X","cat":"kernel","name":"k","ts":1,"args":{}}]})");
  EXPECT_NE(ErrorOf(path).find("traceEvents[1].dur"), std::string::npos) << ErrorOf(path);
  path = WriteTemp("nostream.json", std::string("{\"traceEvents\":[") + kKernel +
                                        R"(,{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":2,"args":{"correlation":3}}]})");
  EXPECT_NE(ErrorOf(path).find("traceEvents[1].args.stream"), std::string::npos) << ErrorOf(path);
  path = WriteTemp("noph.json", std::string("{\"traceEvents\":[{\"name\":\"x\"},") + kKernel + "]}");
  EXPECT_NE(ErrorOf(path).find("traceEvents[0].ph"), std::string::npos) << ErrorOf(path);
}

TEST(KinetoErrors, UnknownPhase) {
  std::string path = WriteTemp("phase.json", std::string("{\"traceEvents\":[") + kKernel +
                                                 R"(,{"ph":"Q","name":"x","ts":1}]})");
  std::string err = ErrorOf(path);
  EXPECT_NE(err.find("traceEvents[1].ph"), std::string::npos) << err;
  EXPECT_NE(err.find("unknown phase"), std::string::npos) << err;
}

TEST(KinetoErrors, NoGpuWork) {
  std::string path = WriteTemp("empty.json", R"({"traceEvents":[]})");
  EXPECT_NE(ErrorOf(path).find("no complete"), std::string::npos);
}

TEST(KinetoErrors, MissingFile) { EXPECT_NE(ErrorOf("/nonexistent/x.json").find("no such file"), std::string::npos); }

}  // namespace
}  // namespace stacksim::ingest
