#include "sim/cluster/cluster_sim.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <utility>

#include "sim/engine/event_queue.h"
#include "sim/util/statistics.h"

namespace stacksim::cluster {
namespace {

enum class EventKind : uint8_t { kCompletion, kFailure, kRepair, kWake };

struct Event {
  EventKind kind;
  int id;          // job (completion, wake) or node (repair)
  uint32_t epoch;  // a completion counts only for the run that scheduled it
};

struct Job {
  const JobSpec* spec = nullptr;
  int nodes = 0;
  int user = 0;
  Time work_left;  // remaining time on a minimal leaf set
  enum class State : uint8_t { kPending, kQueued, kRunning, kDone } state = State::kPending;
  std::vector<int> alloc;
  Time run_start, run_end;
  double slowdown = 1.0;
  Spread spread;
  uint32_t epoch = 0;
  Time first_start = Time::Max();
  Time shape_wait_since = Time::Max();
  Time reservation = Time::Max();
  int restarts = 0;
};

using QueueKey = std::pair<Time, int>;  // (submit, trace index): submit order, ties by the trace

class ClusterSim {
 public:
  ClusterSim(const ClusterShape& shape, const std::vector<JobSpec>& specs, const ClusterOptions& options)
      : shape_(shape), options_(options), pool_(shape), owner_(shape.nodes, -1), rng_(options.failures.seed) {
    std::map<std::string, int> users;
    jobs_.resize(specs.size());
    for (size_t i = 0; i < specs.size(); ++i) {
      const JobSpec& s = specs[i];
      Job& j = jobs_[i];
      j.spec = &s;
      j.nodes = shape.NodesFor(s.gpus);
      if (j.nodes > shape.nodes) {
        throw InputError(s.file, s.row + ": gpus",
                         std::to_string(s.gpus) + " GPUs do not fit the cluster's " + std::to_string(shape.gpus()));
      }
      j.work_left = s.duration;
      auto [it, added] = users.emplace(s.user, static_cast<int>(users.size()));
      j.user = it->second;
    }
    user_names_.resize(users.size());
    for (auto& [name, index] : users) user_names_[index] = name;
    user_queue_.resize(users.size());
    usage_.assign(users.size(), 0.0);
    running_gpus_.assign(users.size(), 0);
    share_.assign(users.size(), 1.0);
    for (auto& [name, share] : options.fairshare.shares) {
      if (auto it = users.find(name); it != users.end()) share_[it->second] = share;
    }
    arrivals_.resize(specs.size());
    for (size_t i = 0; i < specs.size(); ++i) arrivals_[i] = static_cast<int>(i);
    std::stable_sort(arrivals_.begin(), arrivals_.end(),
                     [&](int a, int b) { return specs[a].submit < specs[b].submit; });
  }

  ClusterResult Run();

 private:
  void Advance(Time to);
  void Pass();
  bool Visit(int j);
  bool TryStart(int j, const Availability& avail, Time must_end_by);
  void Start(int j, std::vector<int> nodes, const Spread& spread, double slowdown);
  void StopRun(int j);
  void Complete(int j);
  void Kill(int j);
  void Reserve(int head);
  void UpdateUsage();
  void Summarize();
  double Slowdown(const Job& j, const Spread& s) const {
    return 1.0 + s.outside_fraction * (j.spec->scattered_slowdown - 1.0);
  }
  void Dequeue(int j) {
    const Job& job = jobs_[j];
    queue_.erase({job.spec->submit, j});
    user_queue_[job.user].erase({job.spec->submit, j});
  }
  void Enqueue(int j) {
    Job& job = jobs_[j];
    job.state = Job::State::kQueued;
    queue_.insert({job.spec->submit, j});
    user_queue_[job.user].insert({job.spec->submit, j});
  }

  const ClusterShape shape_;
  const ClusterOptions options_;
  NodePool pool_;
  std::vector<Job> jobs_;
  std::vector<int> owner_;     // node -> running job, -1 if none
  std::vector<int> arrivals_;  // job indices by submit time
  size_t next_arrival_ = 0;
  engine::EventQueue<Event> events_;
  std::mt19937_64 rng_;

  std::set<QueueKey> queue_;
  std::vector<std::set<QueueKey>> user_queue_;
  std::set<std::pair<Time, int>> running_by_end_;
  std::vector<std::string> user_names_;
  std::vector<double> usage_;       // decayed GPU-seconds per user
  std::vector<int> running_gpus_;   // per user
  std::vector<double> share_;
  Time usage_updated_;

