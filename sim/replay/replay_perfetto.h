// The recorded step and its replays side by side, as one Chrome-trace JSON
// file that ui.perfetto.dev opens.
//
// One process per view: pid 1 is the step as recorded (the trace's own
// timestamps), pid 2, 3, ... the replays (own hardware, another GPU, another
// data-parallel scale). Threads carry the same names in every view ("host
// thread T", "gpu stream S", "dp") and the same tids, so the views line up
// row by row. Only real work is drawn: the replay's filler tasks (host gaps,
// launch latency, inter-kernel gaps) are left out. Times are microseconds
// from the step's begin.
#ifndef STACKSIM_SIM_REPLAY_REPLAY_PERFETTO_H_
#define STACKSIM_SIM_REPLAY_REPLAY_PERFETTO_H_

#include <string>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/ingest/kineto.h"
#include "sim/trace/trace.h"

namespace stacksim::replay {

using ingest::KinetoHostCall;
using ingest::KinetoKernel;
using ingest::KinetoStep;

struct ReplayView {
  std::string name;                          // "replayed on h200-sxm-141gb"
  const trace::Trace* trace = nullptr;       // built by BuildStepTrace
  const engine::ReplayResult* replay = nullptr;
};

// REQUIRES: each view's replay has one timing per task of its trace.
// Throws InputError naming `path` if it cannot be written.
void WriteReplayComparison(const KinetoStep& step, const std::vector<ReplayView>& views, const std::string& path);

// The same document as a JSON value (for tests).
std::string ReplayComparisonJson(const KinetoStep& step, const std::vector<ReplayView>& views);

}  // namespace stacksim::replay

#endif  // STACKSIM_SIM_REPLAY_REPLAY_PERFETTO_H_
