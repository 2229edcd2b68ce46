#include "sim/chakra/chakra_et.h"

#include <bit>
#include <cstdint>
#include <optional>
#include <string_view>

#include "sim/chakra/protowire.h"
#include "sim/util/error.h"

namespace stacksim::chakra {
namespace {

using namespace et_field;

// ---- Writing ---------------------------------------------------------------

std::string EncodeAttribute(const Attribute& a) {
  WireWriter w;
  if (!a.name.empty()) w.BytesField(kAttrName, a.name);
  // A oneof member is written even when it holds its default: it is set.
  switch (a.type) {
    case Attribute::Type::kInt: w.Int64Field(kAttrInt64, a.int_value); break;
    case Attribute::Type::kDouble: w.DoubleField(kAttrDouble, a.double_value); break;
    case Attribute::Type::kBool: w.BoolField(kAttrBool, a.bool_value); break;
    case Attribute::Type::kString: w.BytesField(kAttrString, a.string_value); break;
    case Attribute::Type::kIntList: {
      WireWriter list;
      list.PackedVarintField(kListValues, std::vector<uint64_t>(a.ints.begin(), a.ints.end()));
      w.BytesField(kAttrInt64List, list.bytes());
      break;
    }
    case Attribute::Type::kDoubleList: {
      WireWriter packed, list;
      for (double d : a.doubles) packed.Fixed64(std::bit_cast<uint64_t>(d));
      if (!a.doubles.empty()) list.BytesField(kListValues, packed.bytes());
      w.BytesField(kAttrDoubleList, list.bytes());
      break;
    }
    case Attribute::Type::kBoolList: {
      WireWriter list;
      list.PackedVarintField(kListValues, std::vector<uint64_t>(a.bools.begin(), a.bools.end()));
      w.BytesField(kAttrBoolList, list.bytes());
      break;
    }
    case Attribute::Type::kStringList: {
      WireWriter list;
      for (const std::string& s : a.strings) list.BytesField(kListValues, s);
      w.BytesField(kAttrStringList, list.bytes());
      break;
    }
    case Attribute::Type::kInvalid: break;  // no value
  }
  return w.Release();
}

std::vector<uint64_t> Unsigned(const std::vector<int64_t>& ids) { return {ids.begin(), ids.end()}; }

std::string EncodeNode(const ChakraNode& n) {
  WireWriter w;
  if (n.id != 0) w.VarintField(kNodeId, static_cast<uint64_t>(n.id));
  if (!n.name.empty()) w.BytesField(kNodeName, n.name);
  if (n.type != 0) w.Int64Field(kNodeType, n.type);  // enums are int32: negative ones sign-extend
  w.PackedVarintField(kNodeCtrlDeps, Unsigned(n.ctrl_deps));
  w.PackedVarintField(kNodeDataDeps, Unsigned(n.data_deps));
  if (n.start_time_micros != 0) w.VarintField(kNodeStartTimeMicros, static_cast<uint64_t>(n.start_time_micros));
  if (n.duration_micros != 0) w.VarintField(kNodeDurationMicros, static_cast<uint64_t>(n.duration_micros));
  for (const Attribute& a : n.attrs) w.BytesField(kNodeAttr, EncodeAttribute(a));
  return w.Release();
}

// ---- Reading ---------------------------------------------------------------

// A field in errors: "attr (10)"; field 0: its tag could not be read.
std::string FieldName(const char* name, uint32_t field) {
  return field == 0 ? "tag" : std::string(name) + " (" + std::to_string(field) + ")";
}

const char* NodeFieldName(uint32_t field) {
  static const char* const kNames[] = {"?",          "id",          "name", "type", "ctrl_deps", "data_deps",
                                       "start_time_micros", "duration_micros", "inputs", "outputs", "attr"};
  return field < sizeof kNames / sizeof kNames[0] ? kNames[field] : "unknown field";
}

const char* AttrFieldName(uint32_t field) {
  static const char* const kNames[] = {
      "?",           "name",         "doc_string",   "double_val",    "double_list",   "float_val",
      "float_list",  "int32_val",    "int32_list",   "int64_val",     "int64_list",    "uint32_val",
      "uint32_list", "uint64_val",   "uint64_list",  "sint32_val",    "sint32_list",   "sint64_val",
      "sint64_list", "fixed32_val",  "fixed32_list", "fixed64_val",   "fixed64_list",  "sfixed32_val",
      "sfixed32_list", "sfixed64_val", "sfixed64_list", "bool_val",    "bool_list",     "string_val",
      "string_list", "bytes_val",    "bytes_list"};
  return field < sizeof kNames / sizeof kNames[0] ? kNames[field] : "unknown field";
}

void ExpectWireType(WireReader& r, WireTag tag, WireType expected) {
  if (tag.type != expected) {
    r.Fail(std::string("wire type ") + WireTypeName(tag.type) + ", expected " + WireTypeName(expected));
  }
}

// The wire type of one element of the oneof's scalar kind at `field` (odd, 3..31).
WireType ScalarWireType(uint32_t field) {
  switch (field) {
    case kAttrDouble: case kAttrFixed64: case kAttrSfixed64: return WireType::kFixed64;
    case kAttrFloat: case kAttrFixed32: case kAttrSfixed32: return WireType::kFixed32;
    case kAttrString: case kAttrBytes: return WireType::kLen;
    default: return WireType::kVarint;
  }
}

// One scalar of the kind at `field` (odd, 3..31), wire type already checked,
// into a (its type and value). A uint64 past int64 becomes kInvalid.
void ReadScalar(WireReader& r, uint32_t field, Attribute& a) {
  auto integer = [&a](int64_t v) {
    a.type = Attribute::Type::kInt;
    a.int_value = v;
  };
  auto unsigned64 = [&a, &integer](uint64_t v) {
    if (v > static_cast<uint64_t>(INT64_MAX)) {
      a.type = Attribute::Type::kInvalid;
      a.string_value = "value " + std::to_string(v) + " is beyond int64";
    } else {
      integer(static_cast<int64_t>(v));
    }
  };
  switch (field) {
    case kAttrDouble: a.type = Attribute::Type::kDouble; a.double_value = r.ReadDouble(); return;
    case kAttrFloat: a.type = Attribute::Type::kDouble; a.double_value = r.ReadFloat(); return;
    case kAttrInt32: integer(static_cast<int32_t>(r.ReadVarint())); return;
    case kAttrInt64: integer(static_cast<int64_t>(r.ReadVarint())); return;
    case kAttrUint32: integer(static_cast<uint32_t>(r.ReadVarint())); return;
    case kAttrUint64: unsigned64(r.ReadVarint()); return;
    case kAttrSint32: integer(r.ReadSint32()); return;
    case kAttrSint64: integer(r.ReadSint64()); return;
    case kAttrFixed32: integer(r.ReadFixed32()); return;
    case kAttrFixed64: unsigned64(r.ReadFixed64()); return;
    case kAttrSfixed32: integer(static_cast<int32_t>(r.ReadFixed32())); return;
    case kAttrSfixed64: integer(static_cast<int64_t>(r.ReadFixed64())); return;
    case kAttrBool: a.type = Attribute::Type::kBool; a.bool_value = r.ReadVarint() != 0; return;
    case kAttrString: case kAttrBytes: a.type = Attribute::Type::kString; a.string_value = r.ReadBytes(); return;
  }
  r.Fail("not a scalar field");
}

// A *List message of the scalar kind at `element_field`: its values, packed
// or one by one, appended to a's list of that kind.
void ReadList(WireReader list, uint32_t element_field, Attribute& a) {
  const WireType element = ScalarWireType(element_field);
  auto append = [&](const Attribute& x) {
    switch (x.type) {
      case Attribute::Type::kInt: a.ints.push_back(x.int_value); break;
      case Attribute::Type::kDouble: a.doubles.push_back(x.double_value); break;
      case Attribute::Type::kBool: a.bools.push_back(x.bool_value); break;
      case Attribute::Type::kString: a.strings.push_back(x.string_value); break;
      default:  // a uint64 past int64: the whole list is unreadable
        a.type = Attribute::Type::kInvalid;
        a.string_value = "list element: " + x.string_value;
    }
  };
  while (!list.AtEnd()) {
    WireTag tag = list.ReadTag();
    if (tag.field != kListValues) {
      list.Skip(tag.type);
      continue;
    }
    if (tag.type == WireType::kLen && element != WireType::kLen) {  // packed
      std::string_view packed = list.ReadBytes();
      WireReader p(packed, list.offset() - packed.size(), list.depth());
      while (!p.AtEnd()) {
        Attribute x;
        ReadScalar(p, element_field, x);
        append(x);
      }
    } else {
      ExpectWireType(list, tag, element);
      Attribute x;
      ReadScalar(list, element_field, x);
      append(x);
    }
  }
}

// An AttributeProto; nullopt when its oneof holds nothing (proto's default:
// as if absent).
std::optional<Attribute> DecodeAttribute(WireReader r) {
  std::string name;
  std::optional<Attribute> value;
  uint32_t field = 0;
  try {
    while (!r.AtEnd()) {
      field = 0;
      WireTag tag = r.ReadTag();
      field = tag.field;
      if (field == kAttrName || field == kAttrDocString) {
        ExpectWireType(r, tag, WireType::kLen);
        std::string_view s = r.ReadBytes();
        if (field == kAttrName) name = s;
      } else if (field >= kAttrDouble && field <= kAttrBytesList) {
        // The oneof: the last member on the wire wins (protobuf's rule).
        value.emplace();
        if (field % 2 == 1) {
          ExpectWireType(r, tag, ScalarWireType(field));
          ReadScalar(r, field, *value);
        } else {
          ExpectWireType(r, tag, WireType::kLen);
          static constexpr Attribute::Type kListTypes[] = {
              Attribute::Type::kDoubleList, Attribute::Type::kDoubleList, Attribute::Type::kIntList,
              Attribute::Type::kIntList,    Attribute::Type::kIntList,    Attribute::Type::kIntList,
              Attribute::Type::kIntList,    Attribute::Type::kIntList,    Attribute::Type::kIntList,
              Attribute::Type::kIntList,    Attribute::Type::kIntList,    Attribute::Type::kIntList,
              Attribute::Type::kBoolList,   Attribute::Type::kStringList, Attribute::Type::kStringList};
          value->type = kListTypes[(field - kAttrDoubleList) / 2];
          ReadList(r.ReadMessage(), field - 1, *value);
        }
      } else {
        r.Skip(tag.type);
      }
    }
  } catch (const WireError& e) {
    std::string who = name.empty() ? std::string() : "'" + name + "' ";
    throw WireError(e.offset(), who + FieldName(AttrFieldName(field), field) + ": " + e.message());
  }
  if (value) value->name = std::move(name);
  return value;
}

int64_t ReadId(WireReader& r) {
  const size_t at = r.offset();
  const uint64_t v = r.ReadVarint();
  if (v > static_cast<uint64_t>(INT64_MAX)) throw WireError(at, std::to_string(v) + " is 2^63 or more");
  return static_cast<int64_t>(v);
}

void ReadIds(WireReader& r, WireTag tag, std::vector<int64_t>& out) {
  const size_t at = r.offset();
  std::vector<uint64_t> raw;
  r.ReadRepeatedVarint(tag.type, raw);
  for (uint64_t v : raw) {
    if (v > static_cast<uint64_t>(INT64_MAX)) throw WireError(at, "node id " + std::to_string(v) + " is 2^63 or more");
    out.push_back(static_cast<int64_t>(v));
  }
}

ChakraNode DecodeNode(WireReader r, const std::string& file, size_t index) {
  ChakraNode node;
  bool has_id = false, has_type = false;
  uint32_t field = 0;
  auto where = [&] {
    std::string w = "node #" + std::to_string(index);
    if (has_id) w += " (id " + std::to_string(node.id) + ")";
    return w;
  };
  try {
    while (!r.AtEnd()) {
      field = 0;
      WireTag tag = r.ReadTag();
      field = tag.field;
      switch (field) {
        case kNodeId:
          ExpectWireType(r, tag, WireType::kVarint);
          node.id = ReadId(r);
          has_id = true;
          break;
        case kNodeName:
          ExpectWireType(r, tag, WireType::kLen);
          node.name = r.ReadBytes();
          break;
        case kNodeType:
          ExpectWireType(r, tag, WireType::kVarint);
          node.type = static_cast<int32_t>(r.ReadVarint());  // an open enum: the importer rejects unknown values
          has_type = true;
          break;
        case kNodeCtrlDeps: ReadIds(r, tag, node.ctrl_deps); break;
        case kNodeDataDeps: ReadIds(r, tag, node.data_deps); break;
        case kNodeStartTimeMicros:
          ExpectWireType(r, tag, WireType::kVarint);
          node.start_time_micros = ReadId(r);
          break;
        case kNodeDurationMicros:
          ExpectWireType(r, tag, WireType::kVarint);
          node.duration_micros = ReadId(r);
          break;
        case kNodeInputs:
        case kNodeOutputs:  // IOInfo: stacksim has no use for it
          ExpectWireType(r, tag, WireType::kLen);
          r.ReadMessage();
          break;
        case kNodeAttr: {
          ExpectWireType(r, tag, WireType::kLen);
          try {
            if (std::optional<Attribute> a = DecodeAttribute(r.ReadMessage())) node.attrs.push_back(std::move(*a));
          } catch (const WireError& e) {
            throw WireError(e.offset(), "[" + std::to_string(node.attrs.size()) + "] " + e.message());
          }
          break;
        }
        default:
          r.Skip(tag.type);  // a field of a later schema (storage = 11, ...)
      }
    }
  } catch (const WireError& e) {
    throw InputError(file, where(), "field " + FieldName(NodeFieldName(field), field) + ": " + e.what());
  }
  if (!has_type) throw InputError(file, where(), "missing field type (3): every node has a NodeType");
  return node;
}

void DecodeMetadata(WireReader r, const std::string& file, ChakraGraph& g) {
  uint32_t field = 0;
  try {
    while (!r.AtEnd()) {
      field = 0;
      WireTag tag = r.ReadTag();
      field = tag.field;
      if (field == kMetadataVersion) {
        ExpectWireType(r, tag, WireType::kLen);
        g.version = r.ReadBytes();
      } else if (field == kMetadataAttr) {
        ExpectWireType(r, tag, WireType::kLen);
        if (std::optional<Attribute> a = DecodeAttribute(r.ReadMessage())) g.metadata.push_back(std::move(*a));
      } else {
        r.Skip(tag.type);
      }
    }
  } catch (const WireError& e) {
    const char* name = field == kMetadataVersion ? "version" : field == kMetadataAttr ? "attr" : "unknown field";
    throw InputError(file, "GlobalMetadata", "field " + FieldName(name, field) + ": " + e.what());
  }
}

}  // namespace

std::string EncodeChakraEt(const ChakraGraph& graph) {
  WireWriter metadata;
  if (!graph.version.empty()) metadata.BytesField(kMetadataVersion, graph.version);
  for (const Attribute& a : graph.metadata) metadata.BytesField(kMetadataAttr, EncodeAttribute(a));
  std::string out;
  AppendDelimited(out, metadata.bytes());
  for (const ChakraNode& node : graph.nodes) AppendDelimited(out, EncodeNode(node));
  return out;
}

ChakraGraph DecodeChakraEt(const RankText& in) {
  if (in.text.empty()) throw InputError(in.file, "", "empty file (a Chakra .et file starts with its GlobalMetadata)");
  ChakraGraph graph;
  WireReader stream(in.text);
  std::string_view message;
  size_t offset = 0;
  // Each record: a varint length, then that many bytes of one message.
  // index: of the node record; -1 for the GlobalMetadata.
  auto next = [&](int64_t index) {
    try {
      return NextDelimited(stream, message, offset);
    } catch (const WireError& e) {
      throw InputError(in.file, index < 0 ? "GlobalMetadata" : "node #" + std::to_string(index),
                       std::string("truncated or corrupt record: ") + e.what());
    }
  };
  next(-1);
  DecodeMetadata(WireReader(message, offset, 1), in.file, graph);
  for (size_t index = 0; next(static_cast<int64_t>(index)); ++index) {
    graph.nodes.push_back(DecodeNode(WireReader(message, offset, 1), in.file, index));
  }
  return graph;
}

std::vector<std::string> ExportChakraEt(const trace::Trace& trace, const trace::ReplayResult& replay) {
  std::vector<std::string> out;
  for (const ChakraGraph& g : ExportChakraGraphs(trace, replay)) out.push_back(EncodeChakraEt(g));
  return out;
}

trace::Trace ImportChakraEt(const std::vector<RankText>& ranks, const ImportOptions& options) {
  std::vector<RankGraph> graphs;
  for (const RankText& in : ranks) graphs.push_back({in.file, DecodeChakraEt(in)});
  return ImportChakraGraphs(graphs, options);
}

}  // namespace stacksim::chakra