  // One scheduling pass.
  int head_ = -1;
  Time shadow_ = Time::Max();
  Availability unreserved_;  // free nodes minus the head's reserved ones

  Time now_;
  Time origin_;
  int done_ = 0;
  int running_ = 0;
  int busy_gpus_ = 0;
  int unused_in_node_gpus_ = 0;
  IdleReason free_reason_ = IdleReason::kNoDemand;
  ClusterResult result_;
};

void ClusterSim::Advance(Time to) {
  if (to <= now_) return;
  const int gpn = shape_.gpus_per_node;
  std::array<double, kIdleReasons> idle{};
  idle[static_cast<int>(free_reason_)] += pool_.free().total * gpn;
  idle[static_cast<int>(IdleReason::kUnusedInNode)] += unused_in_node_gpus_;
  idle[static_cast<int>(IdleReason::kDown)] += pool_.down_nodes() * gpn;
  const double queued = static_cast<double>(queue_.size());
  const double dt_all = (to - now_).seconds();
  result_.busy_gpu_s += busy_gpus_ * dt_all;
  for (int r = 0; r < kIdleReasons; ++r) result_.idle_gpu_s[r] += idle[r] * dt_all;

  // Spread over the time-series buckets the interval touches.
  const int64_t res = options_.resolution.ns();
  Time t = now_;
  while (t < to) {
    const int64_t bucket = (t - origin_).ns() / res;
    const Time bucket_end = origin_ + Time::Ns((bucket + 1) * res);
    const Time until = std::min(to, bucket_end);
    if (static_cast<int64_t>(result_.series.size()) <= bucket) {
      const size_t old = result_.series.size();
      result_.series.resize(bucket + 1);
      for (size_t b = old; b < result_.series.size(); ++b) result_.series[b].start = Time::Ns(b * res);
    }
    SeriesPoint& p = result_.series[bucket];
    const double dt = (until - t).seconds();
    p.busy_gpus += busy_gpus_ * dt;
    for (int r = 0; r < kIdleReasons; ++r) p.idle_gpus[r] += idle[r] * dt;
    p.queued_jobs += queued * dt;
    p.running_jobs += running_ * dt;
    t = until;
  }
  now_ = to;
}

void ClusterSim::UpdateUsage() {
  if (now_ <= usage_updated_) return;
  // Usage decays by 2^(-t/H); a job running at g GPUs over dt adds the
  // integral of its rate under that decay: g H / ln 2 (1 - 2^(-dt/H)).
  const double h = options_.fairshare.half_life.seconds();
  const double decay = std::exp2(-(now_ - usage_updated_).seconds() / h);
  for (size_t u = 0; u < usage_.size(); ++u) {
    usage_[u] = usage_[u] * decay + running_gpus_[u] * h / std::log(2.0) * (1.0 - decay);
  }
  usage_updated_ = now_;
}

bool ClusterSim::TryStart(int j, const Availability& avail, Time must_end_by) {
  Job& job = jobs_[j];
  if (job.nodes > avail.total) return false;
  std::vector<int> nodes = ChooseNodes(shape_, avail, job.nodes, options_.placement);
  if (nodes.empty()) return false;
  const Spread spread = SpreadOf(shape_, nodes);
  const double slowdown = Slowdown(job, spread);
  if (must_end_by != Time::Max() && now_ + job.work_left * slowdown > must_end_by) return false;
  if (spread.leaves > spread.min_leaves && options_.placement == PlacementPolicy::kTopology &&
      options_.leaf_wait > Time::Zero()) {
    if (job.shape_wait_since == Time::Max()) {
      job.shape_wait_since = now_;
      events_.Push(now_ + options_.leaf_wait, Event{EventKind::kWake, j, 0});
    }
    if (now_ - job.shape_wait_since < options_.leaf_wait) return false;
  }
  Start(j, std::move(nodes), spread, slowdown);
  return true;
}

void ClusterSim::Start(int j, std::vector<int> nodes, const Spread& spread, double slowdown) {
  Job& job = jobs_[j];
  Dequeue(j);
  pool_.Allocate(nodes);
  if (!unreserved_.node.empty()) {
    for (int n : nodes) {
      if (unreserved_.node[n]) {
        unreserved_.node[n] = 0;
        --unreserved_.per_leaf[shape_.leaf(n)];
        --unreserved_.total;
      }
    }
  }
  for (int n : nodes) owner_[n] = j;
  job.alloc = std::move(nodes);
  job.state = Job::State::kRunning;
  job.spread = spread;
  job.slowdown = slowdown;
  job.run_start = now_;
  job.run_end = now_ + job.work_left * slowdown;
  job.first_start = std::min(job.first_start, now_);
  job.shape_wait_since = Time::Max();
  ++job.epoch;
  events_.Push(job.run_end, Event{EventKind::kCompletion, j, job.epoch});
  running_by_end_.insert({job.run_end, j});
  ++running_;
  busy_gpus_ += job.spec->gpus;
  unused_in_node_gpus_ += job.nodes * shape_.gpus_per_node - job.spec->gpus;
  running_gpus_[job.user] += job.spec->gpus;
}

// Ends the current run (completion or kill): frees the nodes and books the
// time its placement cost.
void ClusterSim::StopRun(int j) {
  Job& job = jobs_[j];
  const double ran = (now_ - job.run_start).seconds();
  result_.placement_lost_gpu_s += job.spec->gpus * ran * (1.0 - 1.0 / job.slowdown);
  pool_.Release(job.alloc);
  for (int n : job.alloc) owner_[n] = -1;
  running_by_end_.erase({job.run_end, j});
  --running_;
  busy_gpus_ -= job.spec->gpus;
  unused_in_node_gpus_ -= job.nodes * shape_.gpus_per_node - job.spec->gpus;
  running_gpus_[job.user] -= job.spec->gpus;
}

void ClusterSim::Complete(int j) {
  StopRun(j);
  Job& job = jobs_[j];
  job.state = Job::State::kDone;
  job.work_left = Time::Zero();
  ++done_;
  result_.last_end = std::max(result_.last_end, now_);
}

void ClusterSim::Kill(int j) {
  Job& job = jobs_[j];
  StopRun(j);
  const Time ran = now_ - job.run_start;
  const Time done_work = Time::FromSeconds(ran.seconds() / job.slowdown);
  Time saved;
  const Time ckpt = options_.failures.checkpoint_interval;
  if (ckpt > Time::Zero()) saved = Time::Ns(done_work.ns() / ckpt.ns() * ckpt.ns());
  saved = std::min(saved, job.work_left);
  result_.lost_work_gpu_s += job.spec->gpus * (ran.seconds() - saved.seconds() * job.slowdown);
  job.work_left = job.work_left - saved;
  ++job.restarts;
  ++job.epoch;
  ++result_.jobs_killed;
  Enqueue(j);  // keeps its submit time: back near the front of the queue
}

// EASY's reservation for the head job: the earliest time enough nodes are
// free (running jobs end at known times), and the nodes the placement policy
// would give it then. Later jobs may not hold those nodes past that time.
void ClusterSim::Reserve(int head) {
  const Job& job = jobs_[head];
  const Availability& free = pool_.free();
  Availability future = free;
  shadow_ = Time::Max();
  bool waits_for_shape = false;
  if (future.total >= job.nodes) {
    shadow_ = now_;  // enough nodes, but it waits for a better shape (leaf_wait)
    waits_for_shape = true;
  } else {
    for (auto [end, r] : running_by_end_) {
      for (int n : jobs_[r].alloc) {
        future.node[n] = 1;
        ++future.per_leaf[shape_.leaf(n)];
        ++future.total;
      }
      if (future.total >= job.nodes) {
        shadow_ = end;
        break;
      }
    }
  }
  unreserved_ = free;
  if (shadow_ == Time::Max()) return;  // not enough nodes up: nothing to protect until repairs
  for (int n : ChooseNodes(shape_, future, job.nodes, options_.placement)) {
    if (unreserved_.node[n]) {
      unreserved_.node[n] = 0;
      --unreserved_.per_leaf[shape_.leaf(n)];
      --unreserved_.total;
    }
  }
  // Record the first reservation the running jobs' end times promise (a
  // job that chooses to wait for a better shape was promised nothing).
  if (!waits_for_shape && jobs_[head].reservation == Time::Max()) jobs_[head].reservation = shadow_;
}

// One queued job in scheduling order; false ends the pass.
bool ClusterSim::Visit(int j) {
  if (pool_.free().total == 0) {
    if (head_ < 0) head_ = j;
    return false;
  }
  if (head_ < 0) {
    if (TryStart(j, pool_.free(), Time::Max())) return true;
    head_ = j;
    if (options_.scheduler == SchedulerKind::kFifo) return false;
    Reserve(j);
    return true;
  }
  // Backfill: on any free nodes if it ends by the head's reserved start,
  // else only on nodes the head does not need.
  const Job& job = jobs_[j];
  if (job.nodes > pool_.free().total) return true;
  if (shadow_ == Time::Max()) {
    TryStart(j, pool_.free(), Time::Max());
    return true;
  }
  // Cheap tests first: a placement is only worth computing if the job could
  // end in time even unslowed, or fits beside the reservation.
  if (now_ + job.work_left <= shadow_ && TryStart(j, pool_.free(), shadow_)) return true;
  if (job.nodes <= unreserved_.total) TryStart(j, unreserved_, Time::Max());
  return true;
}

void ClusterSim::Pass() {
  head_ = -1;
  shadow_ = Time::Max();
  unreserved_ = Availability{};
  auto walk = [&](std::set<QueueKey>& q) {
    for (auto it = q.begin(); it != q.end();) {
      const int j = it->second;
      ++it;  // Visit may start (and so erase) j
      if (!Visit(j)) return false;
    }
    return true;
  };
  if (options_.scheduler == SchedulerKind::kFairShare) {
    UpdateUsage();
    std::vector<int> order(user_queue_.size());
    for (size_t u = 0; u < order.size(); ++u) order[u] = static_cast<int>(u);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      const double pa = usage_[a] / share_[a], pb = usage_[b] / share_[b];
      if (pa != pb) return pa < pb;
      return user_names_[a] < user_names_[b];
    });
    for (int u : order) {
      if (!walk(user_queue_[u])) break;
    }
  } else {
    walk(queue_);
  }
  if (queue_.empty()) {
    free_reason_ = IdleReason::kNoDemand;
  } else {
    if (head_ < 0) head_ = queue_.begin()->second;
    free_reason_ = jobs_[head_].nodes <= pool_.free().total ? IdleReason::kFragmentation : IdleReason::kHeadBlocked;
  }
}

