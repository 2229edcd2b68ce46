// The communication groups of an imported Chakra trace, one per distinct
// group the nodes record.
//
// A node that carries stacksim_pg (what stacksim's export writes) gives the
// group's placement exactly: size, GPUs per node, nodes, first rank, stride,
// siblings and sibling stride, with stacksim_pg_members the simulated ranks.
// Without it, the group is the members the caller names (every rank for a
// collective, the pair for a send), placed ranks_per_node to a node in rank
// order. Groups equal in name, placement and members are added to the trace
// once. The table refers to the trace it adds to, which must outlive it.
#ifndef STACKSIM_SIM_CHAKRA_CHAKRA_GROUP_TABLE_H_
#define STACKSIM_SIM_CHAKRA_CHAKRA_GROUP_TABLE_H_

#include <map>
#include <string>
#include <vector>

#include "sim/chakra/chakra_node_view.h"
#include "sim/trace/trace.h"

namespace stacksim::chakra {

class GroupTable {
 public:
  // ranks: the trace's rank count (members must lie below it).
  GroupTable(trace::Trace& t, int ranks, int ranks_per_node) : t_(t), ranks_(ranks), ranks_per_node_(ranks_per_node) {}

  // The group of node v (added to the trace if new); fallback_members when v
  // carries no stacksim_pg. Throws InputError naming the node.
  trace::GroupId FromNode(const NodeView& v, const std::vector<trace::RankId>& fallback_members);

 private:
  trace::Trace& t_;
  int ranks_;
  int ranks_per_node_;
  std::map<std::string, trace::GroupId> index_;
};

}  // namespace stacksim::chakra

#endif  // STACKSIM_SIM_CHAKRA_CHAKRA_GROUP_TABLE_H_
