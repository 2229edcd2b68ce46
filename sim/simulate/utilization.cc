#include "sim/simulate/utilization.h"

#include <algorithm>
#include <string>
#include <utility>

namespace stacksim::simulate {
namespace {

using trace::TaskId;
using trace::TaskKind;

// Total length of the union of [start, end) intervals.
Time UnionLength(std::vector<std::pair<Time, Time>> spans) {
  std::sort(spans.begin(), spans.end());
  Time total = Time::Zero(), open = Time::Zero(), close = Time::Zero();
  bool any = false;
  for (const auto& [s, e] : spans) {
    if (!any || s > close) {
      if (any) total += close - open;
      open = s;
      close = e;
      any = true;
    } else {
      close = std::max(close, e);
    }
  }
  if (any) total += close - open;
  return total;
}

bool HostLinkStream(const std::string& name) { return name == "h2d" || name == "d2h"; }

}  // namespace

Utilization RankUtilization(const trace::Trace& t, const trace::ReplayResult& r,
                            const std::vector<TaskId>& rank_tasks, const config::ProfileConfig& profile, Time step) {
  Utilization u;
  if (step <= Time::Zero()) return u;
  const double hbm = profile.hbm_bandwidth.value.value;
  std::vector<std::pair<Time, Time>> kernels, host_link;
  double active_s = 0, bytes = 0;
  for (TaskId i : rank_tasks) {
    const trace::TaskTiming& timing = r.timings[i];
    if (timing.end <= timing.start) continue;
    const TaskKind kind = t.kind(i);
    if (kind == TaskKind::kDelay) {
      if (HostLinkStream(t.stream_name(t.stream(i)))) host_link.emplace_back(timing.start, timing.end);
      continue;
    }
    kernels.emplace_back(timing.start, timing.end);
    if (kind != TaskKind::kCompute) continue;
    const trace::ComputeOp& op = t.compute(i);
    const double d = (timing.end - timing.start).seconds();
    double fraction = 0;
    if (op.flops.value > 0) {
      const config::Precision p = op.op_class == trace::OpClass::kAttention ? config::Precision::kBf16 : op.precision;
      if (auto peak = profile.Peak(p); peak && peak->value > 0) fraction = op.flops.value / (d * peak->value);
    }
    if (hbm > 0) fraction = std::max(fraction, op.bytes.value / (d * hbm));
    active_s += d * std::min(fraction, 1.0);
    bytes += op.bytes.value;
  }
  const double s = step.seconds();
  u.gpu_busy = UnionLength(std::move(kernels)).seconds() / s;
  u.sm_active = active_s / s;
  u.hbm_bandwidth = hbm > 0 ? bytes / (s * hbm) : 0.0;
  u.pcie = UnionLength(std::move(host_link)).seconds() / s;
  return u;
}

}  // namespace stacksim::simulate
