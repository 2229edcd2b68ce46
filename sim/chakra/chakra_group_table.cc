#include "sim/chakra/chakra_group_table.h"

#include <algorithm>
#include <set>
#include <sstream>

namespace stacksim::chakra {

trace::GroupId GroupTable::FromNode(const NodeView& v, const std::vector<trace::RankId>& fallback_members) {
  trace::CommGroup g;
  g.name = v.String("pg_name", "");
  if (v.Has("stacksim_pg")) {
    std::vector<int64_t> p = v.IntList("stacksim_pg");
    if (p.size() != 7 && p.size() != 9) v.Fail("attribute 'stacksim_pg': expected 7 or 9 values");
    g.size = static_cast<int>(p[0]);
    g.ranks_per_node = static_cast<int>(p[1]);
    g.nodes = static_cast<int>(p[2]);
    g.first_rank = p[3];
    g.stride = p[4];
    g.siblings = static_cast<int>(p[5]);
    g.sibling_stride = p[6];
    if (p.size() == 9) {
      g.sibling_run = static_cast<int>(p[7]);
      g.sibling_run_stride = p[8];
    }
    if (g.size < 1 || g.ranks_per_node < 1 || g.nodes < 1 || g.siblings < 1 || g.sibling_run < 0) {
      v.Fail("attribute 'stacksim_pg': sizes must be positive");
    }
    for (int64_t m : v.IntList("stacksim_pg_members")) g.simulated.push_back(static_cast<trace::RankId>(m));
  } else {
    g.simulated = fallback_members;
    g.size = static_cast<int>(g.simulated.size());
    std::set<int> nodes;
    for (trace::RankId r : g.simulated) nodes.insert(r / ranks_per_node_);
    g.nodes = static_cast<int>(nodes.size());
    g.ranks_per_node = (g.size + g.nodes - 1) / std::max(g.nodes, 1);
    if (!g.simulated.empty()) g.first_rank = g.simulated.front();
    // A pair (sender first) sits at its two ranks: first_rank and first_rank + stride.
    if (g.simulated.size() == 2) g.stride = g.simulated[1] - g.simulated[0];
  }
  if (g.name.empty()) g.name = "pg";
  g.role = trace::ParseGroupRole(g.name);
  for (trace::RankId r : g.simulated) {
    if (r < 0 || r >= ranks_) v.Fail("group member rank " + std::to_string(r) + " out of range");
  }
  std::ostringstream key;
  key << g.name << '|' << g.size << '|' << g.ranks_per_node << '|' << g.nodes << '|' << g.first_rank << '|'
      << g.stride << '|' << g.siblings << '|' << g.sibling_stride << '|'
      << g.sibling_run << '|' << g.sibling_run_stride;
  for (trace::RankId r : g.simulated) key << ',' << r;
  auto [it, added] = index_.try_emplace(key.str(), 0);
  if (added) it->second = t_.AddGroup(g);
  return it->second;
}

}  // namespace stacksim::chakra
