#include "sim/chakra/chakra_json.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace stacksim::chakra {

// ---- Writing ---------------------------------------------------------------

namespace {

// Keys in the order protobuf writes them (name before value).
using ojson = nlohmann::ordered_json;

// protobuf's JSON form writes 64-bit integers as strings.
std::string U64(int64_t v) { return std::to_string(v); }

ojson AttrJson(const Attribute& a) {
  ojson out = {{"name", a.name}};
  auto values = [](const auto& list, auto convert) {
    ojson v = ojson::array();
    for (const auto& x : list) v.push_back(convert(x));
    return ojson{{"values", v}};
  };
  auto same = [](const auto& x) { return x; };
  switch (a.type) {
    case Attribute::Type::kInt: out["int64Val"] = U64(a.int_value); break;
    case Attribute::Type::kDouble: out["doubleVal"] = a.double_value; break;
    case Attribute::Type::kBool: out["boolVal"] = a.bool_value; break;
    case Attribute::Type::kString: out["stringVal"] = a.string_value; break;
    case Attribute::Type::kIntList: out["int64List"] = values(a.ints, U64); break;
    case Attribute::Type::kDoubleList: out["doubleList"] = values(a.doubles, same); break;
    case Attribute::Type::kBoolList: out["boolList"] = values(a.bools, [](bool b) { return b; }); break;
    case Attribute::Type::kStringList: out["stringList"] = values(a.strings, same); break;
    case Attribute::Type::kInvalid: break;  // no value: proto's default, absent
  }
  return out;
}

ojson AttrsJson(const std::vector<Attribute>& attrs) {
  ojson out = ojson::array();
  for (const Attribute& a : attrs) out.push_back(AttrJson(a));
  return out;
}

ojson IdsJson(const std::vector<int64_t>& ids) {
  ojson out = ojson::array();
  for (int64_t id : ids) out.push_back(U64(id));
  return out;
}

}  // namespace

std::string ChakraJsonText(const ChakraGraph& graph) {
  ojson metadata = {{"version", graph.version}, {"attr", AttrsJson(graph.metadata)}};
  std::string text = metadata.dump(2);
  for (const ChakraNode& node : graph.nodes) {
    ojson j = {{"id", U64(node.id)}, {"name", node.name}, {"type", NodeTypeName(node.type)}};
    if (!node.ctrl_deps.empty()) j["ctrlDeps"] = IdsJson(node.ctrl_deps);
    if (!node.data_deps.empty()) j["dataDeps"] = IdsJson(node.data_deps);
    j["startTimeMicros"] = U64(node.start_time_micros);
    j["durationMicros"] = U64(node.duration_micros);
    j["attr"] = AttrsJson(node.attrs);
    text += j.dump(2);
  }
  return text + "\n";
}

std::vector<std::string> ExportChakraJson(const trace::Trace& t, const trace::ReplayResult& replay) {
  std::vector<std::string> out;
  for (const ChakraGraph& g : ExportChakraGraphs(t, replay)) out.push_back(ChakraJsonText(g));
  return out;
}

// ---- Reading ---------------------------------------------------------------

namespace {

using nlohmann::json;

// Control bytes near the start: not JSON text (a .et file holds them in its
// first record's tags and lengths).
bool LooksBinary(const std::string& text) {
  for (size_t i = 0; i < std::min<size_t>(text.size(), 64); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') return true;
  }
  return false;
}

// Splits the jsonizer's concatenated objects (or a JSON array of them).
std::vector<json> ParseObjects(const RankText& in) {
  size_t start = in.text.find_first_not_of(" \t\r\n");
  if (start == std::string::npos) throw InputError(in.file, "", "empty file");
  std::vector<json> out;
  if (in.text[start] == '[') {
    json doc = ParseJsonText(in.text, in.file);
    for (json& e : doc) out.push_back(std::move(e));
    return out;
  }
  int depth = 0;
  bool in_string = false, escape = false;
  size_t begin = 0;
  for (size_t i = start; i < in.text.size(); ++i) {
    char c = in.text[i];
    if (in_string) {
      if (escape) escape = false;
      else if (c == '\\') escape = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (depth == 0) {
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') continue;
      if (c != '{') {
        std::string hint;
        if (i == start && LooksBinary(in.text)) hint = ": this looks binary (a protobuf Chakra trace? name it NAME.RANK.et)";
        throw InputError(in.file, "", "expected '{' at byte " + std::to_string(i) + " (object " +
                                          std::to_string(out.size()) + ")" + hint);
      }
      begin = i;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') ++depth;
    else if (c == '}' || c == ']') {
      if (--depth == 0) {
        out.push_back(ParseJsonText(in.text.substr(begin, i + 1 - begin),
                                    in.file + " (object " + std::to_string(out.size()) + ")"));
      }
    }
  }
  if (depth != 0 || in_string) {
    throw InputError(in.file, "", "truncated: object " + std::to_string(out.size()) + " is not closed");
  }
  return out;
}

// A uint64/int64 in protobuf JSON: a number or a decimal string. Returns
// nullopt (and why) when it is neither.
std::optional<int64_t> JsonInt(const json& v, std::string& problem) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    size_t pos = 0;
    int64_t x = 0;
    try {
      x = std::stoll(s, &pos);
    } catch (const std::exception&) {
      pos = 0;
    }
    if (s.empty() || pos != s.size()) {
      problem = "expected an integer, got \"" + s + "\"";
      return std::nullopt;
    }
    return x;
  }
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    problem = "integer out of range";
    return std::nullopt;
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::isfinite(d) && d == std::round(d) && std::abs(d) < 9.2e18) return static_cast<int64_t>(d);
  }
  problem = "expected an integer";
  return std::nullopt;
}

