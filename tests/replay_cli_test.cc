// `stacksim replay` as a user runs it: the recorded H200 step, what-ifs on
// another GPU and at a larger data-parallel scale, the side-by-side Perfetto
// file, and clear errors on bad traces.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "tests/run_stacksim.h"

namespace stacksim {
namespace {

using testing::Stacksim;

const std::string kTrace = STACKSIM_SOURCE_DIR "/tests/data/kineto/h200-gpt-small-step.json.gz";

TEST(ReplayCli, ReproducesTheRecordedStepAndAnswersWhatIfs) {
  std::string perfetto = ::testing::TempDir() + "replay_cli_perfetto.json";
  auto r = Stacksim("replay " + kTrace + " --to-profile h100-sxm-80gb --topology dgx-h100 --dp 64 --format json" +
                    " --perfetto " + perfetto);
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_LT(std::abs(j["replay_error"].get<double>()), 0.02);
  double recorded = j["recorded_step_ms"], h100 = j["what_if_profile"]["step_ms"];
  // H100 has 3.35 of H200's 4.8 TB/s and the same dense peak: the memory-bound
  // half of this small model's step slows, the GEMMs do not.
  EXPECT_GT(h100, recorded * 1.05);
  EXPECT_LT(h100, recorded * 1.43);
  // DP 64 over 8 nodes: 512.6 MB of fp32 gradients in 21 buckets, partly hidden behind backward.
  double dp = j["what_if_dp"]["step_ms"], ar = j["what_if_dp"]["all_reduce_ms"];
  EXPECT_GT(dp, h100);
  EXPECT_GT(ar, dp - h100);  // some of the all-reduce overlaps backward
  EXPECT_NE(j["what_if_dp"]["inserted"].get<std::string>().find("21 all-reduce bucket"), std::string::npos);

  // Perfetto: the recording and three replays, one process each.
  std::ifstream in(perfetto);
  ASSERT_TRUE(in) << perfetto;
  nlohmann::json doc = nlohmann::json::parse(in);
  std::map<int, std::string> process;
  std::map<int, int> events;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") process[e["pid"].get<int>()] = e["args"]["name"];
    if (e["ph"] == "X") ++events[e["pid"].get<int>()];
  }
  ASSERT_EQ(process.size(), 4u);
  EXPECT_NE(process[1].find("recorded"), std::string::npos);
  EXPECT_NE(process[3].find("h100-sxm-80gb"), std::string::npos);
  EXPECT_NE(process[4].find("DP 64"), std::string::npos);
  EXPECT_EQ(events[2], events[1]);       // own replay: every recorded kernel and host call, no filler
  EXPECT_EQ(events[4], events[1] + 21);  // plus the inserted buckets
}

TEST(ReplayCli, TextReportNamesTheNumbers) {
  auto r = Stacksim("replay " + kTrace);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("ProfilerStep#3"), std::string::npos);
  EXPECT_NE(r.out.find("recorded step"), std::string::npos);
  EXPECT_NE(r.out.find("error"), std::string::npos);
}

TEST(ReplayCli, TruncatedTraceIsAClearError) {
  std::ifstream in(kTrace, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string path = ::testing::TempDir() + "replay_cli_truncated.json.gz";
  std::ofstream(path, std::ios::binary) << bytes.substr(0, bytes.size() / 3);
  auto r = Stacksim("replay " + path);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("truncated"), std::string::npos) << r.err;
}

TEST(ReplayCli, DataParallelNeedsATopology) {
  auto r = Stacksim("replay " + kTrace + " --dp 8");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("--topology"), std::string::npos) << r.err;
}

TEST(ReplayCli, UnknownProfileIsAClearError) {
  auto r = Stacksim("replay " + kTrace + " --to-profile no-such-gpu");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("no-such-gpu"), std::string::npos) << r.err;
}

TEST(ReplayCli, SaysWhichStepAndKeepsTheGpuSpanApart) {
  auto r = Stacksim("replay " + kTrace + " --format json");
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["step_number"], 3);
  EXPECT_NE(j["step_choice"].get<std::string>().find("last complete step with GPU work"), std::string::npos);
  EXPECT_NEAR(j["recorded_step_ms"].get<double>(), 25.921, 0.001);      // ProfilerStep#3's dur
  EXPECT_NEAR(j["recorded_gpu_span_ms"].get<double>(), 25.842, 0.001);  // its last kernel's end
  EXPECT_NE(j["launch_latency_basis"].get<std::string>().find("idle streams"), std::string::npos);
  auto same = Stacksim("replay " + kTrace + " --step 3 --format json");
  ASSERT_EQ(same.status, 0) << same.err;
  EXPECT_EQ(nlohmann::json::parse(same.out)["replayed_step_ms"], j["replayed_step_ms"]);
}

TEST(ReplayCli, StepNotInTheTraceIsAClearError) {
  auto r = Stacksim("replay " + kTrace + " --step 7");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--step"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no ProfilerStep#7"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ProfilerStep#3: 451 GPU activities"), std::string::npos) << r.err;
}

TEST(ReplayCli, DataParallelWithoutCollectivesOrParamsIsAClearError) {
  std::string path = ::testing::TempDir() + "replay_cli_nometa.json.gz";
  std::ifstream in(kTrace, std::ios::binary);
  std::ofstream(path, std::ios::binary) << in.rdbuf();  // no .meta.json beside it
  auto r = Stacksim("replay " + path + " --topology dgx-h100 --dp 8");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("no NCCL collectives to re-price"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--params"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace stacksim
