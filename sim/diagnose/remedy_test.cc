#include "sim/diagnose/remedy.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/fixtures.h"

namespace stacksim::diagnose {
namespace {

using testing::GptModel;
using testing::Scenario;

TEST(Remedy, StatusNamesAreTheReportsWords) {
  EXPECT_EQ(std::string(RemedyStatusName(RemedyStatus::kNone)), "");
  EXPECT_EQ(std::string(RemedyStatusName(RemedyStatus::kSimulated)), "simulated");
  EXPECT_EQ(std::string(RemedyStatusName(RemedyStatus::kInvalid)), "invalid");
  EXPECT_EQ(std::string(RemedyStatusName(RemedyStatus::kOutOfMemory)), "out of memory");
  EXPECT_EQ(std::string(RemedyStatusName(RemedyStatus::kNotSimulated)), "not simulated");
}

config::ScenarioConfig Base() {
  config::PlanConfig plan;
  plan.dp = 8;
  plan.global_batch = 8;
  return Scenario(GptModel(4, 1024, 16, 32000), 8, 1024, plan);
}

Candidate Proposal(const config::ScenarioConfig& s) {
  Candidate c;
  c.layer = StackLayer::kParallelization;
  c.finding = "finding";
  c.change = "change";
  c.plan = s.plan;
  c.node_order = s.node_order;
  return c;
}

TEST(Remedy, NodeOrderIsNotSimulatedUnderTheAnalyticModel) {
  config::ScenarioConfig s = Base();
  s.node_order = config::NodeOrder::kScattered;
  Candidate c = Proposal(s);
  c.node_order = config::NodeOrder::kPacked;
  Remedy r = Evaluate(s, c, Time::Ms(10), "analytic");
  EXPECT_EQ(r.status, RemedyStatus::kNotSimulated);
  EXPECT_EQ(r.layer, StackLayer::kParallelization);
  EXPECT_EQ(r.plan_changes, nlohmann::json({{"node_order", "packed"}}));
  EXPECT_NE(r.reason.find("--network simgrid --set node_order=packed"), std::string::npos) << r.reason;
}

TEST(Remedy, APlanTheRulesRejectIsInvalidAndSaysWhy) {
  config::ScenarioConfig s = Base();
  Candidate c = Proposal(s);
  c.plan.tp = 3;
  Remedy r = Evaluate(s, c, Time::Ms(10), "analytic");
  EXPECT_EQ(r.status, RemedyStatus::kInvalid);
  EXPECT_FALSE(r.reason.empty());
  EXPECT_EQ(r.plan_changes, nlohmann::json({{"tp", 3}}));
}

TEST(Remedy, OneGainingRemedyCombinesWithNothing) {
  config::ScenarioConfig s = Base();
  Remedy gain;
  gain.status = RemedyStatus::kSimulated;
  gain.gain = Time::Ms(1);
  gain.predicted = Time::Ms(9);
  gain.plan_changes = {{"overlap_grad_reduce", true}};
  EXPECT_EQ(CombineRemedies(s, {gain}, Time::Ms(10), "analytic").status, RemedyStatus::kNone);
  EXPECT_EQ(CombineRemedies(s, {}, Time::Ms(10), "analytic").status, RemedyStatus::kNone);
}

}  // namespace
}  // namespace stacksim::diagnose
