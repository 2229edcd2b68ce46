// Timelines of a replayed trace in the Chrome trace event format, which
// ui.perfetto.dev and chrome://tracing open.
//
// One process per simulated rank (pid = rank), one thread per stream
// (tid = stream id), one complete ("X") event per task with its start and
// duration in microseconds. Events are written as they are produced, so a
// trace of a million tasks needs no more memory than its replay.
#ifndef STACKSIM_SIM_REPORT_PERFETTO_H_
#define STACKSIM_SIM_REPORT_PERFETTO_H_

#include <ostream>
#include <string>

#include "sim/trace/replay_result.h"
#include "sim/trace/trace.h"

namespace stacksim::report {

// REQUIRES: replay.timings has one entry per task of `trace` (std::logic_error
// otherwise). `title` is recorded in the file's metadata.
void WritePerfettoTrace(const trace::Trace& trace, const trace::ReplayResult& replay,
                        std::ostream& out, const std::string& title);

// As above, to a file. Throws InputError naming `path` if it cannot be written.
void WritePerfettoTraceFile(const trace::Trace& trace, const trace::ReplayResult& replay,
                            const std::string& title, const std::string& path);

// `text` as the contents of a JSON string (without the quotes).
std::string JsonEscape(const std::string& text);

}  // namespace stacksim::report

#endif  // STACKSIM_SIM_REPORT_PERFETTO_H_