int64_t ReadInt(const JsonNode& v) {
  std::string problem;
  std::optional<int64_t> x = JsonInt(v.json(), problem);
  if (!x) v.Fail(problem);
  return *x;
}
int64_t ReadNonNegative(const JsonNode& v) {
  int64_t x = ReadInt(v);
  if (x < 0) v.Fail("must not be negative");
  return x;
}

// Either spelling of a field: protobuf JSON (camelCase) or the proto name.
std::optional<JsonNode> Field(JsonObject& o, std::string_view camel, std::string_view snake) {
  if (auto v = o.Optional(camel)) return v;
  return o.Optional(snake);
}

const char* const kScalarKeys[] = {"doubleVal", "double_val", "floatVal", "float_val", "int32Val", "int32_val",
                                   "int64Val", "int64_val", "uint32Val", "uint32_val", "uint64Val", "uint64_val",
                                   "sint32Val", "sint32_val", "sint64Val", "sint64_val", "fixed32Val",
                                   "fixed32_val", "fixed64Val", "fixed64_val", "sfixed32Val", "sfixed32_val",
                                   "sfixed64Val", "sfixed64_val", "boolVal", "bool_val", "stringVal",
                                   "string_val", "bytesVal", "bytes_val"};
const char* const kListKeys[] = {"doubleList", "double_list", "floatList", "float_list", "int32List",
                                 "int32_list", "int64List", "int64_list", "uint32List", "uint32_list",
                                 "uint64List", "uint64_list", "sint32List", "sint32_list", "sint64List",
                                 "sint64_list", "fixed32List", "fixed32_list", "fixed64List", "fixed64_list",
                                 "sfixed32List", "sfixed32_list", "sfixed64List", "sfixed64_list", "boolList",
                                 "bool_list", "stringList", "string_list", "bytesList", "bytes_list"};

// What a oneof key holds, from its name.
enum class ValueKind { kInt, kDouble, kBool, kString };
ValueKind KindOfKey(std::string_view key) {
  if (key.starts_with("double") || key.starts_with("float")) return ValueKind::kDouble;
  if (key.starts_with("bool")) return ValueKind::kBool;
  if (key.starts_with("string") || key.starts_with("bytes")) return ValueKind::kString;
  return ValueKind::kInt;
}

// One JSON value of the given kind into out; false (and why) if it is not one.
bool ReadValue(ValueKind kind, const json& v, Attribute& out, std::string& problem) {
  switch (kind) {
    case ValueKind::kInt: {
      std::optional<int64_t> x = JsonInt(v, problem);
      if (x) out.int_value = *x;
      return x.has_value();
    }
    case ValueKind::kDouble:
      if (v.is_number()) {
        out.double_value = v.get<double>();
        return true;
      }
      if (v.is_string()) {  // protobuf JSON spells NaN and infinities as strings
        const std::string& s = v.get_ref<const std::string&>();
        size_t pos = 0;
        try {
          out.double_value = std::stod(s, &pos);
        } catch (const std::exception&) {
          pos = 0;
        }
        if (!s.empty() && pos == s.size()) return true;
      }
      problem = "expected a number";
      return false;
    case ValueKind::kBool:
      if (v.is_boolean()) {
        out.bool_value = v.get<bool>();
        return true;
      }
      problem = "expected true or false";
      return false;
    case ValueKind::kString:
      if (v.is_string()) {
        out.string_value = v.get<std::string>();
        return true;
      }
      problem = "expected a string";
      return false;
  }
  return false;
}

Attribute ScalarAttr(const std::string& name, std::string_view key, const json& v) {
  static constexpr Attribute::Type kTypes[] = {Attribute::Type::kInt, Attribute::Type::kDouble,
                                               Attribute::Type::kBool, Attribute::Type::kString};
  ValueKind kind = KindOfKey(key);
  Attribute a = Attribute::Make(name, kTypes[static_cast<int>(kind)]);
  std::string problem;
  if (!ReadValue(kind, v, a, problem)) return Attribute::Invalid(name, problem);
  return a;
}

