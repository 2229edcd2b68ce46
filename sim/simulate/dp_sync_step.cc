#include "sim/simulate/dp_sync_step.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "sim/workload/dp_sync.h"
#include "sim/workload/stage_layers.h"

namespace stacksim::simulate {

Time GradientReductionBusy(const trace::Trace& t, const trace::ReplayResult& r) {
  std::vector<Time> busy(t.rank_count(), Time::Zero());
  for (trace::TaskId i = 0; i < static_cast<trace::TaskId>(t.size()); ++i) {
    if (t.kind(i) != trace::TaskKind::kCollective || t.role(i) != trace::TaskRole::kDpComm) continue;
    const trace::Task task = t.task(i);
    if (t.group(task.comm.group).role != trace::GroupRole::kDp) continue;
    busy[t.rank(i)] += r.timings[i].end - r.timings[i].start;
  }
  Time most = Time::Zero();
  for (Time b : busy) most = std::max(most, b);
  return most;
}

Bytes OuterStateBytes(const config::ScenarioConfig& s, int stage) {
  const int local = s.plan.dp / std::max(1, s.plan.dp_sync.workers);
  return Bytes{static_cast<double>(workload::StageParameters(s, stage)) / local *
               workload::kOuterStateBytesPerParam};
}

void FinishDpSync(const config::ScenarioConfig& s, DpSyncResult& r) {
  const config::DpSync& d = s.plan.dp_sync;
  switch (d.method) {
    case config::DpSyncMethod::kEveryStep:
      r.average_step = r.step;
      r.basis = "every step reduces the gradients";
      break;
    case config::DpSyncMethod::kCompression:
      r.average_step = r.step;
      r.basis = fmt::format("every step, compressed to {:g} of the bytes", d.compression_ratio);
      break;
    case config::DpSyncMethod::kDiLoCo: {
      const double h = d.sync_every;
      r.average_step = Time::FromSeconds(((h - 1) * r.step.seconds() + r.sync_step.seconds()) / h);
      r.basis = "(" + std::to_string(d.sync_every - 1) + " inner steps + 1 sync step) / " + std::to_string(d.sync_every);
      break;
    }
    case config::DpSyncMethod::kAsync:
      r.average_step = std::max(r.without_reduction, r.reduction_busy);
      r.basis = "max(step without gradient reduction, gradient reduction per step); staleness " +
                std::to_string(d.staleness) + " >= 1 hides the reduction's latency, not its bandwidth";
      break;
  }
  r.tokens_per_s = static_cast<double>(s.tokens_per_step()) / r.average_step.seconds();
  r.token_budget = s.token_budget;
  if (s.token_budget > 0) {
    const double steps = std::ceil(static_cast<double>(s.token_budget) / static_cast<double>(s.tokens_per_step()));
    r.steps_to_budget = static_cast<int64_t>(steps);
    r.time_to_budget = Time::FromSeconds(steps * r.average_step.seconds());
  }
}

}  // namespace stacksim::simulate
