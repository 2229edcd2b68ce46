#include "sim/engine/engine.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/engine/event_queue.h"

namespace stacksim::engine {
namespace {

using trace::RankId;
using trace::TaskId;
using trace::TaskKind;

inline constexpr int kCollectiveKinds = 5;  // values of trace::CollectiveKind
inline constexpr int kLinksPerRank = 2;     // kScaleUpLink, kScaleOutLink

enum class EventKind : uint8_t {
  kTaskEnd,      // id: a compute or delay task
  kLatencyEnd,   // id: a communication op whose latency phase ended
  kTransferEnd,  // id: a communication op; stale unless version matches
};

struct EventPayload {
  EventKind kind;
  uint32_t version;
  int32_t id;
};

enum class TaskState : uint8_t { kWaiting, kReady, kStarted, kFinished };

// One communication operation: all tasks of a collective instance, or one
// single-task collective, or one transfer. Its transfer phase is a flow that
// shares links with the other active flows.
struct CommOp {
  int32_t members_begin = 0;  // range in Replayer::op_members_, ascending task ids
  int32_t members_count = 0;
  int32_t ready_count = 0;    // members ready so far
  int32_t res_begin = 0;      // range in Replayer::res_pool_ (rank * 2 + link)
  int32_t res_count = 0;
  int32_t share = 1;          // flows on its busiest resource; progresses at 1/share
  uint32_t version = 0;       // bumped whenever its end is rescheduled
  Time latency;
  Time transfer;              // unshared transfer time
  Time last_update;           // when `remaining` was last brought up to date
  double remaining = 0;       // unshared transfer work left, ns
};

// The state of one replay. Everything is a flat vector indexed by task id,
// op id or resource id, built once before the event loop.
class Replayer {
 public:
  Replayer(const CostModel& cost, const NetworkModel& network, const trace::Trace& trace)
      : cost_(cost), network_(network), trace_(trace) {}

  ReplayResult Run();

 private:
  void BuildGraph();
  void BuildCommOps();

  void Release(TaskId t, Time now);
  void StartTask(TaskId t, Time now);
  void Finish(TaskId t, Time now);
  void StartCommOp(int32_t op, Time now);
  void StartTransferPhase(int32_t op, Time now);
  void EndCommOp(int32_t op, Time now);
  void DrainSession(Time horizon);
  void JoinOrLeave(int32_t op, Time now, bool join);
  int32_t ShareOf(const CommOp& op) const;
  void ScheduleTransferEnd(int32_t op, Time now);
  void NoteAlgorithm(const trace::Task& task, const std::string& algorithm);
  [[noreturn]] void ThrowDeadlock() const;
  std::string Describe(TaskId t) const;

  const CostModel& cost_;
  const NetworkModel& network_;
  const trace::Trace& trace_;
  ReplayResult result_;

  // Task graph. A task waits for `pending_` releases: one per explicit
  // dependency and one from its stream predecessor.
  std::vector<int32_t> pending_;
  std::vector<TaskState> state_;
  std::vector<TaskId> stream_next_;  // next task on the same (rank, stream), or -1
  std::vector<int32_t> succ_begin_;  // CSR: successors of t are succ_[succ_begin_[t], succ_begin_[t+1])
  std::vector<TaskId> succ_;
  size_t finished_ = 0;

  // Communication.
  std::vector<int32_t> op_of_task_;  // -1 for compute and delay tasks
  std::vector<CommOp> ops_;
  std::vector<TaskId> op_members_;
  std::vector<int32_t> res_pool_;
  std::vector<std::vector<int32_t>> res_flows_;  // active flows per (rank, link)
  std::vector<uint32_t> op_mark_;                // scratch: epoch stamps per op
  std::vector<uint32_t> rank_mark_;              // scratch: epoch stamps per rank
  std::vector<int32_t> affected_;                // scratch
  uint32_t epoch_ = 0;

  // Algorithms already reported, per (group, collective kind).
  std::vector<std::vector<std::string>> algorithms_seen_;

  EventQueue<EventPayload> events_;

