#include "sim/workload/dp_sync.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace stacksim::workload {
namespace {

trace::TaskId MemoryBound(trace::Trace& t, int rank, trace::StreamId stream, trace::TaskRole role,
                          const std::string& name, double bytes, int kernels, const std::vector<trace::TaskId>& deps) {
  trace::Task task;
  task.kind = trace::TaskKind::kCompute;
  task.rank = rank;
  task.stream = stream;
  task.role = role;
  task.label = t.RoleLabel(role);
  task.name = t.InternName(name);
  task.compute.op_class = trace::OpClass::kMemoryBound;
  task.compute.precision = config::Precision::kFp32;
  task.compute.bytes = Bytes{bytes};
  task.compute.flops = Flops{0};
  task.compute.kernels = kernels;
  return t.Add(task, deps);
}

trace::TaskId Collective(trace::Trace& t, int rank, trace::StreamId stream, const std::string& name,
                         trace::CollectiveKind kind, double bytes, trace::GroupId group,
                         const std::vector<trace::TaskId>& deps) {
  trace::Task task;
  task.kind = trace::TaskKind::kCollective;
  task.rank = rank;
  task.stream = stream;
  task.role = trace::TaskRole::kDpComm;
  task.label = t.RoleLabel(task.role);
  task.name = t.InternName(name);
  task.comm.kind = kind;
  task.comm.bytes = Bytes{bytes};
  task.comm.group = group;
  return t.Add(task, deps);
}

}  // namespace

trace::TaskId EmitGradientCompression(trace::Trace& t, int rank, trace::StreamId stream, Bytes grad_bytes,
                                      double passes, trace::TaskId after) {
  // One launch per pass, at least one.
  const int kernels = std::max(1, static_cast<int>(std::ceil(passes)));
  return MemoryBound(t, rank, stream, trace::TaskRole::kMemoryBound, "grad-compress", passes * grad_bytes.value,
                     kernels, {after});
}

trace::TaskId EmitOuterSync(trace::Trace& t, int rank, trace::StreamId compute, trace::StreamId dp,
                            const OuterSync& sync, const std::vector<trace::TaskId>& deps) {
  const double slice = sync.params / std::max(1, sync.local);
  // Optimizer role: the outer step is the outer optimizer's work.
  trace::TaskId pseudo = MemoryBound(t, rank, compute, trace::TaskRole::kOptimizer, "outer-pseudo-gradient",
                                     slice * kPseudoGradientBytesPerParam, 1, deps);
  trace::TaskId reduce = Collective(t, rank, dp, "outer-allreduce", trace::CollectiveKind::kAllReduce,
                                    slice * config::PrecisionBytes(sync.outer_precision), sync.outer_group, {pseudo});
  trace::TaskId step = MemoryBound(t, rank, compute, trace::TaskRole::kOptimizer, "outer-nesterov-step",
                                   slice * kOuterStepBytesPerParam, 1, {reduce});
  if (sync.local <= 1) return step;
  return Collective(t, rank, dp, "outer-param-gather", trace::CollectiveKind::kAllGather,
                    sync.params * sync.element_bytes, sync.local_group, {step});
}

}  // namespace stacksim::workload
