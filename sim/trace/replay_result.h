// What replaying a trace gave each task: when it became ready, started and
// ended. The engine writes it; reports and exporters (Perfetto, Chakra) read
// it beside the trace, so they need the trace's types only, not the engine.
#ifndef STACKSIM_SIM_TRACE_REPLAY_RESULT_H_
#define STACKSIM_SIM_TRACE_REPLAY_RESULT_H_

#include <string>
#include <vector>

#include "sim/util/units.h"

namespace stacksim::trace {

struct TaskTiming {
  Time ready;   // all dependencies (and stream predecessor) finished
  Time start;   // began (collectives: all members ready)
  Time end;
};

struct ReplayResult {
  Time makespan;                    // end of the last task
  std::vector<TaskTiming> timings;  // indexed by TaskId
  // Time added by link sharing: for each task, end - (start + latency + unshared transfer).
  std::vector<Time> contention;     // indexed by TaskId (zero for compute)
  std::vector<std::string> algorithms;  // per collective kind+group, what the network model chose
  std::vector<std::string> bottlenecks;  // flow-level models: where contention added time (ContentionReport)
};

}  // namespace stacksim::trace

#endif  // STACKSIM_SIM_TRACE_REPLAY_RESULT_H_