ClusterResult ClusterSim::Run() {
  result_.shape = shape_;
  result_.options = options_;
  if (jobs_.empty()) return result_;
  origin_ = jobs_[arrivals_.front()].spec->submit;
  now_ = origin_;
  usage_updated_ = origin_;
  result_.first_submit = origin_;
  result_.last_end = origin_;
  const FailureOptions& f = options_.failures;
  // Node failures: a Poisson process of rate nodes / MTBF over the cluster,
  // each hitting a node drawn uniformly (a failed node that fails "again"
  // while down is a no-op).
  auto next_failure = [&]() {
    const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
    return now_ + Time::FromSeconds(-std::log(1.0 - u) * f.node_mtbf.seconds() / shape_.nodes);
  };
  if (f.node_mtbf > Time::Zero()) events_.Push(next_failure(), Event{EventKind::kFailure, -1, 0});

  const int total = static_cast<int>(jobs_.size());
  while (done_ < total) {
    Time next = Time::Max();
    if (next_arrival_ < arrivals_.size()) next = jobs_[arrivals_[next_arrival_]].spec->submit;
    if (!events_.empty()) next = std::min(next, events_.Top().time);
    if (next == Time::Max()) break;  // cannot happen: a queued job always fits an all-up cluster
    Advance(next);
    while (next_arrival_ < arrivals_.size() && jobs_[arrivals_[next_arrival_]].spec->submit == now_) {
      Enqueue(arrivals_[next_arrival_++]);
      ++result_.events;
    }
    while (!events_.empty() && events_.Top().time == now_) {
      const Event e = events_.Pop().payload;
      ++result_.events;
      switch (e.kind) {
        case EventKind::kCompletion:
          if (jobs_[e.id].state == Job::State::kRunning && jobs_[e.id].epoch == e.epoch) Complete(e.id);
          break;
        case EventKind::kFailure: {
          const int node = static_cast<int>(rng_() % static_cast<uint64_t>(shape_.nodes));
          if (!pool_.is_down(node)) {
            ++result_.node_failures;
            if (owner_[node] >= 0) Kill(owner_[node]);
            pool_.MarkDown(node);
            events_.Push(now_ + f.repair_time, Event{EventKind::kRepair, node, 0});
          }
          events_.Push(next_failure(), Event{EventKind::kFailure, -1, 0});
          break;
        }
        case EventKind::kRepair:
          pool_.MarkUp(e.id);
          break;
        case EventKind::kWake:
          break;  // the pass below looks at the job again
      }
    }
    Pass();
  }
  Summarize();
  return result_;
}

