#include "sim/trace/trace.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

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
  EXPECT_EQ(ParseGroupRole("stage"), GroupRole::kStage);
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


// Every field of every kind reads back as added, including fields a task's
// kind does not use (kept whole, not shared) and values that compare equal
// but differ in bits (-0.0 and 0.0 are stored apart).
TEST(TraceStorage, TasksReadBackAsAdded) {
  Trace t;
  t.SetRankCount(4);
  t.InternStream("s");
  t.InternLabel("l");
  t.InternName("n");
  const GroupId g = t.AddGroup(CommGroup{"tp", 2, 2, 1, {0, 1}});
  std::vector<Task> added;
  Task c;
  c.kind = TaskKind::kCompute;
  c.role = TaskRole::kGemm;
  c.recompute = true;
  c.rank = 3;
  c.layer = 7;
  c.micro_batch = 11;
  c.compute.op_class = OpClass::kGemm;
  c.compute.flops = Flops{2e12};
  c.compute.m = 4096;
  c.compute.kernels = 3;
  c.compute.bandwidth_efficiency = 0.75f;
  added.push_back(c);
  added.push_back(c);  // the same op: stored once, read twice
  Task neg = c;
  neg.compute.flops = Flops{-0.0};
  Task pos = c;
  pos.compute.flops = Flops{0.0};
  added.push_back(neg);
  added.push_back(pos);
  Task a;
  a.kind = TaskKind::kCollective;
  a.expert = true;
  a.comm.kind = CollectiveKind::kAllToAll;
  a.comm.bytes = Bytes{1e6};
  a.comm.group = g;
  a.comm.scale_out_bytes = Bytes{5e5};
  for (int instance : {5, 6, -1}) {
    a.comm.instance = instance;
    added.push_back(a);
  }
  Task x;
  x.kind = TaskKind::kTransfer;
  x.transfer = TransferOp{2, Bytes{3e6}, g};
  added.push_back(x);
  Task d;
  d.kind = TaskKind::kDelay;
  d.filler = true;
  d.duration = Time::Us(12);
  added.push_back(d);
  Task odd = d;  // a delay that also carries a compute op and a transfer
  odd.compute.flops = Flops{1e9};
  odd.transfer.dst = 1;
  added.push_back(odd);
  for (const Task& task : added) t.Add(task);

  ASSERT_EQ(t.tasks().size(), added.size());
  for (size_t i = 0; i < added.size(); ++i) {
    const Task got = t.tasks()[i];
    const Task& want = added[i];
    SCOPED_TRACE(i);
    EXPECT_EQ(got.kind, want.kind);
    EXPECT_EQ(got.role, want.role);
    EXPECT_EQ(got.recompute, want.recompute);
    EXPECT_EQ(got.expert, want.expert);
    EXPECT_EQ(got.filler, want.filler);
    EXPECT_EQ(got.rank, want.rank);
    EXPECT_EQ(got.layer, want.layer);
    EXPECT_EQ(got.micro_batch, want.micro_batch);
    EXPECT_EQ(std::signbit(got.compute.flops.value), std::signbit(want.compute.flops.value));
    EXPECT_EQ(got.compute.flops, want.compute.flops);
    EXPECT_EQ(got.compute.m, want.compute.m);
    EXPECT_EQ(got.compute.kernels, want.compute.kernels);
    EXPECT_EQ(got.compute.bandwidth_efficiency, want.compute.bandwidth_efficiency);
    EXPECT_EQ(got.comm.kind, want.comm.kind);
    EXPECT_EQ(got.comm.bytes, want.comm.bytes);
    EXPECT_EQ(got.comm.group, want.comm.group);
    EXPECT_EQ(got.comm.instance, want.comm.instance);
    EXPECT_EQ(got.comm.scale_out_bytes, want.comm.scale_out_bytes);
    EXPECT_EQ(got.transfer.dst, want.transfer.dst);
    EXPECT_EQ(got.transfer.bytes, want.transfer.bytes);
    EXPECT_EQ(got.transfer.group, want.transfer.group);
    EXPECT_EQ(got.duration, want.duration);
  }
  EXPECT_EQ(t.instance(4), 5);
  EXPECT_EQ(t.compute(0).flops, Flops{2e12});
  EXPECT_EQ(t.compute_ref(0), t.compute_ref(1));
  EXPECT_NE(t.compute_ref(2), t.compute_ref(3));
  EXPECT_EQ(t.InternCompute(c.compute), t.compute_ref(0));
  EXPECT_EQ(t.compute_ref(added.size() - 1), -1);  // the odd delay keeps its own payloads
}

