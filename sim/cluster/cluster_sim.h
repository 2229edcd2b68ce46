// Many jobs sharing one cluster: an event-driven simulation of a job queue, a
// scheduler and a placement policy over whole nodes, with optional node
// failures.
//
// Events are job arrivals, completions, node failures and repairs (and the
// end of a job's wait for its minimal leaf set); after the events of one
// instant the scheduler makes one pass over the queue. Schedulers:
//   fifo       jobs start in submit order; nothing passes a job that cannot start.
//   backfill   EASY backfill (Lifka 1995; Mu'alem and Feitelson 2001): the first
//              job that cannot start gets a reservation (the earliest time
//              enough nodes free up, by the running jobs' known end times, and
//              the nodes it will get then); a later job may start now if it
//              ends by then or stays off the reserved nodes.
//   fairshare  EASY backfill over the queue ordered by the users' decayed
//              usage over their share (Slurm's fair-share: usage halves every
//              half_life), each user's jobs in submit order.
// Durations are known when a job starts (its duration on its minimal leaf set,
// stretched by how far its placement strays from it), so the scheduler's
// estimates are exact: no job ever starts later than its first reservation
// unless a node failure takes reserved nodes away.
//
// Every GPU-second between the first submit and the last completion is
// either busy (a job's GPUs) or idle for one reason, so the parts add up to
// GPUs x makespan. All times are stacksim::Time; GPU-time is in GPU-seconds.
#ifndef STACKSIM_SIM_CLUSTER_CLUSTER_SIM_H_
#define STACKSIM_SIM_CLUSTER_CLUSTER_SIM_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/cluster/job_trace.h"
#include "sim/cluster/node_pool.h"
#include "sim/util/units.h"

namespace stacksim::cluster {

enum class SchedulerKind { kFifo, kBackfill, kFairShare };
const char* SchedulerName(SchedulerKind s);  // "fifo", "backfill", "fairshare"
// Throws InputError naming `origin` for any other name.
SchedulerKind ParseScheduler(const std::string& name, const std::string& origin);
PlacementPolicy ParsePlacement(const std::string& name, const std::string& origin);

// Why free GPUs sat idle, judged after each scheduling pass.
enum class IdleReason {
  kNoDemand,       // nothing waiting
  kHeadBlocked,    // the first waiting job needs more nodes than are free, and nothing else fits around it
  kFragmentation,  // enough free nodes for the first waiting job, but not under few enough leaf switches
  kUnusedInNode,   // GPUs of a node allocated to a job that asked for fewer (whole-node allocation)
  kDown,           // node failed, under repair
};
inline constexpr int kIdleReasons = 5;
const char* IdleReasonName(IdleReason r);  // "no_demand", "head_blocked", ...

struct FairShareOptions {
  Time half_life = Time::FromSeconds(7 * 86400.0);  // Slurm's PriorityDecayHalfLife default
  std::map<std::string, double> shares;             // user -> share; absent users have 1
};

struct FailureOptions {
  Time node_mtbf;             // mean time between failures of one node; zero: no failures
  Time repair_time;           // a failed node is down this long
  Time checkpoint_interval;   // a killed job resumes from its last checkpoint; zero: from the start
  uint64_t seed = 1;
};

struct ClusterOptions {
  SchedulerKind scheduler = SchedulerKind::kBackfill;
  PlacementPolicy placement = PlacementPolicy::kTopology;
  // Topology placement: how long a job that could start on more leaves than
  // it needs waits for its minimal leaf set (Slurm's --switches=N@max-time);
  // zero: it starts at once.
  Time leaf_wait;
  Time resolution = Time::FromSeconds(3600);  // time series bucket
  FairShareOptions fairshare;
  FailureOptions failures;
};

struct JobOutcome {
  std::string id, user;
  int gpus = 0, nodes = 0;
  Time submit, start, end;     // start: first start
  Time wait;                   // first start - submit
  Time duration;               // on its minimal leaf set (the trace's or simulated duration)
  double placement_slowdown = 1.0;  // of its last run: run time / time on its minimal leaf set
  int leaves = 0, min_leaves = 0;   // of its last run
  int restarts = 0;            // times a node failure killed it
  Time reservation = Time::Max();  // first reserved start as the blocked head (backfill), Max if none
};

struct WaitStats {
  Time mean, p50, p90, p99, max;  // percentiles by nearest rank (sim/util/statistics.h)
};

// Averages over one bucket of the time series.
struct SeriesPoint {
  Time start;                      // since the first submit
  double busy_gpus = 0;
  std::array<double, kIdleReasons> idle_gpus{};
  double queued_jobs = 0;
  double running_jobs = 0;
};

struct ClusterResult {
  std::string name;
  std::string topology;
  ClusterShape shape;
  ClusterOptions options;

  std::vector<JobOutcome> jobs;      // in trace order
  Time first_submit, last_end;
  Time makespan;                     // last_end - first_submit

  double total_gpu_s = 0;            // GPUs x makespan
  double busy_gpu_s = 0;
  std::array<double, kIdleReasons> idle_gpu_s{};
  double utilization = 0;            // busy / total

  WaitStats wait;
  int jobs_slowed = 0;               // last run placed beyond its minimal leaf set with a slowdown
  double mean_slowdown_of_slowed = 1.0;
  double max_slowdown = 1.0;
  double placement_lost_gpu_s = 0;   // GPU-time beyond the jobs' minimal-leaf durations

  int node_failures = 0;
  int jobs_killed = 0;
  double lost_work_gpu_s = 0;        // run time thrown away by kills (since the last checkpoint)

  std::vector<SeriesPoint> series;   // options.resolution apart
  int simulations = 0;               // step simulations behind model jobs (set by the caller)
  uint64_t events = 0;
  std::vector<std::string> notes;
};

// REQUIRES: every job has its duration (ResolveModelJobs). Throws InputError
// (the job's file and row, "gpus") for a job larger than the cluster.
ClusterResult RunCluster(const ClusterShape& shape, const std::vector<JobSpec>& jobs, const ClusterOptions& options);

}  // namespace stacksim::cluster

#endif  // STACKSIM_SIM_CLUSTER_CLUSTER_SIM_H_
