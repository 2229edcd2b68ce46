#include "sim/simulate/attribution.h"

#include <algorithm>

namespace stacksim::simulate {
namespace {

using trace::TaskId;

Time Overlap(Time a0, Time a1, Time b0, Time b1) {
  Time lo = std::max(a0, b0), hi = std::min(a1, b1);
  return hi > lo ? hi - lo : Time::Zero();
}

// Which breakdown bucket a task's busy time goes to.
Time* Bucket(Breakdown& b, trace::TaskRole role) {
  switch (role) {
    case trace::TaskRole::kGemm: return &b.gemm;
    case trace::TaskRole::kAttention: return &b.attention;
    case trace::TaskRole::kMemoryBound: return &b.memory_bound;
    case trace::TaskRole::kOptimizer: return &b.optimizer;
    case trace::TaskRole::kTpComm: return &b.tp_exposed;
    case trace::TaskRole::kDpComm: return &b.dp_exposed;
    case trace::TaskRole::kPpComm: return &b.pp_exposed;
    case trace::TaskRole::kEpComm: return &b.ep_exposed;
    case trace::TaskRole::kOffload: return &b.offload_exposed;
    case trace::TaskRole::kOther:
    case trace::TaskRole::kHostSync: return &b.other;
  }
  return &b.other;
}

// The spans of the rank's tasks off the compute stream that have `role`, as
// disjoint intervals sorted by start: its data-parallel communication
// (kDpComm), or its host work (kOther: a framework's Python loops between
// its collectives).
std::vector<std::pair<Time, Time>> Busy(const trace::Trace& t, const engine::ReplayResult& r,
                                        const std::vector<TaskId>& rank_tasks, trace::StreamId compute,
                                        trace::TaskRole role) {
  std::vector<std::pair<Time, Time>> spans;
  for (TaskId i : rank_tasks) {
    if (t.stream(i) == compute || t.role(i) != role) continue;
    if (r.timings[i].end > r.timings[i].start) spans.emplace_back(r.timings[i].start, r.timings[i].end);
  }
  std::sort(spans.begin(), spans.end());
  std::vector<std::pair<Time, Time>> merged;
  for (const auto& s : spans) {
    if (!merged.empty() && s.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, s.second);
    } else {
      merged.push_back(s);
    }
  }
  return merged;
}

// How much of [lo, hi) the disjoint sorted intervals cover.
Time Covered(const std::vector<std::pair<Time, Time>>& spans, Time lo, Time hi) {
  Time sum = Time::Zero();
  auto it = std::lower_bound(spans.begin(), spans.end(), lo,
                             [](const std::pair<Time, Time>& s, Time v) { return s.second <= v; });
  for (; it != spans.end() && it->first < hi; ++it) sum += Overlap(lo, hi, it->first, it->second);
  return sum;
}

// How much of [lo, hi) `host` covers while `dp` does not.
Time HostOnly(const std::vector<std::pair<Time, Time>>& host, const std::vector<std::pair<Time, Time>>& dp, Time lo,
              Time hi) {
  Time sum = Time::Zero();
  for (const auto& [h0, h1] : host) {
    const Time a = std::max(lo, h0), b = std::min(hi, h1);
    if (b > a) sum += (b - a) - Covered(dp, a, b);
  }
  return sum;
}

}  // namespace

StepEnd FindStepEnd(const trace::Trace& t, const engine::ReplayResult& r) {
  StepEnd s;
  Time last = Time::Zero();
  for (TaskId i = 0; i < static_cast<TaskId>(t.size()); ++i) {
    if (r.timings[i].end > last) {
      last = r.timings[i].end;
      s.final_rank = t.rank(i);
    }
  }
  std::vector<TaskId> tasks;
  for (TaskId i = 0; i < static_cast<TaskId>(t.size()); ++i) {
    if (t.rank(i) == s.final_rank) tasks.push_back(i);
  }
  s.final_rank_dp = Busy(t, r, tasks, t.compute_stream(), trace::TaskRole::kDpComm);
  return s;
}

TaskId GapBlocker(const trace::Trace& t, const engine::ReplayResult& r, TaskId task, Time stream_free) {
  TaskId blocker = -1;
  Time latest = stream_free;
  for (const TaskId* d = t.deps_begin(task); d != t.deps_end(task); ++d) {
    if (r.timings[*d].end > latest) {
      latest = r.timings[*d].end;
      blocker = *d;
    }
  }
  return blocker;
}

