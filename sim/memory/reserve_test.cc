#include "sim/memory/reserve.h"

#include <gtest/gtest.h>

#include "tests/fixtures.h"

namespace stacksim::memory {
namespace {

config::ScenarioConfig EightGpus() {
  config::PlanConfig plan;
  plan.dp = 8;
  plan.global_batch = 16;
  return testing::Scenario(testing::GptModel(4, 512, 8, 2048), 8, 512, plan);
}

// The default reserve is the allocator's cache on the allocated peak (the
// footprint less the CUDA context and NCCL buffers, which the allocator
// does not hold), never less than 1 GiB.
TEST(PlanningReserve, IsTheFittedCacheAtLeastOneGib) {
  const config::ScenarioConfig s = EightGpus();
  AllocatorReserve fitted;
  fitted.cache_fraction = 0.05;
  const Bytes outside = RuntimeMemory(s).outside_allocator();
  // 70 GiB allocated: a 3.5 GiB cache.
  PlanReserve r = PlanningReserve(s, Bytes{70 * kGiB} + outside, {}, fitted);
  EXPECT_NEAR(r.allocator_cache.value, 3.5 * kGiB, 1.0);
  EXPECT_NEAR(r.required.value, 3.5 * kGiB, 1.0);
  EXPECT_FALSE(r.fixed);
  // 10 GiB allocated: the cache (0.5 GiB) is below the floor.
  r = PlanningReserve(s, Bytes{10 * kGiB} + outside, {}, fitted);
  EXPECT_NEAR(r.allocator_cache.value, 0.5 * kGiB, 1.0);
  EXPECT_EQ(r.required.value, kGiB);
  // --min-headroom replaces it, down to nothing.
  HeadroomPolicy fixed;
  fixed.fixed = Bytes{0};
  r = PlanningReserve(s, Bytes{70 * kGiB}, fixed, fitted);
  EXPECT_EQ(r.required.value, 0);
  EXPECT_TRUE(r.fixed);
  EXPECT_NE(PlanningReserveBasis(fixed, fitted).find("--min-headroom"), std::string::npos);
  fitted.source = "validation/fitted_constants.json (fit, 2026-12-01)";
  EXPECT_NE(PlanningReserveBasis({}, fitted).find("5.00% of the allocated peak"), std::string::npos);
}

// The shipped fitted fraction is what the default reserve uses.
TEST(PlanningReserve, DefaultUsesTheShippedFit) {
  const config::ScenarioConfig s = EightGpus();
  const Bytes peak{60 * kGiB};
  EXPECT_EQ(PlanningReserve(s, peak).allocator_cache.value,
            PlanningReserve(s, peak, {}, FittedAllocatorReserve()).allocator_cache.value);
  EXPECT_GT(FittedAllocatorReserve().cache_fraction, 0.0);
}

TEST(PlanningReserve, SimulateWarnsInsideTheReserveOnly) {
  config::ScenarioConfig s = EightGpus();
  s.profile.hbm_capacity.value = Bytes{80 * kGiB};
  EXPECT_EQ(ReserveWarning(s, Bytes{70 * kGiB}), "");                 // 10 GiB free
  const std::string w = ReserveWarning(s, Bytes{79.5 * kGiB});       // 0.5 GiB free
  EXPECT_NE(w.find("leaves 0.50 GiB of the 80.0 GiB HBM free"), std::string::npos) << w;
  EXPECT_EQ(ReserveWarning(s, Bytes{81 * kGiB}), "");                 // out of memory: not a warning
  HeadroomPolicy none;
  none.fixed = Bytes{0};
  EXPECT_EQ(ReserveWarning(s, Bytes{79.5 * kGiB}, none), "");
}

}  // namespace
}  // namespace stacksim::memory
