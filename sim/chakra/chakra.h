// Chakra execution traces (MLCommons; the input of ASTRA-sim), in and out.
//
// Chakra is one graph per rank: nodes with ids, a type (COMP_NODE,
// COMM_COLL_NODE, COMM_SEND_NODE, COMM_RECV_NODE, MEM_LOAD/STORE_NODE), data
// and control dependencies, duration_micros and named attributes (num_ops,
// tensor_size, comm_type, comm_size, comm_src/dst/tag, pg_name). The JSON form
// is what Chakra's jsonizer writes: per rank, the GlobalMetadata object
// followed by one object per node, concatenated, field names in protobuf's
// JSON spelling (camelCase; 64-bit integers as strings). Import also accepts
// the proto field names (snake_case), plain numbers and a JSON array of the
// same objects.
//
// Export needs a replay: compute tasks carry the duration the cost model gave
// them. stacksim-only facts (stream, label, exact nanoseconds, the group's
// placement, collective instance) travel as attributes named stacksim_*,
// which other Chakra consumers ignore. docs/chakra.md has the full mapping
// and what is lost.
//
// Import builds a trace whose compute nodes are kDelay tasks of the recorded
// duration (the contract's construct for kernels of known length: the cost
// model is not asked), collectives and sends priced by the network model at
// replay, receives turned into cross-rank dependencies on the matching send.
// Times: Chakra durations are integer microseconds; stacksim_duration_ns,
// when present, is used instead. Errors are InputError naming the file and
// the node.
#ifndef STACKSIM_SIM_CHAKRA_CHAKRA_H_
#define STACKSIM_SIM_CHAKRA_CHAKRA_H_

#include <string>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/trace/trace.h"

namespace stacksim::chakra {

// One rank's Chakra JSON: `file` names it in errors.
struct RankText {
  std::string file;
  std::string text;
};

// The Chakra JSON of every simulated rank (index = rank), jsonizer-shaped.
// REQUIRES: replay is the replay of trace. Throws InputError if the trace has
// a cross-rank dependency Chakra cannot express (one not through a transfer
// to the dependent's rank).
std::vector<std::string> ExportChakraJson(const trace::Trace& trace, const engine::ReplayResult& replay);

// Writes ExportChakraJson to DIR/stacksim.<rank>.json (creates DIR). Returns the paths.
std::vector<std::string> WriteChakraDirectory(const trace::Trace& trace, const engine::ReplayResult& replay,
                                              const std::string& dir);

struct ImportOptions {
  // Price collectives by their recorded duration_micros instead of the
  // network model: they become kDelay tasks, so members no longer start together.
  bool recorded_comm_durations = false;
  // Placement of groups that carry no stacksim_pg attribute: members fill
  // nodes of this many GPUs in rank order.
  int ranks_per_node = 8;
};

// Builds a trace from per-rank Chakra JSON (index = rank).
trace::Trace ImportChakraJson(const std::vector<RankText>& ranks, const ImportOptions& options = {});

// Reads DIR/*.<rank>.json (ranks 0..n-1, each once) and imports them.
trace::Trace ReadChakraDirectory(const std::string& dir, const ImportOptions& options = {});

}  // namespace stacksim::chakra

#endif  // STACKSIM_SIM_CHAKRA_CHAKRA_H_
