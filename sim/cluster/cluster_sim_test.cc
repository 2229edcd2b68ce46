#include "sim/cluster/cluster_sim.h"

#include <gtest/gtest.h>

#include "sim/cluster/cluster_report.h"
#include "sim/cluster/cluster_test_util.h"
#include "sim/cluster/step_times.h"

namespace stacksim::cluster {
namespace {

using testing::Hours;
using testing::Job;
using testing::kH;
using testing::Mix;

ClusterShape Shape(int nodes, int nodes_per_leaf, int gpus_per_node = 8) {
  ClusterShape s;
  s.nodes = nodes;
  s.gpus_per_node = gpus_per_node;
  s.nodes_per_leaf = nodes_per_leaf;
  s.nodes_per_spine = nodes;
  s.nodes_per_domain = 1;
  return s;
}

const JobOutcome& Find(const ClusterResult& r, const std::string& id) {
  for (const JobOutcome& o : r.jobs) {
    if (o.id == id) return o;
  }
  throw std::runtime_error("no job " + id);
}

double IdleH(const ClusterResult& r, IdleReason reason) { return r.idle_gpu_s[static_cast<int>(reason)] / kH; }

void ExpectAddsUp(const ClusterResult& r) {
  double sum = r.busy_gpu_s;
  for (double idle : r.idle_gpu_s) sum += idle;
  EXPECT_NEAR(sum, r.total_gpu_s, 1e-9 * r.total_gpu_s + 1e-6);
}

// Four 8-GPU nodes. A (3 nodes, 10 h) runs; B (4 nodes) must wait for it;
// C (1 node, 6 h) arrives behind B. FIFO holds C behind B: A 0-10, B 10-15,
// C 15-21. EASY reserves t = 10 h for B and C ends at 8 h, before it: C runs
// 2-8 on the free node, B 10-15. Makespan 21 h -> 15 h, mean wait
// (0 + 9 + 13)/3 h -> (0 + 9 + 0)/3 h.
std::vector<JobSpec> BackfillTrace() { return {Job("A", 0, 24, 10), Job("B", 1, 32, 5), Job("C", 2, 8, 6)}; }

TEST(ClusterSim, BackfillBeatsFifoOnAHandBuiltTrace) {
  ClusterOptions o;
  o.scheduler = SchedulerKind::kFifo;
  const ClusterResult fifo = RunCluster(Shape(4, 4), BackfillTrace(), o);
  o.scheduler = SchedulerKind::kBackfill;
  const ClusterResult easy = RunCluster(Shape(4, 4), BackfillTrace(), o);

  EXPECT_DOUBLE_EQ(Find(fifo, "C").start.seconds(), 15 * kH);
  EXPECT_DOUBLE_EQ(fifo.makespan.seconds(), 21 * kH);
  EXPECT_DOUBLE_EQ(fifo.wait.mean.seconds(), 22.0 / 3 * kH);

  EXPECT_DOUBLE_EQ(Find(easy, "C").start.seconds(), 2 * kH);
  EXPECT_DOUBLE_EQ(Find(easy, "B").start.seconds(), 10 * kH);
  EXPECT_DOUBLE_EQ(Find(easy, "B").reservation.seconds(), 10 * kH);
  EXPECT_DOUBLE_EQ(easy.makespan.seconds(), 15 * kH);
  EXPECT_DOUBLE_EQ(easy.wait.mean.seconds(), 3 * kH);
  EXPECT_LT(easy.makespan, fifo.makespan);
}

TEST(ClusterSim, IdleReasonsOfTheBackfillTrace) {
  ClusterOptions o;
  o.scheduler = SchedulerKind::kBackfill;
  const ClusterResult r = RunCluster(Shape(4, 4), BackfillTrace(), o);
  // 32 GPUs x 15 h = 480 GPU-h; busy 24x10 + 8x6 + 32x5 = 448. The spare
  // node idles 0-1 h with nothing waiting (8), then 1-2 h and 8-10 h while
  // B waits for all four nodes (8 + 16).
  EXPECT_DOUBLE_EQ(r.total_gpu_s / kH, 480);
  EXPECT_DOUBLE_EQ(r.busy_gpu_s / kH, 448);
  EXPECT_DOUBLE_EQ(IdleH(r, IdleReason::kNoDemand), 8);
  EXPECT_DOUBLE_EQ(IdleH(r, IdleReason::kHeadBlocked), 24);
  EXPECT_DOUBLE_EQ(IdleH(r, IdleReason::kFragmentation), 0);
  EXPECT_NEAR(r.utilization, 448.0 / 480.0, 1e-12);
  ExpectAddsUp(r);
  // Hourly series: hour 1 has one node idle behind the head, hour 2 none.
  ASSERT_EQ(r.series.size(), 15u);
  EXPECT_DOUBLE_EQ(r.series[1].idle_gpus[static_cast<int>(IdleReason::kHeadBlocked)], 8);
  EXPECT_DOUBLE_EQ(r.series[2].busy_gpus, 32);
  EXPECT_DOUBLE_EQ(r.series[1].queued_jobs, 1);
}

// Two leaves of four nodes. X takes two nodes of leaf 0 either way. Y (3
// nodes, 10 h, 1.5x slower fully scattered): first-fit gives it nodes 2, 3
// (leaf 0) and 4 (leaf 1), one node of three outside its minimal single leaf:
// 10 h x (1 + 1/3 x 0.5) = 11 h 40 min. Topology placement puts it in leaf 1:
// 10 h.
TEST(ClusterSim, TopologyPlacementShortensAScatteredJob) {
  std::vector<JobSpec> jobs = {Job("X", 0, 16, 10), Job("Y", 0, 24, 10)};
  jobs[1].scattered_slowdown = 1.5;
  ClusterOptions o;
  o.placement = PlacementPolicy::kFirstFit;
  const ClusterResult ff = RunCluster(Shape(8, 4), jobs, o);
  o.placement = PlacementPolicy::kTopology;
  const ClusterResult topo = RunCluster(Shape(8, 4), jobs, o);

  const JobOutcome& y_ff = Find(ff, "Y");
  EXPECT_EQ(y_ff.leaves, 2);
  EXPECT_EQ(y_ff.min_leaves, 1);
  EXPECT_NEAR(y_ff.placement_slowdown, 1.0 + 0.5 / 3, 1e-12);
  EXPECT_NEAR((y_ff.end - y_ff.start).seconds(), 11 * kH + 40 * 60, 1e-3);
  EXPECT_EQ(ff.jobs_slowed, 1);
  EXPECT_NEAR(ff.placement_lost_gpu_s / kH, 24 * (35.0 / 3 - 10), 1e-6);

  const JobOutcome& y_topo = Find(topo, "Y");
  EXPECT_EQ(y_topo.leaves, 1);
  EXPECT_DOUBLE_EQ((y_topo.end - y_topo.start).seconds(), 10 * kH);
  EXPECT_EQ(topo.jobs_slowed, 0);
  EXPECT_LT(topo.makespan, ff.makespan);
}

// The same case with a model job: 3,600 steps of 10 s packed, 15 s
// scattered (the step simulator's seam replaced by fixed times).
TEST(ClusterSim, ModelJobDurationComesFromStepTimes) {
  std::vector<JobSpec> jobs = {Job("X", 0, 16, 10), Job("Y", 0, 24, 0)};
  jobs[1].duration = Time::Zero();
  jobs[1].model = "m";
  jobs[1].plan = "p";
  jobs[1].tokens = int64_t{3600} << 20;
  FixedStepTimes times({Time::FromSeconds(10), Time::FromSeconds(15), int64_t{1} << 20});
  ResolveModelJobs(jobs, times);
  EXPECT_DOUBLE_EQ(jobs[1].duration.seconds(), 36000);
  EXPECT_DOUBLE_EQ(jobs[1].scattered_slowdown, 1.5);
  ClusterOptions o;
  o.placement = PlacementPolicy::kFirstFit;
  EXPECT_NEAR((Find(RunCluster(Shape(8, 4), jobs, o), "Y").end).seconds(), 42000, 1e-3);
}

TEST(ClusterSim, EasyBackfillNeverDelaysTheHeadsReservation) {
  JobGenerator g;
  g.seed = 3;
  g.jobs = 1500;
  g.arrivals_per_hour = 2;
  g.users = 4;
  g.median_duration = Hours(2);
  g.duration_sigma = 1.2;
  g.mix = {Mix(4, 8), Mix(2, 32), Mix(2, 64), Mix(1, 128)};
  g.mix[2].scattered_slowdown = 1.3;
  ClusterOptions o;
  o.scheduler = SchedulerKind::kBackfill;
  const ClusterResult r = RunCluster(Shape(16, 4), GenerateJobs(g), o);
  int reserved = 0, passed = 0;
  for (size_t i = 0; i < r.jobs.size(); ++i) {
    const JobOutcome& j = r.jobs[i];
    if (j.reservation != Time::Max()) {
      ++reserved;
      EXPECT_LE(j.start.seconds(), j.reservation.seconds()) << j.id;
    }
    if (i > 0 && j.start < r.jobs[i - 1].start) ++passed;  // started before an earlier submission
  }
  EXPECT_GT(reserved, 50);  // the queue did back up
  EXPECT_GT(passed, 50);    // and backfill did pass blocked heads
}

// Two nodes. a1 (8 GPUs) and b0 (4 GPUs) run 10 h, so a has used 80 GPU-h
// and b 40 when a2 and b1, each needing both nodes, can start. In submit
// order a2 (submitted first) goes first; fair-share serves b, whose decayed
// usage is lower, unless a's share is large enough to turn that around.
TEST(ClusterSim, FairShareOrdersByUsage) {
  std::vector<JobSpec> jobs = {Job("a1", 0, 8, 10, "a"), Job("b0", 0, 4, 10, "b"), Job("a2", 1, 16, 1, "a"),
                               Job("b1", 2, 16, 1, "b")};
  ClusterOptions o;
  o.scheduler = SchedulerKind::kBackfill;
  const ClusterResult by_submit = RunCluster(Shape(2, 2), jobs, o);
  EXPECT_DOUBLE_EQ(Find(by_submit, "a2").start.seconds(), 10 * kH);
  EXPECT_DOUBLE_EQ(Find(by_submit, "b1").start.seconds(), 11 * kH);
  o.scheduler = SchedulerKind::kFairShare;
  const ClusterResult fair = RunCluster(Shape(2, 2), jobs, o);
  EXPECT_DOUBLE_EQ(Find(fair, "b1").start.seconds(), 10 * kH);
  EXPECT_DOUBLE_EQ(Find(fair, "a2").start.seconds(), 11 * kH);
  o.fairshare.shares = {{"a", 4.0}};  // 80 / 4 < 40 / 1
  const ClusterResult shared = RunCluster(Shape(2, 2), jobs, o);
  EXPECT_DOUBLE_EQ(Find(shared, "a2").start.seconds(), 10 * kH);
}

// Leaf wait: J3 (2 nodes) could start at 1 h on the two free nodes of
// different leaves, but waits for a whole leaf, which J2's end frees at 5 h.
// Meanwhile those 16 GPUs idle for fragmentation: 4 h x 16 = 64 GPU-h.
TEST(ClusterSim, LeafWaitShowsAsFragmentation) {
  std::vector<JobSpec> jobs = {Job("J1", 0, 24, 10), Job("J2", 0, 24, 5), Job("J3", 1, 16, 2)};
  ClusterOptions o;
  o.leaf_wait = Hours(6);
  const ClusterResult r = RunCluster(Shape(8, 4), jobs, o);
  EXPECT_DOUBLE_EQ(Find(r, "J3").start.seconds(), 5 * kH);
  EXPECT_EQ(Find(r, "J3").leaves, 1);
  EXPECT_DOUBLE_EQ(IdleH(r, IdleReason::kFragmentation), 64);
  ExpectAddsUp(r);
  o.leaf_wait = Hours(2);  // gives up at 3 h and takes the two leaves
  const ClusterResult impatient = RunCluster(Shape(8, 4), jobs, o);
  EXPECT_DOUBLE_EQ(Find(impatient, "J3").start.seconds(), 3 * kH);
  EXPECT_EQ(Find(impatient, "J3").leaves, 2);
}

JobGenerator BusyGenerator(uint64_t seed) {
  JobGenerator g;
  g.seed = seed;
  g.jobs = 300;
  g.arrivals_per_hour = 4;
  g.users = 5;
  g.median_duration = Hours(3);
  g.mix = {Mix(3, 4), Mix(3, 8), Mix(2, 32), Mix(1, 96)};
  g.mix[2].scattered_slowdown = 1.2;
  return g;
}

TEST(ClusterSim, AccountingAddsUpWithFailuresAndPartialNodes) {
  ClusterOptions o;
  o.scheduler = SchedulerKind::kFairShare;
  o.failures.node_mtbf = Hours(200);
  o.failures.repair_time = Hours(4);
  o.failures.checkpoint_interval = Hours(1);
  const ClusterResult r = RunCluster(Shape(16, 4), GenerateJobs(BusyGenerator(5)), o);
  ExpectAddsUp(r);
  EXPECT_GT(r.node_failures, 5);
  EXPECT_GT(r.jobs_killed, 0);
  EXPECT_GT(r.lost_work_gpu_s, 0);
  EXPECT_GT(IdleH(r, IdleReason::kDown), 0);
  EXPECT_GT(IdleH(r, IdleReason::kUnusedInNode), 0);  // the 4-GPU jobs hold 8-GPU nodes
  for (const JobOutcome& j : r.jobs) EXPECT_GE(j.end, j.start + j.duration) << j.id;
  // The series' GPU-time is the totals' (each bucket averages over its length).
  double busy = 0;
  for (size_t b = 0; b < r.series.size(); ++b) {
    const double len = std::min(kH, r.makespan.seconds() - b * kH);
    busy += r.series[b].busy_gpus * len;
  }
  EXPECT_NEAR(busy, r.busy_gpu_s, 1e-6 * r.busy_gpu_s);
}

TEST(ClusterSim, SameSeedSameResult) {
  ClusterOptions o;
  o.failures.node_mtbf = Hours(300);
  o.failures.repair_time = Hours(2);
  auto run = [&](uint64_t seed) {
    return ClusterJson(RunCluster(Shape(16, 4), GenerateJobs(BusyGenerator(seed)), o)).dump();
  };
  EXPECT_EQ(run(11), run(11));
  EXPECT_NE(run(11), run(12));
}

TEST(ClusterSim, JobLargerThanTheClusterIsAnInputError) {
  try {
    RunCluster(Shape(2, 2), {Job("big", 0, 24, 1)}, ClusterOptions{});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.key_path(), "big: gpus");
  }
}

}  // namespace
}  // namespace stacksim::cluster
