// The chain of tasks that set a replayed step's time: the longest path
// through the replayed DAG, each task weighted by its replayed duration.
//
// The DAG is the trace's dependencies, each (rank, stream)'s order, and the
// collectives' rendezvous (a collective's members start together, when the
// last member is ready: a join vertex stands between every member's
// predecessors and every member). It is built as a Boost.Graph and its
// longest path found with dag_shortest_paths on negated durations. When the
// replay left no task waiting for anything but these edges, the path's
// length equals the makespan; a test holds the engine to that.
//
// Times are the replay's (integer ns).
#ifndef STACKSIM_SIM_SIMULATE_CRITICAL_PATH_H_
#define STACKSIM_SIM_SIMULATE_CRITICAL_PATH_H_

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/trace/replay_result.h"
#include "sim/trace/trace.h"
#include "sim/util/units.h"

namespace stacksim::simulate {

struct CriticalPath {
  std::vector<trace::TaskId> tasks;  // first to last
  Time length;                       // sum of the tasks' durations
};

// REQUIRES: replay is `trace` replayed (timings indexed by task id).
CriticalPath FindCriticalPath(const trace::Trace& trace, const trace::ReplayResult& replay);

// Time on the path by task kind and role ("compute gemm", "collective
// dp-comm"), largest first.
std::vector<std::pair<std::string, Time>> TimeOnPathByRole(const trace::Trace& trace, const trace::ReplayResult& replay,
                                                          const CriticalPath& path);

// Text: the path's length against the step, time on the path by task role,
// then the chain (each task's kind, role, rank, stream, start, duration,
// label; the first and last `max_rows` / 2 when it is longer). JSON: every
// task.
std::string CriticalPathText(const trace::Trace& trace, const trace::ReplayResult& replay, const CriticalPath& path,
                             size_t max_rows = 60);
nlohmann::json CriticalPathJson(const trace::Trace& trace, const trace::ReplayResult& replay,
                                const CriticalPath& path);

}  // namespace stacksim::simulate

#endif  // STACKSIM_SIM_SIMULATE_CRITICAL_PATH_H_
