// Where one rank's step time goes: every instant of the rank's compute stream
// attributed to one bucket of a Breakdown, and the walk under it, which
// dependency an idle gap on the compute stream waited for.
//
// Works on a replayed trace (trace + engine timings); owns nothing. Times are
// stacksim::Time.
#ifndef STACKSIM_SIM_SIMULATE_ATTRIBUTION_H_
#define STACKSIM_SIM_SIMULATE_ATTRIBUTION_H_

#include <utility>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/simulate/simulate.h"
#include "sim/trace/trace.h"
#include "sim/util/units.h"

namespace stacksim::simulate {

// The dependency that a compute-stream task waited for when it started after
// `stream_free` (the end of the stream's previous task): of its dependencies,
// the one that ended last, later than `stream_free` (the first one listed on
// a tie). -1 when none ended after `stream_free`.
trace::TaskId GapBlocker(const trace::Trace& t, const engine::ReplayResult& r, trace::TaskId task, Time stream_free);

// Attributes every instant of one rank's step to one bucket. Busy time on the
// compute stream goes to the running task's role. An idle gap before a task
// goes to what the task was waiting for (GapBlocker): the part of the gap
// during which that dependency was itself running is exposed communication of
// its kind (a pipeline transfer: send/recv); the rest of a wait on another
// stage (a pipeline neighbour, or the last stage to reach a collective they
// share) is pipeline bubble, and anything else is "other".
// `rank_tasks` are the rank's tasks in trace order (one pass over the trace
// for all ranks: scanning the whole trace per rank made a 125-stage, 4.7M-task
// step spend most of its time here).
//
// Data-parallel waits: a gap whose blocker is data-parallel work off the
// compute stream is data-parallel time for as long as any of the rank's
// data-parallel tasks runs in it (buckets queue on their stream, each behind
// the one before: at large DP the compute stream waits for the queue, not
// only for the last bucket). After the rank's last kernel it waits for its
// own communication, then for the stage that ends the step: data-parallel
// time while that stage's data-parallel communication runs (at large DP its
// gradient reduction is what the others wait for), pipeline bubble for the
// rest (it still computes, or waits for its own pipeline neighbours).
// Host work off the compute stream (role other, e.g. DeepSpeed's Python
// loops over the ranks) is "other" wherever none of the rank's
// data-parallel communication runs beside it, in a gap and in the tail.
struct StepEnd {
  trace::RankId final_rank = 0;  // the rank whose task ends last
  std::vector<std::pair<Time, Time>> final_rank_dp;  // its data-parallel communication, disjoint, sorted
};
// The StepEnd of a replayed trace (one pass).
StepEnd FindStepEnd(const trace::Trace& t, const engine::ReplayResult& r);

Breakdown Attribute(const trace::Trace& t, const engine::ReplayResult& r, const std::vector<trace::TaskId>& rank_tasks,
                    trace::StreamId compute, Time makespan, const StepEnd& step);

}  // namespace stacksim::simulate

#endif  // STACKSIM_SIM_SIMULATE_ATTRIBUTION_H_
