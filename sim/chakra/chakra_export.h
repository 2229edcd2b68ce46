// Export: a replayed stacksim trace as Chakra graphs, one per rank.
//
// Compute tasks become COMP_NODEs of the duration the replay gave them (a
// kDelay task keeps its own duration), collectives COMM_COLL_NODEs, and a
// transfer a COMM_SEND_NODE on its rank plus a COMM_RECV_NODE on the
// destination (id: trace size + the transfer's task id). Dependencies on the
// same rank are data deps; stream order, which Chakra has no word for, becomes
// a control dependency. stacksim-only facts (stream, label, exact
// nanoseconds, the group's placement, collective instance) travel as
// attributes named stacksim_*, which other Chakra consumers ignore. Times in
// the graph are Chakra's integer microseconds (rounded); stacksim_duration_ns
// keeps the exact nanoseconds. docs/chakra.md has the full mapping.
#ifndef STACKSIM_SIM_CHAKRA_CHAKRA_EXPORT_H_
#define STACKSIM_SIM_CHAKRA_CHAKRA_EXPORT_H_

#include <vector>

#include "sim/chakra/chakra_graph.h"
#include "sim/trace/replay_result.h"
#include "sim/trace/trace.h"

namespace stacksim::chakra {

// The Chakra graph of every simulated rank (index = rank).
// REQUIRES: replay is the replay of trace. Throws InputError if the trace has
// a cross-rank dependency Chakra cannot express (one not through a transfer
// to the dependent's rank).
std::vector<ChakraGraph> ExportChakraGraphs(const trace::Trace& trace, const trace::ReplayResult& replay);

}  // namespace stacksim::chakra

#endif  // STACKSIM_SIM_CHAKRA_CHAKRA_EXPORT_H_
