#include "sim/campaign/campaign.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "sim/util/parallel.h"
#include "sim/util/statistics.h"

namespace stacksim::campaign {
namespace {

// A trial that keeps failing without progress (interruptions far more often
// than a checkpoint interval plus recovery) would never end; stop it here.
constexpr int64_t kMaxInterruptions = 1'000'000;

// Trial i's random stream depends on (seed, i) only: the same trial gives the
// same campaign whichever thread runs it and in whatever order.
std::mt19937_64 TrialEngine(uint64_t seed, uint64_t trial) {
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(trial),
                    static_cast<uint32_t>(trial >> 32)};
  return std::mt19937_64(seq);
}

class Trial {
 public:
  Trial(const CampaignJob& job, const CampaignPolicy& policy, uint64_t seed, uint64_t trial)
      : job_(job), policy_(policy), rng_(TrialEngine(seed, trial)) {
    std::vector<double> weights;
    for (const CauseRate& c : job.causes) weights.push_back(c.per_hour);
    rate_per_s_ = policy.failures ? job.TotalRatePerHour() / 3600.0 : 0.0;
    if (rate_per_s_ > 0) pick_cause_ = std::discrete_distribution<int>(weights.begin(), weights.end());
    target_ = job.steps > 0 ? job.steps : std::numeric_limits<int64_t>::max();
    // A token budget has no end time of its own: a trial stops at 200 years
    // (int64 ns reach 292, and every span added to the clock is at most 100,
    // the input limit) and counts as unfinished.
    limit_ = policy.duration > Time::Zero() ? policy.duration : Time::FromSeconds(2 * kMaxInputSeconds);
    r_.by_cause.assign(job.causes.size(), 0);
  }

  TrialResult Run() {
    next_failure_ = Draw();
    while (progress_ < target_ && r_.finished) {
      if (!RunSegment()) break;
      if (progress_ >= target_) break;
      if (!Checkpoint()) break;
    }
    if (progress_ < target_ && policy_.duration <= Time::Zero()) r_.finished = false;
    r_.wall = now_;
    r_.steps = progress_;
    r_.useful = Steps(progress_);
    r_.lost_work = running_ - r_.useful;
    return r_;
  }

 private:
  enum class Outcome { kDone, kFailed, kOutOfTime };

  Time Steps(int64_t n) const { return Time::Ns(job_.step.ns() * n); }

  Time Draw() {
    if (rate_per_s_ <= 0) return Time::Max();
    const Time wait = Time::FromSeconds(std::exponential_distribution<double>(rate_per_s_)(rng_));
    return wait >= Time::Max() - now_ ? Time::Max() : now_ + wait;
  }

  // Spends `d` in one activity unless an interruption or the end of the
  // campaign comes first; the time spent goes to *bucket either way.
  Outcome Spend(Time d, Time* bucket) {
    const Time end = now_ + d;
    const Time first = std::min(next_failure_, limit_);
    if (first < end) {
      *bucket += first - now_;
      now_ = first;
      return limit_ <= next_failure_ ? Outcome::kOutOfTime : Outcome::kFailed;
    }
    *bucket += d;
    now_ = end;
    return Outcome::kDone;
  }

  // Steps up to the next checkpoint or the end of the budget. False when the
  // campaign is over (out of time, or given up).
  bool RunSegment() {
    FastForward();
    const int64_t k = policy_.steps_per_checkpoint;
    const int64_t stop = std::min(target_, (progress_ / k + 1) * k);
    const Time end = now_ + Steps(stop - progress_);
    const Time first = std::min(next_failure_, limit_);
    if (first < end) {
      progress_ += (first - now_).ns() / job_.step.ns();
      running_ += first - now_;
      now_ = first;
      if (limit_ <= next_failure_) return false;
      Interrupt();
      return Recover();
    }
    running_ += end - now_;
    now_ = end;
    progress_ = stop;
    return true;
  }

  // Whole cycles of (k steps, checkpoint) that end before the next
  // interruption, at once: the same arithmetic as one cycle at a time, so the
  // same result, without tens of thousands of events per trial. Only in the
  // steady state: at a checkpoint boundary, and (asynchronous) when each write
  // ends within the next k steps, so no cycle waits for a write.
  void FastForward() {
    const int64_t k = policy_.steps_per_checkpoint;
    if (progress_ % k != 0) return;
    const Time segment = Steps(k);
    Time stall = job_.checkpoint_write;
    if (policy_.async_checkpoint) {
      if (job_.checkpoint_write > segment) return;
      if (pending_done_ != Time::Max() && pending_done_ > now_ + segment) return;
      stall = job_.checkpoint_snapshot;
    }
    const Time cycle = segment + stall;
    const int64_t checkpoints_left = (target_ - 1 - progress_) / k;
    const Time horizon = std::min(next_failure_, limit_);
    int64_t n = checkpoints_left;
    if (horizon != Time::Max()) n = std::min(n, (horizon - now_).ns() > 0 ? ((horizon - now_).ns() - 1) / cycle.ns() : 0);
    if (n <= 0) return;
    progress_ += n * k;
    now_ += Time::Ns(cycle.ns() * n);
    running_ += Time::Ns(segment.ns() * n);
    r_.checkpoint_stall += Time::Ns(stall.ns() * n);
    r_.checkpoints += n;
    if (policy_.async_checkpoint) {
      durable_ = progress_ - k;  // the previous write ended during the last k steps
      pending_steps_ = progress_;
      pending_done_ = now_ + job_.checkpoint_write;
    } else {
      durable_ = progress_;
    }
  }

