// A whole training campaign, by Monte Carlo: steps of a known length (the
// simulator's step time), checkpoints every so many steps, and interruptions
// drawn from per-cause failure rates, each followed by detection, possibly a
// wait for a repaired node, a restart and a checkpoint read; the work since
// the last durable checkpoint is lost.
//
// One trial is one campaign; trial i is seeded from (seed, i) alone, so the
// results do not depend on how many threads run the trials. All times are
// wall-clock; "useful" time is the steps that count toward the budget times
// the step time.
//
// Model (what is and is not in it):
// - Interruptions are Poisson in wall-clock time while the job holds its
//   nodes (running, checkpointing, detecting, restarting, reading), at the
//   summed rate of the causes; not while it waits for a repair (it runs
//   nothing then). An interruption during recovery starts recovery again.
// - Synchronous checkpoint: the job stops for the whole write; the checkpoint
//   counts once written. Asynchronous: the job stops for a copy to host memory
//   (the snapshot), the write runs in the background; a failure before the
//   write ends falls back to the previous checkpoint, and a checkpoint due
//   while the previous write still runs waits for it (a stall).
// - Spares: `spares` extra nodes. A cause that takes a node out sends it to
//   repair (back after `repair`); after detection the job restarts on a spare
//   if one is free, else waits for the earliest repaired node.
// - Background writes do not slow the steps; restart and detection times are
//   the same for every cause.
#ifndef STACKSIM_SIM_CAMPAIGN_CAMPAIGN_H_
#define STACKSIM_SIM_CAMPAIGN_CAMPAIGN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sim/util/progress.h"
#include "sim/util/units.h"

namespace stacksim::campaign {

// One failure cause as a job sees it.
struct CauseRate {
  std::string name;
  double per_hour = 0;  // interruptions per wall-clock hour of this job
  bool takes_node_out = true;
};

// The job: what one campaign trial needs, in its own units.
struct CampaignJob {
  Time step;                       // one training step, > 0
  int64_t steps = 0;               // steps to train; 0: no budget, run until `duration`
  Time checkpoint_write;           // synchronous stall; asynchronous background write
  Time checkpoint_read;            // reload after a restart
  Time checkpoint_snapshot;        // asynchronous: the blocking copy to host memory
  std::vector<CauseRate> causes;
  Time detection, restart, repair;
  double TotalRatePerHour() const;
};

struct CampaignPolicy {
  int64_t steps_per_checkpoint = 1;  // >= 1
  bool async_checkpoint = false;
  int spares = 0;                    // spare nodes
  bool failures = true;              // false: no interruptions (a check, and the failure-free baseline)
  Time duration;                     // > 0: stop at this wall-clock time (required when steps == 0)
};

// Where a trial's wall-clock time went. wall = useful + lost_work +
// checkpoint_stall + detection + repair_wait + restart + reload, exactly.
struct TrialResult {
  Time wall;
  int64_t steps = 0;               // steps done (all of them when the budget was reached)
  Time useful;                     // steps x step
  Time lost_work;                  // steps (and part steps) redone after interruptions
  Time checkpoint_stall;           // job stopped for checkpoints (incl. interrupted ones)
  Time detection, repair_wait, restart, reload;
  int64_t interruptions = 0;
  std::vector<int64_t> by_cause;   // interruptions per cause
  int64_t checkpoints = 0;         // checkpoints started
  bool finished = true;            // false: gave up after too many interruptions
};

// REQUIRES: job.step > 0, policy.steps_per_checkpoint >= 1, job.steps > 0 or
// policy.duration > 0.
TrialResult RunTrial(const CampaignJob& job, const CampaignPolicy& policy, uint64_t seed, uint64_t trial);

struct Spread {
  double mean = 0, sd = 0, p10 = 0, p50 = 0, p90 = 0;
};
Spread SpreadOf(std::vector<double> values);

struct CampaignStats {
  int trials = 0;
  int unfinished = 0;              // trials that gave up (the campaign cannot make progress)
  Spread wall_s;                   // wall-clock seconds
  double wall_mean_ci95_s[2] = {0, 0};  // 95% confidence interval of the expected wall time (normal approximation)
  Spread steps;
  Spread interruptions;
  std::vector<double> interruptions_by_cause;  // mean per cause
  double goodput = 0;              // sum useful / sum wall over trials
  double training_fraction = 0;    // (useful + lost work) / wall: time spent running steps
  // Means over trials, seconds.
  double useful_s = 0, lost_work_s = 0, checkpoint_stall_s = 0, detection_s = 0, repair_wait_s = 0, restart_s = 0,
         reload_s = 0;
  double checkpoints = 0;
};

struct MonteCarlo {
  int trials = 200;
  uint64_t seed = 1;
  int threads = 1;
  ProgressMeter* progress = nullptr;  // counts trials when set; not owned
};

CampaignStats RunCampaign(const CampaignJob& job, const CampaignPolicy& policy, const MonteCarlo& mc);

// Young (1974) / Daly (2006) first-order optimum checkpoint interval
// sqrt(2 C M), with C the blocking checkpoint cost and M the job's mean time
// between interruptions. Holds for C << M and recovery small against M.
Time YoungDalyInterval(Time checkpoint_cost, Time mtbf);

struct SweepPoint {
  int64_t steps_per_checkpoint = 0;
  Time interval;                   // steps x step
  double goodput = 0;
  double wall_mean_s = 0;
  bool finished = true;
};

struct IntervalSweep {
  std::vector<SweepPoint> points;  // increasing interval
  int best = -1;                   // index of the highest goodput (finished points only)
  Time young_daly;
  Time mtbf;
  Time checkpoint_cost;            // the blocking cost used by Young/Daly
};

// Goodput over checkpoint intervals on a geometric grid (4 per octave) from
// Young/Daly / 8 to x 8, at least one step and, with a budget, at most the
// whole run. Every point reuses the same trial seeds (common random numbers),
// so differences between points are not sampling noise between them.
IntervalSweep SweepInterval(const CampaignJob& job, const CampaignPolicy& policy, const MonteCarlo& mc);

}  // namespace stacksim::campaign

#endif  // STACKSIM_SIM_CAMPAIGN_CAMPAIGN_H_
