#include "sim/chakra/chakra_proto.h"

#include <cstdint>
#include <optional>

#include "sim/util/error.h"

namespace stacksim::chakra {
namespace {

using ChakraProtoMsg::AttributeProto;

void ToProto(const Attribute& a, AttributeProto& p) {
  p.set_name(a.name);
  switch (a.type) {
    case Attribute::Type::kInt: p.set_int64_val(a.int_value); break;
    case Attribute::Type::kDouble: p.set_double_val(a.double_value); break;
    case Attribute::Type::kBool: p.set_bool_val(a.bool_value); break;
    case Attribute::Type::kString: p.set_string_val(a.string_value); break;
    case Attribute::Type::kIntList:
      for (int64_t v : a.ints) p.mutable_int64_list()->add_values(v);
      p.mutable_int64_list();
      break;
    case Attribute::Type::kDoubleList:
      for (double v : a.doubles) p.mutable_double_list()->add_values(v);
      p.mutable_double_list();
      break;
    case Attribute::Type::kBoolList:
      for (bool v : a.bools) p.mutable_bool_list()->add_values(v);
      p.mutable_bool_list();
      break;
    case Attribute::Type::kStringList:
      for (const std::string& v : a.strings) p.mutable_string_list()->add_values(v);
      p.mutable_string_list();
      break;
    case Attribute::Type::kInvalid: break;  // no value
  }
}

// Appends list values converted by `one` to a's list (a becomes invalid if one fails).
template <typename List, typename One>
void ReadList(const List& list, Attribute& a, One one) {
  for (const auto& v : list.values()) {
    if (!one(v)) return;
  }
}

bool Unsigned(uint64_t v, Attribute& a, int64_t& out) {
  if (v > static_cast<uint64_t>(INT64_MAX)) {
    a = Attribute::Invalid(a.name, "value " + std::to_string(v) + " is beyond int64");
    return false;
  }
  out = static_cast<int64_t>(v);
  return true;
}

std::optional<Attribute> FromProto(const AttributeProto& p) {
  using T = Attribute::Type;
  Attribute a = Attribute::Make(p.name(), T::kInt);
  auto integer = [&a](int64_t v) {
    a.type = T::kInt;
    a.int_value = v;
  };
  auto unsigned_integer = [&a, &integer](uint64_t v) {
    int64_t x = 0;
    if (Unsigned(v, a, x)) integer(x);
  };
  auto ints = [&a](auto v) {
    a.ints.push_back(static_cast<int64_t>(v));
    return true;
  };
  auto uints = [&a](uint64_t v) {
    int64_t x = 0;
    if (!Unsigned(v, a, x)) {
      a.string_value = "list element: " + a.string_value;
      return false;
    }
    a.ints.push_back(x);
    return true;
  };
  switch (p.value_case()) {
    case AttributeProto::VALUE_NOT_SET: return std::nullopt;  // proto's default: absent
    case AttributeProto::kDoubleVal: a.type = T::kDouble; a.double_value = p.double_val(); break;
    case AttributeProto::kFloatVal: a.type = T::kDouble; a.double_value = p.float_val(); break;
    case AttributeProto::kInt32Val: integer(p.int32_val()); break;
    case AttributeProto::kInt64Val: integer(p.int64_val()); break;
    case AttributeProto::kUint32Val: integer(p.uint32_val()); break;
    case AttributeProto::kUint64Val: unsigned_integer(p.uint64_val()); break;
    case AttributeProto::kSint32Val: integer(p.sint32_val()); break;
    case AttributeProto::kSint64Val: integer(p.sint64_val()); break;
    case AttributeProto::kFixed32Val: integer(p.fixed32_val()); break;
    case AttributeProto::kFixed64Val: unsigned_integer(p.fixed64_val()); break;
    case AttributeProto::kSfixed32Val: integer(p.sfixed32_val()); break;
    case AttributeProto::kSfixed64Val: integer(p.sfixed64_val()); break;
    case AttributeProto::kBoolVal: a.type = T::kBool; a.bool_value = p.bool_val(); break;
    case AttributeProto::kStringVal: a.type = T::kString; a.string_value = p.string_val(); break;
    case AttributeProto::kBytesVal: a.type = T::kString; a.string_value = p.bytes_val(); break;
    case AttributeProto::kDoubleList:
      a.type = T::kDoubleList;
      for (double v : p.double_list().values()) a.doubles.push_back(v);
      break;
    case AttributeProto::kFloatList:
      a.type = T::kDoubleList;
      for (float v : p.float_list().values()) a.doubles.push_back(v);
      break;
    case AttributeProto::kInt32List: a.type = T::kIntList; ReadList(p.int32_list(), a, ints); break;
    case AttributeProto::kInt64List: a.type = T::kIntList; ReadList(p.int64_list(), a, ints); break;
    case AttributeProto::kUint32List: a.type = T::kIntList; ReadList(p.uint32_list(), a, ints); break;
    case AttributeProto::kUint64List: a.type = T::kIntList; ReadList(p.uint64_list(), a, uints); break;
    case AttributeProto::kSint32List: a.type = T::kIntList; ReadList(p.sint32_list(), a, ints); break;
    case AttributeProto::kSint64List: a.type = T::kIntList; ReadList(p.sint64_list(), a, ints); break;
    case AttributeProto::kFixed32List: a.type = T::kIntList; ReadList(p.fixed32_list(), a, ints); break;
    case AttributeProto::kFixed64List: a.type = T::kIntList; ReadList(p.fixed64_list(), a, uints); break;
    case AttributeProto::kSfixed32List: a.type = T::kIntList; ReadList(p.sfixed32_list(), a, ints); break;
    case AttributeProto::kSfixed64List: a.type = T::kIntList; ReadList(p.sfixed64_list(), a, ints); break;
    case AttributeProto::kBoolList:
      a.type = T::kBoolList;
      for (bool v : p.bool_list().values()) a.bools.push_back(v);
      break;
    case AttributeProto::kStringList:
      a.type = T::kStringList;
      for (const std::string& v : p.string_list().values()) a.strings.push_back(v);
      break;
    case AttributeProto::kBytesList:
      a.type = T::kStringList;
      for (const std::string& v : p.bytes_list().values()) a.strings.push_back(v);
      break;
  }
  return a;
}

int64_t Id(uint64_t v, const std::string& file, const std::string& where, const char* field) {
  if (v > static_cast<uint64_t>(INT64_MAX)) {
    throw InputError(file, where, std::string("field ") + field + ": " + std::to_string(v) + " is 2^63 or more");
  }
  return static_cast<int64_t>(v);
}

}  // namespace

ChakraProtoMsg::GlobalMetadata ToProto(const ChakraGraph& graph) {
  ChakraProtoMsg::GlobalMetadata m;
  m.set_version(graph.version);
  for (const Attribute& a : graph.metadata) ToProto(a, *m.add_attr());
  return m;
}

ChakraProtoMsg::Node ToProto(const ChakraNode& n) {
  ChakraProtoMsg::Node p;
  p.set_id(static_cast<uint64_t>(n.id));
  p.set_name(n.name);
  p.set_type(static_cast<ChakraProtoMsg::NodeType>(n.type));  // an open enum: any value travels
  for (int64_t d : n.ctrl_deps) p.add_ctrl_deps(static_cast<uint64_t>(d));
  for (int64_t d : n.data_deps) p.add_data_deps(static_cast<uint64_t>(d));
  p.set_start_time_micros(static_cast<uint64_t>(n.start_time_micros));
  p.set_duration_micros(static_cast<uint64_t>(n.duration_micros));
  for (const Attribute& a : n.attrs) ToProto(a, *p.add_attr());
  return p;
}

void FromProto(const ChakraProtoMsg::GlobalMetadata& m, ChakraGraph& graph) {
  graph.version = m.version();
  for (const AttributeProto& a : m.attr()) {
    if (std::optional<Attribute> x = FromProto(a)) graph.metadata.push_back(std::move(*x));
  }
}

ChakraNode FromProto(const ChakraProtoMsg::Node& p, const std::string& file, const std::string& where) {
  ChakraNode n;
  n.id = Id(p.id(), file, where, "id");
  n.name = p.name();
  n.type = p.type();
  for (uint64_t d : p.ctrl_deps()) n.ctrl_deps.push_back(Id(d, file, where, "ctrl_deps"));
  for (uint64_t d : p.data_deps()) n.data_deps.push_back(Id(d, file, where, "data_deps"));
  n.start_time_micros = Id(p.start_time_micros(), file, where, "start_time_micros");
  n.duration_micros = Id(p.duration_micros(), file, where, "duration_micros");
  for (const AttributeProto& a : p.attr()) {
    if (std::optional<Attribute> x = FromProto(a)) n.attrs.push_back(std::move(*x));
  }
  return n;
}

}  // namespace stacksim::chakra
