// Replaying an imported Kineto step (sim/ingest/kineto.h) with the engine.
//
// The step becomes a one-rank trace::Trace:
//  - one stream per host thread: each runtime/driver call is a delay task of
//    its measured length, preceded by a delay task for the host time since the
//    thread's previous call (Python, the dispatcher: "host gaps");
//  - one stream per GPU stream: each kernel / memset / memcpy is a compute
//    task (stream order), waiting for its launch call plus the launch latency,
//    and preceded by the GPU's inter-kernel gap. Both are measured from the
//    trace itself: a low quantile (kLaunchLatencyQuantile) of the delays from
//    a launch call's end to its kernel's start when the stream was idle (a
//    delay on a busy stream, behind a stream wait or of an NCCL kernel is
//    queueing or waiting, not launch latency), and the median gap between
//    back-to-back queued kernels;
//  - a kernel that started later than its launch and stream allow, with no
//    recorded wait, waits for the other stream's kernel that ended just
//    before it (an unrecorded cudaStreamWaitEvent), or, when no kernel in the
//    trace explains it, for its recorded hold (see InferHeld in replay.cc);
//  - GPU work of earlier steps still running when the step begins
//    (KinetoStep::carry_in) keeps each stream busy for its recorded time;
//  - cudaDeviceSynchronize / cudaStreamSynchronize wait for the GPU work
//    launched before them (their own length is replaced by the measured
//    wake-up after that work ended); "Stream Wait Event" syncs order streams.
// Imported kernels carry no shapes: ComputeOp.m is the kernel's index in
// KinetoStep::kernels, and ComputeOp.op_class its class (kGemm for compute-
// bound, kMemoryBound otherwise). MeasuredCostModel answers from the measured
// durations, each times a re-timing scale.
#ifndef STACKSIM_SIM_REPLAY_REPLAY_H_
#define STACKSIM_SIM_REPLAY_REPLAY_H_

#include <string>
#include <vector>

#include "sim/config/profile.h"
#include "sim/config/topology.h"
#include "sim/engine/cost_model.h"
#include "sim/engine/engine.h"
#include "sim/ingest/kineto.h"
#include "sim/trace/trace.h"

namespace stacksim::replay {

using ingest::KernelClass;
using ingest::KernelClassName;
using ingest::KinetoHostCall;
using ingest::KinetoHostCollective;
using ingest::KinetoKernel;
using ingest::KinetoStep;
using ingest::KinetoStreamWait;

// Data-parallel all-reduce to insert when the recording has no NCCL kernels:
// the buckets torch.distributed recorded (KinetoStep::host_collectives, a
// one-rank DDP run's), else gradient_bytes in buckets of bucket_bytes.
struct DpInsertion {
  int size = 1;              // data-parallel ranks (1: none)
  int ranks_per_node = 1;
  int nodes = 1;
  Bytes gradient_bytes{0};   // whole model's gradients (unused when buckets were recorded)
  Bytes bucket_bytes{25e6};  // DDP's default bucket_cap_mb = 25
};

struct StepTrace {
  trace::Trace trace;
  std::vector<trace::TaskId> kernel_task;  // by kernel index
  trace::TaskId step_end_task = -1;        // the host's tail: its end is the replayed step's end (-1: no host calls)
  Time launch_latency;                     // measured: launch call end -> kernel start, idle stream (low quantile)
  Time kernel_gap;                         // measured: back-to-back kernel gap, queued stream
  std::string launch_basis;                // how launch_latency was estimated, for people
  int held = 0;                            // kernels made to wait for another stream (inferred, unrecorded waits)
  int stalled = 0;                         // kernels given their recorded hold (nothing in the trace explains it)
  int buckets = 0;                         // inserted all-reduce buckets
  int repriced = 0;                        // recorded NCCL kernels turned into network-priced collectives
  std::string inserted;                    // what was inserted and why ("" when nothing)
};

// The all-reduces torch.distributed recorded with their sizes (DDP's buckets).
std::vector<KinetoHostCollective> RecordedDpBuckets(const KinetoStep& step);

// `network_collectives` re-prices the recorded NCCL collectives that carry
// their sizes as collectives over the group `dp` describes (every recorded
// collective is taken as data-parallel: the DDP / FSDP recordings this reads);
// otherwise, and for point-to-point kernels, they keep their measured time.
StepTrace BuildStepTrace(const KinetoStep& step, const DpInsertion& dp = {}, bool network_collectives = false);

// Measured kernel durations times per-kernel scales (1: own hardware).
class MeasuredCostModel : public engine::CostModel {
 public:
  MeasuredCostModel(const KinetoStep& step, std::vector<double> scales);
  explicit MeasuredCostModel(const KinetoStep& step);
  Time ComputeTime(const trace::ComputeOp& op) const override;

 private:
  std::vector<Time> durations_;
  std::vector<double> scales_;
};

// Per-kernel scales from one GPU's profile to another's: compute-bound by the
// ratio of dense peaks in the kernel's precision, memory-bound by achievable
// HBM bandwidth (hbm x copy efficiency); communication 1 (the network model
// re-prices it, or it stays as measured).
std::vector<double> RetimeScales(const KinetoStep& step, const config::ProfileConfig& from,
                                 const config::ProfileConfig& to);

struct StepBreakdown {
  Time makespan;
  Time compute, memory, communication;  // GPU busy by kernel class
  Time gpu_idle;                        // makespan minus the union of GPU busy intervals (host/launch bound)
  Time inserted_comm;                   // collectives priced by the network model (inserted or re-priced)
};
StepBreakdown Breakdown(const KinetoStep& step, const StepTrace& built, const engine::ReplayResult& r);

// The replayed step's end (the host's tail: what ProfilerStep#N measures) and
// its GPU span (the end of its last kernel), from the step's begin.
struct ReplayedStep {
  Time step;
  Time gpu_span;
};
ReplayedStep Replayed(const StepTrace& built, const engine::ReplayResult& r);

// The quantile of idle-stream launch-to-start delays taken as launch latency.
inline constexpr double kLaunchLatencyQuantile = 0.25;

struct ReplayOptions {
  std::string trace_path;
  int64_t step = -1;            // ProfilerStep#N to replay (-1: the last complete step with GPU work)
  // Profiles and the topology by name (profiles/, topologies/) or by path.
  std::string profile_path;     // the recording's GPU (default h200-sxm-141gb when needed)
  std::string to_profile_path;  // what-if GPU
  std::string topology_path;
  int dp = 1;
  double params = 0;            // model parameters for the inserted all-reduce (0: from TRACE's .meta.json)
  std::string perfetto_path;
  std::string format = "text";
};
// The `stacksim replay` command: returns the report.
std::string RunReplayCommand(const ReplayOptions& opts);

}  // namespace stacksim::replay

#endif  // STACKSIM_SIM_REPLAY_REPLAY_H_
