// Scale limits: the largest cluster and the deepest model the issue names
// simulate with a trace whose size follows the pipeline (stages, layers,
// micro-batches), never the GPU count; inputs beyond what stacksim represents
// are InputErrors naming the field; a campaign of more than a year keeps its
// clock in range. Wall time is not asserted here (bench/scale_bench.cc
// measures it); the structure that keeps it small is.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/config/scenario.h"
#include "sim/simulate/simulate.h"
#include "sim/util/json_reader.h"
#include "sim/util/units.h"
#include "sim/workload/training_step.h"
#include "tests/input_error.h"
#include "tests/run_stacksim.h"

namespace stacksim::testing {
namespace {

std::string Scenario(const std::string& name) { return std::string(STACKSIM_SOURCE_DIR) + "/scenarios/" + name; }

config::ScenarioConfig Load(const std::string& name) { return config::LoadScenario(Scenario(name), {}); }

// Tasks per pass of one layer over one micro-batch: 35-56 for the dense
// scenarios (forward, recompute, backward kernels and their TP/SP
// collectives), ~120 for DeepSeek-V3's DualPipe. Per-GPU expansion of any
// kind would break this bound by orders of magnitude.
constexpr double kDenseTasksPerLayerPass = 64;

double LayerPasses(const config::ScenarioConfig& s) {
  return static_cast<double>(s.model.num_layers) * static_cast<double>(s.plan.micro_batches());
}

TEST(Scale, Llama405BOn131072GpusHasTheTraceOfOnePipeline) {
  const config::ScenarioConfig big = Load("llama3-405b-131072xb200.json");
  ASSERT_EQ(big.gpus, 131072);
  ASSERT_EQ(big.plan.dp, 1024);
  const trace::Trace t = workload::BuildTrainingStep(big);
  EXPECT_EQ(t.rank_count(), big.plan.pp);  // one simulated rank per stage
  EXPECT_LE(static_cast<double>(t.size()), kDenseTasksPerLayerPass * LayerPasses(big));
  // Meta's 16K plan has the same pipeline (pp 16, vp 4, 16 micro-batches per
  // replica) with 8x fewer replicas: the same trace, task for task.
  const config::ScenarioConfig meta = Load("llama3-405b-16384xh100.json");
  ASSERT_EQ(meta.plan.micro_batches(), big.plan.micro_batches());
  EXPECT_EQ(workload::BuildTrainingStep(meta).size(), t.size());
  EXPECT_EQ(workload::BuildTrainingStep(meta).groups().size(), t.groups().size());

  const simulate::SimulationResult r = simulate::Simulate(big);
  EXPECT_FALSE(r.out_of_memory);
  EXPECT_EQ(r.tasks, t.size());
  EXPECT_EQ(r.simulated_ranks, 16);
  EXPECT_GT(r.iteration.seconds(), 1.0);
  EXPECT_LT(r.iteration.seconds(), 20.0);
  EXPECT_GT(r.mfu, 0.1);
  EXPECT_LT(r.mfu, 0.7);
}

TEST(Scale, ThousandLayerModelTraceGrowsWithLayersTimesMicroBatches) {
  // The scenario (125 stages x 125 micro-batches, 4.7M tasks) is the bench's;
  // here 8 micro-batches per replica keep the test fast with the same shape.
  config::ScenarioConfig s = Load("deep-1000-layer-1000xh100.json");
  ASSERT_EQ(s.model.num_layers, 1000);
  s.plan.global_batch = 8 * s.plan.dp;
  config::ValidatePlan(s, s.file);
  const trace::Trace t = workload::BuildTrainingStep(s);
  EXPECT_EQ(t.rank_count(), 125);
  EXPECT_LE(static_cast<double>(t.size()), kDenseTasksPerLayerPass * LayerPasses(s));
  // Linear in micro-batches: twice the micro-batches, at most twice the tasks
  // (plus the optimizer and gradient tail, which do not repeat).
  config::ScenarioConfig twice = s;
  twice.plan.global_batch = 16 * s.plan.dp;
  const size_t t2 = workload::BuildTrainingStep(twice).size();
  EXPECT_GT(t2, t.size());
  EXPECT_LE(t2, 2 * t.size());

  const simulate::SimulationResult r = simulate::Simulate(s);
  EXPECT_FALSE(r.out_of_memory);
  EXPECT_EQ(r.simulated_ranks, 125);
  EXPECT_EQ(r.per_stage.size(), 125u);
  EXPECT_GT(r.iteration.seconds(), 0);
  // Stage 0 waits for 124 stages to fill: most of its step is bubble.
  EXPECT_GT(r.per_stage[0].bubble, r.per_stage[0].compute());
}

TEST(Scale, CampaignAndClusterRunAt131072Gpus) {
  CmdResult c = Stacksim("run-campaign " + Scenario("llama3-405b-131072xb200.json") +
                         " --duration 54d --spares 128 --trials 8 --storage-write '2 TB/s' --storage-read '2 TB/s'"
                         " --format json");
  ASSERT_EQ(c.status, 0) << c.err;
  nlohmann::json j = nlohmann::json::parse(c.out);
  EXPECT_EQ(j["gpus"], 131072);
  EXPECT_GT(j["interruptions"]["mean"].get<double>(), 1000);  // ~8x Llama 3's 419 in 54 days
  EXPECT_GT(j["goodput"].get<double>(), 0);
  EXPECT_LT(j["goodput"].get<double>(), 1);

  CmdResult k = Stacksim("cluster " + Scenario("cluster-131072xb200.json") + " --format json");
  ASSERT_EQ(k.status, 0) << k.err;
  j = nlohmann::json::parse(k.out);
  EXPECT_EQ(j["gpus"], 131072);
  EXPECT_EQ(j["jobs"], 17280);
  EXPECT_GT(j["utilization"].get<double>(), 0.5);
  EXPECT_LE(j["utilization"].get<double>(), 1.0);
}

// The representation limits: each absurd input is exit status 2 and names
// its field.
void ExpectInputError(const std::string& args, const std::string& field) {
  CmdResult r = Stacksim(args);
  EXPECT_EQ(r.status, 2) << args << "\n" << r.err;
  EXPECT_NE(r.err.find(field), std::string::npos) << args << "\n" << r.err;
}

TEST(Scale, InputsBeyondWhatStacksimRepresentsNameTheirField) {
  const std::string sim = "simulate " + Scenario("llama3-405b-131072xb200.json") + " --format json ";
  ExpectInputError(sim + "--set gpus=1000000000000", "gpus");
  ExpectInputError(sim + "--set gpus=33554432 --set plan.dp=262144", "gpus");  // 2^25 > 2^24
  ExpectInputError(sim + "--set training.seq_len=1000000000", "training.seq_len");
  // 2^40 sequences x 16,384 tokens = 2^54 tokens per step.
  ExpectInputError(sim + "--set training.global_batch=1099511627776 --set training.seq_len=16384",
                   "training.global_batch");
  // 2^20 micro-batches per pipeline x 126 layers: a trace of ~7 billion tasks.
  ExpectInputError(sim + "--set training.global_batch=1073741824", "training.global_batch");
  ExpectInputError(sim + "--set plan.micro_batch=4611686018427387904", "plan.micro_batch");
  ExpectInputError(sim + "--set plan.micro_batch=1000", "training.global_batch");

  // A model of 10^9 layers (narrow enough to pass the parameter-count check).
  nlohmann::json model = nlohmann::json::parse(std::ifstream(std::string(STACKSIM_SOURCE_DIR) +
                                                             "/models/deep-1000-layer.json"));
  model["num_hidden_layers"] = 1'000'000'000;
  model["hidden_size"] = 64;
  model["num_attention_heads"] = 1;
  model["num_key_value_heads"] = 1;
  model["intermediate_size"] = 64;
  model["vocab_size"] = 64;
  const std::string path = ::testing::TempDir() + "scale_test_deep_model.json";
  std::ofstream(path) << model.dump();
  ExpectInputError("simulate " + Scenario("llama3-8b-8xh100.json") + " --set model=" + path, "num_hidden_layers");

  const std::string camp = "run-campaign " + Scenario("llama3-405b-16384xh100.json") + " --trials 2 --format json ";
  ExpectInputError(camp + "--duration 365000000d", "--duration");  // a million years
  ExpectInputError(camp + "--duration 1e300d", "--duration");
  ExpectInputError(camp + "--tokens 9e18", "--tokens");           // ~140 years failure-free
  ExpectInputError(camp + "--tokens 1T --checkpoint-interval 200000d", "--checkpoint-interval");
}

TEST(Scale, TimeParsingAndSumsStayInRange) {
  EXPECT_EQ(ParseTime("54 d", "f", "k"), Time::FromSeconds(54 * 86400.0));
  EXPECT_EQ(ParseTime("100 d", "f", "k").ns(), 8'640'000'000'000'000);
  InputError e = ErrorFrom([] { ParseTime("40000 d", "f.json", "a.b"); });  // 110 years
  EXPECT_EQ(e.key_path(), "a.b");
  EXPECT_NE(std::string(e.what()).find("100 years"), std::string::npos);
  EXPECT_EQ(CheckedSum(Time::Ns(1), Time::Ns(2)), Time::Ns(3));
  EXPECT_THROW(CheckedSum(Time::Max(), Time::Ns(1)), std::overflow_error);
  // Scaling by a double saturates instead of overflowing (undefined behaviour
  // on the cast).
  EXPECT_EQ(Time::FromSeconds(1e300), Time::Max());
  EXPECT_EQ(Time::Ns(1'000'000'000) * 1e300, Time::Max());
  EXPECT_EQ(Time::FromSeconds(std::nan("")), Time::Max());
}

TEST(Scale, LongCampaignsStayFiniteAndMonotone) {
  // 400 days is 3.5e16 ns, far inside int64; the campaign's clock, counts and
  // goodput must stay finite and grow with the span.
  const std::string camp = "run-campaign " + Scenario("llama3-405b-16384xh100.json") +
                           " --spares 64 --trials 4 --format json --duration ";
  nlohmann::json prev;
  for (const char* span : {"54d", "400d", "3650d"}) {
    CmdResult r = Stacksim(camp + span);
    ASSERT_EQ(r.status, 0) << span << "\n" << r.err;
    nlohmann::json j = nlohmann::json::parse(r.out);
    const double goodput = j["goodput"], checkpoints = j["checkpoints"];
    EXPECT_TRUE(std::isfinite(goodput)) << span;
    EXPECT_GT(goodput, 0.5) << span;
    EXPECT_LT(goodput, 1.0) << span;
    EXPECT_GT(j["time_s"]["wall"].get<double>(), 0) << span;
    if (!prev.is_null()) {
      EXPECT_GT(checkpoints, prev["checkpoints"].get<double>()) << span;
      EXPECT_GT(j["interruptions"]["mean"].get<double>(), prev["interruptions"]["mean"].get<double>()) << span;
      EXPECT_GT(j["time_s"]["useful"].get<double>(), prev["time_s"]["useful"].get<double>()) << span;
    }
    prev = j;
  }
}

}  // namespace
}  // namespace stacksim::testing
