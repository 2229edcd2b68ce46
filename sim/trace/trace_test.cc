#include "sim/trace/trace.h"

#include <gtest/gtest.h>

namespace stacksim::trace {
namespace {

TEST(TaskRole, DisplayNamesParseBackToTheirRole) {
  for (int i = 0; i < kNumTaskRoles; ++i) {
    const TaskRole r = static_cast<TaskRole>(i);
    ASSERT_TRUE(ParseTaskRole(TaskRoleName(r)).has_value()) << TaskRoleName(r);
    EXPECT_EQ(*ParseTaskRole(TaskRoleName(r)), r);
  }
  EXPECT_FALSE(ParseTaskRole("gemm ").has_value());
  EXPECT_FALSE(ParseTaskRole("GEMM").has_value());
}

TEST(GroupRole, NamesStacksimWritesParseToTheirRole) {
  EXPECT_EQ(ParseGroupRole("tp"), GroupRole::kTp);
  EXPECT_EQ(ParseGroupRole("cp"), GroupRole::kCp);
  EXPECT_EQ(ParseGroupRole("dp"), GroupRole::kDp);
  EXPECT_EQ(ParseGroupRole("ep"), GroupRole::kEp);
  EXPECT_EQ(ParseGroupRole("expert-dp"), GroupRole::kExpertDp);
  EXPECT_EQ(ParseGroupRole("pp 3-4"), GroupRole::kPipelinePair);
  EXPECT_EQ(ParseGroupRole("embedding"), GroupRole::kEmbedding);
  EXPECT_EQ(ParseGroupRole("dualpipe-mirror"), GroupRole::kDualPipeMirror);
  // Names other tools give their process groups say nothing stacksim knows.
  EXPECT_EQ(ParseGroupRole("pg"), GroupRole::kOther);
  EXPECT_EQ(ParseGroupRole("dp_replicate"), GroupRole::kOther);
  EXPECT_EQ(ParseGroupRole("pp"), GroupRole::kOther);
}

TEST(Trace, RoleLabelIsTheRoleNameInterned) {
  Trace t;
  const LabelId gemm = t.RoleLabel(TaskRole::kGemm);
  EXPECT_EQ(t.label(gemm), "gemm");
  EXPECT_EQ(t.RoleLabel(TaskRole::kGemm), gemm);
  EXPECT_EQ(t.InternLabel("gemm"), gemm);
  EXPECT_NE(t.RoleLabel(TaskRole::kDpComm), gemm);
}

TEST(Trace, ComputeStreamIsTheOneTheGeneratorNamed) {
  Trace t;
  EXPECT_EQ(t.compute_stream(), 0);
  const StreamId side = t.InternStream("dp");
  const StreamId compute = t.InternStream("kernels");
  t.SetComputeStream(compute);
  EXPECT_EQ(t.compute_stream(), compute);
  EXPECT_NE(t.compute_stream(), side);
}

}  // namespace
}  // namespace stacksim::trace
