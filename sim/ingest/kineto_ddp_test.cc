// The multi-stream paths of the Kineto importer on a data-parallel step as
// torch.profiler records it: forward on the main thread, backward on the
// autograd thread, DDP's gradient all-reduce on a separate NCCL stream that
// waits for backward through a CUDA event, the host synchronising with it.
// The trace is built here event by event in the layout PyTorch writes
// (record_param_comms with "Collective name" / "In msg nelems" / "Group
// size", NCCL kernels with "External id", cuda_sync "Stream Wait Event" with
// the event record's correlation); its timings are consistent with a 2 us
// launch latency and a 1 us inter-kernel gap, so the replay must land on the
// recorded step exactly.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sim/engine/network_model.h"
#include "sim/ingest/kineto.h"
#include "sim/replay/replay.h"
#include "sim/replay/replay_perfetto.h"
#include "sim/util/error.h"

namespace stacksim::ingest {
namespace {

using replay::BuildStepTrace;
using replay::DpInsertion;
using replay::MeasuredCostModel;
using replay::ReplayComparisonJson;
using replay::StepTrace;

using nlohmann::json;

constexpr int kMain = 1, kAutograd = 2;
constexpr int kCompute = 7, kNccl = 20;

json Call(const char* name, int tid, double ts, double dur, int corr, json extra = json::object()) {
  json args = {{"correlation", corr}};
  args.update(extra);
  return {{"ph", "X"}, {"cat", "cuda_runtime"}, {"name", name}, {"pid", 100}, {"tid", tid},
          {"ts", ts},  {"dur", dur},            {"args", args}};
}

json Kernel(const std::string& name, int stream, double ts, double dur, int corr, json extra = json::object()) {
  json args = {{"stream", stream}, {"correlation", corr}, {"device", 0}};
  args.update(extra);
  return {{"ph", "X"}, {"cat", "kernel"}, {"name", name}, {"pid", 0}, {"tid", stream},
          {"ts", ts},  {"dur", dur},      {"args", args}};
}

// Recorded timeline (us):
//   main      launch gemm 10-15 -> stream 7 17-117; launch add 20-25 -> 118-168
//   autograd  launch wgrad 30-35 -> 169-369; cudaEventRecord 40-42 (corr 4);
//             record_param_comms allreduce 45-58; cudaStreamWaitEvent 50-53 (corr 5);
//             launch NCCL 55-60 -> stream 20 369-669 (waits for wgrad);
//             launch dgrad-add 65-70 -> stream 7 370-470
//   main      cudaStreamSynchronize(20) 80-675; launch adam 680-685 -> 687-727;
//             cudaDeviceSynchronize 690-732; ProfilerStep#4 0-740
json DdpTrace(json nccl_kernel_args = json::object(), bool comm_op = true) {
  json ev = json::array();
  ev.push_back({{"ph", "X"}, {"cat", "user_annotation"}, {"name", "ProfilerStep#4"}, {"pid", 100},
                {"tid", kMain}, {"ts", 1000.0}, {"dur", 740.0}, {"args", json::object()}});
  auto at = [](double us) { return 1000.0 + us; };
  ev.push_back(Call("cudaLaunchKernel", kMain, at(10), 5, 1));
  ev.push_back(Kernel("sm90_xmma_gemm_bf16bf16_bf16f32", kCompute, at(17), 100, 1));
  ev.push_back(Call("cudaLaunchKernel", kMain, at(20), 5, 2));
  ev.push_back(Kernel("void at::native::vectorized_elementwise_kernel<4>", kCompute, at(118), 50, 2));
  ev.push_back(Call("cudaLaunchKernel", kAutograd, at(30), 5, 3));
  ev.push_back(Kernel("sm90_xmma_gemm_bf16bf16_bf16f32_wgrad", kCompute, at(169), 200, 3));
  ev.push_back(Call("cudaEventRecord", kAutograd, at(40), 2, 4, {{"stream", kCompute}}));
  if (comm_op)
    ev.push_back({{"ph", "X"}, {"cat", "cpu_op"}, {"name", "record_param_comms"}, {"pid", 100}, {"tid", kAutograd},
                  {"ts", at(45)}, {"dur", 13.0},
                  {"args", {{"External id", 77}, {"Collective name", "allreduce"}, {"dtype", "Float"},
                            {"In msg nelems", 1000000}, {"Out msg nelems", 1000000}, {"Group size", 2},
                            {"Process Group Name", "0"}, {"Process Group Ranks", "[0, 1]"}}}});
  ev.push_back(Call("cudaStreamWaitEvent", kAutograd, at(50), 3, 5));
  // Kineto's wait record: host time of the wait call, on the consumer stream.
  ev.push_back({{"ph", "X"}, {"cat", "cuda_sync"}, {"name", "Stream Wait Event"}, {"pid", 0}, {"tid", kNccl},
                {"ts", at(50)}, {"dur", 0.0},
                {"args", {{"cuda_sync_kind", "Stream Wait Event"}, {"stream", kNccl}, {"correlation", 5},
                          {"wait_on_stream", kCompute}, {"wait_on_cuda_event_record_corr_id", 4}}}});
  ev.push_back(Call("cudaLaunchKernel", kAutograd, at(55), 5, 6));
  json nargs = {{"External id", 77}};
  nargs.update(nccl_kernel_args);
  ev.push_back(Kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", kNccl, at(369),
                      300, 6, nargs));
  ev.push_back(Call("cudaLaunchKernel", kAutograd, at(65), 5, 7));
  ev.push_back(Kernel("void at::native::vectorized_elementwise_kernel<4, add>", kCompute, at(370), 100, 7));
  ev.push_back(Call("cudaStreamSynchronize", kMain, at(80), 595, 8, {{"stream", kNccl}}));
  ev.push_back(Call("cudaLaunchKernel", kMain, at(680), 5, 9));
  ev.push_back(Kernel("void at::native::multi_tensor_apply_kernel<adam>", kCompute, at(687), 40, 9));
  ev.push_back(Call("cudaDeviceSynchronize", kMain, at(690), 42, 10));
  return {{"traceEvents", ev}};
}

KinetoStep Parse(const json& doc) { return ParseKinetoTrace(doc.dump(), "ddp-step.json"); }

int NcclIndex(const KinetoStep& step) {
  for (size_t i = 0; i < step.kernels.size(); ++i)
    if (step.kernels[i].kernel_class == KernelClass::kCommunication) return static_cast<int>(i);
  return -1;
}

engine::ReplayResult Replay(const KinetoStep& step, const StepTrace& built, std::vector<double> scales,
                            const engine::NetworkModel& net) {
  MeasuredCostModel cost(step, std::move(scales));
  return engine::Engine(cost, net).Replay(built.trace);
}

const engine::FixedNetworkModel kNoNet(Time::Zero(), Bandwidth{1e12});

TEST(KinetoDdp, ReadsTheCollectiveFromRecordParamComms) {
  KinetoStep step = Parse(DdpTrace());
  ASSERT_EQ(step.kernels.size(), 6u);
  int n = NcclIndex(step);
  ASSERT_GE(n, 0);
  const KinetoKernel& k = step.kernels[n];
  EXPECT_EQ(k.collective, trace::CollectiveKind::kAllReduce);
  EXPECT_DOUBLE_EQ(k.comm_bytes.value, 4e6);  // 1,000,000 fp32 elements
  EXPECT_EQ(k.group_size, 2);
  ASSERT_EQ(step.waits.size(), 1u);
  EXPECT_EQ(step.waits[0].record_correlation, 4);
  EXPECT_EQ(step.waits[0].correlation, 5);
}

// Recent PyTorch puts the counts on the NCCL kernel itself; all-gather counts
// the gathered output (the trace's CommOp convention).
TEST(KinetoDdp, ReadsTheCollectiveFromTheKernelsOwnArgs) {
  json args = {{"Collective name", "_allgather_base"}, {"dtype", "BFloat16"}, {"In msg nelems", 1000},
               {"Out msg nelems", 8000}, {"Group size", 8}};
  KinetoStep step = Parse(DdpTrace(args, /*comm_op=*/false));
  const KinetoKernel& k = step.kernels[NcclIndex(step)];
  EXPECT_EQ(k.collective, trace::CollectiveKind::kAllGather);
  EXPECT_DOUBLE_EQ(k.comm_bytes.value, 16000);
  EXPECT_EQ(k.group_size, 8);
}

TEST(KinetoDdp, SendRecvIsNotACollective) {
  json args = {{"Collective name", "send"}, {"dtype", "Float"}, {"In msg nelems", 10}};
  json doc = DdpTrace(args, false);
  for (json& e : doc["traceEvents"])
    if (e["name"].get<std::string>().rfind("ncclDevKernel", 0) == 0) e["name"] = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)";
  KinetoStep step = Parse(doc);
  EXPECT_TRUE(step.kernels[NcclIndex(step)].point_to_point);
  DpInsertion dp;
  dp.size = 16;
  EXPECT_EQ(BuildStepTrace(step, dp, true).repriced, 0);
}

