// A Chakra node as the importer reads it: its dependencies in one list (data
// then control), its attributes by name (the first of a name wins), and
// typed access to them whose errors name the file, the node and the
// attribute. Used by the importer (chakra_import.cc) and its group table.
//
// ImportNode points into the ChakraNode it was made from (attributes), and
// NodeView refers to an ImportNode and a file name: both must outlive it.
// Durations are Chakra's integer microseconds; byte counts are Bytes.
#ifndef STACKSIM_SIM_CHAKRA_CHAKRA_NODE_VIEW_H_
#define STACKSIM_SIM_CHAKRA_CHAKRA_NODE_VIEW_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/chakra/chakra_graph.h"
#include "sim/util/units.h"

namespace stacksim::chakra {

struct ImportNode {
  int64_t id = 0;
  std::string name;
  int type = 0;
  std::vector<int64_t> data_deps;
  std::vector<int64_t> ctrl_deps;
  int64_t duration_us = 0;
  std::map<std::string, const Attribute*> attrs;
  std::string where;  // "node 12"
};

// REQUIRES: n outlives the result (attributes point into it).
ImportNode ViewNode(const ChakraNode& n);

// Attribute access with errors naming the file, node and attribute.
class NodeView {
 public:
  NodeView(const ImportNode& node, const std::string& file) : node_(node), file_(file) {}
  bool Has(const std::string& name) const { return node_.attrs.count(name) > 0; }
  [[noreturn]] void Fail(const std::string& what) const;
  // An integer attribute (a double of integer value also reads).
  int64_t Int(const std::string& name) const;
  int64_t IntOr(const std::string& name, int64_t fallback) const { return Has(name) ? Int(name) : fallback; }
  double Double(const std::string& name) const;
  std::string String(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> IntList(const std::string& name) const;
  bool BoolOr(const std::string& name, bool fallback) const;
  // comm_size (bytes, Chakra's convention: comm_size.h), never negative.
  int64_t CommSize() const;
  // A transfer's bytes: stacksim_comm_bytes if present (exact), else comm_size.
  Bytes TransferBytes() const;

 private:
  const Attribute* Find(const std::string& name) const;
  void Usable(const Attribute& a) const;
  const ImportNode& node_;
  const std::string& file_;
};

}  // namespace stacksim::chakra

#endif  // STACKSIM_SIM_CHAKRA_CHAKRA_NODE_VIEW_H_
