#include "sim/report/json_report.h"

#include <string>

#include <gtest/gtest.h>

namespace stacksim::report {
namespace {

simulate::SimulationResult TwoStageResult() {
  simulate::SimulationResult r;
  r.scenario.name = "json test";
  r.scenario.model.name = "tiny-gpt";
  r.scenario.model.num_layers = 4;
  r.scenario.model.hidden_size = 256;
  r.scenario.model.vocab_size = 1000;
  r.scenario.topology.name = "dgx-h100";
  r.scenario.topology.gpus_per_node = 8;
  r.scenario.profile.name = "h200-measured";
  r.scenario.profile.kind = config::ProfileKind::kMeasured;
  r.scenario.profile.provenance = "H200, 2025";
  r.scenario.gpus = 16;
  r.scenario.seq_len = 1024;
  r.scenario.plan.tp = 8;
  r.scenario.plan.pp = 2;
  r.scenario.plan.dp = 1;
  r.scenario.plan.micro_batch = 2;
  r.scenario.plan.global_batch = 32;
  r.scenario.plan.recompute = config::Recompute::kSelective;
  r.network_model = "analytic";
  r.notes = {"a note"};
  r.algorithms = {"all-reduce tp: nvls"};
  r.capacity = Bytes{141e9};
  r.memory = {{0, Bytes{1e9}, Bytes{2e9}, Bytes{3e9}, Bytes{4e9}, Bytes{5e8}},
              {1, Bytes{1e9}, Bytes{2e9}, Bytes{3e9}, Bytes{2e9}, Bytes{5e8}}};
  r.iteration = Time::Ms(2000);
  r.tokens_per_s = 16384;
  r.tokens_per_s_per_gpu = 1024;
  r.mfu = 0.375;
  r.hfu = 0.45;
  r.model_tflops_per_gpu = 371.25;
  simulate::Breakdown& b = r.breakdown;
  b.gemm = Time::Ms(900);
  b.attention = Time::Ms(300);
  b.memory_bound = Time::Ms(200);
  b.optimizer = Time::Ms(50);
  b.tp_exposed = Time::Ms(150);
  b.dp_exposed = Time::Ms(25);
  b.pp_exposed = Time::Ms(75);
  b.bubble = Time::Ms(250);
  b.other = Time::Ms(50);
  r.breakdown_stage = 1;
  r.per_stage = {b, b};
  r.per_stage[0].bubble = Time::Ms(200);
  r.tasks = 4321;
  r.simulated_ranks = 2;
  return r;
}

TEST(JsonReport, HeadlineNumbersEqualTheResult) {
  nlohmann::json j = JsonReport(TwoStageResult());
  EXPECT_DOUBLE_EQ(j.at("iteration_s").get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j.at("tokens_per_s").get<double>(), 16384);
  EXPECT_DOUBLE_EQ(j.at("tokens_per_s_per_gpu").get<double>(), 1024);
  EXPECT_DOUBLE_EQ(j.at("mfu").get<double>(), 0.375);
  EXPECT_DOUBLE_EQ(j.at("hfu").get<double>(), 0.45);
  EXPECT_DOUBLE_EQ(j.at("model_tflops_per_gpu").get<double>(), 371.25);
  EXPECT_EQ(j.at("gpus").get<int>(), 16);
  EXPECT_EQ(j.at("tasks").get<int>(), 4321);
  EXPECT_EQ(j.at("simulated_ranks").get<int>(), 2);
  EXPECT_EQ(j.at("network_model"), "analytic");
  EXPECT_EQ(j.at("notes"), nlohmann::json({"a note"}));
  EXPECT_EQ(j.at("algorithms"), nlohmann::json({"all-reduce tp: nvls"}));
  EXPECT_FALSE(j.at("out_of_memory").get<bool>());
}

TEST(JsonReport, MemoryPerStageInBytes) {
  nlohmann::json j = JsonReport(TwoStageResult());
  ASSERT_EQ(j.at("memory_peak_bytes").size(), 2u);
  EXPECT_DOUBLE_EQ(j["memory_peak_bytes"][0].get<double>(), 10.5e9);
  EXPECT_DOUBLE_EQ(j["memory_peak_bytes"][1].get<double>(), 8.5e9);
  EXPECT_DOUBLE_EQ(j.at("capacity_bytes").get<double>(), 141e9);
  const nlohmann::json& m1 = j.at("memory").at(1);
  EXPECT_EQ(m1.at("stage").get<int>(), 1);
  EXPECT_DOUBLE_EQ(m1.at("weights_bytes").get<double>(), 1e9);
  EXPECT_DOUBLE_EQ(m1.at("gradients_bytes").get<double>(), 2e9);
  EXPECT_DOUBLE_EQ(m1.at("optimizer_bytes").get<double>(), 3e9);
  EXPECT_DOUBLE_EQ(m1.at("activations_bytes").get<double>(), 2e9);
  EXPECT_DOUBLE_EQ(m1.at("other_bytes").get<double>(), 5e8);
  EXPECT_DOUBLE_EQ(m1.at("total_bytes").get<double>(), 8.5e9);
}

TEST(JsonReport, BreakdownPartsAddUpToTheStep) {
  nlohmann::json j = JsonReport(TwoStageResult());
  const nlohmann::json& b = j.at("breakdown");
  EXPECT_DOUBLE_EQ(b.at("gemm_s").get<double>(), 0.9);
  EXPECT_DOUBLE_EQ(b.at("tp_exposed_s").get<double>(), 0.15);
  EXPECT_DOUBLE_EQ(b.at("bubble_s").get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(b.at("compute_s").get<double>(), 1.45);
  EXPECT_DOUBLE_EQ(b.at("exposed_comm_s").get<double>(), 0.25);
  double sum = 0;
  for (const char* part : {"gemm_s", "attention_s", "memory_bound_s", "optimizer_s", "tp_exposed_s",
                           "dp_exposed_s", "pp_exposed_s", "bubble_s", "other_s"}) {
    sum += b.at(part).get<double>();
  }
  EXPECT_NEAR(sum, j.at("iteration_s").get<double>(), 1e-12);
  ASSERT_EQ(j.at("per_stage_breakdown").size(), 2u);
  EXPECT_DOUBLE_EQ(j["per_stage_breakdown"][0].at("bubble_s").get<double>(), 0.2);
  EXPECT_EQ(j["per_stage_breakdown"][1].at("stage").get<int>(), 1);
  EXPECT_EQ(j.at("breakdown_stage").get<int>(), 1);
}

TEST(JsonReport, ConfigurationIsResolved) {
  simulate::SimulationResult r = TwoStageResult();
  nlohmann::json j = JsonReport(r);
  EXPECT_EQ(j.at("profile").at("name"), "h200-measured");
  EXPECT_EQ(j.at("profile").at("kind"), config::ProfileKindName(config::ProfileKind::kMeasured));
  EXPECT_EQ(j.at("profile").at("provenance"), "H200, 2025");
  const nlohmann::json& plan = j.at("plan");
  EXPECT_EQ(plan.at("tp").get<int>(), 8);
  EXPECT_EQ(plan.at("pp").get<int>(), 2);
  EXPECT_EQ(plan.at("micro_batches").get<int>(), 16);
  EXPECT_EQ(plan.at("recompute"), config::RecomputeName(config::Recompute::kSelective));
  EXPECT_EQ(j.at("model").at("name"), "tiny-gpt");
  EXPECT_EQ(j.at("model").at("parameters").get<int64_t>(), r.scenario.model.ParameterCount());
  EXPECT_EQ(j.at("topology").at("nodes").get<int>(), 2);
}

TEST(JsonReport, OutOfMemoryIsFlagged) {
  simulate::SimulationResult r = TwoStageResult();
  r.out_of_memory = true;
  r.iteration = Time::Zero();
  r.breakdown = {};
  nlohmann::json j = JsonReport(r);
  EXPECT_TRUE(j.at("out_of_memory").get<bool>());
  EXPECT_DOUBLE_EQ(j.at("iteration_s").get<double>(), 0.0);
  EXPECT_EQ(j.at("memory_peak_bytes").size(), 2u);
}

}  // namespace
}  // namespace stacksim::report
