// Mixture-of-experts layers: parameter counts, the EP all-to-all volume,
// routing imbalance and plan validation.
#include <cmath>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "sim/config/scenario.h"
#include "sim/simulate/simulate.h"
#include "sim/workload/layer_ops.h"
#include "sim/workload/moe.h"
#include "sim/workload/training_step.h"
#include "tests/fixtures.h"
#include "tests/input_error.h"

namespace stacksim::workload {
namespace {

const std::string kModels = std::string(STACKSIM_SOURCE_DIR) + "/models/";

config::ModelConfig Load(const std::string& name) { return config::LoadModelFile(kModels + name + ".json"); }

TEST(Moe, ModelsLoad) {
  for (const char* name : {"mixtral-8x7b", "mixtral-8x22b", "qwen3-30b-a3b", "qwen3-235b-a22b", "gpt-oss-120b"}) {
    config::ModelConfig m = Load(name);
    EXPECT_TRUE(m.is_moe()) << name;
    EXPECT_FALSE(m.source.empty()) << name;
    EXPECT_EQ(m.MoeLayerCount(), m.num_layers) << name;
  }
}

// Published totals: Mixtral 8x7B 46.7B / 12.9B active (Jiang et al. 2024),
// Qwen3-30B-A3B 30.5B / 3.3B (Qwen3 report, Table 2).
TEST(Moe, ParameterCountsMatchPublishedWithinOnePercent) {
  config::ModelConfig mixtral = Load("mixtral-8x7b");
  EXPECT_NEAR(mixtral.ParameterCount() / 46.7e9, 1.0, 0.01);
  EXPECT_NEAR(mixtral.ActiveParameterCount() / 12.9e9, 1.0, 0.01);
  config::ModelConfig qwen = Load("qwen3-30b-a3b");
  EXPECT_NEAR(qwen.ParameterCount() / 30.5e9, 1.0, 0.01);
  EXPECT_NEAR(qwen.ActiveParameterCount() / 3.3e9, 1.0, 0.02);  // "3.3B" is rounded: 3.35B counted
}

config::PlanConfig MoePlan(int tp, int dp, int ep) {
  config::PlanConfig p;
  p.tp = tp;
  p.dp = dp;
  p.ep = ep;
  p.sequence_parallel = tp > 1;
  p.micro_batch = 1;
  p.global_batch = dp * 2;
  p.sharding = config::Sharding::kZero1;
  return p;
}

// Hand count: every routed token copy (tokens x top_k) goes out to its
// expert's rank and comes back, in the forward and again in the backward;
// (ep-1)/ep of each all-to-all buffer leaves the GPU. Megatron's alltoall
// dispatcher also all-to-alls the copies' fp32 probabilities (dispatch and
// its backward) and all-gathers the per-expert token counts (forward).
TEST(Moe, AllToAllVolumePerLayerMatchesHandCount) {
  config::ModelConfig m = Load("qwen3-30b-a3b");
  const int ep = 8;
  for (int tp : {1, 2}) {
    config::PlanConfig plan = MoePlan(tp, 8, ep);
    LayerShape s = LayerShape::From(m, plan, 4096, testing::RoundProfile()).Moe(m, plan);
    const double tokens = 4096.0 / tp;  // each TP rank routes its sequence-parallel shard
    const double direction = tokens * 8 * 2048 * 2.0 * (ep - 1) / ep;
    for (bool backward : {false, true}) {
      auto ops = backward ? LayerBackward(s) : LayerForward(s);
      int tokens_a2a = 0, probs_a2a = 0, gathers = 0;
      double wire = 0;
      for (const Op& op : ops) {
        if (op.role != trace::TaskRole::kEpComm) continue;
        EXPECT_TRUE(op.is_collective && op.ep_group && !op.async);
        if (op.collective == trace::CollectiveKind::kAllGather) {
          ++gathers;
          EXPECT_EQ(op.bytes.value, ep * 128 * 8.0);  // ep x experts int64 counts
          continue;
        }
        EXPECT_EQ(op.collective, trace::CollectiveKind::kAllToAll);
        EXPECT_LT(op.scale_out_bytes.value, 0);  // flat pairwise
        if (op.name.find("probs") != std::string::npos) {
          ++probs_a2a;
          EXPECT_DOUBLE_EQ(op.bytes.value, tokens * 8 * 4.0);
          continue;
        }
        ++tokens_a2a;
        wire += op.bytes.value * (ep - 1) / ep;
      }
      EXPECT_EQ(tokens_a2a, 2);  // dispatch and combine
      EXPECT_EQ(probs_a2a, 1);
      EXPECT_EQ(gathers, backward ? 0 : 1);
      EXPECT_NEAR(wire, 2 * direction, 1e-6 * direction);
    }
  }
}

// Expected distinct destinations of a token, by hand. Uniform top-8 of 256
// experts over 8 nodes (32 each): a node is missed with probability
// C(224,8)/C(256,8). DeepSeek-V3's node-limited routing (n_group 8 = one
// group per node, topk_group M = 4): a node is a candidate with probability
// 4/8 and then missed with probability C(96,8)/C(128,8), so a token reaches
// 4 (1 - C(96,8)/C(128,8)) = 3.63 nodes instead of 5.29.
TEST(Moe, ExpectedDistinctNodesMatchHandCount) {
  auto ratio = [](int pool, int unit, int k) {  // C(pool - unit, k) / C(pool, k)
    double r = 1;
    for (int i = 0; i < k; ++i) r *= static_cast<double>(pool - unit - i) / (pool - i);
    return r;
  };
  const double uniform = 8 * (1 - ratio(256, 32, 8));
  const double limited = 4 * (1 - ratio(128, 32, 8));
  EXPECT_NEAR(ExpectedDistinctUnits(256, 8, 8), uniform, 1e-9);
  EXPECT_NEAR(ExpectedDistinctUnits(256, 8, 8, 8, 4), limited, 1e-9);
  EXPECT_NEAR(limited, 3.629, 1e-3);
  EXPECT_NEAR(uniform, 5.295, 1e-3);
  EXPECT_LE(ExpectedDistinctUnits(256, 8, 8, 8, 4), 4.0);
  // 64 GPUs of 4 experts, each inside one group.
  EXPECT_NEAR(ExpectedDistinctUnits(256, 8, 64, 8, 4), 64 * 0.5 * (1 - ratio(128, 4, 8)), 1e-9);
  // One expert per unit: exactly top_k; one unit: 1; groups that span two
  // nodes (4 groups over 8 nodes, 2 of them per token) match the count too.
  EXPECT_NEAR(ExpectedDistinctUnits(256, 8, 256), 8.0, 1e-9);
  EXPECT_NEAR(ExpectedDistinctUnits(256, 8, 1), 1.0, 1e-12);
  // Node in group g (two nodes per group): candidate with probability 2/4,
  // then missed with C(128-32, 8)/C(128, 8) over the two groups' 128 experts.
  EXPECT_NEAR(ExpectedDistinctUnits(256, 8, 8, 4, 2), 8 * 0.5 * (1 - ratio(128, 32, 8)), 1e-9);
}

// DeepSeek-V3-style dispatch on 8 nodes x 8 GPUs (EP 64), 256 experts,
// top-8 within 4 of 8 groups: a token goes once to each destination GPU, and
// over IB once per remote destination node; FP8 dispatch (1 byte + a 4-byte
// scale per 128), bf16 combine.
TEST(Moe, HierarchicalDispatchBytesMatchHandCount) {
  config::ModelConfig m = Load("qwen3-30b-a3b");  // hidden 2048, top-8
  m.num_experts = 256;
  m.expert_groups = 8;
  m.expert_groups_per_token = 4;
  config::PlanConfig plan = MoePlan(1, 64, 64);
  plan.dispatcher = config::MoeDispatcher::kHierarchical;
  plan.precision = config::Precision::kFp8;
  LayerShape s = LayerShape::From(m, plan, 4096, testing::RoundProfile()).Moe(m, plan, /*domain_gpus=*/8);
  ASSERT_EQ(s.moe.ep_nodes(), 8);
  const double T = 4096, h = 2048;
  const double gpus = ExpectedDistinctUnits(256, 8, 64, 8, 4);
  const double nodes = ExpectedDistinctUnits(256, 8, 8, 8, 4);
  std::map<std::string, Op> a2a;
  for (bool backward : {false, true}) {
    for (const Op& op : backward ? LayerBackward(s) : LayerForward(s)) {
      if (op.is_collective && op.ep_group) a2a[op.name] = op;
    }
  }
  ASSERT_EQ(a2a.size(), 4u);  // dispatch, combine and their backwards; no probs or count collectives
  const double fp8 = 1.0 + 4.0 / 128;
  for (const char* name : {"ep-dispatch", "ep-combine-bwd"}) {  // toward the experts: FP8
    EXPECT_NEAR(a2a[name].bytes.value, T * gpus * h * fp8, 1e-6 * T * h) << name;
    EXPECT_NEAR(a2a[name].scale_out_bytes.value, T * nodes * 7 / 8 * h * fp8, 1e-6 * T * h) << name;
  }
  for (const char* name : {"ep-combine", "ep-dispatch-bwd"}) {  // back to the tokens: bf16
    EXPECT_NEAR(a2a[name].bytes.value, T * gpus * h * 2, 1e-6 * T * h) << name;
    EXPECT_NEAR(a2a[name].scale_out_bytes.value, T * nodes * 7 / 8 * h * 2, 1e-6 * T * h) << name;
  }
  // Against the flat all-to-all of every routed copy, 7/8 of it off the node:
  // the IB bytes drop from 7 to 3.18 rows per token.
  plan.dispatcher = config::MoeDispatcher::kAllToAll;
  plan.precision = config::Precision::kBf16;
  LayerShape flat = LayerShape::From(m, plan, 4096, testing::RoundProfile()).Moe(m, plan, 8);
  double flat_bytes = 0;
  for (const Op& op : LayerForward(flat)) {
    if (op.name == "ep-dispatch") flat_bytes = op.bytes.value;
  }
  EXPECT_DOUBLE_EQ(flat_bytes, T * 8 * h * 2);
  EXPECT_NEAR(a2a["ep-combine"].scale_out_bytes.value / (flat_bytes * 7 / 8), nodes * 7 / 8 / 7, 1e-9);
  EXPECT_NEAR(nodes * 7 / 8, 3.175, 1e-3);
  // Inside one node (EP 8) nothing leaves it.
  plan.dispatcher = config::MoeDispatcher::kHierarchical;
  plan.ep = 8;
  for (const Op& op : LayerForward(LayerShape::From(m, plan, 4096, testing::RoundProfile()).Moe(m, plan, 8))) {
    if (op.name == "ep-dispatch") EXPECT_EQ(op.scale_out_bytes.value, 0.0);
  }
}

// Memory-bound dispatcher kernels, by hand (Qwen3-30B-A3B, 4096 tokens,
// hidden 2048, 128 experts, top-8, EP 8, bf16): permutation 1 reads each token
// once and writes its 8 copies and their probabilities, reading the int32
// row map; its index kernels read the bool routing map and write/update the
// row map; the chunk sort reads and writes every received row, at the busiest
// rank's load.
TEST(Moe, PermuteKernelBytesMatchHandCount) {
  config::ModelConfig m = Load("qwen3-30b-a3b");
  config::PlanConfig plan = MoePlan(1, 8, 8);
  const double T = 4096, h = 2048, k = 8, E = 128;
  for (bool skewed : {false, true}) {
    if (skewed) {
      plan.routing = config::Routing::kZipf;
      plan.zipf_exponent = 1.0;
    }
    LayerShape s = LayerShape::From(m, plan, 4096, testing::RoundProfile()).Moe(m, plan);
    const double lf = MoeLoadFactor(m, plan);
    EXPECT_EQ(lf > 1.0, skewed);
    std::map<std::string, Op> ops;
    for (const Op& op : LayerForward(s)) ops[op.name] = op;
    for (const Op& op : LayerBackward(s)) ops[op.name] = op;
    EXPECT_DOUBLE_EQ(ops["permute"].compute.bytes.value, (T * h + T * k * h) * 2 + T * E * 4 + T * k * 4);
    EXPECT_DOUBLE_EQ(ops["permute-index"].compute.bytes.value, T * E * 13);
    EXPECT_EQ(ops["permute-index"].compute.kernels, 3);
    EXPECT_DOUBLE_EQ(ops["unpermute"].compute.bytes.value, (T * k * h + T * h) * 2 + T * E * 4);
    for (const char* name : {"sort-chunks", "unsort-chunks", "sort-chunks-bwd", "unsort-chunks-bwd"}) {
      ASSERT_TRUE(ops.count(name)) << name;
      EXPECT_NEAR(ops[name].compute.bytes.value, T * k * lf * (2 * h * 2 + 8), 1e-6 * T * h) << name;
    }
    // The load factor reaches every op that handles the busiest rank's rows.
    EXPECT_NEAR(ops["ep-dispatch"].bytes.value, T * k * h * 2 * lf, 1e-6 * T * h);
    EXPECT_NEAR(ops["ep-dispatch-probs"].bytes.value, T * k * 4 * lf, 1e-9 * T);
    // The sending side's permutation is this rank's own tokens: no load factor.
    EXPECT_DOUBLE_EQ(ops["permute-bwd"].compute.bytes.value, (T * k * h + T * h) * 2 + T * k * 4 + T * E * 8);
  }
}

// One host wait per forward dispatch (the token counts), none in the
// backward or with padded capacity buffers.
TEST(Moe, DispatcherWaitsForTheHostOncePerForward) {
  config::ModelConfig m = Load("qwen3-30b-a3b");
  config::PlanConfig plan = MoePlan(1, 8, 8);
  for (auto dispatcher : {config::MoeDispatcher::kAllToAll, config::MoeDispatcher::kHierarchical}) {
    plan.dispatcher = dispatcher;
    plan.capacity_factor = 0;
    LayerShape s = LayerShape::From(m, plan, 4096, testing::RoundProfile()).Moe(m, plan, 8);
    auto waits = [](const std::vector<Op>& ops) {
      int n = 0;
      for (const Op& op : ops) {
        if (op.host_wait > Time::Zero()) {
          ++n;
          EXPECT_EQ(op.role, trace::TaskRole::kHostSync);
          EXPECT_EQ(op.host_wait, Time::Us(26));
        }
      }
      return n;
    };
    EXPECT_EQ(waits(LayerForward(s)), 1);
    EXPECT_EQ(waits(LayerBackward(s)), 0);
    plan.capacity_factor = 1.25;
    EXPECT_EQ(waits(LayerForward(LayerShape::From(m, plan, 4096, testing::RoundProfile()).Moe(m, plan, 8))), 0);
  }
}

// Serving's fused MoE (MoeShape::tp_replicated_tokens): every TP rank
// holds all 4096 tokens, so a DeepSeek-V3 MoE layer at tp 8 moves no
// dispatch collective and waits for no host; its routed and shared experts'
// partial outputs meet in one all-reduce of the tokens' hidden states; each
// of the rank's experts computes the copies routed to it (4096 x 8 / 256 =
// 128), a 1/8 slice of each expert with ep 1, whole experts with ep 8.
TEST(Moe, ReplicatedTokensAllReduceOnceAndSplitTheExperts) {
  config::ModelConfig m = Load("deepseek-v3");
  for (int ep : {1, 8}) {
    config::PlanConfig plan = MoePlan(8, 1, ep);
    plan.sequence_parallel = false;
    plan.etp = 8 / ep;
    LayerShape s = LayerShape::From(m, plan, 4096, testing::RoundProfile()).Moe(m, plan, 8);
    s.moe.tp_replicated_tokens = true;
    EXPECT_EQ(s.tokens_per_local_expert(), 128);
    EXPECT_EQ(s.moe.local_experts() * s.moe.expert_ffn_shard(), 256 * 2048 / 8);
    std::vector<Op> moe;
    MoeForward(moe, s);
    int collectives = 0;
    for (const Op& op : moe) {
      EXPECT_EQ(op.host_wait, Time::Zero()) << op.name;
      if (!op.is_collective) continue;
      ++collectives;
      EXPECT_EQ(op.collective, trace::CollectiveKind::kAllReduce) << op.name;
      EXPECT_FALSE(op.ep_group) << op.name;
      EXPECT_DOUBLE_EQ(op.bytes.value, 4096.0 * 7168 * 2) << op.name;
    }
    EXPECT_EQ(collectives, 1) << "ep " << ep;
  }
}

// The routed experts' work is what routing imbalance slows down (simulate's
// MoE imbalance cost): the expert flag marks exactly the grouped expert GEMMs
// (and their activation and casts), never the router or the shared experts.
TEST(Moe, ExpertFlagMarksTheRoutedExpertGemmsOnly) {
  config::ModelConfig m = Load("qwen3-30b-a3b");
  config::PlanConfig plan = MoePlan(1, 8, 8);
  LayerShape s = LayerShape::From(m, plan, 4096, testing::RoundProfile()).Moe(m, plan, 8);
  double expert_gemm_flops = 0;
  int flagged = 0;
  for (const Op& op : LayerForward(s)) {
    if (!op.expert) continue;
    ++flagged;
    EXPECT_FALSE(op.is_collective) << op.name;
    if (op.role == trace::TaskRole::kGemm) expert_gemm_flops += op.compute.flops.value;
  }
  EXPECT_GE(flagged, 3);  // fc1, activation, fc2
  // FC1 (gated: two halves) and FC2 over each local expert's tokens: 2mnk each.
  const double tokens = static_cast<double>(s.tokens_per_local_expert()) * s.moe.local_experts();
  const double hand = 2 * tokens * s.hidden * s.moe.expert_ffn * ((s.gated ? 2 : 1) + 1);
  EXPECT_NEAR(expert_gemm_flops / hand, 1.0, 1e-9);
  auto dense = LayerShape::From(config::LoadModelFile(kModels + "llama3-8b.json"), MoePlan(1, 8, 1), 4096,
                                testing::RoundProfile());
  for (const Op& op : LayerForward(dense)) EXPECT_FALSE(op.expert) << op.name;
}

TEST(Moe, SkewSetsLoadFactorOfBusiestRank) {
  config::ModelConfig m = Load("mixtral-8x7b");  // 8 experts, top-2
  config::PlanConfig plan = MoePlan(1, 4, 4);
  EXPECT_DOUBLE_EQ(MoeLoadFactor(m, plan), 1.0);
  plan.routing = config::Routing::kHistogram;
  plan.routing_histogram = {3, 1, 1, 1, 1, 1, 0, 0};  // rank 0 (experts 0, 1) gets 4/8: twice the mean 1/4
  EXPECT_NEAR(MoeLoadFactor(m, plan), 2.0, 1e-12);
  plan.routing = config::Routing::kZipf;
  plan.routing_histogram.clear();
  plan.zipf_exponent = 1.0;
  double h8 = 0;
  for (int i = 1; i <= 8; ++i) h8 += 1.0 / i;
  EXPECT_NEAR(MoeLoadFactor(m, plan), (1.0 + 0.5) / h8 * 4, 1e-12);
  plan.routing = config::Routing::kUniform;
  plan.capacity_factor = 1.25;
  EXPECT_DOUBLE_EQ(MoeLoadFactor(m, plan), 1.25);
  EXPECT_DOUBLE_EQ(MoeDroppedFraction(m, plan), 0.0);
}

double ExpertGemmSeconds(const simulate::SimulationResult& r) {
  double t = 0;
  for (size_t i = 0; i < r.trace->size(); ++i) {
    const auto& task = r.trace->task(static_cast<trace::TaskId>(i));
    if (task.rank == 0 && r.trace->name(task.name).rfind("expert-fc", 0) == 0) {
      t += (r.replay->timings[i].end - r.replay->timings[i].start).seconds();
    }
  }
  return t;
}

TEST(Moe, HistogramSkewSlowsExpertsByTheLoadFactor) {
  config::ModelConfig m = Load("mixtral-8x7b");
  m.num_layers = 2;
  config::PlanConfig plan = MoePlan(1, 8, 4);
  auto s = testing::Scenario(m, 8, 4096, plan);
  simulate::Options o;
  o.keep_trace = true;
  o.simulate_if_out_of_memory = true;
  auto even = simulate::Simulate(s, o);
  s.plan.routing = config::Routing::kHistogram;
  s.plan.routing_histogram = {3, 1, 1, 1, 1, 1, 0, 0};
  auto skewed = simulate::Simulate(s, o);
  EXPECT_NEAR(ExpertGemmSeconds(skewed) / ExpertGemmSeconds(even), 2.0, 0.05);
  EXPECT_GT(skewed.iteration, even.iteration);
  EXPECT_GT(skewed.breakdown.ep_exposed, even.breakdown.ep_exposed);
  EXPECT_DOUBLE_EQ(skewed.moe_load_factor, 2.0);
  EXPECT_GT(skewed.moe_imbalance_cost.seconds(), 0.0);
  EXPECT_EQ(even.moe_imbalance_cost.seconds(), 0.0);
}

TEST(Moe, TpOneWithEpAcrossNodesRuns) {
  config::ModelConfig m = Load("qwen3-30b-a3b");
  m.num_layers = 2;
  config::PlanConfig plan = MoePlan(1, 32, 16);  // EP 16 spans two 8-GPU nodes
  auto s = testing::Scenario(m, 32, 4096, plan);
  simulate::Options o;
  o.simulate_if_out_of_memory = true;
  auto r = simulate::Simulate(s, o);
  EXPECT_GT(r.breakdown.ep_exposed.seconds(), 0.0);
  EXPECT_NEAR(r.breakdown.total().seconds(), r.iteration.seconds(), 1e-6 * r.iteration.seconds());
  // The hierarchical dispatch sends a token over IB to at most one node (of
  // 2) instead of 4 of its 8 copies: less exposed EP time. The host waits
  // land in "other".
  s.plan.dispatcher = config::MoeDispatcher::kHierarchical;
  auto h = simulate::Simulate(s, o);
  EXPECT_LT(h.breakdown.ep_exposed.seconds(), 0.6 * r.breakdown.ep_exposed.seconds());
  EXPECT_GT(h.breakdown.other.seconds(), 0.0);
  EXPECT_NEAR(h.breakdown.total().seconds(), h.iteration.seconds(), 1e-6 * h.iteration.seconds());
}

TEST(Moe, BadPlansAreInputErrors) {
  config::ModelConfig m = Load("mixtral-8x7b");
  auto s = testing::Scenario(m, 48, 4096, MoePlan(1, 48, 6));  // 6 does not divide 8 experts
  InputError e = testing::ErrorFrom([&] { config::ValidatePlan(s, "x.json"); });
  EXPECT_EQ(e.key_path(), "plan.ep");
  s = testing::Scenario(m, 4, 4096, MoePlan(1, 4, 8));  // ep > tp x dp
  e = testing::ErrorFrom([&] { config::ValidatePlan(s, "x.json"); });
  EXPECT_EQ(e.key_path(), "plan.ep");
  config::ModelConfig dense = testing::GptModel(2, 1024, 16, 51200);
  s = testing::Scenario(dense, 8, 2048, MoePlan(1, 8, 2));
  e = testing::ErrorFrom([&] { config::ValidatePlan(s, "x.json"); });
  EXPECT_EQ(e.key_path(), "plan.ep");
  config::PlanConfig hierarchical = MoePlan(1, 8, 1);
  hierarchical.dispatcher = config::MoeDispatcher::kHierarchical;
  s = testing::Scenario(dense, 8, 2048, hierarchical);
  e = testing::ErrorFrom([&] { config::ValidatePlan(s, "x.json"); });
  EXPECT_EQ(e.key_path(), "plan.moe_dispatcher");
}

}  // namespace
}  // namespace stacksim::workload