void ClusterSim::Summarize() {
  ClusterResult& r = result_;
  r.makespan = r.last_end - r.first_submit;
  r.total_gpu_s = static_cast<double>(shape_.gpus()) * r.makespan.seconds();
  r.utilization = r.total_gpu_s > 0 ? r.busy_gpu_s / r.total_gpu_s : 0;
  std::vector<Time> waits;
  double slowed_sum = 0;
  for (const Job& j : jobs_) {
    JobOutcome o;
    o.id = j.spec->id;
    o.user = j.spec->user;
    o.gpus = j.spec->gpus;
    o.nodes = j.nodes;
    o.submit = j.spec->submit;
    o.start = j.first_start;
    o.end = j.run_end;
    o.wait = j.first_start - j.spec->submit;
    o.duration = j.spec->duration;
    o.placement_slowdown = j.slowdown;
    o.leaves = j.spread.leaves;
    o.min_leaves = j.spread.min_leaves;
    o.restarts = j.restarts;
    o.reservation = j.reservation;
    waits.push_back(o.wait);
    if (j.slowdown > 1.0) {
      ++r.jobs_slowed;
      slowed_sum += j.slowdown;
      r.max_slowdown = std::max(r.max_slowdown, j.slowdown);
    }
    r.jobs.push_back(std::move(o));
  }
  if (r.jobs_slowed > 0) r.mean_slowdown_of_slowed = slowed_sum / r.jobs_slowed;
  if (!waits.empty()) {
    std::sort(waits.begin(), waits.end());
    double sum = 0;
    for (Time w : waits) sum += w.seconds();
    r.wait.mean = Time::FromSeconds(sum / static_cast<double>(waits.size()));
    // Nearest rank: a wait some job had (sim/util/statistics.h).
    r.wait.p50 = NearestRankQuantile(waits, 0.50);
    r.wait.p90 = NearestRankQuantile(waits, 0.90);
    r.wait.p99 = NearestRankQuantile(waits, 0.99);
    r.wait.max = waits.back();
  }
  // Buckets hold GPU-seconds so far: make them averages over their length
  // (the last one may be cut short by the end of the run).
  const double res = options_.resolution.seconds();
  for (size_t b = 0; b < r.series.size(); ++b) {
    const double len = std::min(res, r.makespan.seconds() - static_cast<double>(b) * res);
    if (len <= 0) continue;
    SeriesPoint& p = r.series[b];
    p.busy_gpus /= len;
    for (double& g : p.idle_gpus) g /= len;
    p.queued_jobs /= len;
    p.running_jobs /= len;
  }
}

}  // namespace

