// Tensor-parallel collectives beside their GEMMs (plan.tp_comm_overlap): the
// rewrite of a layer's op lists, and what it does to a step.
#include "sim/workload/tp_overlap.h"

#include <gtest/gtest.h>

#include <string>

#include "sim/simulate/simulate.h"
#include "sim/workload/layer_ops.h"
#include "sim/workload/layer_shape.h"
#include "tests/fixtures.h"

namespace stacksim::workload {
namespace {

using config::TpCommOverlap;

LayerShape Shape(TpCommOverlap mode, bool sp) {
  config::PlanConfig plan;
  plan.tp = 4;
  plan.sequence_parallel = sp;
  plan.tp_comm_overlap = mode;
  return LayerShape::From(testing::GptModel(4, 4096, 32, 32000), plan, 4096, testing::RoundProfile());
}

int Find(const std::vector<Op>& ops, const std::string& name) {
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].name == name) return static_cast<int>(i);
  }
  ADD_FAILURE() << name << " not in the list";
  return -1;
}

int BlockingTpCollectives(const std::vector<Op>& ops) {
  int n = 0;
  for (const Op& op : ops) n += op.is_collective && !op.async && op.role == trace::TaskRole::kTpComm;
  return n;
}

// Two op lists with the same ops in the same order, each as (a)synchronous.
void ExpectSameOverlap(const std::vector<Op>& a, const std::vector<Op>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].async, b[i].async);
  }
}

TEST(TpOverlap, NoneLeavesTheListsAlone) {
  const LayerShape s = Shape(TpCommOverlap::kNone, true);
  const std::vector<Op> fwd = LayerForward(s);
  EXPECT_EQ(BlockingTpCollectives(fwd), 4);  // two all-gathers, two reduce-scatters
  const std::vector<Op> again = OverlapTpCollectives(fwd, TpCommOverlap::kNone, true, 4);
  ASSERT_EQ(again.size(), fwd.size());
  for (size_t i = 0; i < fwd.size(); ++i) EXPECT_EQ(again[i].name, fwd[i].name);
}

// The column-parallel layers' input-gradient reduce-scatters run beside their
// weight-gradient GEMMs; nothing else moves.
TEST(TpOverlap, BackwardReducesTheInputGradientBesideTheWeightGradient) {
  const LayerShape s = Shape(TpCommOverlap::kBackward, true);
  EXPECT_EQ(BlockingTpCollectives(LayerForward(s)), 4);
  const std::vector<Op> bwd = LayerBackward(s);
  EXPECT_EQ(BlockingTpCollectives(LayerBackward(Shape(TpCommOverlap::kNone, true))) - BlockingTpCollectives(bwd), 2);
  for (const char* layer : {"fc1", "qkv"}) {
    const std::string reduce = std::string(layer) == "fc1" ? "tp-mlp-grad" : "tp-attn-grad";
    const int dgrad = Find(bwd, std::string(layer) + "-dgrad");
    const int rs = Find(bwd, reduce);
    const int wgrad = Find(bwd, std::string(layer) + "-wgrad");
    EXPECT_EQ(rs, dgrad + 1) << layer;
    EXPECT_EQ(wgrad, rs + 1) << layer;
    EXPECT_TRUE(bwd[rs].async) << layer;
    EXPECT_EQ(bwd[wgrad + 1].wait_for, rs) << layer;  // the next op waits for the reduction
  }
  // The re-gathered input that fc1's weight gradient waits for is still the one it waits for.
  const int wgrad = Find(bwd, "fc1-wgrad");
  EXPECT_EQ(bwd[bwd[wgrad].wait_for].name, "ag-mlp-input");
}

