#include "sim/engine/engine.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/engine/event_queue.h"
#include "sim/engine/link_sharing.h"

namespace stacksim::engine {
namespace {

using trace::TaskId;
using trace::TaskKind;

inline constexpr int kCollectiveKinds = 5;  // values of trace::CollectiveKind

enum class EventKind : uint8_t {
  kTaskEnd,      // id: a compute or delay task
  kLatencyEnd,   // id: a communication op whose latency phase ended
  kTransferEnd,  // id: a communication op with nothing to send
};

struct EventPayload {
  EventKind kind;
  int32_t id;
};

enum class TaskState : uint8_t { kWaiting, kReady, kStarted, kFinished };

// One communication operation: all tasks of a collective instance, or one
// single-task collective, or one transfer. Its transfer phase goes to the
// FlowSession, which shares bandwidth with the other active ones.
struct CommOp {
  int32_t members_begin = 0;  // range in Replayer::op_members_, ascending task ids
  int32_t members_count = 0;
  int32_t ready_count = 0;    // members ready so far
  uint8_t links = kNoLinks;   // CommCost::links
  Time latency;
  Time transfer;              // unshared transfer time
};

// The state of one replay. Everything is a flat vector indexed by task id or
// op id, built once before the event loop.
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
  void DrainSession();
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

  // Compute times per distinct op (Trace::compute_ref) and rank, as the cost
  // model gave them; kUnknown before the first ask. Empty when the table
  // would be larger than the trace (imported traces of all-distinct ops).
  static constexpr Time kUnknown = Time::Ns(std::numeric_limits<int64_t>::min());
  std::vector<Time> compute_time_;
  std::vector<Time> beside_comm_time_;  // the same, for ops that start beside a collective
  Time ComputeTime(TaskId t);

  // Collectives in flight per rank (started, not ended): a compute task that
  // starts while its rank has one takes the cost model's contended time.
  std::vector<int32_t> collectives_in_flight_;

  // Communication.
  std::vector<int32_t> op_of_task_;  // -1 for compute and delay tasks
  std::vector<CommOp> ops_;
  std::vector<TaskId> op_members_;

  // Algorithms already reported, per (group, collective kind).
  std::vector<std::vector<std::string>> algorithms_seen_;

  // Numbers the events of both events_ and an EqualShareLinks session, so
  // their ties merge in the order they were scheduled.
  uint64_t event_seq_ = 0;
  EventQueue<EventPayload> events_{&event_seq_};

  // Shares bandwidth among transfer phases: the network model's, or EqualShareLinks.
  std::unique_ptr<FlowSession> session_;
  std::vector<TaskId> completed_;  // scratch: what AdvanceTo gave
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
    TaskId& last = last_on_stream[static_cast<size_t>(trace_.rank(t)) * streams + trace_.stream(t)];
    if (last >= 0) {
      stream_next_[last] = t;
      ++pending_[t];
    }
    last = t;
    pending_[t] += trace_.dep_count(t);
    for (const TaskId* d = trace_.deps_begin(t); d != trace_.deps_end(t); ++d) ++succ_begin_[*d];
  }
  for (size_t i = 0; i < n; ++i) succ_begin_[i + 1] += succ_begin_[i];
  succ_.resize(succ_begin_[n]);
  // succ_begin_[d] is now the end of d's range. Fill each range from its end
  // down, with succ_begin_[d] as the cursor, which leaves it at the range's
  // start; going through the tasks backwards keeps each range ascending (the
  // order in which Finish releases successors).
  for (TaskId t = static_cast<TaskId>(n) - 1; t >= 0; --t) {
    const TaskId* begin = trace_.deps_begin(t);
    for (const TaskId* d = trace_.deps_end(t); d != begin;) {
      --d;
      succ_[--succ_begin_[*d]] = t;
    }
  }
}

