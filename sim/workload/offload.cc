#include "sim/workload/offload.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace stacksim::workload {
namespace {

using config::OffloadTarget;
using config::Precision;
using trace::TaskId;

// At most this many host-step chunks per rank (keeps the trace small for
// shards of tens of billions of parameters; the exposed tail is then one
// chunk of shard/64 instead of a 128 Mi-parameter tile).
constexpr int kMaxChunks = 64;

class OffloadEmitter {
 public:
  OffloadEmitter(trace::Trace& t, const config::ScenarioConfig& s, int rank)
      : t_(t), s_(s), rank_(rank), rates_(RatesFor(s)) {}

  // A host-side or copy-engine task of `duration` on `stream` after `deps`.
  TaskId Add(const char* stream, const char* name, Time duration, const std::vector<TaskId>& deps, int layer = -1,
             int mb = -1) {
    trace::Task task;
    task.kind = trace::TaskKind::kDelay;
    task.rank = rank_;
    task.stream = t_.InternStream(stream);
    task.role = trace::TaskRole::kOffload;
    task.label = t_.RoleLabel(task.role);
    task.name = t_.InternName(name);
    task.layer = layer;
    task.micro_batch = mb;
    task.duration = duration;
    return t_.Add(task, deps);
  }

  Time Pcie(double bytes) const { return TransferTime(Bytes{bytes}, rates_.pcie); }
  Time NvmeRead(double bytes) const { return TransferTime(Bytes{bytes}, rates_.nvme_read); }
  Time NvmeWrite(double bytes) const { return TransferTime(Bytes{bytes}, rates_.nvme_write); }
  Time HostStep(double params) const {
    return TransferTime(Bytes{params * HostAdamBytesPerParam(s_.plan)}, rates_.host_memory);
  }

 private:
  trace::Trace& t_;
  const config::ScenarioConfig& s_;
  int rank_;
  OffloadRates rates_;
};

}  // namespace

double OffloadGradientBytes(const config::PlanConfig& plan) {
  return config::PrecisionBytes(plan.GradReducePrecision());
}

double OffloadParamBytes(const config::PlanConfig& plan) { return plan.precision == Precision::kFp32 ? 4.0 : 2.0; }

double HostAdamBytesPerParam(const config::PlanConfig& plan) {
  const double half_copy = plan.precision == Precision::kFp32 ? 0.0 : OffloadParamBytes(plan);
  return 2.0 * kOffloadStateBytesPerParam + OffloadGradientBytes(plan) + half_copy;
}

double GpuOptimizerShare(const config::PlanConfig& plan) {
  return plan.offload_optimizer == OffloadTarget::kNone ? 1.0 : 1.0 - plan.offload_optimizer_fraction;
}

OffloadRates RatesFor(const config::ScenarioConfig& s) {
  const config::TopologyConfig& t = s.topology;
  const double gpn = t.gpus_per_node;
  OffloadRates r;
  // The topology gives the node's link (line rate); the profile the pinned
  // copy rate measured on that GPU (nvbandwidth / stacksim calibrate: H100
  // 51 GB/s of Gen5's 64). A node with a narrower link caps it.
  r.pcie = Bandwidth{std::min(t.pcie_bandwidth.value, s.profile.host_bandwidth.value.value)};
  if (!(r.pcie.value > 0)) r.pcie = t.pcie_bandwidth;
  // Host DRAM: the CPU Adam step streams master weights, moments and
  // gradients (ZeRO-Offload's CPU-Adam is AVX-512 SIMD over OpenMP threads,
  // bound by memory bandwidth, Ren et al. ATC'21 §5.1); kHostMemoryEfficiency
  // of the DRAM peak is assumed (a STREAM-class fraction; not measured here).
  // The node's GPUs step at the same time and share it.
  if (t.host) r.host_memory = Bandwidth{t.host->memory_bandwidth.value * kHostMemoryEfficiency / gpn};
  // NVMe: the drives' rated sequential rates, shared by the node's GPUs.
  // ZeRO-Infinity's DeepNVMe (Rajbhandari et al. SC'21 §6.3) is built to
  // reach them with large asynchronous reads and writes (assumed: no loss).
  if (t.nvme) {
    r.nvme_read = Bandwidth{t.nvme->bandwidth_read.value / gpn};
    r.nvme_write = Bandwidth{t.nvme->bandwidth_write.value / gpn};
  }
  return r;
}

