#include "sim/diagnose/stack_layer.h"

#include <gtest/gtest.h>

#include <string>

namespace stacksim::diagnose {
namespace {

TEST(StackLayer, NumbersAndNamesAreTheFiveLayersTopToBottom) {
  const char* names[] = {"model definition", "parallelization", "runtime orchestration", "compilation", "hardware"};
  int n = 0;
  for (StackLayer l : kStackLayers) {
    EXPECT_EQ(StackLayerNumber(l), n + 1);
    EXPECT_EQ(std::string(StackLayerName(l)), names[n]);
    ++n;
  }
  EXPECT_EQ(n, kNumStackLayers);
}

TEST(StackLayer, PerLayerIteratesInTheLayersOrder) {
  PerLayer<int> v;
  for (StackLayer l : kStackLayers) v[l] = 10 * StackLayerNumber(l);
  int expected = 10;
  for (int x : v) {
    EXPECT_EQ(x, expected);
    expected += 10;
  }
  EXPECT_EQ(v[StackLayer::kHardware], 50);
  const PerLayer<int> zero;
  for (int x : zero) EXPECT_EQ(x, 0);
}

}  // namespace
}  // namespace stacksim::diagnose
