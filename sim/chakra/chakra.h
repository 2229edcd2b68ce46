// Chakra execution traces (MLCommons; the input of ASTRA-sim), in and out.
//
// Chakra is one graph per rank: nodes with ids, a type (COMP_NODE,
// COMM_COLL_NODE, COMM_SEND_NODE, COMM_RECV_NODE, MEM_LOAD/STORE_NODE), data
// and control dependencies, duration_micros and named attributes (num_ops,
// tensor_size, comm_type, comm_size, comm_src/dst/tag, pg_name). This header
// gathers the module's parts, one concept each:
//
//   chakra_graph.h      the graph as Chakra's schema has it (ChakraGraph)
//   chakra_export.h     a replayed stacksim trace -> graphs
//   chakra_import.h     graphs -> a stacksim trace (with chakra_node_view.h,
//                       chakra_group_table.h)
//   chakra_json.h       the JSON form (what Chakra's jsonizer writes)
//   chakra_et.h         the protobuf form (.et), through libprotobuf
//   chakra_proto.h      ChakraGraph to and from chakra_schema.proto's messages
//   comm_size.h         comm_size in Chakra's (ASTRA-sim's) convention
//   chakra_directory.h  a directory of per-rank files, either form
//
// Export needs a replay: compute tasks carry the duration the cost model gave
// them. Import prices collectives and sends with the network model at replay
// and times compute by its recorded duration. Times: Chakra durations are
// integer microseconds; stacksim_duration_ns, when present, is used instead.
// Errors are InputError naming the file and the node. docs/chakra.md has the
// full mapping and what is lost.
#ifndef STACKSIM_SIM_CHAKRA_CHAKRA_H_
#define STACKSIM_SIM_CHAKRA_CHAKRA_H_

#include "sim/chakra/chakra_directory.h"
#include "sim/chakra/chakra_export.h"
#include "sim/chakra/chakra_graph.h"
#include "sim/chakra/chakra_import.h"
#include "sim/chakra/chakra_json.h"

#endif  // STACKSIM_SIM_CHAKRA_CHAKRA_H_
