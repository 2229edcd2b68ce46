// The importer's conventions, each on a small trace built here event by
// event: which step's work a kernel is, which step is taken, how launch
// latency is measured, older and ROCm naming, syncs that name no stream,
// holds the trace does not explain, exact timestamps.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "sim/engine/network_model.h"
#include "sim/ingest/kineto.h"
#include "sim/replay/replay.h"
#include "sim/util/error.h"

namespace stacksim::ingest {
namespace {

using nlohmann::json;

constexpr int kPid = 100, kMain = 1;

json Step(int n, double ts, double dur, const char* cat = "user_annotation") {
  return {{"ph", "X"}, {"cat", cat}, {"name", "ProfilerStep#" + std::to_string(n)}, {"pid", kPid},
          {"tid", kMain}, {"ts", ts}, {"dur", dur}, {"args", json::object()}};
}
json Call(const std::string& name, double ts, double dur, int corr, json extra = json::object()) {
  json args = {{"correlation", corr}};
  args.update(extra);
  return {{"ph", "X"}, {"cat", "cuda_runtime"}, {"name", name}, {"pid", kPid}, {"tid", kMain},
          {"ts", ts},  {"dur", dur},            {"args", args}};
}
json Kernel(const std::string& name, int stream, double ts, double dur, int corr) {
  return {{"ph", "X"}, {"cat", "kernel"}, {"name", name}, {"pid", 0}, {"tid", stream}, {"ts", ts}, {"dur", dur},
          {"args", {{"stream", stream}, {"correlation", corr}}}};
}
json Trace(json events) { return {{"traceEvents", events}}; }
KinetoStep Parse(const json& doc, KinetoOptions opts = {}) { return ParseKinetoTrace(doc.dump(), "t.json", opts); }

const engine::FixedNetworkModel kNoNet(Time::Zero(), Bandwidth{1e12});

replay::ReplayedStep ReplayOwn(const KinetoStep& step, std::vector<double> scales = {}) {
  replay::StepTrace built = replay::BuildStepTrace(step);
  if (scales.empty()) scales.assign(step.kernels.size(), 1.0);
  replay::MeasuredCostModel cost(step, scales);
  return replay::Replayed(built, engine::Engine(cost, kNoNet).Replay(built.trace));
}

std::string ErrorOf(const json& doc, KinetoOptions opts = {}) {
  try {
    Parse(doc, opts);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Step #1 launches A at 90 us; A runs 105-150, inside step #2 [100, 165].
// Step #2 launches B at 110 (runs 151-161 behind A) and synchronises.
json TwoSteps() {
  return Trace({Step(1, 0, 100), Step(2, 100, 65), Call("cudaLaunchKernel", 90, 2, 1),
                Kernel("gemm_a", 7, 105, 45, 1), Call("cudaLaunchKernel", 110, 2, 2), Kernel("add_b", 7, 151, 10, 2),
                Call("cudaDeviceSynchronize", 115, 47, 3)});
}

TEST(KinetoSteps, KernelLaunchedInThePreviousStepIsNotThisStepsWork) {
  KinetoStep step = Parse(TwoSteps());
  EXPECT_EQ(step.step_name, "ProfilerStep#2");
  ASSERT_EQ(step.kernels.size(), 1u);
  EXPECT_EQ(step.kernels[0].name, "add_b");
  EXPECT_EQ(step.carried_kernels, 1);
  ASSERT_EQ(step.carry_in.size(), 1u);
  EXPECT_EQ(step.carry_in[0].first, 7);
  EXPECT_EQ(step.carry_in[0].second.us(), 50);  // A keeps stream 7 busy until 150 us
  EXPECT_EQ(step.annotation_end.us(), 65);
  // B waits for A (carry-in), then the sync: the replay lands on the step.
  replay::ReplayedStep r = ReplayOwn(step);
  EXPECT_EQ(r.step.us(), 65);
  EXPECT_EQ(r.gpu_span.us(), 61);
}

// The first step in the window: a kernel whose launch call came before the
// profiler started (correlation 50, below the step's first call's 100) is
// earlier work, not the step's, though it runs inside it.
TEST(KinetoSteps, WorkLaunchedBeforeTheWindowIsCarryIn) {
  json ev = {Step(5, 0, 60), Kernel("before_window", 7, 0, 30, 50), Call("cudaLaunchKernel", 5, 2, 100),
             Kernel("own", 7, 31, 9, 100), Call("cudaDeviceSynchronize", 10, 31, 101)};
  KinetoStep step = Parse(Trace(ev));
  ASSERT_EQ(step.kernels.size(), 1u);
  EXPECT_EQ(step.kernels[0].name, "own");
  EXPECT_EQ(step.unlinked, 0);
  EXPECT_EQ(step.carried_kernels, 1);
  EXPECT_EQ(ReplayOwn(step).step.us(), 60);
}

TEST(KinetoSteps, StepOptionPicksAnEarlierStep) {
  KinetoOptions opts;
  opts.step = 1;
  KinetoStep step = Parse(TwoSteps(), opts);
  EXPECT_EQ(step.step_number, 1);
  ASSERT_EQ(step.kernels.size(), 1u);
  EXPECT_EQ(step.kernels[0].name, "gemm_a");  // its own kernel, though it runs in #2
  EXPECT_EQ(step.gpu_end.us(), 150);
  EXPECT_NE(step.chosen.find("as asked"), std::string::npos);
}

TEST(KinetoSteps, StubLastStepIsSkipped) {
  json doc = TwoSteps();
  // #3: a few host calls, no GPU work (the profiler stopped); #4: a kernel
  // launch whose kernel was never recorded.
  doc["traceEvents"].push_back(Step(3, 170, 5));
  doc["traceEvents"].push_back(Call("cudaStreamIsCapturing", 171, 1, 4));
  doc["traceEvents"].push_back(Step(4, 180, 5));
  doc["traceEvents"].push_back(Call("cudaLaunchKernel", 181, 2, 5));
  KinetoStep step = Parse(doc);
  EXPECT_EQ(step.step_name, "ProfilerStep#2");
  EXPECT_NE(step.chosen.find("#3 (no GPU work launched in it)"), std::string::npos) << step.chosen;
  EXPECT_NE(step.chosen.find("#4 (1 kernel launches without GPU activity)"), std::string::npos) << step.chosen;
  KinetoOptions three;
  three.step = 3;
  EXPECT_NE(ErrorOf(doc, three).find("ProfilerStep#3 launched no GPU work"), std::string::npos) << ErrorOf(doc, three);
  KinetoOptions nine;
  nine.step = 9;
  std::string err = ErrorOf(doc, nine);
  EXPECT_NE(err.find("no ProfilerStep#9"), std::string::npos) << err;
  EXPECT_NE(err.find("ProfilerStep#2: 1 GPU activities"), std::string::npos) << err;
}

// Launch latency is read where the stream was idle; a kernel queued behind a
// long one, or one held 88 ms by something else, is not launch latency.
TEST(KinetoLaunch, QueueingIsNotLaunchLatency) {
  json ev = {Step(1, 0, 100000)};
  int corr = 1;
  for (double t : {10.0, 30.0, 50.0}) {  // idle stream: 2 us from launch end to start
    ev.push_back(Call("cudaLaunchKernel", t, 3, corr));
    ev.push_back(Kernel("k", 7, t + 5, 4, corr++));
  }
  ev.push_back(Call("cudaLaunchKernel", 70, 3, corr));  // long kernel 75-88075
  ev.push_back(Kernel("long", 7, 75, 88000, corr++));
  ev.push_back(Call("cudaLaunchKernel", 90, 3, corr));  // queued behind it: starts 88 ms later
  ev.push_back(Kernel("queued", 7, 88076, 4, corr++));
  ev.push_back(Call("cudaDeviceSynchronize", 95, 87990, corr++));
  KinetoStep step = Parse(Trace(ev));
  replay::StepTrace built = replay::BuildStepTrace(step);
  EXPECT_EQ(built.launch_latency.us(), 2);
  EXPECT_EQ(built.kernel_gap.us(), 1);
  EXPECT_NE(built.launch_basis.find("4 launch-to-start delays on idle streams"), std::string::npos)
      << built.launch_basis;
}

// PyTorch 1.8/1.9 wrote "Operator", "Runtime", "Kernel", "Memcpy" and the
// GPU row as "stream 7" (libkineto output_json.cpp of that time).
TEST(KinetoNames, Pytorch19CategoryNames) {
  json ev = {
      {{"ph", "X"}, {"cat", "Operator"}, {"name", "ProfilerStep#3"}, {"pid", kPid}, {"tid", kMain}, {"ts", 0},
       {"dur", 50}, {"args", {{"Device", 0}, {"External id", 1}}}},
      {{"ph", "X"}, {"cat", "Runtime"}, {"name", "cudaLaunchKernel"}, {"pid", kPid}, {"tid", kMain}, {"ts", 10},
       {"dur", 3}, {"args", {{"cbid", 211}, {"correlation", 7}, {"external id", 1}}}},
      {{"ph", "X"}, {"cat", "Kernel"}, {"name", "volta_sgemm_128x64_nn"}, {"pid", 0}, {"tid", "stream 7"},
       {"ts", 15}, {"dur", 20}, {"args", {{"queued", 0}, {"device", 0}, {"correlation", 7}, {"external id", 1}}}},
      {{"ph", "X"}, {"cat", "Runtime"}, {"name", "cudaMemcpyAsync"}, {"pid", kPid}, {"tid", kMain}, {"ts", 20},
       {"dur", 3}, {"args", {{"cbid", 41}, {"correlation", 8}, {"external id", 2}}}},
      {{"ph", "X"}, {"cat", "Memcpy"}, {"name", "Memcpy DtoH (Device -> Pageable)"}, {"pid", 0},
       {"tid", "stream 7"}, {"ts", 36}, {"dur", 2}, {"args", {{"device", 0}, {"stream", 7}, {"correlation", 8}}}},
      {{"ph", "s"}, {"id", 7}, {"pid", kPid}, {"tid", kMain}, {"ts", 10}, {"cat", "async"}, {"name", "launch"}},
      {{"ph", "X"}, {"cat", "Runtime"}, {"name", "cudaStreamSynchronize"}, {"pid", kPid}, {"tid", kMain},
       {"ts", 25}, {"dur", 14}, {"args", {{"cbid", 131}, {"correlation", 9}}}},
  };
  KinetoStep step = Parse(Trace(ev));
  EXPECT_EQ(step.step_name, "ProfilerStep#3");
  ASSERT_EQ(step.kernels.size(), 2u);
  EXPECT_EQ(step.kernels[0].stream, 7);  // from the "stream 7" row
  EXPECT_EQ(step.kernels[0].category, "kernel");
  EXPECT_EQ(step.kernels[1].category, "gpu_memcpy");
  EXPECT_GE(step.kernels[0].launch, 0);
  EXPECT_NE(step.producer.find("1.8/1.9"), std::string::npos);
  EXPECT_EQ(step.syncs_inferred, 1);  // the sync names no stream: stream 7
  replay::ReplayedStep r = ReplayOwn(step);
  EXPECT_NEAR(r.step.us(), 50, 1);
}

// ROCm before 2024 (roctracer): HIP calls in "cuda_runtime" without a
// correlation arg, the stream as a pointer string, and the call linked to its
// kernel only by the ac2g flow id (libkineto RoctracerActivityApi.cpp).
TEST(KinetoNames, HipCallsLinkedByFlowIds) {
  json ev = {
      Step(2, 0, 40),
      {{"ph", "X"}, {"cat", "cuda_runtime"}, {"name", "hipExtModuleLaunchKernel"}, {"pid", kPid}, {"tid", kMain},
       {"ts", 5}, {"dur", 4}, {"args", {{"External id", 3}, {"stream", "0x7f3c1000"}}}},
      {{"ph", "s"}, {"id", 4242}, {"pid", kPid}, {"tid", kMain}, {"ts", 5}, {"cat", "ac2g"}, {"name", "ac2g"}},
      {{"ph", "X"}, {"cat", "kernel"}, {"name", "Cijk_Ailk_Bljk_HHS_BH_MT128x128"}, {"pid", 2}, {"tid", 1},
       {"ts", 11}, {"dur", 20}, {"args", {{"External id", 3}, {"stream", "0x7f3c1000"}}}},
      {{"ph", "f"}, {"id", 4242}, {"pid", 2}, {"tid", 1}, {"ts", 11}, {"cat", "ac2g"}, {"name", "ac2g"}, {"bp", "e"}},
      {{"ph", "X"}, {"cat", "cuda_runtime"}, {"name", "hipDeviceSynchronize"}, {"pid", kPid}, {"tid", kMain},
       {"ts", 12}, {"dur", 20}, {"args", {{"External id", 4}}}},
  };
  KinetoStep step = Parse(Trace(ev));
  ASSERT_EQ(step.kernels.size(), 1u);
  ASSERT_GE(step.kernels[0].launch, 0);
  EXPECT_EQ(step.calls[step.kernels[0].launch].kind, KinetoHostCall::Kind::kLaunch);
  EXPECT_EQ(step.calls.back().kind, KinetoHostCall::Kind::kDeviceSync);
  EXPECT_NE(step.producer.find("HIP"), std::string::npos);
  EXPECT_NE(step.producer.find("2 events linked by ac2g flow ids"), std::string::npos) << step.producer;
  replay::ReplayedStep r = ReplayOwn(step);
  EXPECT_EQ(r.step.us(), 40);
  EXPECT_EQ(r.gpu_span.us(), 31);
}

// Without the flow, the HIP kernel has no launch: taken by its start time,
// and said so.
TEST(KinetoNames, UnlinkedKernelIsTakenByItsStart) {
  json ev = {Step(2, 0, 40),
             {{"ph", "X"}, {"cat", "kernel"}, {"name", "k"}, {"pid", 2}, {"tid", 1}, {"ts", 11}, {"dur", 20},
              {"args", {{"stream", "0x7f3c1000"}}}}};
  KinetoStep step = Parse(Trace(ev));
  EXPECT_EQ(step.unlinked, 1);
  EXPECT_EQ(step.kernels[0].launch, -1);
}

// A stream sync that names no stream returned long before stream 7's backlog
// ended: it waited for the copy stream, and so does the replay.
TEST(KinetoSyncs, StreamOfAnUnnamedSyncIsInferred) {
  json ev = {Step(1, 0, 60),
             Call("cudaLaunchKernel", 2, 2, 1),
             Kernel("long_gemm", 7, 6, 500, 1),
             Call("cudaMemcpyAsync", 10, 2, 2),
             {{"ph", "X"}, {"cat", "gpu_memcpy"}, {"name", "Memcpy DtoH (Device -> Pinned)"}, {"pid", 0}, {"tid", 20},
              {"ts", 14}, {"dur", 6}, {"args", {{"stream", 20}, {"correlation", 2}}}},
             Call("cudaStreamSynchronize", 13, 8, 3)};
  KinetoStep step = Parse(Trace(ev));
  EXPECT_EQ(step.syncs_inferred, 1);
  EXPECT_EQ(step.calls.back().stream, 20);
  replay::ReplayedStep r = ReplayOwn(step);
  EXPECT_EQ(r.step.us(), 60);  // not 505: the sync did not wait for stream 7
}

// A kernel on an idle stream that started only when another stream's kernel
// ended, with no recorded "Stream Wait Event", waits for it: slow the
// producer down and the consumer moves with it.
TEST(KinetoHolds, UnrecordedCrossStreamWaitIsInferred) {
  json ev = {Step(1, 0, 200), Call("cudaLaunchKernel", 2, 2, 1), Kernel("producer_gemm", 7, 5, 100, 1),
             Call("cudaLaunchKernel", 8, 2, 2), Kernel("consumer_add", 20, 105, 10, 2),
             Call("cudaDeviceSynchronize", 12, 105, 3)};
  KinetoStep step = Parse(Trace(ev));
  replay::StepTrace built = replay::BuildStepTrace(step);
  EXPECT_EQ(built.held, 1);
  EXPECT_EQ(built.stalled, 0);
  EXPECT_EQ(ReplayOwn(step).gpu_span.us(), 115);
  EXPECT_EQ(ReplayOwn(step, {2.0, 1.0}).gpu_span.us(), 215);
}

// Held with nothing in the trace to explain it: the recorded hold is kept.
TEST(KinetoHolds, UnexplainedHoldIsKeptAsMeasured) {
  json ev = {Step(1, 0, 120),
             Call("cudaLaunchKernel", 2, 2, 1),   Kernel("a", 7, 5, 2, 1),  // 1 us launch latency
             Call("cudaLaunchKernel", 10, 2, 2),  Kernel("b", 7, 13, 2, 2),
             Call("cudaLaunchKernel", 20, 2, 3),  Kernel("held", 7, 100, 10, 3),  // could start at 23
             Call("cudaDeviceSynchronize", 25, 86, 4)};
  KinetoStep step = Parse(Trace(ev));
  replay::StepTrace built = replay::BuildStepTrace(step);
  EXPECT_EQ(built.launch_latency.us(), 1);
  EXPECT_EQ(built.stalled, 1);
  replay::ReplayedStep r = ReplayOwn(step);
  EXPECT_EQ(r.gpu_span.us(), 110);
  EXPECT_EQ(r.step.us(), 120);
}

// Kineto writes microseconds with nanosecond digits; they are kept exactly.
TEST(KinetoTime, NanosecondDigitsAreExact) {
  std::string text = R"({"traceEvents":[
    {"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":1712195495502094.5,"dur":35115.869},
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1712195495505543.2,"dur":41.768,"args":{"correlation":9}},
    {"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1712195495505583.001,"dur":1.28,"args":{"stream":7,"correlation":9}}]})";
  KinetoStep step = ParseKinetoTrace(text, "ns.json");
  EXPECT_EQ(step.annotation_end.ns(), 35'115'869);
  EXPECT_EQ(step.calls[0].start.ns(), 3'448'700);
  EXPECT_EQ(step.calls[0].duration.ns(), 41'768);
  EXPECT_EQ(step.kernels[0].start.ns(), 3'488'501);
}

TEST(KinetoTime, BareArrayTraceIsRead) {
  json ev = TwoSteps()["traceEvents"];
  EXPECT_EQ(ParseKinetoTrace(ev.dump(), "a.json").kernels.size(), 1u);
}

TEST(KinetoErrors, NoGpuActivityNamesTheCategoriesSeen) {
  json ev = {Step(1, 0, 10), {{"ph", "X"}, {"cat", "gpu_op"}, {"name", "k"}, {"pid", 0}, {"tid", 1}, {"ts", 1},
                              {"dur", 1}}};
  std::string err = ErrorOf(Trace(ev));
  EXPECT_NE(err.find("no GPU activity"), std::string::npos) << err;
  EXPECT_NE(err.find("gpu_op x1"), std::string::npos) << err;
}

TEST(KinetoErrors, TraceEventsMustBeAnArrayOfObjects) {
  EXPECT_NE(ErrorOf(json{{"traceEvents", json::object()}}).find("traceEvents: must be an array"), std::string::npos);
  EXPECT_NE(ErrorOf(json{{"traceEvents", {1}}}).find("traceEvents[0]: must be an object"), std::string::npos);
  EXPECT_NE(ErrorOf(json{{"other", 1}}).find("traceEvents: missing"), std::string::npos);
}

// --dp re-prices recorded collectives; NCCL kernels without sizes leave
// nothing to re-price, which is an error, not a silent no-op.
TEST(KinetoDp, NothingToRepriceIsAnError) {
  json ev = {Step(1, 0, 100), Call("cudaLaunchKernel", 2, 2, 1),
             Kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", 20, 5, 50, 1),
             Call("cudaDeviceSynchronize", 5, 51, 2)};
  std::string path = testing::TempDir() + "nosizes.json";
  std::ofstream(path) << Trace(ev).dump();
  replay::ReplayOptions o;
  o.trace_path = path;
  o.dp = 8;
  o.topology_path = "dgx-h100";
  try {
    replay::RunReplayCommand(o);
    ADD_FAILURE() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("none can be re-priced"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace stacksim::ingest
