#include "sim/chakra/chakra_node_view.h"

#include <cmath>

#include "sim/util/error.h"

namespace stacksim::chakra {

ImportNode ViewNode(const ChakraNode& n) {
  ImportNode node;
  node.id = n.id;
  node.where = "node " + std::to_string(n.id);
  node.name = n.name.empty() ? node.where : n.name;
  node.type = n.type;
  node.data_deps = n.data_deps;
  node.ctrl_deps = n.ctrl_deps;
  node.duration_us = n.duration_micros;
  for (const Attribute& a : n.attrs) node.attrs.emplace(a.name, &a);
  return node;
}

void NodeView::Fail(const std::string& what) const { throw InputError(file_, node_.where, what); }

int64_t NodeView::Int(const std::string& name) const {
  const Attribute* a = Find(name);
  if (!a) Fail("missing attribute '" + name + "'");
  Usable(*a);
  if (a->type == Attribute::Type::kInt) return a->int_value;
  if (a->type == Attribute::Type::kDouble && a->double_value == std::round(a->double_value) &&
      std::abs(a->double_value) < 9.2e18) {
    return static_cast<int64_t>(a->double_value);
  }
  Fail("attribute '" + name + "': expected an integer");
}

double NodeView::Double(const std::string& name) const {
  const Attribute* a = Find(name);
  if (!a) Fail("attribute '" + name + "': expected a number");
  Usable(*a);
  if (a->type == Attribute::Type::kDouble) return a->double_value;
  if (a->type == Attribute::Type::kInt) return static_cast<double>(a->int_value);
  Fail("attribute '" + name + "': expected a number");
}

std::string NodeView::String(const std::string& name, const std::string& fallback) const {
  const Attribute* a = Find(name);
  if (!a) return fallback;
  Usable(*a);
  if (a->type != Attribute::Type::kString) Fail("attribute '" + name + "': expected a string");
  return a->string_value;
}

std::vector<int64_t> NodeView::IntList(const std::string& name) const {
  const Attribute* a = Find(name);
  if (!a) Fail("attribute '" + name + "': expected an integer list");
  Usable(*a);
  if (a->type != Attribute::Type::kIntList) Fail("attribute '" + name + "': expected an integer list");
  return a->ints;
}

bool NodeView::BoolOr(const std::string& name, bool fallback) const {
  const Attribute* a = Find(name);
  if (!a) return fallback;
  Usable(*a);
  if (a->type == Attribute::Type::kBool) return a->bool_value;
  if (a->type == Attribute::Type::kInt) return a->int_value != 0;
  Fail("attribute '" + name + "': expected true or false");
}

int64_t NodeView::CommSize() const {
  int64_t b = Int("comm_size");
  if (b < 0) Fail("comm_size must not be negative");
  return b;
}

Bytes NodeView::TransferBytes() const {
  if (Has("stacksim_comm_bytes")) return Bytes{Double("stacksim_comm_bytes")};
  return Bytes{static_cast<double>(CommSize())};
}

const Attribute* NodeView::Find(const std::string& name) const {
  auto it = node_.attrs.find(name);
  return it == node_.attrs.end() ? nullptr : it->second;
}

void NodeView::Usable(const Attribute& a) const {
  if (a.type == Attribute::Type::kInvalid) Fail("attribute '" + a.name + "': " + a.string_value);
}

}  // namespace stacksim::chakra