Breakdown Attribute(const trace::Trace& t, const engine::ReplayResult& r, const std::vector<TaskId>& rank_tasks,
                    trace::StreamId compute, Time makespan, const StepEnd& step) {
  Breakdown b;
  const std::vector<std::pair<Time, Time>> dp_busy = Busy(t, r, rank_tasks, compute, trace::TaskRole::kDpComm);
  Time prev_end = Time::Zero();
  std::vector<TaskId> side;  // this rank's tasks on other streams
  for (TaskId i : rank_tasks) {
    if (t.stream(i) != compute) {
      side.push_back(static_cast<TaskId>(i));
      continue;
    }
    const auto& tm = r.timings[i];
    if (tm.start > prev_end) {
      Time gap = tm.start - prev_end;
      const TaskId blocker = GapBlocker(t, r, i, prev_end);
      if (blocker < 0) {
        b.other += gap;
      } else {
        const trace::Task& bt = t.task(blocker);
        const auto& btm = r.timings[blocker];
        Time exposed = Overlap(prev_end, tm.start, btm.start, btm.end);
        Time* bucket = Bucket(b, bt.role);
        bool comm = bucket == &b.pp_exposed || bucket == &b.dp_exposed || bucket == &b.tp_exposed ||
                    bucket == &b.ep_exposed;
        const bool shared_with_stages = bt.kind == trace::TaskKind::kCollective && bt.comm.group != trace::kNoGroup &&
                                        t.group(bt.comm.group).simulated.size() > 1;
        if (bucket == &b.dp_exposed && t.stream(blocker) != compute && !shared_with_stages) {
          // Data-parallel work the blocker waited behind: a chain of it
          // (synchronous ZeRO-3 gathers, one per parameter, each with its
          // copies) or a queue of gradient buckets on the same stream. The
          // compute stream waits for all of it: every instant of the gap
          // during which the rank's data-parallel communication runs.
          const Time attributed = Covered(dp_busy, prev_end, tm.start);
          b.dp_exposed += attributed;
          b.other += gap - attributed;
        } else if (bucket == &b.offload_exposed) {
          // Waiting for the offloaded optimizer step (a chain of copies,
          // host work and NVMe I/O): all of the wait is offload.
          b.offload_exposed += gap;
        } else if (comm) {
          *bucket += exposed;
          Time rest = gap - exposed;
          // Waiting for a pipeline neighbour beyond the transfer itself is
          // bubble, and so is waiting at a collective shared with other
          // stages (the tied-embedding or DualPipe-mirror gradient
          // all-reduce) before the last of them arrives; an expert
          // all-to-all queued behind another one (DualPipe's overlapped
          // chunks share the EP stream) is still all-to-all time.
          (bucket == &b.pp_exposed || shared_with_stages ? b.bubble
           : bucket == &b.ep_exposed                     ? b.ep_exposed
                                                         : b.other) += rest;
        } else {
          b.other += gap;
        }
      }
    }
    *Bucket(b, t.role(i)) += tm.end - tm.start;
    prev_end = std::max(prev_end, tm.end);
  }
  // After its last kernel the rank waits for its own communication (data-
  // parallel reduction, parameter gathers) or for the other stages.
  if (makespan > prev_end) {
    Time tail = makespan - prev_end;
    Time comm_end = prev_end;
    for (TaskId id : side) comm_end = std::max(comm_end, r.timings[id].end);
    Time exposed = std::min(tail, comm_end - prev_end);
    // Host work among that communication with none of it beside: other.
    const Time host = HostOnly(Busy(t, r, rank_tasks, compute, trace::TaskRole::kOther), dp_busy, prev_end,
                               prev_end + exposed);
    b.other += host;
    b.dp_exposed += exposed - host;
    // Then the stage that ends the step: its data-parallel communication,
    // else bubble.
    const Time waiting_from = prev_end + exposed;
    const Time dp_wait = Covered(step.final_rank_dp, waiting_from, makespan);
    b.dp_exposed += dp_wait;
    b.bubble += makespan - waiting_from - dp_wait;
  }
  return b;
}

}  // namespace stacksim::simulate