TEST(KinetoDdp, ReplayLandsOnTheRecordedStep) {
  KinetoStep step = Parse(DdpTrace());
  EXPECT_NEAR(step.span.us(), 740, 1e-6);
  StepTrace built = BuildStepTrace(step);
  EXPECT_NEAR(built.launch_latency.us(), 2, 1e-6);
  EXPECT_NEAR(built.kernel_gap.us(), 1, 1e-6);
  engine::ReplayResult r = Replay(step, built, std::vector<double>(step.kernels.size(), 1.0), kNoNet);
  EXPECT_NEAR(r.makespan.us(), 740, 0.01);
  for (size_t i = 0; i < step.kernels.size(); ++i)
    EXPECT_NEAR(r.timings[built.kernel_task[i]].start.us(), step.kernels[i].start.us(), 0.01) << step.kernels[i].name;
}

// The NCCL kernel was launched at 55 us but runs when the weight-gradient GEMM
// it waits for (through the event) ends: twice as slow a GEMM moves it.
TEST(KinetoDdp, StreamWaitEventHoldsTheCollective) {
  KinetoStep step = Parse(DdpTrace());
  StepTrace built = BuildStepTrace(step);
  std::vector<double> scales(step.kernels.size(), 1.0);
  int wgrad = 2, n = NcclIndex(step);
  ASSERT_NE(step.kernels[wgrad].name.find("wgrad"), std::string::npos);
  scales[wgrad] = 2.0;
  engine::ReplayResult r = Replay(step, built, scales, kNoNet);
  EXPECT_NEAR(r.timings[built.kernel_task[n]].start.us(), 169 + 400, 0.01);
  // The elementwise kernel launched after the wait on the compute stream is
  // not held by it (it is the consumer stream's wait, not the producer's).
  int after = 4;
  ASSERT_NE(step.kernels[after].name.find("add>"), std::string::npos);
  EXPECT_NEAR(r.timings[built.kernel_task[after]].start.us(), 569 + 1, 0.01);
}

