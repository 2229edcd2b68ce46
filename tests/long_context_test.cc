// Long-context scenario: Llama 3.1 405B at 128K tokens on 16,384 H100 with
// Meta's plan (Llama 3 paper, arXiv:2407.21783 Table 4: TP 8, CP 16, PP 16,
// DP 8, all-gather CP). Runs the stacksim command on the shipped scenario and
// checks that it loads, simulates and fits, with the activation memory of the
// first stage pinned to a hand count.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "tests/run_stacksim.h"

namespace {

using stacksim::testing::CmdResult;
using stacksim::testing::Stacksim;

const std::string kScenario = std::string(STACKSIM_SOURCE_DIR) + "/scenarios/llama31-405b-128k-16384xh100.json";

nlohmann::json SimulateJson(const std::string& extra) {
  CmdResult r = Stacksim("simulate " + kScenario + " --format json " + extra);
  EXPECT_EQ(r.status, 0) << r.err;
  if (r.status != 0) return nlohmann::json::object();
  return nlohmann::json::parse(r.out);
}

// Hand count of stage 0's activations (bytes), full recomputation, bf16. Per
// GPU a micro-batch holds 131072 / 16 = 8192 tokens (1024 in the SP region,
// 8192 / tp 8); h 16384, 1 KV head and 16 query heads of 128 per TP rank,
// FFN 53248 / 8 = 6656 per gated half.
//   layer input kept by full recomputation: 2 x 1024 x 16384 = 33554432
//   stage 0 holds virtual stages 0, 16, 32, 48 (vp 4, uneven: 1 + 2 + 2 + 2 =
//   7 layers); interleaved with 16 micro-batches = pp: all 64 chunks' forwards
//   run before the first backward, 64 / 4 = 16 micro-batches of 7 layers:
//   16 x 7 x 33554432 = 3758096384
//   the layer being recomputed holds all its activations once:
//   attention 2 x 2 x 1024 x 16384 + 2 x 8192 x (2048 + 128) + 2 x 8192 x 128
//             + 2 x 8192 x 2048 + 4 x 8192 x 16 = 138936320
//   MLP 2 x 2 x 1024 x 16384 + 2 x 8192 x 6656 x 2 + 2 x 8192 x 6656 = 394264576
//   embedding output, 16 micro-batches x 2 x 1024 x 16384 = 536870912
//   the layer's backward working set (memory_model.cc BackwardTransient):
//   residual gradients in and out 2 x 2 x 1024 x 16384 and the MLP's
//   gradients 2 x 8192 x 6656 x 3 = 394264576
//   total 3758096384 + 533200896 + 536870912 + 394264576 = 5222432768 (4.9 GiB)
TEST(LongContext, Llama405B128kWithMetasPlanSimulatesAndFitsIn80GB) {
  auto j = SimulateJson("");
  ASSERT_TRUE(j.contains("iteration_s"));
  EXPECT_EQ(j.at("plan").at("cp").get<int>(), 16);
  EXPECT_FALSE(j.at("out_of_memory").get<bool>());
  EXPECT_DOUBLE_EQ(j.at("tokens_per_step").get<double>(), 128.0 * 131072);
  const double it = j.at("iteration_s").get<double>();
  EXPECT_GT(it, 1.0);
  EXPECT_LT(it, 60.0);
  const auto& mem = j.at("memory");
  ASSERT_EQ(mem.size(), 16u);
  EXPECT_NEAR(mem[0].at("activations_bytes").get<double>(), 5222432768.0, 1.0);
  for (const auto& m : mem) {
    EXPECT_LT(m.at("activations_bytes").get<double>(), 80e9);
    EXPECT_LE(m.at("total_bytes").get<double>(), j.at("capacity_bytes").get<double>());
  }
}

// Meta's all-gather CP exposes its gathers; ring attention (p2p) would hide
// them behind attention. Same work, so the same model FLOPs.
// (Compute keeps its SMs beside collectives here: the question is what the
// gathers expose.)
TEST(LongContext, AllGatherCpCostsMoreThanTheRingOnTheSamePlan) {
  auto ag = SimulateJson("--set plan.overlap_comm_sms=0");
  auto ring = SimulateJson("--set plan.cp_comm=p2p --set plan.overlap_comm_sms=0");
  ASSERT_TRUE(ag.contains("iteration_s") && ring.contains("iteration_s"));
  EXPECT_GT(ag.at("iteration_s").get<double>(), ring.at("iteration_s").get<double>());
  EXPECT_GT(ag.at("breakdown").at("tp_exposed_s").get<double>(), ring.at("breakdown").at("tp_exposed_s").get<double>());
  EXPECT_DOUBLE_EQ(ag.at("model_flops_per_step").get<double>(), ring.at("model_flops_per_step").get<double>());
}

}  // namespace
