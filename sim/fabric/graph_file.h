// Fabric graphs in files: GraphML (.graphml, .xml) and Graphviz DOT (.dot,
// .gv), read with Boost.Graph's readers (read_graphml, read_graphviz) and
// written as DOT (write_graphviz_dp).
//
// The file's graph is undirected; each edge is one full-duplex link.
// Vertex properties: kind (gpu | nvswitch | pcie-switch | nic | switch,
// required), name (display text), level (a switch's tier: 0 leaf, 1 spine,
// ...; optional). Edge properties, all required: kind (nvlink | pcie | ib |
// roce | ici), bandwidth per direction ("400 Gb/s", "450 GB/s"), latency
// ("1 us"). GraphML keys are declared attr.type="string". No other
// property is accepted. GPUs are numbered in the order the reader gives the
// vertices: GraphML's document order; for DOT, Boost's reader orders them
// by node id (as strings), so write ids of one width ("v007"), as WriteDot
// does.
//
// Errors are InputError naming the file, the vertex (DOT: its id; GraphML:
// its position and name) or edge (its two ends), and the property.
#ifndef STACKSIM_SIM_FABRIC_GRAPH_FILE_H_
#define STACKSIM_SIM_FABRIC_GRAPH_FILE_H_

#include <iosfwd>
#include <string>

#include "sim/fabric/fabric_graph.h"

namespace stacksim::fabric {

// By extension: .graphml / .xml as GraphML, .dot / .gv as DOT.
FabricGraph ReadFabricGraphFile(const std::string& path);
// `file` names the input in errors.
FabricGraph ReadGraphml(std::istream& in, const std::string& file);
FabricGraph ReadDot(std::istream& in, const std::string& file);

// DOT with the properties above; ReadDot reads it back to the same graph.
void WriteDot(const FabricGraph& fabric, std::ostream& out);

}  // namespace stacksim::fabric

#endif  // STACKSIM_SIM_FABRIC_GRAPH_FILE_H_