// cudaStreamSynchronize on the NCCL stream: everything the host does after it
// waits for the all-reduce, so a slower all-reduce lengthens the step 1:1.
TEST(KinetoDdp, StreamSynchronizeWaitsForTheCollective) {
  KinetoStep step = Parse(DdpTrace());
  StepTrace built = BuildStepTrace(step);
  std::vector<double> scales(step.kernels.size(), 1.0);
  scales[NcclIndex(step)] = 2.0;
  EXPECT_NEAR(Replay(step, built, scales, kNoNet).makespan.us(), 740 + 300, 0.01);
}

// At another data-parallel scale the recorded all-reduce is priced by the
// network model with its recorded size, and nothing else changes.
TEST(KinetoDdp, DataParallelScaleRepricesTheRecordedCollective) {
  KinetoStep step = Parse(DdpTrace());
  DpInsertion dp;
  dp.size = 64;
  dp.ranks_per_node = 8;
  dp.nodes = 8;
  StepTrace built = BuildStepTrace(step, dp, /*network_collectives=*/true);
  EXPECT_EQ(built.repriced, 1);
  EXPECT_EQ(built.buckets, 0);  // recorded collectives: nothing inserted
  engine::FixedNetworkModel net(Time::Us(10), Bandwidth{1e9});  // 4 MB: 4 ms + 10 us
  engine::ReplayResult r = Replay(step, built, std::vector<double>(step.kernels.size(), 1.0), net);
  const engine::TaskTiming& t = r.timings[built.kernel_task[NcclIndex(step)]];
  EXPECT_NEAR((t.end - t.start).us(), 4010, 0.01);
  EXPECT_NEAR(r.makespan.us(), 740 - 300 + 4010, 0.01);
}

TEST(KinetoDdp, PerfettoShowsRecordedAndReplayedSideBySide) {
  KinetoStep step = Parse(DdpTrace());
  StepTrace built = BuildStepTrace(step);
  std::vector<double> slow(step.kernels.size(), 2.0);
  engine::ReplayResult own = Replay(step, built, std::vector<double>(step.kernels.size(), 1.0), kNoNet);
  engine::ReplayResult retimed = Replay(step, built, slow, kNoNet);
  json doc = json::parse(ReplayComparisonJson(step, {{"replayed", &built.trace, &own}, {"re-timed", &built.trace, &retimed}}));
  std::map<int, std::vector<json>> kernels;  // pid -> the NCCL kernel's events
  std::map<int, std::string> process;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") process[e["pid"].get<int>()] = e["args"]["name"];
    if (e["ph"] == "X" && e["name"].get<std::string>().rfind("ncclDevKernel", 0) == 0)
      kernels[e["pid"].get<int>()].push_back(e);
  }
  ASSERT_EQ(process.size(), 3u);
  EXPECT_NE(process[1].find("recorded ProfilerStep#4"), std::string::npos);
  EXPECT_NE(process[3].find("re-timed"), std::string::npos);
  ASSERT_EQ(kernels[1].size(), 1u);
  ASSERT_EQ(kernels[2].size(), 1u);
  EXPECT_NEAR(kernels[1][0]["ts"].get<double>(), 369, 1e-6);  // as recorded
  EXPECT_NEAR(kernels[2][0]["ts"].get<double>(), 369, 1e-6);  // own replay: same place
  EXPECT_NEAR(kernels[3][0]["dur"].get<double>(), 600, 1e-6);  // re-timed 2x
  // The same thread names (and tids) in every process; no filler drawn.
  std::map<int, std::map<int, std::string>> names;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") names[e["pid"].get<int>()][e["tid"].get<int>()] = e["args"]["name"];
    if (e["ph"] == "X") {
      EXPECT_NE(e["name"], "host gap");
      EXPECT_NE(e["name"], "launch latency");
    }
  }
  EXPECT_EQ(names[1], names[2]);
  EXPECT_EQ(names[1], names[3]);
}