  bool Checkpoint() {
    ++r_.checkpoints;
    Outcome o;
    if (!policy_.async_checkpoint) {
      o = Spend(job_.checkpoint_write, &r_.checkpoint_stall);
      if (o == Outcome::kDone) durable_ = progress_;
    } else {
      CommitWrite();
      o = Outcome::kDone;
      // The host buffer still holds the previous checkpoint: wait for its write.
      if (pending_done_ != Time::Max()) {
        o = Spend(pending_done_ - now_, &r_.checkpoint_stall);
        if (o == Outcome::kDone) CommitWrite();
      }
      if (o == Outcome::kDone) o = Spend(job_.checkpoint_snapshot, &r_.checkpoint_stall);
      if (o == Outcome::kDone) {
        pending_steps_ = progress_;
        pending_done_ = now_ + job_.checkpoint_write;
      }
    }
    if (o == Outcome::kOutOfTime) return false;
    if (o == Outcome::kFailed) {
      Interrupt();
      return Recover();
    }
    return true;
  }

  void CommitWrite() {
    if (pending_done_ <= now_) {
      durable_ = pending_steps_;
      pending_done_ = Time::Max();
    }
  }

  // An interruption now: roll back to the last durable checkpoint.
  void Interrupt() {
    ++r_.interruptions;
    const int cause = pick_cause_(rng_);
    ++r_.by_cause[cause];
    CommitWrite();
    pending_done_ = Time::Max();  // a write still running is lost
    progress_ = durable_;
    if (job_.causes[cause].takes_node_out) in_repair_.push_back(now_ + job_.repair);
    next_failure_ = Draw();
    if (r_.interruptions >= kMaxInterruptions) r_.finished = false;
  }

  // Detection, a wait for a node if no spare is free, restart, checkpoint
  // read; an interruption on the way starts it again. False when the
  // campaign is over.
  bool Recover() {
    while (r_.finished) {
      Outcome o = Spend(job_.detection, &r_.detection);
      if (o == Outcome::kFailed) { Interrupt(); continue; }
      if (o == Outcome::kOutOfTime) return false;
      if (!WaitForNodes()) return false;
      o = Spend(job_.restart, &r_.restart);
      if (o == Outcome::kDone) o = Spend(job_.checkpoint_read, &r_.reload);
      if (o == Outcome::kFailed) { Interrupt(); continue; }
      return o == Outcome::kDone;
    }
    return false;
  }

  // The job needs as many nodes as it started with: it can run while no more
  // nodes are in repair than there are spares.
  bool WaitForNodes() {
    std::erase_if(in_repair_, [&](Time back) { return back <= now_; });
    const size_t spares = static_cast<size_t>(policy_.spares);
    if (in_repair_.size() <= spares) return true;
    std::sort(in_repair_.begin(), in_repair_.end());
    const Time ready = in_repair_[in_repair_.size() - spares - 1];
    if (ready >= limit_) {
      r_.repair_wait += limit_ - now_;
      now_ = limit_;
      return false;
    }
    r_.repair_wait += ready - now_;
    now_ = ready;
    std::erase_if(in_repair_, [&](Time back) { return back <= now_; });
    next_failure_ = Draw();  // nothing runs while waiting; exponential, so drawing afresh is exact
    return true;
  }

  const CampaignJob& job_;
  const CampaignPolicy& policy_;
  std::mt19937_64 rng_;
  std::discrete_distribution<int> pick_cause_;
  double rate_per_s_ = 0;
  int64_t target_ = 0;
  Time limit_;

  Time now_;
  Time next_failure_;
  Time running_;               // time running steps, kept or lost
  int64_t progress_ = 0;       // steps done since the last rollback point
  int64_t durable_ = 0;        // steps in the last checkpoint on storage
  int64_t pending_steps_ = 0;  // asynchronous: the checkpoint being written
  Time pending_done_ = Time::Max();
  std::vector<Time> in_repair_;  // when each failed node is back
  TrialResult r_;
};

}  // namespace

double CampaignJob::TotalRatePerHour() const {
  double sum = 0;
  for (const CauseRate& c : causes) sum += c.per_hour;
  return sum;
}

TrialResult RunTrial(const CampaignJob& job, const CampaignPolicy& policy, uint64_t seed, uint64_t trial) {
  return Trial(job, policy, seed, trial).Run();
}

Spread SpreadOf(std::vector<double> values) {
  Spread s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / static_cast<double>(values.size());
  double sq = 0;
  for (double v : values) sq += (v - s.mean) * (v - s.mean);
  s.sd = values.size() > 1 ? std::sqrt(sq / static_cast<double>(values.size() - 1)) : 0;
  // Linear interpolation (type 7): a smooth summary of the simulated
  // distribution (sim/util/statistics.h says which command uses which).
  s.p10 = LinearQuantile(values, 0.1);
  s.p50 = LinearQuantile(values, 0.5);
  s.p90 = LinearQuantile(values, 0.9);
  return s;
}