TaskId EmitOffloadedOptimizerStep(trace::Trace& t, const config::ScenarioConfig& s, int rank, double shard_params,
                                  const std::vector<TaskId>& grads_ready, TaskId gpu_step) {
  const config::PlanConfig& plan = s.plan;
  if (plan.offload_optimizer == OffloadTarget::kNone) return gpu_step;
  OffloadEmitter e(t, s, rank);
  const double f = plan.offload_optimizer_fraction;
  const double host_params = f * shard_params;
  const bool zero3 = plan.sharding == config::Sharding::kZero3;
  const bool params_offloaded = plan.offload_params != OffloadTarget::kNone;
  const double p16 = OffloadParamBytes(plan);
  // Per parameter of the host's share.
  const double nvme_read = plan.offload_optimizer == OffloadTarget::kNvme ? kOffloadStateBytesPerParam : 0.0;
  const double nvme_write =
      nvme_read + (plan.offload_params == OffloadTarget::kNvme ? p16 : 0.0);  // ZeRO-Infinity writes params back too
  const double h2d = params_offloaded ? 0.0 : p16;
  // ZeRO-3 reduce-scatters (and copies out) every micro-batch's gradients.
  const double d2h_total =
      host_params * OffloadGradientBytes(plan) * (zero3 ? static_cast<double>(plan.micro_batches()) : 1.0);

  // 1. Gradients D2H.
  std::vector<TaskId> reductions;
  double reduced = 0;
  for (TaskId id : grads_ready) {
    if (id < 0) continue;
    const trace::Task& task = t.task(id);
    if (task.kind == trace::TaskKind::kCollective && task.comm.kind == trace::CollectiveKind::kReduceScatter) {
      reductions.push_back(id);
      reduced += task.comm.bytes.value / t.group(task.comm.group).size;
    }
  }
  std::vector<TaskId> after_grads = grads_ready;
  if (plan.overlap_offload && reduced > 0) {
    // Each bucket's shard as soon as its reduce-scatter ends, in the share of
    // the total that its reduced bytes are.
    for (TaskId id : reductions) {
      const trace::Task& task = t.task(id);
      double share = task.comm.bytes.value / t.group(task.comm.group).size / reduced;
      after_grads.push_back(e.Add("d2h", "offload-grad-d2h", e.Pcie(d2h_total * share), {id}, task.layer,
                                  task.micro_batch));
    }
  } else {
    after_grads = {e.Add("d2h", "offload-grad-d2h", e.Pcie(d2h_total), grads_ready)};
  }

  // 2-4. NVMe read, host step, NVMe write, parameters H2D, per chunk.
  std::vector<TaskId> ends;
  if (!plan.overlap_offload) {
    TaskId prev = after_grads.back();
    if (nvme_read > 0) prev = e.Add("nvme", "offload-nvme-read", e.NvmeRead(host_params * nvme_read), {prev});
    prev = e.Add("host", "host-adam", e.HostStep(host_params), {prev});
    if (nvme_write > 0) prev = e.Add("nvme", "offload-nvme-write", e.NvmeWrite(host_params * nvme_write), {prev});
    if (h2d > 0) prev = e.Add("h2d", "offload-param-h2d", e.Pcie(host_params * h2d), {prev});
    ends.push_back(prev);
  } else {
    const int chunks = std::clamp(static_cast<int>(std::ceil(host_params / kOffloadChunkParams)), 1, kMaxChunks);
    const double per = host_params / chunks;
    std::vector<TaskId> reads(chunks, -1), steps(chunks, -1);
    // Stream order on "nvme": R0 R1 W0 R2 W1 ... (double buffering: the next
    // chunk's read runs while this one computes, its write after it).
    auto read = [&](int i) {
      if (nvme_read > 0) reads[i] = e.Add("nvme", "offload-nvme-read", e.NvmeRead(per * nvme_read), after_grads);
    };
    read(0);
    for (int i = 0; i < chunks; ++i) {
      if (i + 1 < chunks) read(i + 1);
      std::vector<TaskId> deps = {reads[i]};
      if (i == 0) deps.insert(deps.end(), after_grads.begin(), after_grads.end());
      steps[i] = e.Add("host", "host-adam", e.HostStep(per), deps);
      if (h2d > 0) ends.push_back(e.Add("h2d", "offload-param-h2d", e.Pcie(per * h2d), {steps[i]}));
      if (nvme_write > 0) ends.push_back(e.Add("nvme", "offload-nvme-write", e.NvmeWrite(per * nvme_write), {steps[i]}));
    }
    ends.push_back(steps.back());
  }

  // The compute stream ends when the offloaded step has (the next step's
  // forward needs the updated parameters).
  trace::Task wait;
  wait.kind = trace::TaskKind::kDelay;
  wait.rank = rank;
  wait.stream = t.task(gpu_step).stream;
  wait.role = trace::TaskRole::kOffload;
  wait.label = t.RoleLabel(wait.role);
  wait.name = t.InternName("offload-wait");
  wait.duration = Time::Zero();
  ends.push_back(gpu_step);
  return t.Add(wait, ends);
}

TaskId EmitParamFetch(trace::Trace& t, const config::ScenarioConfig& s, int rank, Bytes shard,
                      const std::vector<TaskId>& deps, int layer, int micro_batch) {
  if (s.plan.offload_params == OffloadTarget::kNone) return -1;
  OffloadEmitter e(t, s, rank);
  std::vector<TaskId> after = deps;
  if (s.plan.offload_params == OffloadTarget::kNvme) {
    after = {e.Add("nvme", "offload-param-nvme-read", e.NvmeRead(shard.value), deps, layer, micro_batch)};
  }
  return e.Add("h2d", "offload-param-fetch", e.Pcie(shard.value), after, layer, micro_batch);
}

}  // namespace stacksim::workload
