#include "sim/replay/replay.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/config/scenario.h"
#include "sim/net/analytic_network.h"
#include "sim/replay/replay_perfetto.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"
#include "sim/util/version.h"
#include "sim/util/statistics.h"

namespace stacksim::replay {
namespace {

using trace::Task;
using trace::TaskId;
using trace::TaskKind;

// The high median: a delay that was measured (sim/util/statistics.h).
Time MeasuredMedian(const std::vector<Time>& v) { return v.empty() ? Time::Zero() : HighMedian(Sorted(v)); }

// Launch latency and inter-kernel gap, measured from the step. A kernel on
// a stream that was idle when its launch call returned starts after the
// launch latency, unless something else holds it: a stream wait (the first
// kernel after a "Stream Wait Event" waits for another stream), or, for an
// NCCL kernel, the other ranks. Those are left out, and of the rest a low
// quantile is taken: every sample is the latency plus some delay >= 0.
// The first kernel on a stream launched after each of its recorded waits.
std::vector<bool> BehindWait(const KinetoStep& step) {
  std::vector<bool> behind_wait(step.kernels.size(), false);
  for (const KinetoStreamWait& w : step.waits) {
    int first = -1;
    for (size_t i = 0; i < step.kernels.size(); ++i) {
      const KinetoKernel& k = step.kernels[i];
      if (k.stream != w.stream) continue;
      Time at = k.launch >= 0 ? step.calls[k.launch].start : k.start;
      bool after = w.correlation >= 0 && k.correlation >= 0 ? k.correlation > w.correlation : at >= w.time;
      if (after && (first < 0 || k.correlation < step.kernels[first].correlation)) first = static_cast<int>(i);
    }
    if (first >= 0) behind_wait[first] = true;
  }
  return behind_wait;
}

void MeasureLaunch(const KinetoStep& step, StepTrace* out) {
  std::vector<Time> lat, gaps;
  std::map<int64_t, Time> stream_end;
  for (const auto& [stream, until] : step.carry_in) stream_end[stream] = until;
  const std::vector<bool> behind_wait = BehindWait(step);
  int held = 0;
  for (size_t i = 0; i < step.kernels.size(); ++i) {
    const KinetoKernel& k = step.kernels[i];
    auto it = stream_end.find(k.stream);
    Time prev_end = it == stream_end.end() ? Time::Ns(-1'000'000'000) : it->second;
    if (k.launch >= 0) {
      const KinetoHostCall& c = step.calls[k.launch];
      Time launch_end = c.start + c.duration;
      if (prev_end >= launch_end) gaps.push_back(std::max(Time::Zero(), k.start - prev_end));
      else if (behind_wait[i] || k.kernel_class == KernelClass::kCommunication) ++held;
      else lat.push_back(std::max(Time::Zero(), k.start - launch_end));
    }
    stream_end[k.stream] = std::max(prev_end, k.start + k.duration);
  }
  out->launch_latency = lat.empty() ? Time::Zero() : NearestRankQuantile(Sorted(lat), kLaunchLatencyQuantile);
  out->kernel_gap = MeasuredMedian(gaps);
  out->launch_basis =
      lat.empty() ? "no kernel was launched onto an idle stream: launch latency 0"
                  : fmt::format("the {:.0f}th percentile (nearest rank) of {} launch-to-start delays on idle streams "
                                "(median {:.2f} us, max {:.2f} us; {} kernels behind a stream wait or NCCL left out)",
                                100 * kLaunchLatencyQuantile, lat.size(), HighMedian(Sorted(lat)).us(),
                                Sorted(lat).back().us(), held);
}

// Waits the trace does not record. A kernel that started later than its
// launch and its stream allow (launch end + latency, the previous kernel's
// end + gap) by more than kHeldSlack was held (below it, a kernel ending on a
// busy stream would often be a false producer: test.json #1013 of the shared
// traces lost 1.5 ms to one at 10 us):
//  - by another stream (older Kineto writes no "Stream Wait Event";
//    cudaStreamWaitEvent then shows only as a host call): it waits for the
//    kernel on another stream, launched before it, whose recorded end is the
//    latest at or before its start (kSkewSlack of clock skew) and after the
//    time it could have started, or for another stream's earlier-steps block
//    (carry-in) that ended so;
//  - else by something the trace does not show (another process, a graph's
//    event node): it waits for the recorded hold, a measured stall on its
//    stream, as host gaps are measured delays on the host.
// NCCL kernels are not given a producer (the other ranks hold them), and
// kernels behind a recorded wait are left as they are.
constexpr Time kHeldSlack = Time::Ns(50'000);
constexpr Time kSkewSlack = Time::Ns(2'000);
struct Held {
  int producer = -1;  // kernel index, or -2 - carry index; -1: none
  Time stall;         // no producer: the recorded hold
};
std::vector<Held> InferHeld(const KinetoStep& step, Time latency, Time gap, int* by_stream, int* stalled) {
  const int n = static_cast<int>(step.kernels.size());
  std::vector<Held> held(n);
  const std::vector<bool> behind_wait = BehindWait(step);
  std::map<int64_t, Time> stream_end;
  for (const auto& [stream, until] : step.carry_in) stream_end[stream] = until;
  std::vector<int> by_end(n);
  for (int i = 0; i < n; ++i) by_end[i] = i;
  auto end_of = [&](int i) { return step.kernels[i].start + step.kernels[i].duration; };
  std::stable_sort(by_end.begin(), by_end.end(), [&](int a, int b) { return end_of(a) < end_of(b); });
  *by_stream = *stalled = 0;
  for (int i = 0; i < n; ++i) {
    const KinetoKernel& k = step.kernels[i];
    auto it = stream_end.find(k.stream);
    const bool known = it != stream_end.end();
    const Time prev_end = known ? it->second : Time::Zero();
    stream_end[k.stream] = std::max(prev_end, k.start + k.duration);
    if (k.launch < 0 || behind_wait[i]) continue;
    const KinetoHostCall& c = step.calls[k.launch];
    Time ready = c.start + c.duration + latency;
    if (known) ready = std::max(ready, prev_end + gap);
    if (k.start <= ready + kHeldSlack) continue;
    int best = -1;
    Time best_end = ready;
    if (k.kernel_class != KernelClass::kCommunication) {
      auto hi = std::upper_bound(by_end.begin(), by_end.end(), k.start + kSkewSlack,
                                 [&](Time t, int j) { return t < end_of(j); });
      for (auto j = hi; j != by_end.begin();) {
        --j;
        const KinetoKernel& p = step.kernels[*j];
        if (end_of(*j) <= best_end) break;
        // Launched before k (a CUDA graph launches many: earlier in start order).
        if (p.stream == k.stream || p.launch < 0 || p.launch > k.launch || (p.launch == k.launch && *j > i)) continue;
        best = *j;
        best_end = end_of(*j);
        break;
      }
      for (size_t ci = 0; ci < step.carry_in.size(); ++ci) {
        const auto& [stream, until] = step.carry_in[ci];
        if (stream != k.stream && until > best_end && until <= k.start + kSkewSlack) {
          best = -2 - static_cast<int>(ci);
          best_end = until;
        }
      }
    }
    if (best != -1) {
      held[i].producer = best;
      ++*by_stream;
    } else {
      held[i].stall = k.start - ready;
      ++*stalled;
    }
  }
  return held;
}

// `filler`: the replay's stand-in for time between kernels, not recorded work.
Task Delay(trace::Trace& t, trace::StreamId s, const std::string& label, const std::string& name, Time d,
           bool filler = false) {
  Task task;
  task.kind = TaskKind::kDelay;
  task.filler = filler;
  task.stream = s;
  task.label = t.InternLabel(label);
  task.name = t.InternName(name);
  task.duration = std::max(Time::Zero(), d);
  return task;
}

}  // namespace

std::vector<KinetoHostCollective> RecordedDpBuckets(const KinetoStep& step) {
  std::vector<KinetoHostCollective> out;
  for (const KinetoHostCollective& h : step.host_collectives)
    if (h.kind == trace::CollectiveKind::kAllReduce && h.bytes.value > 0) out.push_back(h);
  return out;
}

StepTrace BuildStepTrace(const KinetoStep& step, const DpInsertion& dp, bool network_collectives) {
  StepTrace out;
  trace::Trace& t = out.trace;
  t.SetRankCount(1);
  MeasureLaunch(step, &out);
  const int n = static_cast<int>(step.kernels.size());
  out.kernel_task.assign(n, -1);
  const std::vector<Held> held = InferHeld(step, out.launch_latency, out.kernel_gap, &out.held, &out.stalled);

  // Kernels by launching call; kernels the trace shows no launch for go in at their start.
  std::unordered_map<int, std::vector<int>> launched;
  std::vector<int> unlaunched;
  for (int i = 0; i < n; ++i) {
    if (step.kernels[i].launch >= 0) launched[step.kernels[i].launch].push_back(i);
    else unlaunched.push_back(i);
  }

  // Inserted DP all-reduce, when the recording launched no NCCL kernel.
  // DDP's own buckets where torch.distributed recorded them (a one-rank
  // group's record_param_comms ops carry their sizes but launch nothing):
  // each issued after the last kernel launched before its op. Otherwise
  // buckets of dp.bucket_bytes: backward kernels are those the autograd
  // thread launched (any thread but the step's own); bucket j is ready once
  // backward has done (j+1)/B of its measured GPU time (DDP fills buckets in
  // reverse parameter order as gradients appear; uniform spread is the
  // assumption).
  const std::vector<KinetoHostCollective> recorded = RecordedDpBuckets(step);
  bool insert = dp.size > 1 && (dp.gradient_bytes.value > 0 || !recorded.empty());
  std::vector<std::vector<Bytes>> buckets_after(n);  // all-reduces to issue after kernel i
  int last_backward = -1;  // the kernel after which the last all-reduce is issued
  if (insert) {
    for (const KinetoKernel& k : step.kernels)
      if (k.kernel_class == KernelClass::kCommunication) insert = false;
  }
  if (insert && !recorded.empty() && n > 0) {
    Bytes total{0};
    for (const KinetoHostCollective& h : recorded) {
      int after = 0;  // the last kernel launched before the op (else the first)
      Time latest = Time::Zero();
      for (int i = 0; i < n; ++i) {
        const KinetoKernel& k = step.kernels[i];
        if (k.launch < 0) continue;
        const Time launched = step.calls[k.launch].start;
        if (launched <= h.time && launched >= latest) after = i, latest = launched;
      }
      buckets_after[after].push_back(h.bytes);
      last_backward = std::max(last_backward, after);
      total.value += h.bytes.value;
    }
    out.buckets = static_cast<int>(recorded.size());
    out.inserted = fmt::format(
        "issued the recording's {} all-reduce bucket(s) ({:.1f} MB of gradients, sizes from torch.distributed's "
        "record_param_comms ops, each after the last kernel launched before it) on a 'dp' stream over {} ranks "
        "({} per node x {} nodes): the one-rank recording launched no NCCL kernels; the first host call after "
        "backward waits for them",
        out.buckets, total.value / 1e6, dp.size, dp.ranks_per_node, dp.nodes);
  } else if (insert && dp.gradient_bytes.value > 0) {
    Time total;
    std::vector<int> bwd;
    for (int i = 0; i < n; ++i) {
      const KinetoKernel& k = step.kernels[i];
      if (k.launch >= 0 && step.main_thread >= 0 && step.calls[k.launch].thread != step.main_thread) {
        bwd.push_back(i);
        total += k.duration;
      }
    }
    if (bwd.empty()) {  // no separate autograd thread: everything before the last kernel
      for (int i = 0; i < n; ++i) bwd.push_back(i), total += step.kernels[i].duration;
    }
    out.buckets = static_cast<int>(std::ceil(dp.gradient_bytes.value / dp.bucket_bytes.value));
    last_backward = bwd.back();
    Time done;
    int issued = 0;
    Bytes left = dp.gradient_bytes;
    for (int i : bwd) {
      done += step.kernels[i].duration;
      int due = i == last_backward ? out.buckets
                                   : static_cast<int>(std::floor(done.seconds() / total.seconds() * out.buckets));
      due = std::min(due, out.buckets);
      for (; issued < due; ++issued) {
        buckets_after[i].push_back(Bytes{std::min(left.value, dp.bucket_bytes.value)});
        left.value -= buckets_after[i].back().value;
      }
    }
    out.inserted = fmt::format(
        "inserted {} all-reduce bucket(s) of <= {:.0f} MB ({:.1f} MB of gradients) on a 'dp' stream over {} ranks "
        "({} per node x {} nodes), overlapped with the {} backward kernels: the recording has no NCCL collectives "
        "(one GPU), so DDP's gradient all-reduce is added; the first host call after backward waits for it",
        out.buckets, dp.bucket_bytes.value / 1e6, dp.gradient_bytes.value / 1e6, dp.size, dp.ranks_per_node,
        dp.nodes, bwd.size());
  } else {
    insert = false;
  }
  trace::GroupId dp_group = trace::kNoGroup;
  if (insert || network_collectives) {
    trace::CommGroup g;
    g.role = trace::GroupRole::kDp;
    g.name = trace::GroupRoleName(g.role);
    g.size = std::max(1, dp.size);
    g.ranks_per_node = std::max(1, dp.ranks_per_node);
    g.nodes = std::max(1, dp.nodes);
    g.simulated = {0};
    dp_group = t.AddGroup(g);
  }
  trace::StreamId dp_stream = insert ? t.InternStream("dp") : -1;
  TaskId last_bucket = -1;
  int bucket_number = 0;

  std::map<int64_t, trace::StreamId> gpu_stream;
  std::map<int64_t, TaskId> gpu_last;  // last task on each GPU stream
  std::map<int64_t, std::vector<std::pair<int64_t, TaskId>>> gpu_launched;  // (correlation, task) in launch order
  std::map<int64_t, Time> gpu_end_time;  // recorded end of the work launched so far, per stream
  std::vector<bool> wait_used(step.waits.size(), false);

  // Earlier steps' GPU work still running when the step begins: each such
  // stream is busy for its recorded time first (not the step's work).
  std::vector<TaskId> carry_task;
  for (const auto& [stream, until] : step.carry_in) {
    trace::StreamId s = t.InternStream("gpu stream " + std::to_string(stream));
    gpu_stream[stream] = s;
    gpu_last[stream] = t.Add(Delay(t, s, "earlier steps", "earlier steps' GPU work", until, /*filler=*/true));
    carry_task.push_back(gpu_last[stream]);
    gpu_end_time[stream] = until;
  }

  auto add_kernel = [&](int i, TaskId launch_task) {
    const KinetoKernel& k = step.kernels[i];
    auto [it, fresh] = gpu_stream.try_emplace(k.stream, 0);
    if (fresh) it->second = t.InternStream("gpu stream " + std::to_string(k.stream));
    trace::StreamId s = it->second;
    std::vector<TaskId> deps;
    if (launch_task >= 0) {
      trace::StreamId ls = t.InternStream("launch latency");
      deps.push_back(t.Add(Delay(t, ls, "launch", "launch latency", out.launch_latency, /*filler=*/true), {launch_task}));
    }
    // Stream waits: this is the first kernel on its stream launched after
    // the wait call; it waits for the producer stream's last kernel launched
    // before the event record.
    const Time launched_at = launch_task >= 0 ? step.calls[k.launch].start : k.start;
    for (size_t w = 0; w < step.waits.size(); ++w) {
      const KinetoStreamWait& sw = step.waits[w];
      if (wait_used[w] || sw.stream != k.stream) continue;
      bool after = sw.correlation >= 0 && k.correlation >= 0 ? k.correlation > sw.correlation : launched_at >= sw.time;
      if (!after) continue;
      wait_used[w] = true;
      auto src = gpu_launched.find(sw.wait_on_stream);
      if (src == gpu_launched.end()) continue;
      for (auto r = src->second.rbegin(); r != src->second.rend(); ++r) {
        if (sw.record_correlation < 0 || r->first < sw.record_correlation) {
          deps.push_back(r->second);
          break;
        }
      }
    }
    const Held& h = held[i];
    if (h.producer >= 0 && out.kernel_task[h.producer] >= 0) deps.push_back(out.kernel_task[h.producer]);
    if (h.producer <= -2) deps.push_back(carry_task[-2 - h.producer]);
    if (gpu_last.count(k.stream)) t.Add(Delay(t, s, "gpu gap", "inter-kernel gap", out.kernel_gap, /*filler=*/true));
    const bool repriced = k.kernel_class == KernelClass::kCommunication && network_collectives &&
                          k.comm_bytes.value > 0 && !k.point_to_point;
    if (h.stall > Time::Zero() && !repriced) {
      // After the previous kernel and the launch, the recorded hold.
      t.Add(Delay(t, s, "gpu stall", "unexplained hold (recorded)", h.stall, /*filler=*/true), deps);
      deps.clear();
    }
    Task task;
    task.stream = s;
    task.name = t.InternName(k.name);
    task.label = t.InternLabel(KernelClassName(k.kernel_class));
    if (k.kernel_class == KernelClass::kCommunication && network_collectives && k.comm_bytes.value > 0 &&
        !k.point_to_point) {
      task.kind = TaskKind::kCollective;
      task.comm.kind = k.collective;
      task.comm.bytes = k.comm_bytes;
      task.comm.group = dp_group;
      ++out.repriced;
    } else {
      task.kind = TaskKind::kCompute;
      task.compute.op_class =
          k.kernel_class == KernelClass::kCompute ? trace::OpClass::kGemm : trace::OpClass::kMemoryBound;
      task.compute.precision = k.precision;
      task.compute.m = i;
    }
    TaskId id = t.Add(task, deps);
    out.kernel_task[i] = id;
    gpu_last[k.stream] = id;
    gpu_launched[k.stream].push_back({k.correlation, id});
    gpu_end_time[k.stream] = std::max(gpu_end_time[k.stream], k.start + k.duration);
    for (Bytes bytes : buckets_after[i]) {
      Task ar;
      ar.kind = TaskKind::kCollective;
      ar.stream = dp_stream;
      ar.role = trace::TaskRole::kDpComm;
      ar.label = t.InternLabel("dp all-reduce (inserted)");
      ar.name = t.InternName("dp all-reduce bucket " + std::to_string(bucket_number++));
      ar.comm.kind = trace::CollectiveKind::kAllReduce;
      ar.comm.bytes = bytes;
      ar.comm.group = dp_group;
      last_bucket = t.Add(ar, {id});
    }
  };

  std::map<int64_t, trace::StreamId> host_stream;
  std::map<int64_t, TaskId> host_last;
  std::map<int64_t, Time> host_end;
  TaskId prev_call = -1;
  int64_t prev_thread = -1;
  Time prev_call_end;
  size_t next_unlaunched = 0;
  bool backward_done = false;
  TaskId tail_after = -1;
  for (size_t ci = 0; ci < step.calls.size(); ++ci) {
    const KinetoHostCall& c = step.calls[ci];
    while (next_unlaunched < unlaunched.size() && step.kernels[unlaunched[next_unlaunched]].start <= c.start)
      add_kernel(unlaunched[next_unlaunched++], -1);
    auto [it, fresh] = host_stream.try_emplace(c.thread, 0);
    if (fresh) it->second = t.InternStream("host thread " + std::to_string(c.thread));
    trace::StreamId s = it->second;
    // The host gap: since this thread's previous call, or since another
    // thread's call when control passed between threads (autograd hand-off).
    Time since = host_end.count(c.thread) ? host_end[c.thread] : Time::Zero();
    std::vector<TaskId> gap_deps;
    if (prev_call >= 0 && prev_thread != c.thread && prev_call_end <= c.start) {
      since = std::max(since, prev_call_end);
      gap_deps.push_back(prev_call);
    }
    if (backward_done && last_bucket >= 0 && c.thread == step.main_thread) {
      gap_deps.push_back(last_bucket);  // DDP: backward returns after the all-reduce
      backward_done = false;
      last_bucket = -1;
    }
    t.Add(Delay(t, s, "host", "host gap", c.start - since, /*filler=*/true), gap_deps);
    TaskId call;
    if (c.kind == KinetoHostCall::Kind::kDeviceSync || c.kind == KinetoHostCall::Kind::kStreamSync) {
      std::vector<TaskId> deps;
      Time work_end;
      for (auto& [stream, task] : gpu_last) {
        if (c.kind == KinetoHostCall::Kind::kStreamSync && c.stream >= 0 && stream != c.stream) continue;
        deps.push_back(task);
        work_end = std::max(work_end, gpu_end_time[stream]);
      }
      // Its own length: the wake-up after the awaited work ended.
      Time wake = std::min(c.duration, c.start + c.duration - std::max(work_end, c.start));
      call = t.Add(Delay(t, s, "host sync", c.name, wake), deps);
    } else {
      call = t.Add(Delay(t, s, c.kind == KinetoHostCall::Kind::kLaunch ? "launch" : "host", c.name, c.duration));
    }
    host_last[c.thread] = call;
    host_end[c.thread] = c.start + c.duration;
    prev_call = call;
    prev_thread = c.thread;
    prev_call_end = c.start + c.duration;
    tail_after = c.thread == step.main_thread || step.main_thread < 0 ? call : tail_after;
    auto l = launched.find(static_cast<int>(ci));
    if (l != launched.end()) {
      for (int k : l->second) {
        add_kernel(k, call);
        if (k == last_backward) backward_done = true;
      }
    }
  }
  while (next_unlaunched < unlaunched.size()) add_kernel(unlaunched[next_unlaunched++], -1);
  // The host's tail: from its last call to the step annotation's end.
  if (!step.calls.empty()) {
    int64_t th = step.main_thread >= 0 && host_stream.count(step.main_thread) ? step.main_thread : step.calls.back().thread;
    std::vector<TaskId> deps;
    if (prev_call >= 0) deps.push_back(prev_call);
    if (last_bucket >= 0) deps.push_back(last_bucket);
    out.step_end_task = t.Add(Delay(t, host_stream[th], "host", "host tail",
                                    step.annotation_end - std::max(host_end[th], prev_call_end), /*filler=*/true),
                              deps);
  }
  std::string problem = t.Check();
  if (!problem.empty()) throw std::logic_error("kineto replay trace: " + problem);
  return out;
}

MeasuredCostModel::MeasuredCostModel(const KinetoStep& step, std::vector<double> scales) : scales_(std::move(scales)) {
  for (const KinetoKernel& k : step.kernels) durations_.push_back(k.duration);
  if (scales_.size() != durations_.size()) throw std::logic_error("MeasuredCostModel: one scale per kernel");
}

MeasuredCostModel::MeasuredCostModel(const KinetoStep& step)
    : MeasuredCostModel(step, std::vector<double>(step.kernels.size(), 1.0)) {}

Time MeasuredCostModel::ComputeTime(const trace::ComputeOp& op) const {
  if (op.m < 0 || op.m >= static_cast<int64_t>(durations_.size()))
    throw std::logic_error("MeasuredCostModel: task is not an imported kernel");
  return durations_[op.m] * scales_[op.m];
}

std::vector<double> RetimeScales(const KinetoStep& step, const config::ProfileConfig& from,
                                 const config::ProfileConfig& to) {
  double mem = (from.hbm_bandwidth.value.value * from.copy_efficiency.value) /
               (to.hbm_bandwidth.value.value * to.copy_efficiency.value);
  std::vector<double> out;
  for (const KinetoKernel& k : step.kernels) {
    if (k.kernel_class == KernelClass::kMemory) {
      out.push_back(mem);
    } else if (k.kernel_class == KernelClass::kCompute) {
      auto a = from.Peak(k.precision), b = to.Peak(k.precision);
      if (!a || !b) a = from.Peak(config::Precision::kBf16), b = to.Peak(config::Precision::kBf16);
      out.push_back(a && b ? a->value / b->value : 1.0);
    } else {
      out.push_back(1.0);
    }
  }
  return out;
}

StepBreakdown Breakdown(const KinetoStep& step, const StepTrace& built, const engine::ReplayResult& r) {
  StepBreakdown b;
  b.makespan = r.makespan;
  std::vector<std::pair<Time, Time>> busy;
  for (size_t i = 0; i < step.kernels.size(); ++i) {
    const engine::TaskTiming& tm = r.timings[built.kernel_task[i]];
    Time d = tm.end - tm.start;
    switch (step.kernels[i].kernel_class) {
      case KernelClass::kCompute: b.compute += d; break;
      case KernelClass::kMemory: b.memory += d; break;
      case KernelClass::kCommunication: b.communication += d; break;
    }
    busy.push_back({tm.start, tm.end});
  }
  std::sort(busy.begin(), busy.end());
  Time covered, cur_s = Time::Zero(), cur_e = Time::Zero();
  for (auto [s, e] : busy) {
    if (s > cur_e) { covered += cur_e - cur_s; cur_s = s; cur_e = e; }
    else cur_e = std::max(cur_e, e);
  }
  covered += cur_e - cur_s;
  b.gpu_idle = r.makespan - covered;
  const trace::Trace& t = built.trace;
  for (size_t id = 0; id < t.size(); ++id) {
    const trace::Task& task = t.task(static_cast<TaskId>(id));
    if (task.kind == TaskKind::kCollective) {  // inserted, or a recorded one re-priced
      b.inserted_comm += r.timings[id].end - r.timings[id].start;
    }
  }
  return b;
}

ReplayedStep Replayed(const StepTrace& built, const engine::ReplayResult& r) {
  ReplayedStep out;
  out.step = built.step_end_task >= 0 ? r.timings[built.step_end_task].end : r.makespan;
  for (TaskId id : built.kernel_task)
    if (id >= 0) out.gpu_span = std::max(out.gpu_span, r.timings[id].end);
  return out;
}

namespace {

// TRACE.meta.json, written beside the trace by tools/gpu/record_gpt_trace.py
// (null when there is none).
nlohmann::json ReadMeta(const std::string& trace_path) {
  std::string meta = trace_path;
  for (const char* ext : {".json.gz", ".json"}) {
    size_t n = std::string(ext).size();
    if (meta.size() > n && meta.compare(meta.size() - n, n, ext) == 0) { meta.resize(meta.size() - n); break; }
  }
  meta += ".meta.json";
  if (!std::filesystem::exists(meta)) return nullptr;
  return ReadJsonFile(meta);
}

double MetaParams(const nlohmann::json& j) {
  if (j.is_object() && j.contains("model") && j["model"].is_object() && j["model"].contains("params") &&
      j["model"]["params"].is_number())
    return j["model"]["params"].get<double>();
  return 0;
}

// The step PyTorch timed without the profiler (median), in seconds; 0 if unknown.
double MetaUnprofiledStep(const nlohmann::json& j) {
  if (j.is_object() && j.contains("step_s_median_unprofiled") && j["step_s_median_unprofiled"].is_number())
    return j["step_s_median_unprofiled"].get<double>();
  return 0;
}

}  // namespace

std::string RunReplayCommand(const ReplayOptions& o) {
  ingest::KinetoOptions read;
  read.step = o.step;
  KinetoStep step = ingest::ReadKinetoTrace(o.trace_path, read);
  engine::FixedNetworkModel no_net(Time::Zero(), Bandwidth{1e12});
  StepTrace own = BuildStepTrace(step);
  MeasuredCostModel measured(step);
  engine::ReplayResult r = engine::Engine(measured, no_net).Replay(own.trace);
  StepBreakdown b = Breakdown(step, own, r);
  const ReplayedStep rs = Replayed(own, r);
  const double error = rs.step.seconds() / step.annotation_end.seconds() - 1;
  nlohmann::json out;
  out["trace"] = o.trace_path;
  out["step"] = step.step_name;
  out["step_number"] = step.step_number;
  out["step_choice"] = step.chosen;
  out["producer"] = step.producer;
  out["recorded_step_ms"] = step.annotation_end.ms();
  out["replayed_step_ms"] = rs.step.ms();
  out["replay_error"] = error;
  out["recorded_gpu_span_ms"] = step.gpu_end.ms();
  out["replayed_gpu_span_ms"] = rs.gpu_span.ms();
  out["launch_latency_us"] = own.launch_latency.us();
  out["launch_latency_basis"] = own.launch_basis;
  out["kernel_gap_us"] = own.kernel_gap.us();
  out["carried_in"] = {{"kernels", step.carried_kernels}, {"streams", step.carry_in.size()}};
  out["unlinked_gpu_activities"] = step.unlinked;
  out["syncs_inferred"] = step.syncs_inferred;
  out["kernels_held_by_other_streams"] = own.held;
  out["kernels_stalled"] = own.stalled;
  out["breakdown_ms"] = {{"compute", b.compute.ms()}, {"memory", b.memory.ms()},
                         {"communication", b.communication.ms()}, {"gpu_idle_host_bound", b.gpu_idle.ms()}};
  std::ostringstream text;
  text << fmt::format("{}: {} ({} kernels/memsets/memcpys launched in it, {} host calls)\n", o.trace_path,
                      step.step_name, step.kernels.size(), step.calls.size());
  text << fmt::format("  step: {}\n  trace: {}\n", step.chosen, step.producer);
  text << fmt::format("  {:<40} {:9.3f} ms\n",
                      fmt::format("recorded step ({} duration)", step.step_number >= 0 ? step.step_name : "window"),
                      step.annotation_end.ms());
  text << fmt::format("  {:<40} {:9.3f} ms  error {:+.2f}%\n", "replayed step", rs.step.ms(), 100 * error);
  text << fmt::format("  GPU span of the step's work: recorded {:.3f} ms, replayed {:.3f} ms\n", step.gpu_end.ms(),
                      rs.gpu_span.ms());
  if (step.carried_kernels > 0)
    text << fmt::format("  earlier steps' GPU work running into this step: {} activities on {} stream(s), not "
                        "counted as this step's (they only keep its streams busy at first)\n",
                        step.carried_kernels, step.carry_in.size());
  if (own.held > 0 || own.stalled > 0)
    text << fmt::format("  kernels that started later than their launch and stream allow, with no recorded wait: {} "
                        "wait for the other stream's kernel that ended just before them, {} (nothing in the trace "
                        "explains them) for their recorded hold\n",
                        own.held, own.stalled);
  if (step.syncs_inferred > 0)
    text << fmt::format("  {} stream/event syncs name no stream: inferred from the recording (the stream whose work "
                        "had ended when the sync returned)\n",
                        step.syncs_inferred);
  if (step.unlinked > 0)
    text << fmt::format("  {} GPU activities have no launch call in the trace: taken by their start time\n",
                        step.unlinked);
  const nlohmann::json meta = ReadMeta(o.trace_path);
  if (double unprofiled = MetaUnprofiledStep(meta); unprofiled > 0) {
    out["unprofiled_step_ms"] = unprofiled * 1e3;
    text << fmt::format("  PyTorch's step without the profiler      {:9.3f} ms  (median; the recorded step carries the "
                        "profiler's own overhead, {:+.1f}%)\n",
                        unprofiled * 1e3, 100 * (step.span.seconds() / unprofiled - 1));
  }
  text << fmt::format("  measured launch latency {:.2f} us ({}), inter-kernel gap {:.2f} us\n",
                      own.launch_latency.us(), own.launch_basis, own.kernel_gap.us());
  text << fmt::format("  breakdown: compute {:.3f} ms, memory {:.3f} ms, comm {:.3f} ms, GPU idle (host-bound) {:.3f} ms\n",
                      b.compute.ms(), b.memory.ms(), b.communication.ms(), b.gpu_idle.ms());
  // Profiles and topologies by name (profiles/<name>.json) or by path.
  const std::string from_path =
      config::ResolveDataFile("profiles", o.profile_path.empty() ? "h200-sxm-141gb" : o.profile_path, "");
  const std::string to_path = o.to_profile_path.empty() ? "" : config::ResolveDataFile("profiles", o.to_profile_path, "");
  const std::string topology_path =
      o.topology_path.empty() ? "" : config::ResolveDataFile("topologies", o.topology_path, "");
  std::vector<double> scales(step.kernels.size(), 1.0);
  config::ProfileConfig to_profile;
  // Views for --perfetto, beside the recording: each replay keeps its result.
  std::vector<std::unique_ptr<engine::ReplayResult>> kept;
  std::vector<ReplayView> views = {{"replayed (measured kernels)", &own.trace, &r}};
  if (!o.to_profile_path.empty()) {
    config::ProfileConfig from = config::LoadProfileFile(from_path);
    to_profile = config::LoadProfileFile(to_path);
    scales = RetimeScales(step, from, to_profile);
    MeasuredCostModel retimed(step, scales);
    engine::ReplayResult w = engine::Engine(retimed, no_net).Replay(own.trace);
    StepBreakdown wb = Breakdown(step, own, w);
    out["what_if_profile"] = {{"profile", o.to_profile_path}, {"step_ms", w.makespan.ms()},
                              {"breakdown_ms", {{"compute", wb.compute.ms()}, {"memory", wb.memory.ms()},
                                                {"gpu_idle_host_bound", wb.gpu_idle.ms()}}}};
    text << fmt::format("  what-if on {}: {:.3f} ms (compute {:.3f}, memory {:.3f}, GPU idle {:.3f})\n",
                        o.to_profile_path, w.makespan.ms(), wb.compute.ms(), wb.memory.ms(), wb.gpu_idle.ms());
    kept.push_back(std::make_unique<engine::ReplayResult>(std::move(w)));
    views.push_back({"re-timed on " + o.to_profile_path, &own.trace, kept.back().get()});
  } else {
    to_profile = config::LoadProfileFile(from_path);
  }
  StepTrace dp_trace;
  if (o.dp > 1) {
    if (o.topology_path.empty()) throw InputError("", "--dp", "needs --topology");
    config::TopologyConfig topo = config::ParseTopology(JsonNode(ReadJsonFile(topology_path), topology_path, ""));
    DpInsertion dp;
    dp.size = o.dp;
    dp.ranks_per_node = std::min(o.dp, topo.gpus_per_node);
    dp.nodes = (o.dp + dp.ranks_per_node - 1) / dp.ranks_per_node;
    if (topo.max_nodes > 0 && dp.nodes > topo.max_nodes) {
      throw InputError("", "--dp",
                       fmt::format("{} ranks need {} nodes of {} GPUs; topology {} ({}) holds at most {} nodes ({} GPUs)",
                                   o.dp, dp.nodes, topo.gpus_per_node, topo.name, topology_path, topo.max_nodes,
                                   static_cast<int64_t>(topo.max_nodes) * topo.gpus_per_node));
    }
    // A recording with its collectives: those are re-priced, and nothing is
    // inserted. Without: DDP's all-reduce of the model's gradients is.
    int comm = 0, priceable = 0;
    for (const KinetoKernel& k : step.kernels) {
      if (k.kernel_class != KernelClass::kCommunication) continue;
      ++comm;
      priceable += !k.point_to_point && k.comm_bytes.value > 0;
    }
    if (comm > 0 && priceable == 0)
      throw InputError(o.trace_path, "--dp",
                       fmt::format("{} has {} NCCL kernel(s) but none can be re-priced: none is a collective with "
                                   "sizes (no \"In msg nelems\"/\"Out msg nelems\" on the kernel or on its "
                                   "record_param_comms op; send/recv stay as measured)",
                                   step.step_name, comm));
    if (comm == 0 && RecordedDpBuckets(step).empty()) {
      double params = o.params > 0 ? o.params : MetaParams(meta);
      if (params <= 0)
        throw InputError(o.trace_path, "--dp",
                         "the step has no NCCL collectives to re-price, so DDP's all-reduce is inserted and needs the "
                         "model's parameter count (--params, or a .meta.json beside the trace)");
      dp.gradient_bytes = Bytes{params * 4};  // fp32 gradients (AMP keeps fp32 parameters)
    }
    dp_trace = BuildStepTrace(step, dp, true);
    net::AnalyticNetwork network(topo, to_profile);
    MeasuredCostModel cost(step, scales);
    engine::ReplayResult d = engine::Engine(cost, network).Replay(dp_trace.trace);
    // The one-GPU step on the same kernels: the re-timed replay if there is one, else the own one.
    const engine::ReplayResult& base = *views.back().replay;
    StepBreakdown db = Breakdown(step, dp_trace, d);
    out["what_if_dp"] = {{"dp", o.dp}, {"topology", o.topology_path}, {"step_ms", d.makespan.ms()},
                         {"all_reduce_ms", db.inserted_comm.ms()},
                         {"exposed_comm_ms", (d.makespan - base.makespan).ms()}, {"inserted", dp_trace.inserted},
                         {"repriced", dp_trace.repriced}};
    text << fmt::format("  what-if DP {} on {}: {:.3f} ms (all-reduce {:.3f} ms, exposed {:.3f} ms)\n    {}\n", o.dp,
                        o.topology_path, d.makespan.ms(), db.inserted_comm.ms(), (d.makespan - base.makespan).ms(),
                        dp_trace.inserted.empty()
                            ? fmt::format("{} recorded NCCL collective(s) re-priced by the analytic network over {} "
                                          "ranks (the others keep their measured time)",
                                          dp_trace.repriced, o.dp)
                            : dp_trace.inserted);
    kept.push_back(std::make_unique<engine::ReplayResult>(std::move(d)));
    views.push_back({fmt::format("DP {} on {}{}", o.dp, o.topology_path,
                                 o.to_profile_path.empty() ? "" : ", " + o.to_profile_path),
                     &dp_trace.trace, kept.back().get()});
  }
  if (!o.perfetto_path.empty()) {
    WriteReplayComparison(step, views, o.perfetto_path);
    text << fmt::format("  wrote {}: the recorded step and {} replay(s) side by side\n", o.perfetto_path,
                        views.size());
    out["perfetto"] = o.perfetto_path;
  }
  return o.format == "json" ? WithVersion(out).dump(1) + "\n" : text.str();
}

}  // namespace stacksim::replay