CampaignStats RunCampaign(const CampaignJob& job, const CampaignPolicy& policy, const MonteCarlo& mc) {
  std::vector<TrialResult> results(static_cast<size_t>(std::max(0, mc.trials)));
  if (mc.progress) mc.progress->AddWork(static_cast<int64_t>(results.size()));
  ParallelFor(static_cast<int64_t>(results.size()), std::max(1, mc.threads), [&](int64_t i, int) {
    results[static_cast<size_t>(i)] = RunTrial(job, policy, mc.seed, static_cast<uint64_t>(i));
    if (mc.progress) mc.progress->Add();
  });

  CampaignStats s;
  s.trials = mc.trials;
  s.interruptions_by_cause.assign(job.causes.size(), 0);
  std::vector<double> wall, steps, interruptions;
  double useful = 0, total = 0, lost = 0;
  for (const TrialResult& r : results) {
    if (!r.finished) ++s.unfinished;
    wall.push_back(r.wall.seconds());
    steps.push_back(static_cast<double>(r.steps));
    interruptions.push_back(static_cast<double>(r.interruptions));
    for (size_t c = 0; c < r.by_cause.size(); ++c) s.interruptions_by_cause[c] += static_cast<double>(r.by_cause[c]);
    useful += r.useful.seconds();
    total += r.wall.seconds();
    lost += r.lost_work.seconds();
    s.lost_work_s += r.lost_work.seconds();
    s.checkpoint_stall_s += r.checkpoint_stall.seconds();
    s.detection_s += r.detection.seconds();
    s.repair_wait_s += r.repair_wait.seconds();
    s.restart_s += r.restart.seconds();
    s.reload_s += r.reload.seconds();
    s.checkpoints += static_cast<double>(r.checkpoints);
  }
  const double n = std::max(1, mc.trials);
  for (double& c : s.interruptions_by_cause) c /= n;
  s.useful_s = useful / n;
  for (double* m : {&s.lost_work_s, &s.checkpoint_stall_s, &s.detection_s, &s.repair_wait_s, &s.restart_s,
                    &s.reload_s, &s.checkpoints}) {
    *m /= n;
  }
  s.wall_s = SpreadOf(wall);
  const double half = 1.96 * s.wall_s.sd / std::sqrt(n);
  s.wall_mean_ci95_s[0] = s.wall_s.mean - half;
  s.wall_mean_ci95_s[1] = s.wall_s.mean + half;
  s.steps = SpreadOf(steps);
  s.interruptions = SpreadOf(interruptions);
  s.goodput = total > 0 ? useful / total : 0;
  s.training_fraction = total > 0 ? (useful + lost) / total : 0;
  return s;
}

Time YoungDalyInterval(Time checkpoint_cost, Time mtbf) {
  return Time::FromSeconds(std::sqrt(2.0 * checkpoint_cost.seconds() * mtbf.seconds()));
}

IntervalSweep SweepInterval(const CampaignJob& job, const CampaignPolicy& policy, const MonteCarlo& mc) {
  IntervalSweep sweep;
  const double rate = job.TotalRatePerHour();
  if (!policy.failures || rate <= 0) return sweep;  // no interruptions: the longest interval wins
  sweep.mtbf = Time::FromSeconds(3600.0 / rate);
  sweep.checkpoint_cost = policy.async_checkpoint ? job.checkpoint_snapshot : job.checkpoint_write;
  sweep.young_daly = YoungDalyInterval(sweep.checkpoint_cost, sweep.mtbf);

  const double step = job.step.seconds();
  double lo = std::max(step, sweep.young_daly.seconds() / 8);
  double hi = std::max(lo, sweep.young_daly.seconds() * 8);
  if (job.steps > 0) hi = std::min(hi, step * static_cast<double>(job.steps));
  lo = std::min(lo, hi);
  std::vector<int64_t> ks;
  for (int i = 0;; ++i) {
    const double interval = lo * std::pow(2.0, i / 4.0);
    if (interval > hi * (1 + 1e-9)) break;
    const int64_t k = std::max<int64_t>(1, std::llround(interval / step));
    if (ks.empty() || k != ks.back()) ks.push_back(k);
  }
  for (int64_t k : ks) {
    CampaignPolicy p = policy;
    p.steps_per_checkpoint = k;
    const CampaignStats s = RunCampaign(job, p, mc);
    SweepPoint point;
    point.steps_per_checkpoint = k;
    point.interval = Time::Ns(job.step.ns() * k);
    point.goodput = s.goodput;
    point.wall_mean_s = s.wall_s.mean;
    point.finished = s.unfinished == 0;
    sweep.points.push_back(point);
    if (point.finished && (sweep.best < 0 || point.goodput > sweep.points[sweep.best].goodput)) {
      sweep.best = static_cast<int>(sweep.points.size()) - 1;
    }
  }
  return sweep;
}

}  // namespace stacksim::campaign