Attribute ListAttr(const std::string& name, std::string_view key, const json* values) {
  static constexpr Attribute::Type kTypes[] = {Attribute::Type::kIntList, Attribute::Type::kDoubleList,
                                               Attribute::Type::kBoolList, Attribute::Type::kStringList};
  ValueKind kind = KindOfKey(key);
  Attribute a = Attribute::Make(name, kTypes[static_cast<int>(kind)]);
  if (!values) return a;  // an empty list
  if (!values->is_array()) return Attribute::Invalid(name, "expected a list of values");
  for (const json& v : *values) {
    Attribute x;
    std::string problem;
    if (!ReadValue(kind, v, x, problem)) return Attribute::Invalid(name, "list element: " + problem);
    switch (kind) {
      case ValueKind::kInt: a.ints.push_back(x.int_value); break;
      case ValueKind::kDouble: a.doubles.push_back(x.double_value); break;
      case ValueKind::kBool: a.bools.push_back(x.bool_value); break;
      case ValueKind::kString: a.strings.push_back(std::move(x.string_value)); break;
    }
  }
  return a;
}

std::vector<Attribute> ReadAttrs(const JsonNode& list) {
  std::vector<Attribute> attrs;
  if (!list.IsArray()) list.Fail("expected an array of attributes");
  for (const JsonNode& a : list.Elements()) {
    JsonObject o(a);
    std::string name = o.Required("name").String();
    o.Ignore({"docString", "doc_string"});
    std::optional<Attribute> value;
    for (const char* k : kScalarKeys) {
      if (auto v = o.Optional(k)) value = ScalarAttr(name, k, v->json());
    }
    for (const char* k : kListKeys) {
      if (auto v = o.Optional(k)) {
        JsonObject lo(*v);
        auto values = lo.Optional("values");
        lo.Finish();
        value = ListAttr(name, k, values ? &values->json() : nullptr);
      }
    }
    o.Finish();
    if (value) attrs.push_back(std::move(*value));  // an attribute without a value is proto's default: absent
  }
  return attrs;
}

ChakraNode ReadNode(const JsonNode& n) {
  JsonObject o(n);
  ChakraNode node;
  // Protobuf's JSON mapping leaves default values out: a node without "id"
  // is node 0 (a second one is a duplicate id).
  if (auto v = o.Optional("id")) node.id = ReadNonNegative(*v);
  if (auto v = o.Optional("name")) node.name = v->json().is_string() ? v->json().get<std::string>() : "";
  JsonNode type = o.Required("type");
  if (type.IsString()) {
    node.type = NodeTypeFromName(type.json().get<std::string>());
    if (node.type < 0) type.Fail("unknown node type '" + type.json().get<std::string>() + "'");
  } else {
    node.type = static_cast<int>(ReadInt(type));
  }
  if (auto v = Field(o, "dataDeps", "data_deps")) {
    if (!v->IsArray()) v->Fail("expected an array of node ids");
    for (const JsonNode& d : v->Elements()) node.data_deps.push_back(ReadNonNegative(d));
  }
  if (auto v = Field(o, "ctrlDeps", "ctrl_deps")) {
    if (!v->IsArray()) v->Fail("expected an array of node ids");
    for (const JsonNode& d : v->Elements()) node.ctrl_deps.push_back(ReadNonNegative(d));
  }
  if (auto v = Field(o, "durationMicros", "duration_micros")) node.duration_micros = ReadNonNegative(*v);
  if (auto v = Field(o, "startTimeMicros", "start_time_micros")) node.start_time_micros = ReadNonNegative(*v);
  if (auto v = o.Optional("attr")) node.attrs = ReadAttrs(*v);
  o.Ignore({"inputs", "outputs"});
  o.Finish();
  return node;
}

}  // namespace

ChakraGraph ParseChakraJson(const RankText& in) {
  ChakraGraph graph;
  try {
    std::vector<json> objects = ParseObjects(in);
    for (size_t i = 0; i < objects.size(); ++i) {
      JsonNode n(objects[i], in.file, "object " + std::to_string(i));
      if (!n.IsObject()) n.Fail("expected an object");
      if (!objects[i].contains("type") && objects[i].contains("version")) {  // GlobalMetadata
        if (objects[i]["version"].is_string()) graph.version = objects[i]["version"].get<std::string>();
        if (objects[i].contains("attr")) graph.metadata = ReadAttrs(n.Child("attr"));
        continue;
      }
      graph.nodes.push_back(ReadNode(n));
    }
  } catch (const json::exception& e) {
    throw InputError(in.file, "", std::string("malformed Chakra JSON: ") + e.what());
  }
  return graph;
}

trace::Trace ImportChakraJson(const std::vector<RankText>& inputs, const ImportOptions& options) {
  std::vector<RankGraph> graphs;
  for (const RankText& in : inputs) graphs.push_back({in.file, ParseChakraJson(in)});
  return ImportChakraGraphs(graphs, options);
}

}  // namespace stacksim::chakra
