// Import: per-rank Chakra graphs (whatever their file form) as one stacksim
// trace.
//
// Compute and memory nodes become kDelay tasks of the recorded duration (the
// contract's construct for kernels of known length: the cost model is not
// asked); collectives and sends are priced by the network model at replay;
// a receive becomes a cross-rank dependency on the matching send (the next
// unmatched send with the same comm_src, comm_dst and comm_tag). Tasks are
// added in a topological order of all ranks' nodes, smallest (id, rank)
// first, so that a stacksim export comes back in its original task order.
// Times: Chakra durations are integer microseconds; stacksim_duration_ns,
// when present, is used instead. Errors are InputError naming the file and
// the node.
#ifndef STACKSIM_SIM_CHAKRA_CHAKRA_IMPORT_H_
#define STACKSIM_SIM_CHAKRA_CHAKRA_IMPORT_H_

#include <vector>

#include "sim/chakra/chakra_graph.h"
#include "sim/config/profile.h"
#include "sim/trace/trace.h"

namespace stacksim::chakra {

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

}  // namespace stacksim::chakra

#endif  // STACKSIM_SIM_CHAKRA_CHAKRA_IMPORT_H_
