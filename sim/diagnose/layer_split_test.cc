#include "sim/diagnose/layer_split.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/fixtures.h"

namespace stacksim::diagnose {
namespace {

using testing::GptModel;
using testing::Scenario;

TEST(LayerSplit, StepClassNamesAreTheReportsWords) {
  EXPECT_EQ(std::string(StepClassName(StepClass::kComputeBound)), "compute-bound");
  EXPECT_EQ(std::string(StepClassName(StepClass::kMemoryBound)), "memory-bound");
  EXPECT_EQ(std::string(StepClassName(StepClass::kCommunicationBound)), "communication-bound");
}

TEST(LayerSplit, GibTextHasOneDecimal) { EXPECT_EQ(GibText(Bytes{1.5 * 1024 * 1024 * 1024}), "1.5 GiB"); }

// Two GPUs in tensor parallelism with full recomputation: the ideal plus the
// five gaps is the step, to the nanosecond, and each layer has its parts.
TEST(LayerSplit, IdealPlusTheFiveGapsIsTheStep) {
  config::PlanConfig plan;
  plan.tp = 2;
  plan.sequence_parallel = true;
  plan.micro_batch = 2;
  plan.global_batch = 2;
  plan.recompute = config::Recompute::kFull;
  simulate::Options so;
  so.keep_trace = true;
  simulate::SimulationResult r = simulate::Simulate(Scenario(GptModel(4, 2048, 16, 32000), 2, 2048, plan), so);
  LayerSplit split = SplitByLayer(r, AccountStep(r));
  EXPECT_EQ(split.step, r.iteration);
  Time sum = split.ideal;
  for (Time g : split.gap) sum += g;
  EXPECT_EQ(sum, split.step);
  EXPECT_GT(split.gap[StackLayer::kHardware], Time::Zero()) << "recomputation";
  EXPECT_GT(split.parts[StackLayer::kHardware]["recompute_s"].get<double>(), 0);
  for (StackLayer l : kStackLayers) {
    EXPECT_TRUE(split.parts[l].is_object()) << StackLayerName(l);
    EXPECT_FALSE(split.findings[l].empty()) << StackLayerName(l);
  }
}

}  // namespace
}  // namespace stacksim::diagnose