TEST(KinetoDdp, BadCollectiveCountsNameTheField) {
  json doc = DdpTrace();
  for (json& e : doc["traceEvents"])
    if (e["name"] == "record_param_comms") e["args"]["In msg nelems"] = -4;
  try {
    Parse(doc);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("args.In msg nelems"), std::string::npos) << e.what();
  }
}

// A real one-rank DDP step as PyTorch 2.11 wrote it on an H200
// (tools/gpu/record_gpt_trace.py --ddp; meta beside it): torch.distributed
// records DDP's ten gradient buckets on record_param_comms ops ("Group
// size" 1), and NCCL launches no kernel for a one-rank group.
const char* kRecordedDdp = STACKSIM_SOURCE_DIR "/tests/data/kineto/h200-gpt-small-ddp-step.json.gz";
constexpr double kDdpParams = 128139264;  // meta: model.params

TEST(KinetoDdpRecorded, KeepsTheBucketsTorchDistributedRecorded) {
  KinetoStep step = ReadKinetoTrace(kRecordedDdp);
  EXPECT_EQ(step.step_name, "ProfilerStep#3");
  for (const KinetoKernel& k : step.kernels) EXPECT_NE(k.kernel_class, KernelClass::kCommunication) << k.name;
  ASSERT_EQ(step.host_collectives.size(), 10u);
  double total = 0;
  for (const KinetoHostCollective& h : step.host_collectives) {
    EXPECT_EQ(h.kind, trace::CollectiveKind::kAllReduce);
    EXPECT_EQ(h.group_size, 1);
    total += h.bytes.value;
  }
  EXPECT_DOUBLE_EQ(total, kDdpParams * 4);  // fp32 gradients of every parameter
  // DDP's small first bucket comes first; the one with the embedding last.
  EXPECT_DOUBLE_EQ(step.host_collectives.front().bytes.value, 4196352.0 * 4);
  EXPECT_DOUBLE_EQ(step.host_collectives.back().bytes.value, 56766464.0 * 4);
  // The replay of its own kernels lands on the recorded step.
  StepTrace built = BuildStepTrace(step);
  MeasuredCostModel cost(step);
  engine::FixedNetworkModel net(Time::Zero(), Bandwidth{1e9});
  Time replayed = engine::Engine(cost, net).Replay(built.trace).makespan;
  EXPECT_NEAR(replayed.seconds() / step.span.seconds(), 1.0, 0.01);
}

TEST(KinetoDdpRecorded, DataParallelWhatIfIssuesTheRecordedBuckets) {
  KinetoStep step = ReadKinetoTrace(kRecordedDdp);
  DpInsertion dp;
  dp.size = 64;
  dp.ranks_per_node = 8;
  dp.nodes = 8;
  StepTrace built = BuildStepTrace(step, dp, true);  // no gradient_bytes: the recording has them
  EXPECT_EQ(built.buckets, 10);
  EXPECT_NE(built.inserted.find("record_param_comms"), std::string::npos) << built.inserted;
  std::vector<double> sizes;
  for (const trace::Task& t : built.trace.tasks())
    if (t.kind == trace::TaskKind::kCollective) sizes.push_back(t.comm.bytes.value);
  ASSERT_EQ(sizes.size(), 10u);
  for (size_t i = 0; i < sizes.size(); ++i) EXPECT_DOUBLE_EQ(sizes[i], step.host_collectives[i].bytes.value);
  // Slow buckets lengthen the step; the last one waits for the whole backward.
  MeasuredCostModel cost(step);
  engine::FixedNetworkModel net(Time::Zero(), Bandwidth{10e9});
  Time without = engine::Engine(cost, net).Replay(BuildStepTrace(step).trace).makespan;
  Time slow = engine::Engine(cost, net).Replay(built.trace).makespan;
  EXPECT_GT(slow.seconds(), without.seconds() + 0.9 * 56766464.0 * 4 / 10e9);
}

}  // namespace
}  // namespace stacksim::ingest