// Each pair is pipelined in tp chunks: the GEMM rows of the last gathered
// chunk wait for the gather, and the last 1/tp of a reduce-scatter follows
// its GEMM, blocking.
TEST(TpOverlap, GemmOverlapsEveryAllGatherAndReduceScatterNextToAGemm) {
  const LayerShape s = Shape(TpCommOverlap::kGemm, true);
  const std::vector<Op> fwd = LayerForward(s);
  const std::vector<Op> plain = LayerForward(Shape(TpCommOverlap::kNone, true));
  EXPECT_EQ(BlockingTpCollectives(fwd), 2);  // the reduce-scatters' last chunks
  const int ag = Find(fwd, "ag-attn");
  const int qkv = Find(fwd, "qkv");
  const int qkv_last = Find(fwd, "qkv-last-chunk");
  EXPECT_TRUE(fwd[ag].async);
  EXPECT_EQ(qkv_last, qkv + 1);
  EXPECT_EQ(fwd[qkv_last].wait_for, ag);
  EXPECT_DOUBLE_EQ(fwd[qkv].compute.flops.value + fwd[qkv_last].compute.flops.value,
                   plain[Find(plain, "qkv")].compute.flops.value);
  EXPECT_EQ(fwd[qkv_last].compute.m * 4, fwd[qkv].compute.m + fwd[qkv_last].compute.m);
  const int rs = Find(fwd, "tp-mlp");
  EXPECT_EQ(Find(fwd, "fc2"), rs + 1);  // issued with fc2, not after it
  const int rs_last = Find(fwd, "tp-mlp-last-chunk");
  EXPECT_EQ(rs_last, rs + 2);
  EXPECT_FALSE(fwd[rs_last].async);
  EXPECT_DOUBLE_EQ(fwd[rs].bytes.value * 4, 3 * plain[Find(plain, "tp-mlp")].bytes.value);
  EXPECT_DOUBLE_EQ(fwd[rs_last].bytes.value * 4, plain[Find(plain, "tp-mlp")].bytes.value);
  EXPECT_EQ(fwd[rs + 3].wait_for, rs);
  const std::vector<Op> bwd = LayerBackward(s);
  // Backward: the data gradients' reduce-scatters run beside the weight
  // gradients (not pipelined, no chunk); the output gradients' all-gathers
  // are pipelined with the data-gradient GEMMs.
  EXPECT_EQ(BlockingTpCollectives(bwd), 0);
  for (const Op& op : bwd) EXPECT_NE(op.name, "tp-attn-grad-last-chunk");
  const int dgrad_last = Find(bwd, "attn-proj-dgrad-last-chunk");
  EXPECT_EQ(bwd[bwd[dgrad_last].wait_for].name, "ag-attn-grad");
}

// PyTorch's async TP: the pipelined pairs of kGemm, but the data-gradient
// reduce-scatters stay blocking (not beside the weight gradients).
TEST(TpOverlap, PipelinedKeepsOnlyTheChunkedPairs) {
  ExpectSameOverlap(LayerForward(Shape(TpCommOverlap::kPipelined, true)), LayerForward(Shape(TpCommOverlap::kGemm, true)));
  const std::vector<Op> bwd = LayerBackward(Shape(TpCommOverlap::kPipelined, true));
  for (const char* reduce : {"tp-mlp-grad", "tp-attn-grad"}) EXPECT_FALSE(bwd[Find(bwd, reduce)].async) << reduce;
  EXPECT_EQ(bwd[bwd[Find(bwd, "attn-proj-dgrad-last-chunk")].wait_for].name, "ag-attn-grad");
  // Without sequence parallelism there are no such pairs: nothing moves.
  EXPECT_EQ(BlockingTpCollectives(LayerBackward(Shape(TpCommOverlap::kPipelined, false))),
            BlockingTpCollectives(LayerBackward(Shape(TpCommOverlap::kNone, false))));
}

TEST(TpOverlap, GemmWithoutSequenceParallelismOverlapsOnlyTheBackwardReduction) {
  ExpectSameOverlap(LayerBackward(Shape(TpCommOverlap::kGemm, false)),
                    LayerBackward(Shape(TpCommOverlap::kBackward, false)));
  EXPECT_EQ(BlockingTpCollectives(LayerForward(Shape(TpCommOverlap::kGemm, false))), 2);  // forward all-reduces
}

// A step: each level of overlap hides more of the TP communication, and a
// TP-1 plan is unaffected.
TEST(TpOverlap, StepTimeFallsWithEachLevelAndTp1IsUnchanged) {
  auto step = [](int tp, TpCommOverlap mode) {
    config::PlanConfig plan;
    plan.tp = tp;
    plan.dp = 8 / tp;
    plan.sequence_parallel = tp > 1;
    plan.micro_batch = 1;
    plan.global_batch = 8 / tp * 2;
    plan.tp_comm_overlap = mode;
    simulate::Options o;
    o.simulate_if_out_of_memory = true;
    return simulate::Simulate(testing::Scenario(testing::GptModel(4, 4096, 32, 32000), 8, 2048, plan), o)
        .iteration.seconds();
  };
  const double none = step(8, TpCommOverlap::kNone);
  const double backward = step(8, TpCommOverlap::kBackward);
  const double gemm = step(8, TpCommOverlap::kGemm);
  EXPECT_LT(backward, none);
  EXPECT_LT(gemm, backward);
  EXPECT_DOUBLE_EQ(step(1, TpCommOverlap::kNone), step(1, TpCommOverlap::kGemm));
}

}  // namespace
}  // namespace stacksim::workload
