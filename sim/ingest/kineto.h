// A PyTorch profiler (Kineto) trace of one training step, as recorded.
//
// Reads the Chrome-trace JSON that torch.profiler exports (plain or gzip,
// parsed streaming: sim/ingest/kineto_events.h) and keeps what a replay needs
// from one profiled step: the GPU activities (kernels, memsets, memcpys) with
// their streams and measured durations, and the host calls that launched or
// waited for them (runtime / driver events), linked to their GPU work by
// CUPTI correlation ids (or, on ROCm traces without them, the ac2g flow ids).
//
// The step is a "ProfilerStep#N" annotation: `--step N`, or by default the
// last complete one (its GPU work launched inside it and every kernel launch
// in it recorded on the GPU); the whole window when the trace has none. A GPU
// activity belongs to the step whose ProfilerStep span holds its launch call,
// wherever it runs: work launched in step N-1 that runs during step N is not
// step N's, it only keeps N's streams busy at first (`carry_in`); so is work
// whose call is not in the trace but whose correlation id is below the
// step's first (launched before the profiler's window). The
// reference a replay is compared with is the annotation's own duration
// (`annotation_end`); the GPU span is kept apart (`gpu_end`).
//
// All times are relative to the step's begin, in Time (ns); Kineto's
// timestamps are microseconds with fractional digits, read exactly.
//
// Malformed input (bad gzip, bad JSON, an event missing a field the replay
// needs, an unknown phase type, a step that is not in the trace) is an
// InputError naming the file and the event index and field
// ("traceEvents[17].dur").
#ifndef STACKSIM_SIM_INGEST_KINETO_H_
#define STACKSIM_SIM_INGEST_KINETO_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sim/config/profile.h"
#include "sim/trace/trace.h"
#include "sim/util/units.h"

namespace stacksim::ingest {

// How a re-timing scales a kernel, read from its name.
enum class KernelClass : uint8_t {
  kCompute,        // GEMM / attention: scales with dense peak FLOP/s
  kMemory,         // elementwise, norms, reductions, optimizer, copies: HBM bandwidth
  kCommunication,  // NCCL: the network model
};
const char* KernelClassName(KernelClass c);
KernelClass ClassifyKernel(const std::string& name);
// The precision a compute kernel most likely runs in (bf16 unless its name
// says fp32/tf32 or fp8).
config::Precision KernelPrecision(const std::string& name);

struct KinetoHostCall {
  enum class Kind : uint8_t { kLaunch, kDeviceSync, kStreamSync, kOther };
  std::string name;
  Kind kind = Kind::kOther;
  int64_t thread = 0;
  Time start, duration;
  int64_t correlation = -1;  // -1: none
  int64_t stream = -1;       // kStreamSync: the stream waited for (from args.stream, or inferred; -1: all)
};

struct KinetoKernel {
  std::string name;
  std::string category;      // "kernel", "gpu_memset", "gpu_memcpy" (1.9's names mapped to these)
  KernelClass kernel_class = KernelClass::kMemory;
  config::Precision precision = config::Precision::kBf16;
  int64_t stream = 0;
  Time start, duration;
  int64_t correlation = -1;
  int launch = -1;           // index in KinetoStep::calls of the launching call (-1: not in the trace)
  // kCommunication: what torch.distributed recorded of the call (the NCCL
  // kernel's own args, or its record_param_comms / nccl:* op's by External
  // id); comm_bytes 0 when the trace gives no sizes. A send/receive kernel
  // (ncclDevKernel_SendRecv) is point_to_point: never re-priced.
  trace::CollectiveKind collective = trace::CollectiveKind::kAllReduce;
  Bytes comm_bytes{0};
  int group_size = 0;        // 0: unknown
  bool point_to_point = false;
};

// "Stream Wait Event" (cuda_sync): the kernels on `stream` launched after the
// cudaStreamWaitEvent call (correlation ids grow in API-call order) wait for
// the work on `wait_on_stream` launched before the event was recorded.
struct KinetoStreamWait {
  int64_t stream = 0;
  int64_t wait_on_stream = 0;      // -1: unknown (no producer edge)
  int64_t record_correlation = -1;  // the cudaEventRecord call's (-1: unknown: all work launched so far)
  int64_t correlation = -1;         // the cudaStreamWaitEvent call's (-1: unknown: by host time)
  Time time;                        // host time of the wait call, from the step's begin
};

// A collective torch.distributed recorded with its sizes on a CPU op in the
// step (record_param_comms, or nccl:<collective> in older traces), whether or not
// NCCL launched a kernel for it: a one-rank process group launches none, so a
// single-GPU DDP recording keeps DDP's own buckets only here.
struct KinetoHostCollective {
  Time time;                 // the op's start, from the step's begin
  int64_t thread = 0;
  trace::CollectiveKind kind = trace::CollectiveKind::kAllReduce;
  Bytes bytes{0};
  int group_size = 0;        // 0: unknown
};

struct KinetoStep {
  std::string file;
  std::string step_name;     // "ProfilerStep#3", or "whole trace"
  int64_t step_number = -1;  // N of ProfilerStep#N (-1: whole trace)
  std::string chosen;        // which step was taken and why, for people
  std::string producer;      // the naming the trace uses (today's Kineto, PyTorch 1.8/1.9, ROCm)
  int64_t main_thread = -1;  // the thread of the step annotation (-1: unknown)
  Time span;                 // wall span: step begin to the later of the step's end and its last GPU activity
  Time annotation_end;       // the step annotation's duration: the recorded step
  Time gpu_end;              // the end of the step's last GPU activity (its GPU span)
  // GPU work launched before the step that still runs in it: per stream, busy
  // until this time (from the step's begin). Not the step's work.
  std::vector<std::pair<int64_t, Time>> carry_in;
  int carried_kernels = 0;   // GPU activities behind carry_in
  int unlinked = 0;          // GPU activities with no launch call in the trace (taken by start time)
  int syncs_inferred = 0;    // stream syncs whose stream was inferred from the recording (no args.stream)
  std::vector<KinetoHostCall> calls;    // by start time
  std::vector<KinetoKernel> kernels;    // by start time
  std::vector<KinetoStreamWait> waits;  // by time
  std::vector<KinetoHostCollective> host_collectives;  // by time
  int events = 0;            // events in the file
};

struct KinetoOptions {
  int64_t step = -1;  // N of ProfilerStep#N (-1: the last complete step with GPU work)
};

KinetoStep ParseKinetoTrace(const std::string& json_text, const std::string& origin, const KinetoOptions& opts = {});
// Plain or gzip (by content, not by name), inflated and parsed as a stream.
KinetoStep ReadKinetoTrace(const std::string& path, const KinetoOptions& opts = {});
// The file's bytes, gunzipped when they are gzip. Throws InputError naming the
// file on a read error or a truncated / corrupt stream.
std::string ReadMaybeGzip(const std::string& path);

}  // namespace stacksim::ingest

#endif  // STACKSIM_SIM_INGEST_KINETO_H_