void Replayer::BuildCommOps() {
  const size_t n = trace_.size();
  op_of_task_.assign(n, -1);
  // The op of each collective instance: a vector for the generator's dense
  // instance numbers, a map for anything sparser.
  int32_t max_instance = -1;
  for (TaskId t = 0; t < static_cast<TaskId>(n); ++t) {
    if (trace_.kind(t) == TaskKind::kCollective) max_instance = std::max(max_instance, trace_.instance(t));
  }
  const bool dense = static_cast<int64_t>(max_instance) < static_cast<int64_t>(4 * n + 1024);
  std::vector<int32_t> dense_op(dense ? static_cast<size_t>(max_instance) + 1 : 0, -1);
  std::unordered_map<int32_t, int32_t> sparse_op;
  std::vector<int32_t> member_count;
  for (TaskId t = 0; t < static_cast<TaskId>(n); ++t) {
    const TaskKind kind = trace_.kind(t);
    if (kind != TaskKind::kCollective && kind != TaskKind::kTransfer) continue;
    int32_t op = static_cast<int32_t>(member_count.size());
    const int32_t instance = kind == TaskKind::kCollective ? trace_.instance(t) : -1;
    if (instance >= 0) {
      int32_t& known = dense ? dense_op[instance] : sparse_op.try_emplace(instance, -1).first->second;
      if (known < 0) {
        known = op;
        member_count.push_back(0);
      }
      op = known;
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

  algorithms_seen_.assign(trace_.groups().size() * kCollectiveKinds, {});
}

ReplayResult Replayer::Run() {
  std::string problem = trace_.Check();
  if (!problem.empty()) throw std::logic_error("Engine::Replay: invalid trace: " + problem);

  BuildGraph();
  BuildCommOps();
  const size_t n = trace_.size();
  const size_t memo = trace_.compute_op_count() * static_cast<size_t>(trace_.rank_count());
  if (memo <= std::max<size_t>(n, size_t{1} << 16)) {
    compute_time_.assign(memo, kUnknown);
    beside_comm_time_.assign(memo, kUnknown);
  }
  collectives_in_flight_.assign(static_cast<size_t>(trace_.rank_count()), 0);
  result_.timings.assign(n, TaskTiming{});
  result_.contention.assign(n, Time::Zero());
  events_.Reserve(1024);

  session_ = network_.StartSession(trace_);
  if (!session_) session_ = std::make_unique<EqualShareLinks>(trace_, &event_seq_);
  for (TaskId t = 0; t < static_cast<TaskId>(n); ++t) {
    if (pending_[t] == 0) StartTask(t, Time::Zero());
  }
  for (;;) {
    DrainSession();
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
      case EventKind::kTransferEnd:
        EndCommOp(e.payload.id, now);
        break;
    }
  }
  if (finished_ != n) ThrowDeadlock();
  result_.bottlenecks = session_->ContentionReport();
  return std::move(result_);
}

// Ends every communication whose flows the session completes before the
// next queued event, by FlowSession's tie rule, in the order AdvanceTo
// gives them. A completion may queue events earlier than the one waiting
// (a zero-length task), so the queue's top is re-read each round.
void Replayer::DrainSession() {
  for (;;) {
    const Time t = session_->NextCompletion();
    if (t == Time::Max() && session_->NextCompletionOrder() == 0) return;  // none
    if (!events_.empty()) {
      const auto& next = events_.Top();
      if (t > next.time || (t == next.time && session_->NextCompletionOrder() > next.seq)) return;
    }
    completed_.clear();
    session_->AdvanceTo(t, &completed_);
    for (TaskId task : completed_) EndCommOp(op_of_task_[task], t);
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
  state_[t] = TaskState::kReady;
  Time duration;
  switch (trace_.kind(t)) {
    case TaskKind::kCompute:
      duration = ComputeTime(t);
      break;
    case TaskKind::kDelay:
      duration = trace_.task(t).duration;
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
  events_.Push(CheckedSum(now, duration), EventPayload{EventKind::kTaskEnd, t});
}

Time Replayer::ComputeTime(TaskId t) {
  const trace::Trace::ComputeRef ref = trace_.compute_ref(t);
  const trace::RankId rank = trace_.rank(t);
  const bool beside = collectives_in_flight_[rank] > 0;
  auto ask = [&] {
    return beside ? cost_.ComputeTimeBesideComm(trace_.compute(t), rank)
                  : cost_.ComputeTimeOnRank(trace_.compute(t), rank);
  };
  if (ref < 0 || compute_time_.empty()) return ask();
  std::vector<Time>& table = beside ? beside_comm_time_ : compute_time_;
  Time& known = table[static_cast<size_t>(ref) * trace_.rank_count() + rank];
  if (known == kUnknown) {
    const Time d = ask();
    if (d < Time::Zero()) return d;  // StartTask reports it
    known = d;
  }
  return known;
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

// Every member of `op` is ready at `now`: price it and start its latency phase.
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
  op.links = cost.links;

  for (int32_t i = 0; i < op.members_count; ++i) {
    TaskId m = op_members_[op.members_begin + i];
    state_[m] = TaskState::kStarted;
    result_.timings[m].start = now;
    if (task.kind == TaskKind::kCollective) ++collectives_in_flight_[trace_.rank(m)];
  }
  if (op.latency > Time::Zero()) {
    events_.Push(CheckedSum(now, op.latency), EventPayload{EventKind::kLatencyEnd, op_id});
  } else {
    StartTransferPhase(op_id, now);
  }
}

void Replayer::StartTransferPhase(int32_t op_id, Time now) {
  const CommOp& op = ops_[op_id];
  if (op.transfer > Time::Zero()) {
    const TaskId* members = op_members_.data() + op.members_begin;
    session_->Start(CommPhase{members[0], {members, static_cast<size_t>(op.members_count)}, op.transfer, op.links},
                    now);
    return;
  }
  // Nothing to send. Ends go through the queue even at `now`, so long chains never recurse.
  events_.Push(now, EventPayload{EventKind::kTransferEnd, op_id});
}

void Replayer::EndCommOp(int32_t op_id, Time now) {
  const CommOp& op = ops_[op_id];
  // Every member leaves its rank's count before any successor starts.
  for (int32_t i = 0; i < op.members_count; ++i) {
    TaskId m = op_members_[op.members_begin + i];
    if (trace_.kind(m) == TaskKind::kCollective) --collectives_in_flight_[trace_.rank(m)];
  }
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
