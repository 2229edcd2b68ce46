#include "sim/chakra/chakra_graph.h"

namespace stacksim::chakra {
namespace {

const char* const kNodeTypeNames[] = {"INVALID_NODE",   "METADATA_NODE",  "MEM_LOAD_NODE", "MEM_STORE_NODE",
                                      "COMP_NODE",      "COMM_SEND_NODE", "COMM_RECV_NODE", "COMM_COLL_NODE",
                                      "STORAGE_NODE",   "BATCH_NODE",     "CHECKPOINT_NODE"};
const char* const kCommTypeNames[] = {"ALL_REDUCE", "REDUCE",     "ALL_GATHER",     "GATHER",
                                      "SCATTER",    "BROADCAST",  "ALL_TO_ALL",     "REDUCE_SCATTER",
                                      "REDUCE_SCATTER_BLOCK", "BARRIER"};

}  // namespace

const char* NodeTypeName(int type) {
  constexpr int n = sizeof kNodeTypeNames / sizeof kNodeTypeNames[0];
  return type >= 0 && type < n ? kNodeTypeNames[type] : "?";
}
int NodeTypeFromName(const std::string& name) {
  for (int t = 0; t < static_cast<int>(sizeof kNodeTypeNames / sizeof kNodeTypeNames[0]); ++t) {
    if (name == kNodeTypeNames[t]) return t;
  }
  return -1;
}
const char* CommTypeName(int type) {
  constexpr int n = sizeof kCommTypeNames / sizeof kCommTypeNames[0];
  return type >= 0 && type < n ? kCommTypeNames[type] : "?";
}

}  // namespace stacksim::chakra
