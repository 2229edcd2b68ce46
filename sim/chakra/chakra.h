// Chakra execution traces (MLCommons; the input of ASTRA-sim), in and out.
//
// Chakra is one graph per rank: nodes with ids, a type (COMP_NODE,
// COMM_COLL_NODE, COMM_SEND_NODE, COMM_RECV_NODE, MEM_LOAD/STORE_NODE), data
// and control dependencies, duration_micros and named attributes (num_ops,
// tensor_size, comm_type, comm_size, comm_src/dst/tag, pg_name); ChakraGraph
// (chakra_graph.h) holds it. Two file forms carry it: protobuf (.et, see
// chakra_et.h) and JSON. The JSON form is what Chakra's jsonizer writes: per
// rank, the GlobalMetadata object followed by one object per node,
// concatenated, field names in protobuf's JSON spelling (camelCase; 64-bit
// integers as strings). Import also accepts the proto field names
// (snake_case), plain numbers and a JSON array of the same objects.
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

#include "sim/chakra/chakra_graph.h"
#include "sim/config/profile.h"
#include "sim/engine/engine.h"
#include "sim/trace/trace.h"

namespace stacksim::chakra {

// One rank's Chakra file (JSON text or .et bytes): `file` names it in errors.
struct RankText {
  std::string file;
  std::string text;
};

// One rank's graph and the file it came from (named in errors).
struct RankGraph {
  std::string file;
  ChakraGraph graph;
};

enum class FileForm { kJson, kEt };

// The Chakra graph of every simulated rank (index = rank).
// REQUIRES: replay is the replay of trace. Throws InputError if the trace has
// a cross-rank dependency Chakra cannot express (one not through a transfer
// to the dependent's rank).
std::vector<ChakraGraph> ExportChakraGraphs(const trace::Trace& trace, const engine::ReplayResult& replay);

// A graph in the JSON form (jsonizer-shaped), and back. Parse errors name the
// file and the object.
std::string ChakraJsonText(const ChakraGraph& graph);
ChakraGraph ParseChakraJson(const RankText& in);

// ExportChakraGraphs in the JSON form, per rank.
std::vector<std::string> ExportChakraJson(const trace::Trace& trace, const engine::ReplayResult& replay);

// Writes every rank to DIR/stacksim.<rank>.json or .et (creates DIR). Returns the paths.
std::vector<std::string> WriteChakraDirectory(const trace::Trace& trace, const engine::ReplayResult& replay,
                                              const std::string& dir, FileForm form = FileForm::kJson);

struct ImportOptions {
  // Price collectives by their recorded duration_micros instead of the
  // network model: they become kDelay tasks, so members no longer start together.
  bool recorded_comm_durations = false;
  // Placement of groups that carry no stacksim_pg attribute: members fill
  // nodes of this many GPUs in rank order.
  int ranks_per_node = 8;
  // Compute nodes without a duration (what synthetic Chakra generators write:
  // num_ops and tensor_size only) are timed on this GPU's roofline: the longer
  // of num_ops at the dense bf16 peak and tensor_size at achievable HBM
  // bandwidth (hbm x copy efficiency). Null: such nodes take no time.
  const config::ProfileConfig* roofline = nullptr;
};

// Builds a trace from per-rank Chakra graphs (index = rank), whatever their form.
trace::Trace ImportChakraGraphs(const std::vector<RankGraph>& ranks, const ImportOptions& options = {});

// Builds a trace from per-rank Chakra JSON (index = rank).
trace::Trace ImportChakraJson(const std::vector<RankText>& ranks, const ImportOptions& options = {});

// Reads DIR/*.<rank>.json or DIR/*.<rank>.et (ranks 0..n-1, each once; the
// form by each file's extension) and imports them.
trace::Trace ReadChakraDirectory(const std::string& dir, const ImportOptions& options = {});

}  // namespace stacksim::chakra

#endif  // STACKSIM_SIM_CHAKRA_CHAKRA_H_
