#include "sim/campaign/campaign.h"

#include <gtest/gtest.h>

#include <cmath>

namespace stacksim::campaign {
namespace {

// A job with round numbers: 1 s steps, one software-like cause (no node
// taken out) unless a test changes it.
CampaignJob Job(int64_t steps, double rate_per_hour) {
  CampaignJob job;
  job.step = Time::FromSeconds(1);
  job.steps = steps;
  job.checkpoint_write = Time::FromSeconds(7);
  job.checkpoint_read = Time::FromSeconds(3);
  job.checkpoint_snapshot = Time::FromSeconds(0.5);
  job.causes = {{"a", rate_per_hour * 0.75, false}, {"b", rate_per_hour * 0.25, false}};
  job.detection = Time::FromSeconds(60);
  job.restart = Time::FromSeconds(120);
  job.repair = Time::FromSeconds(4 * 3600);
  return job;
}

CampaignPolicy Every(int64_t steps, bool async = false) {
  CampaignPolicy p;
  p.steps_per_checkpoint = steps;
  p.async_checkpoint = async;
  return p;
}

Time Parts(const TrialResult& r) {
  return r.useful + r.lost_work + r.checkpoint_stall + r.detection + r.repair_wait + r.restart + r.reload;
}

TEST(Campaign, WithoutFailuresWallIsStepsPlusCheckpointStallsExactly) {
  CampaignJob job = Job(1000, 1.0);
  CampaignPolicy sync = Every(64);
  sync.failures = false;
  // Checkpoints after steps 64, 128, ..., 960: ceil(1000 / 64) - 1 = 15 (none at the end).
  TrialResult r = RunTrial(job, sync, 1, 0);
  EXPECT_EQ(r.checkpoints, 15);
  EXPECT_EQ(r.wall, Time::FromSeconds(1000 + 15 * 7));
  EXPECT_EQ(r.useful, Time::FromSeconds(1000));
  EXPECT_EQ(r.interruptions, 0);

  CampaignPolicy async = sync;
  async.async_checkpoint = true;
  r = RunTrial(job, async, 1, 0);
  EXPECT_EQ(r.wall, Time::FromSeconds(1000 + 15 * 0.5));

  // A write longer than 64 steps: every checkpoint after the first waits for
  // the previous write, 100 - 64 s.
  job.checkpoint_write = Time::FromSeconds(100);
  r = RunTrial(job, async, 1, 0);
  EXPECT_EQ(r.wall, Time::FromSeconds(1000 + 15 * 0.5 + 14 * 36));
  EXPECT_EQ(r.checkpoint_stall, Time::FromSeconds(15 * 0.5 + 14 * 36));
}

TEST(Campaign, WallIsTheSumOfItsPartsWithFailures) {
  CampaignJob job = Job(200'000, 0.5);
  for (bool async : {false, true}) {
    for (int spares : {0, 2}) {
      CampaignPolicy p = Every(600, async);
      p.spares = spares;
      job.causes[1].takes_node_out = true;
      for (uint64_t t = 0; t < 5; ++t) {
        TrialResult r = RunTrial(job, p, 7, t);
        EXPECT_GT(r.interruptions, 0);
        EXPECT_EQ(r.wall, Parts(r)) << "async " << async << " spares " << spares << " trial " << t;
        EXPECT_EQ(r.steps, job.steps);
        EXPECT_GT(r.lost_work, Time::Zero());
      }
    }
  }
}

TEST(Campaign, InterruptionCountIsRateTimesTime) {
  // 1000 h at 0.5 per hour: Poisson with mean 500 (no repair waits: the
  // causes take no node out, so the job holds its nodes all the time).
  CampaignJob job = Job(0, 0.5);
  CampaignPolicy p = Every(1800);
  p.duration = Time::FromSeconds(1000 * 3600.0);
  MonteCarlo mc{400, 3, 2};
  CampaignStats s = RunCampaign(job, p, mc);
  const double expected = 500, se = std::sqrt(expected / mc.trials);
  EXPECT_NEAR(s.interruptions.mean, expected, 4 * se);
  EXPECT_NEAR(s.interruptions.sd, std::sqrt(expected), 0.2 * std::sqrt(expected));  // Poisson spread
  EXPECT_NEAR(s.interruptions_by_cause[0] / s.interruptions.mean, 0.75, 0.01);
  EXPECT_DOUBLE_EQ(s.wall_s.mean, 1000 * 3600.0);
}

TEST(Campaign, SweepFindsYoungDalyWhereTheFormulaHolds) {
  // C = 10 s << MTBF = 1 h, instant recovery, 1 s steps: Young's
  // sqrt(2 C M) = 268 s. Overhead C/t + t/2M is flat near it (+8% at 1.5x).
  CampaignJob job = Job(1'000 * 3600, 1.0);
  job.checkpoint_write = Time::FromSeconds(10);
  job.checkpoint_read = job.detection = job.restart = Time::Zero();
  CampaignPolicy p = Every(1);
  IntervalSweep sweep = SweepInterval(job, p, MonteCarlo{30, 11, 2});
  ASSERT_GE(sweep.best, 0);
  EXPECT_NEAR(sweep.young_daly.seconds(), std::sqrt(2 * 10 * 3600.0), 0.5);
  const double best = sweep.points[sweep.best].interval.seconds();
  EXPECT_GT(best, sweep.young_daly.seconds() / 1.5);
  EXPECT_LT(best, sweep.young_daly.seconds() * 1.5);
  // A wrong formula (or a broken sweep) would put the best at an edge of the grid.
  EXPECT_GT(sweep.best, 0);
  EXPECT_LT(sweep.best, static_cast<int>(sweep.points.size()) - 1);
}

TEST(Campaign, AsyncBeatsSyncWhenWritesAreSlow) {
  CampaignJob job = Job(500'000, 0.2);
  job.checkpoint_write = Time::FromSeconds(600);  // 10 min per write
  job.checkpoint_snapshot = Time::FromSeconds(2);
  MonteCarlo mc{40, 5, 2};
  CampaignStats sync = RunCampaign(job, Every(3600), mc);
  CampaignStats async = RunCampaign(job, Every(3600, true), mc);
  EXPECT_GT(async.goodput, sync.goodput + 0.05);
  EXPECT_LT(async.checkpoint_stall_s, sync.checkpoint_stall_s / 50);
  // The price of async: a failure during a write falls back one more checkpoint.
  EXPECT_GT(async.lost_work_s, sync.lost_work_s);
}

TEST(Campaign, SparesBeatWaitingForRepair) {
  CampaignJob job = Job(500'000, 0.2);
  for (CauseRate& c : job.causes) c.takes_node_out = true;
  job.repair = Time::FromSeconds(8 * 3600);
  MonteCarlo mc{40, 9, 2};
  CampaignPolicy none = Every(1800);
  CampaignPolicy plenty = none;
  plenty.spares = 1000;
  CampaignStats waits = RunCampaign(job, none, mc);
  CampaignStats spares = RunCampaign(job, plenty, mc);
  EXPECT_GT(waits.repair_wait_s, 0);
  EXPECT_EQ(spares.repair_wait_s, 0);
  EXPECT_LT(spares.wall_s.mean, waits.wall_s.mean);
  // Without spares every interruption waits out the rest of an 8 h repair
  // (a little less on average: a second failure during detection shares the wait).
  EXPECT_NEAR(waits.repair_wait_s / waits.interruptions.mean, 8 * 3600.0 - 60, 0.01 * 8 * 3600);
}

TEST(Campaign, SameSeedSameResultForAnyThreadCount) {
  CampaignJob job = Job(300'000, 0.4);
  job.causes[0].takes_node_out = true;
  CampaignPolicy p = Every(900, true);
  p.spares = 1;
  CampaignStats one = RunCampaign(job, p, MonteCarlo{24, 42, 1});
  CampaignStats four = RunCampaign(job, p, MonteCarlo{24, 42, 4});
  EXPECT_EQ(one.wall_s.mean, four.wall_s.mean);
  EXPECT_EQ(one.wall_s.p90, four.wall_s.p90);
  EXPECT_EQ(one.interruptions.mean, four.interruptions.mean);
  EXPECT_EQ(one.interruptions_by_cause, four.interruptions_by_cause);
  EXPECT_EQ(one.lost_work_s, four.lost_work_s);
  EXPECT_EQ(one.repair_wait_s, four.repair_wait_s);
  CampaignStats other = RunCampaign(job, p, MonteCarlo{24, 43, 1});
  EXPECT_NE(one.wall_s.mean, other.wall_s.mean);
}

TEST(Campaign, SpreadUsesOrderStatistics) {
  Spread s = SpreadOf({5, 1, 4, 2, 3});
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_DOUBLE_EQ(s.p50, 3);
  EXPECT_DOUBLE_EQ(s.p10, 1.4);
  EXPECT_DOUBLE_EQ(s.p90, 4.6);
  EXPECT_NEAR(s.sd, std::sqrt(2.5), 1e-12);
}

}  // namespace
}  // namespace stacksim::campaign