const char* SchedulerName(SchedulerKind s) {
  switch (s) {
    case SchedulerKind::kFifo: return "fifo";
    case SchedulerKind::kBackfill: return "backfill";
    case SchedulerKind::kFairShare: return "fairshare";
  }
  return "?";
}

SchedulerKind ParseScheduler(const std::string& name, const std::string& origin) {
  if (name == "fifo") return SchedulerKind::kFifo;
  if (name == "backfill") return SchedulerKind::kBackfill;
  if (name == "fairshare") return SchedulerKind::kFairShare;
  throw InputError(origin, "", "unknown scheduler '" + name + "' (fifo, backfill, fairshare)");
}

PlacementPolicy ParsePlacement(const std::string& name, const std::string& origin) {
  if (name == "topology") return PlacementPolicy::kTopology;
  if (name == "first-fit") return PlacementPolicy::kFirstFit;
  throw InputError(origin, "", "unknown placement '" + name + "' (topology, first-fit)");
}

const char* IdleReasonName(IdleReason r) {
  switch (r) {
    case IdleReason::kNoDemand: return "no_demand";
    case IdleReason::kHeadBlocked: return "head_blocked";
    case IdleReason::kFragmentation: return "fragmentation";
    case IdleReason::kUnusedInNode: return "unused_in_node";
    case IdleReason::kDown: return "down";
  }
  return "?";
}

ClusterResult RunCluster(const ClusterShape& shape, const std::vector<JobSpec>& jobs, const ClusterOptions& options) {
  ClusterSim sim(shape, jobs, options);
  return sim.Run();
}

}  // namespace stacksim::cluster