  // Flow-level network: when present it shares bandwidth among transfer
  // phases instead of JoinOrLeave.
  std::unique_ptr<FlowSession> session_;
};

void Replayer::BuildGraph() {
  const size_t n = trace_.size();
  const size_t streams = trace_.streams().size();
  pending_.assign(n, 0);
  state_.assign(n, TaskState::kWaiting);
  stream_next_.assign(n, -1);
  succ_begin_.assign(n + 1, 0);

  std::vector<TaskId> last_on_stream(static_cast<size_t>(trace_.rank_count()) * streams, -1);
  for (TaskId t = 0; t < static_cast<TaskId>(n); ++t) {
    const trace::Task& task = trace_.task(t);
    TaskId& last = last_on_stream[static_cast<size_t>(task.rank) * streams + task.stream];
    if (last >= 0) {
      stream_next_[last] = t;
      ++pending_[t];
    }
    last = t;
    pending_[t] += task.dep_count;
    for (const TaskId* d = trace_.deps_begin(t); d != trace_.deps_end(t); ++d) ++succ_begin_[*d + 1];
  }
  for (size_t i = 0; i < n; ++i) succ_begin_[i + 1] += succ_begin_[i];
  succ_.resize(succ_begin_[n]);
  std::vector<int32_t> fill(succ_begin_.begin(), succ_begin_.end() - 1);
  for (TaskId t = 0; t < static_cast<TaskId>(n); ++t) {
    for (const TaskId* d = trace_.deps_begin(t); d != trace_.deps_end(t); ++d) succ_[fill[*d]++] = t;
  }
}

void Replayer::BuildCommOps() {
  const size_t n = trace_.size();
  op_of_task_.assign(n, -1);
  std::unordered_map<int32_t, int32_t> op_of_instance;
  std::vector<int32_t> member_count;
  for (TaskId t = 0; t < static_cast<TaskId>(n); ++t) {
    const trace::Task& task = trace_.task(t);
    if (task.kind != TaskKind::kCollective && task.kind != TaskKind::kTransfer) continue;
    int32_t op = static_cast<int32_t>(member_count.size());
    if (task.kind == TaskKind::kCollective && task.comm.instance >= 0) {
      auto [it, added] = op_of_instance.emplace(task.comm.instance, op);
      op = it->second;
      if (added) member_count.push_back(0);
    } else {
      member_count.push_back(0);
    }
    op_of_task_[t] = op;
    ++member_count[op];
  }

  ops_.assign(member_count.size(), CommOp{});
  int32_t begin = 0;
  for (size_t op = 0; op < ops_.size(); ++op) {
    ops_[op].members_begin = begin;
    begin += member_count[op];
  }
  op_members_.resize(begin);
  for (TaskId t = 0; t < static_cast<TaskId>(n); ++t) {
    int32_t op = op_of_task_[t];
    if (op < 0) continue;
    CommOp& o = ops_[op];
    op_members_[o.members_begin + o.members_count++] = t;
  }

  res_flows_.assign(static_cast<size_t>(trace_.rank_count()) * kLinksPerRank, {});
  op_mark_.assign(ops_.size(), 0);
  rank_mark_.assign(trace_.rank_count(), 0);
  algorithms_seen_.assign(trace_.groups().size() * kCollectiveKinds, {});
}

ReplayResult Replayer::Run() {
  std::string problem = trace_.Check();
  if (!problem.empty()) throw std::logic_error("Engine::Replay: invalid trace: " + problem);

  BuildGraph();
  BuildCommOps();
  const size_t n = trace_.size();
  result_.timings.assign(n, TaskTiming{});
  result_.contention.assign(n, Time::Zero());
  events_.Reserve(1024);

  session_ = network_.StartSession(trace_);
  for (TaskId t = 0; t < static_cast<TaskId>(n); ++t) {
    if (pending_[t] == 0) StartTask(t, Time::Zero());
  }
  for (;;) {
    if (session_) DrainSession(events_.empty() ? Time::Max() : events_.Top().time);
    if (events_.empty()) break;
    const auto e = events_.Pop();
    const Time now = e.time;
    switch (e.payload.kind) {
      case EventKind::kTaskEnd:
        Finish(e.payload.id, now);
        break;
      case EventKind::kLatencyEnd:
        StartTransferPhase(e.payload.id, now);
        break;
      case EventKind::kTransferEnd: {
        CommOp& op = ops_[e.payload.id];
        if (e.payload.version != op.version) break;  // rescheduled since
        if (op.res_count > 0) JoinOrLeave(e.payload.id, now, /*join=*/false);
        EndCommOp(e.payload.id, now);
        break;
      }
    }
  }
  if (finished_ != n) ThrowDeadlock();
  if (session_) result_.bottlenecks = session_->ContentionReport();
  return std::move(result_);
}

// Ends every communication whose flows the session completes at or before
// `horizon` (the next queued event). Rule for ties: session completions at
// time t come before queue events at t, and ops completed together end in the
// order AdvanceTo returns them. A completion may queue new events earlier
// than `horizon` (a zero-length task), so the horizon is re-read each round.
void Replayer::DrainSession(Time horizon) {
  for (;;) {
    Time t = session_->NextCompletion();
    if (t == Time::Max() || t > horizon) return;
    for (TaskId task : session_->AdvanceTo(t)) EndCommOp(op_of_task_[task], t);
    if (!events_.empty() && events_.Top().time < horizon) horizon = events_.Top().time;
  }
}

// One of t's releases (a finished dependency or stream predecessor) at `now`.
void Replayer::Release(TaskId t, Time now) {
  TaskTiming& timing = result_.timings[t];
  if (timing.ready < now) timing.ready = now;
  if (--pending_[t] == 0) StartTask(t, now);
}

// t is ready at `now`; compute and delay tasks start at once, communication
// starts when its whole op is ready.
void Replayer::StartTask(TaskId t, Time now) {
  const trace::Task& task = trace_.task(t);
  state_[t] = TaskState::kReady;
  Time duration;
  switch (task.kind) {
    case TaskKind::kCompute:
      duration = cost_.ComputeTimeOnRank(task.compute, task.rank);
      break;
    case TaskKind::kDelay:
      duration = task.duration;
      break;
    case TaskKind::kCollective:
    case TaskKind::kTransfer: {
      int32_t op = op_of_task_[t];
      if (++ops_[op].ready_count == ops_[op].members_count) StartCommOp(op, now);
      return;
    }
  }
  if (duration < Time::Zero()) {
    throw std::logic_error("Engine::Replay: cost model gave a negative time for " + Describe(t));
  }
  state_[t] = TaskState::kStarted;
  result_.timings[t].start = now;
  events_.Push(CheckedSum(now, duration), EventPayload{EventKind::kTaskEnd, 0, t});
}

void Replayer::Finish(TaskId t, Time now) {
  state_[t] = TaskState::kFinished;
  result_.timings[t].end = now;
  if (result_.makespan < now) result_.makespan = now;
  ++finished_;
  for (int32_t i = succ_begin_[t]; i < succ_begin_[t + 1]; ++i) Release(succ_[i], now);
  if (stream_next_[t] >= 0) Release(stream_next_[t], now);
}

void Replayer::NoteAlgorithm(const trace::Task& task, const std::string& algorithm) {
  std::vector<std::string>& seen =
      algorithms_seen_[static_cast<size_t>(task.comm.group) * kCollectiveKinds + static_cast<int>(task.comm.kind)];
  if (std::find(seen.begin(), seen.end(), algorithm) != seen.end()) return;
  seen.push_back(algorithm);
  result_.algorithms.push_back(std::string(trace::CollectiveName(task.comm.kind)) + " " +
                               trace_.group(task.comm.group).name + ": " + algorithm);
}

// Every member of `op` is ready at `now`: price it, start its latency phase
// and note which (rank, link) resources its transfer phase will hold.
void Replayer::StartCommOp(int32_t op_id, Time now) {
  CommOp& op = ops_[op_id];
  const TaskId first = op_members_[op.members_begin];
  const trace::Task& task = trace_.task(first);
  CommCost cost;
  if (task.kind == TaskKind::kCollective) {
    cost = network_.Collective(task.comm, trace_.group(task.comm.group));
    NoteAlgorithm(task, cost.algorithm);
  } else {
    cost = network_.Transfer(task.transfer, trace_.group(task.transfer.group));
  }
  if (cost.latency < Time::Zero() || cost.transfer < Time::Zero()) {
    throw std::logic_error("Engine::Replay: network model gave a negative time for " + Describe(first));
  }
  op.latency = cost.latency;
  op.transfer = cost.transfer;

  op.res_begin = static_cast<int32_t>(res_pool_.size());
  if (cost.links != kNoLinks && cost.transfer > Time::Zero()) {
    ++epoch_;
    auto add_rank = [&](RankId r) {
      if (rank_mark_[r] == epoch_) return;
      rank_mark_[r] = epoch_;
      if (cost.links & kScaleUpLink) res_pool_.push_back(r * kLinksPerRank + 0);
      if (cost.links & kScaleOutLink) res_pool_.push_back(r * kLinksPerRank + 1);
    };
    for (int32_t i = 0; i < op.members_count; ++i) add_rank(trace_.task(op_members_[op.members_begin + i]).rank);
    if (task.kind == TaskKind::kTransfer) add_rank(task.transfer.dst);
  }
  op.res_count = static_cast<int32_t>(res_pool_.size()) - op.res_begin;

  for (int32_t i = 0; i < op.members_count; ++i) {
    TaskId m = op_members_[op.members_begin + i];
    state_[m] = TaskState::kStarted;
    result_.timings[m].start = now;
  }
  if (op.latency > Time::Zero()) {
    events_.Push(CheckedSum(now, op.latency), EventPayload{EventKind::kLatencyEnd, 0, op_id});
  } else {
    StartTransferPhase(op_id, now);
  }
}

void Replayer::StartTransferPhase(int32_t op_id, Time now) {
  CommOp& op = ops_[op_id];
  if (session_ && op.transfer > Time::Zero()) {
    session_->Start(op_members_[op.members_begin], now);
    return;
  }
  if (op.res_count == 0) {
    // Nothing shared (or nothing to send): it takes its unshared time. Ends
    // go through the queue even at `now`, so long chains never recurse.
    events_.Push(CheckedSum(now, op.transfer), EventPayload{EventKind::kTransferEnd, op.version, op_id});
    return;
  }
  JoinOrLeave(op_id, now, /*join=*/true);
}

// Flows on the op's busiest resource, the op included once it has joined.
int32_t Replayer::ShareOf(const CommOp& op) const {
  size_t share = 1;
  for (int32_t i = op.res_begin; i < op.res_begin + op.res_count; ++i) {
    share = std::max(share, res_flows_[res_pool_[i]].size());
  }
  return static_cast<int32_t>(share);
}

void Replayer::ScheduleTransferEnd(int32_t op_id, Time now) {
  CommOp& op = ops_[op_id];
  ++op.version;
  double left = std::max(0.0, op.remaining * op.share);
  // llround of a double past int64 is unspecified: saturate, and let the sum fail.
  const Time dt = left < 9.2e18 ? Time::Ns(std::llround(left)) : Time::Max();
  events_.Push(CheckedSum(now, dt), EventPayload{EventKind::kTransferEnd, op.version, op_id});
}

// Processor sharing: `op`'s transfer phase starts (join) or ends (leave) at
// `now`. Only flows sharing one of its resources can change rate; each is
// brought up to date at its old rate, then rescheduled if its rate changed.
void Replayer::JoinOrLeave(int32_t op_id, Time now, bool join) {
  CommOp& op = ops_[op_id];
  ++epoch_;
  affected_.clear();
  op_mark_[op_id] = epoch_;
  for (int32_t i = op.res_begin; i < op.res_begin + op.res_count; ++i) {
    for (int32_t other : res_flows_[res_pool_[i]]) {
      if (op_mark_[other] == epoch_) continue;
      op_mark_[other] = epoch_;
      affected_.push_back(other);
      CommOp& o = ops_[other];
      o.remaining -= static_cast<double>((now - o.last_update).ns()) / o.share;
      o.last_update = now;
    }
  }
  for (int32_t i = op.res_begin; i < op.res_begin + op.res_count; ++i) {
    std::vector<int32_t>& flows = res_flows_[res_pool_[i]];
    if (join) {
      flows.push_back(op_id);
    } else {
      auto it = std::find(flows.begin(), flows.end(), op_id);
      *it = flows.back();
      flows.pop_back();
    }
  }
  for (int32_t other : affected_) {
    CommOp& o = ops_[other];
    int32_t share = ShareOf(o);
    if (share == o.share) continue;
    o.share = share;
    ScheduleTransferEnd(other, now);
  }
  if (join) {
    op.remaining = static_cast<double>(op.transfer.ns());
    op.last_update = now;
    op.share = ShareOf(op);
    ScheduleTransferEnd(op_id, now);
  }
}

void Replayer::EndCommOp(int32_t op_id, Time now) {
  const CommOp& op = ops_[op_id];
  for (int32_t i = 0; i < op.members_count; ++i) {
    TaskId m = op_members_[op.members_begin + i];
    result_.contention[m] = now - (result_.timings[m].start + op.latency + op.transfer);
    Finish(m, now);
  }
}

std::string Replayer::Describe(TaskId t) const {
  const trace::Task& task = trace_.task(t);
  return "task " + std::to_string(t) + " '" + trace_.name(task.name) + "' (rank " + std::to_string(task.rank) +
         ", stream '" + trace_.stream_name(task.stream) + "')";
}

// The queue ran dry with tasks left. Every task before the first unfinished
// one has finished, so that one's dependencies all finished: it is ready and
// can only be a collective waiting for a member that will never be ready.
void Replayer::ThrowDeadlock() const {
  TaskId stuck = 0;
  while (state_[stuck] == TaskState::kFinished) ++stuck;
  std::string msg = "Engine::Replay: deadlock: " + Describe(stuck);
  int32_t op_id = op_of_task_[stuck];
  if (op_id >= 0 && state_[stuck] == TaskState::kReady) {
    const CommOp& op = ops_[op_id];
    msg += " is ready but collective instance " + std::to_string(trace_.task(stuck).comm.instance) +
           " also needs";
    for (int32_t i = 0; i < op.members_count; ++i) {
      TaskId m = op_members_[op.members_begin + i];
      if (state_[m] == TaskState::kWaiting) {
        msg += " " + Describe(m) + ", which never becomes ready";
        break;
      }
    }
  } else {
    msg += " never started";
  }
  throw std::logic_error(msg);
}

}  // namespace

ReplayResult Engine::Replay(const trace::Trace& trace) const {
  Replayer replayer(cost_, network_, trace);
  return replayer.Run();
}

}  // namespace stacksim::engine
