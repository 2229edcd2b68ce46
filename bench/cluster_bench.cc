// Speed of the cluster simulation (stacksim cluster): thirty days of a
// 2,048-node, 16,384-GPU H100 cluster (dgx-h100-2to1's fabric: 32-node
// leaves, 256-node spine groups) with 10,000 jobs. Arrivals are Poisson at
// 10,000 / 720 h; sizes from one node to 1,024 GPUs, log-normal durations
// (median 5.5 h, sigma 1.2, capped at 7 d): about 95% offered load, so the
// queue backs up and backfill has work to do. Node failures at a per-node
// MTBF of 6,300 h (Llama 3 405B: 419 unexpected interruptions in 54 days on
// 16,384 GPUs, arXiv:2407.21783 §3.3.4), 4 h repairs, hourly checkpoints.
// One benchmark per scheduler; counters give the simulated outcome.
#include <benchmark/benchmark.h>

#include "sim/cluster/cluster_sim.h"
#include "sim/cluster/job_trace.h"
#include "sim/cluster/node_pool.h"

namespace stacksim::cluster {
namespace {

JobMixEntry Mix(double weight, int gpus) {
  JobMixEntry e;
  e.weight = weight;
  e.gpus = gpus;
  return e;
}

ClusterShape MonthShape() {
  ClusterShape s;
  s.nodes = 2048;
  s.gpus_per_node = 8;
  s.nodes_per_leaf = 32;
  s.nodes_per_spine = 256;
  s.nodes_per_domain = 1;
  return s;
}

std::vector<JobSpec> MonthJobs() {
  JobGenerator g;
  g.seed = 2026;
  g.jobs = 10000;
  g.arrivals_per_hour = 10000.0 / 720.0;
  g.users = 40;
  g.median_duration = Time::FromSeconds(5.5 * 3600);
  g.duration_sigma = 1.2;
  g.max_duration = Time::FromSeconds(7 * 86400.0);
  g.mix = {Mix(40, 8), Mix(20, 32), Mix(15, 64), Mix(10, 128), Mix(8, 256), Mix(5, 512), Mix(2, 1024)};
  for (JobMixEntry& e : g.mix) {
    if (e.gpus >= 256) e.scattered_slowdown = 1.3;  // large jobs feel the 2:1 leaf uplinks
  }
  return GenerateJobs(g);
}

void BM_ThirtyDays16kGpus(benchmark::State& state) {
  const ClusterShape shape = MonthShape();
  const std::vector<JobSpec> jobs = MonthJobs();
  ClusterOptions o;
  o.scheduler = static_cast<SchedulerKind>(state.range(0));
  o.placement = PlacementPolicy::kTopology;
  o.failures.node_mtbf = Time::FromSeconds(6300 * 3600.0);
  o.failures.repair_time = Time::FromSeconds(4 * 3600.0);
  o.failures.checkpoint_interval = Time::FromSeconds(3600.0);
  ClusterResult r;
  for (auto _ : state) {
    r = RunCluster(shape, jobs, o);
    benchmark::DoNotOptimize(r.busy_gpu_s);
  }
  state.SetLabel(SchedulerName(o.scheduler));
  state.counters["jobs"] = static_cast<double>(r.jobs.size());
  state.counters["events"] = static_cast<double>(r.events);
  state.counters["makespan_days"] = r.makespan.seconds() / 86400;
  state.counters["utilization"] = r.utilization;
  state.counters["wait_p50_h"] = r.wait.p50.seconds() / 3600;
  state.counters["node_failures"] = r.node_failures;
}
BENCHMARK(BM_ThirtyDays16kGpus)
    ->Arg(static_cast<int>(SchedulerKind::kFifo))
    ->Arg(static_cast<int>(SchedulerKind::kBackfill))
    ->Arg(static_cast<int>(SchedulerKind::kFairShare))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace
}  // namespace stacksim::cluster

BENCHMARK_MAIN();