// Attention ops that differ only in their GQA group are different payloads.
TEST(TraceStorage, AttentionGroupIsPartOfThePayload) {
  Trace t;
  t.InternStream("s");
  t.InternLabel("l");
  t.InternName("n");
  Task a;
  a.compute.op_class = OpClass::kAttention;
  a.compute.attention_kernel = AttentionKernel::kOwn;
  a.compute.heads_per_kv_head = 4;
  Task b = a;
  b.compute.heads_per_kv_head = 8;
  t.Add(a);
  t.Add(b);
  EXPECT_NE(t.compute_ref(0), t.compute_ref(1));
  EXPECT_EQ(t.tasks()[0].compute.heads_per_kv_head, 4);
  EXPECT_EQ(t.tasks()[1].compute.heads_per_kv_head, 8);
  EXPECT_EQ(t.tasks()[1].compute.attention_kernel, AttentionKernel::kOwn);
}

// Dependency lists stay contiguous across storage chunks: lists that would
// straddle a chunk, one longer than a chunk, and AddDependency growing the
// last task's list past the end of a chunk.
TEST(TraceStorage, DependencyListsStayWholeAcrossChunks) {
  Trace t;
  t.InternStream("s");
  t.InternLabel("l");
  t.InternName("n");
  Task task;
  t.Add(task);
  std::vector<std::vector<TaskId>> want = {{}};
  for (int i = 1; i < 40000; ++i) {
    std::vector<TaskId> deps;
    for (int k = 0; k < 1 + i % 5; ++k) deps.push_back((i * 7 + k) % i);
    t.Add(task, deps);
    want.push_back(deps);
  }
  std::vector<TaskId> many;
  for (int k = 0; k < 70000; ++k) many.push_back(k % 1000);
  t.Add(task, many);
  want.push_back(many);
  t.AddDependency(static_cast<TaskId>(t.size() - 1), 3);
  want.back().push_back(3);
  // Grow the last list one by one over the next chunk boundary.
  t.Add(task, {1, 2});
  want.push_back({1, 2});
  for (int k = 0; k < 70000; ++k) {
    t.AddDependency(static_cast<TaskId>(t.size() - 1), k % 100);
    want.back().push_back(k % 100);
  }
  ASSERT_EQ(t.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const TaskId id = static_cast<TaskId>(i);
    ASSERT_EQ(t.dep_count(id), static_cast<int32_t>(want[i].size())) << i;
    ASSERT_TRUE(std::equal(t.deps_begin(id), t.deps_end(id), want[i].begin())) << i;
  }
  EXPECT_EQ(t.Check(), "");
  Trace copy = t;  // copies read the same
  for (size_t i = 0; i < want.size(); i += 997) {
    const TaskId id = static_cast<TaskId>(i);
    ASSERT_TRUE(std::equal(copy.deps_begin(id), copy.deps_end(id), want[i].begin())) << i;
  }
}

TEST(ChunkedVector, ElementsNeverMoveAsItGrows) {
  ChunkedVector<int64_t, 4> v;
  v.push_back(42);
  const int64_t* first = &v[0];
  for (int i = 1; i < 1000; ++i) v.push_back(i);
  EXPECT_EQ(first, &v[0]);
  EXPECT_EQ(v[0], 42);
  EXPECT_EQ(v[999], 999);
  EXPECT_EQ(v.size(), 1000u);
}

}  // namespace
}  // namespace stacksim::trace
