#include "sim/simulate/utilization.h"

#include <gtest/gtest.h>

#include <vector>

namespace stacksim::simulate {
namespace {

using trace::TaskId;

// A hand-timed rank over a 10 ms step on a GPU of 1 PFLOP/s bf16 (2 fp8) and
// 4 TB/s HBM:
//   compute  [0, 4) ms   GEMM, 2 TFLOP bf16 (50% of peak), 1 GB
//   compute  [4, 5) ms   memory-bound, 2 GB (50% of HBM)
//   compute  [6, 8) ms   attention, 1.6 TFLOP (80% of the 16-bit peak), fp8 op
//   dp       [3, 7) ms   all-gather (a kernel: busy, never active)
//   d2h      [8, 9) ms   offload copy (host link, not a kernel)
//   host     [9, 10) ms  host work (neither)
// GPU busy: [0, 8) = 8 ms of 10. SM active: 4 x 0.5 + 1 x 0.5 + 2 x 0.8 =
// 4.1 ms. HBM: 3 GB + the attention's 0.4 GB over 10 ms x 4 TB/s = 40 GB.
// PCIe: 1 ms of 10.
TEST(Utilization, HandTimedRank) {
  trace::Trace t;
  t.SetRankCount(1);
  t.InternName("task");
  t.InternLabel("test");
  const trace::StreamId compute = t.InternStream("compute");
  const trace::StreamId dp = t.InternStream("dp");
  const trace::StreamId d2h = t.InternStream("d2h");
  const trace::StreamId host = t.InternStream("host");
  t.SetComputeStream(compute);
  trace::CommGroup g;
  g.name = "dp";
  g.size = 8;
  g.simulated = {0};
  const trace::GroupId group = t.AddGroup(g);

  trace::ReplayResult r;
  std::vector<TaskId> tasks;
  auto timed = [&](trace::Task task, int64_t start_us, int64_t end_us) {
    tasks.push_back(t.Add(task, {}));
    r.timings.push_back({Time::Us(start_us), Time::Us(start_us), Time::Us(end_us)});
  };
  auto kernel = [&](trace::OpClass op_class, config::Precision p, double flops, double bytes) {
    trace::Task task;
    task.kind = trace::TaskKind::kCompute;
    task.stream = compute;
    task.compute.op_class = op_class;
    task.compute.precision = p;
    task.compute.flops = Flops{flops};
    task.compute.bytes = Bytes{bytes};
    return task;
  };
  timed(kernel(trace::OpClass::kGemm, config::Precision::kBf16, 2e12, 1e9), 0, 4000);
  timed(kernel(trace::OpClass::kMemoryBound, config::Precision::kBf16, 0, 2e9), 4000, 5000);
  timed(kernel(trace::OpClass::kAttention, config::Precision::kFp8, 1.6e12, 0.4e9), 6000, 8000);
  trace::Task gather;
  gather.kind = trace::TaskKind::kCollective;
  gather.stream = dp;
  gather.comm.group = group;
  gather.comm.bytes = Bytes{1e9};
  timed(gather, 3000, 7000);
  trace::Task copy;
  copy.kind = trace::TaskKind::kDelay;
  copy.stream = d2h;
  copy.duration = Time::Ms(1);
  timed(copy, 8000, 9000);
  trace::Task work = copy;
  work.stream = host;
  timed(work, 9000, 10000);

  config::ProfileConfig p;
  p.peak_flops[static_cast<int>(config::Precision::kBf16)] = config::Sourced<FlopRate>{FlopRate{1e15}, "test"};
  p.peak_flops[static_cast<int>(config::Precision::kFp8)] = config::Sourced<FlopRate>{FlopRate{2e15}, "test"};
  p.hbm_bandwidth = {Bandwidth{4e12}, "test"};

  Utilization u = RankUtilization(t, r, tasks, p, Time::Ms(10));
  EXPECT_NEAR(u.gpu_busy, 0.8, 1e-12);
  EXPECT_NEAR(u.sm_active, 0.41, 1e-12);
  EXPECT_NEAR(u.hbm_bandwidth, 3.4e9 / 40e9, 1e-12);
  EXPECT_NEAR(u.pcie, 0.1, 1e-12);

  // A zero step gives zeros, not a division by zero.
  Utilization none = RankUtilization(t, r, tasks, p, Time::Zero());
  EXPECT_EQ(none.gpu_busy, 0);
  EXPECT_EQ(none.sm_active, 0);
}

}  // namespace
}  // namespace stacksim::simulate
