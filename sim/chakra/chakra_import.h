// Import: per-rank Chakra graphs (whatever their file form) as one stacksim
// trace.
//
// Compute and memory nodes become kDelay tasks of the recorded duration (the
// contract's construct for kernels of known length: the cost model is not
// asked); collectives and sends are priced by the network model at replay,
// collective bytes read in ASTRA-sim's comm_size convention (comm_size.h);
// a collective the file puts on the CPU (is_cpu_op true: the host side of a
// collective, as Chakra's PyTorch converter writes it) is a delay of its
// recorded duration. A receive becomes a cross-rank dependency on the
// matching send (the next unmatched send with the same comm_src, comm_dst and
// comm_tag). Metadata and INVALID nodes pass their dependencies on. Each node
// runs on the stream the trace gives it (stacksim_stream; else the GPU
// `stream`, or the `tid` of its thread or stream), in file order per stream.
// Dependencies on nodes absent from the file and on the node itself are
// dropped, as Chakra's feeder drops them, and counted in ImportNotes. Tasks are
// added in a topological order of all ranks' nodes, smallest (id, rank)
// first, so that a stacksim export comes back in its original task order.
// Times: Chakra durations are integer microseconds; stacksim_duration_ns,
// when present, is used instead. Errors are InputError naming the file and
// the node.
#ifndef STACKSIM_SIM_CHAKRA_CHAKRA_IMPORT_H_
#define STACKSIM_SIM_CHAKRA_CHAKRA_IMPORT_H_

#include <string>
#include <vector>

#include "sim/chakra/chakra_graph.h"
#include "sim/config/profile.h"
#include "sim/trace/trace.h"

namespace stacksim::chakra {

enum class CtrlDeps { kFollow, kIgnore, kAuto };

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
  // Whether ctrl_deps order nodes as data_deps do. kFollow: ASTRA-sim's
  // feeder follows both. kIgnore: Chakra's own feeder reads data_deps only
  // (Chakra's PyTorch converter writes each op's caller as its ctrl_dep, and
  // those close cycles). kAuto: follow them unless they close a cycle, then
  // ignore them all and say so (ImportNotes::ctrl_cycle); a cycle of data
  // deps is an error either way.
  CtrlDeps ctrl_deps = CtrlDeps::kAuto;
};

// What the import dropped or reinterpreted, for the report.
struct ImportNotes {
  int64_t absent_dependencies = 0;  // on nodes not in the file (dropped)
  int64_t self_dependencies = 0;    // on the node itself (dropped)
  int64_t host_collectives = 0;     // collective nodes on the CPU, replayed as delays
  int64_t ignored_ctrl_deps = 0;    // when ignored (kIgnore, or kAuto after a cycle)
  std::string ctrl_cycle;           // kAuto: the cycle through ctrl deps that made it ignore them
};

// Builds a trace from per-rank Chakra graphs (index = rank), whatever their
// form. A dependency cycle is an InputError listing its edges.
trace::Trace ImportChakraGraphs(const std::vector<RankGraph>& ranks, const ImportOptions& options = {},
                                ImportNotes* notes = nullptr);

// The GPUs an imported trace spans: its ranks and every global rank its
// groups place a member or sibling on (a network model must be at least this
// large).
int64_t GpusSpanned(const trace::Trace& t);

}  // namespace stacksim::chakra

#endif  // STACKSIM_SIM_CHAKRA_CHAKRA_IMPORT_H_
