#include "sim/chakra/chakra.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <queue>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include <nlohmann/json.hpp>

#include "sim/chakra/chakra_et.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace stacksim::chakra {
namespace {

using nlohmann::json;
using trace::CollectiveKind;
using trace::Task;
using trace::TaskId;
using trace::TaskKind;

const char* const kNodeTypeNames[] = {"INVALID_NODE",   "METADATA_NODE",  "MEM_LOAD_NODE", "MEM_STORE_NODE",
                                      "COMP_NODE",      "COMM_SEND_NODE", "COMM_RECV_NODE", "COMM_COLL_NODE",
                                      "STORAGE_NODE",   "BATCH_NODE",     "CHECKPOINT_NODE"};
const char* const kCommTypeNames[] = {"ALL_REDUCE", "REDUCE",     "ALL_GATHER",     "GATHER",
                                      "SCATTER",    "BROADCAST",  "ALL_TO_ALL",     "REDUCE_SCATTER",
                                      "REDUCE_SCATTER_BLOCK", "BARRIER"};

int CommTypeOf(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::kAllReduce: return kAllReduce;
    case CollectiveKind::kAllGather: return kAllGather;
    case CollectiveKind::kReduceScatter: return kReduceScatter;
    case CollectiveKind::kAllToAll: return kAllToAll;
    case CollectiveKind::kBroadcast: return kBroadcast;
  }
  return kAllReduce;
}

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

// ---- Export ----------------------------------------------------------------

namespace {

int64_t Micros(Time t) { return std::llround(t.us()); }

void AddGroupAttrs(const trace::CommGroup& g, std::vector<Attribute>& attrs) {
  attrs.push_back(Attribute::String("pg_name", g.name));
  attrs.push_back(Attribute::IntList("stacksim_pg", {g.size, g.ranks_per_node, g.nodes, g.first_rank, g.stride,
                                                     g.siblings, g.sibling_stride}));
  attrs.push_back(
      Attribute::IntList("stacksim_pg_members", std::vector<int64_t>(g.simulated.begin(), g.simulated.end())));
}

// comm_size is an integer; a fractional byte count also travels exactly.
void AddBytes(Bytes b, std::vector<Attribute>& attrs) {
  attrs.push_back(Attribute::Int("comm_size", std::llround(b.value)));
  if (b.value != std::round(b.value)) attrs.push_back(Attribute::Double("stacksim_comm_bytes", b.value));
}

}  // namespace

std::vector<ChakraGraph> ExportChakraGraphs(const trace::Trace& t, const engine::ReplayResult& replay) {
  const TaskId n = static_cast<TaskId>(t.size());
  const TaskId recv_base = n;  // the receive node of transfer x has id n + x
  std::vector<ChakraGraph> graphs(t.rank_count());
  std::map<std::pair<trace::RankId, trace::StreamId>, TaskId> last_on_stream;
  for (TaskId id = 0; id < n; ++id) {
    const Task& task = t.task(id);
    ChakraNode node;
    node.id = id;
    node.name = t.name(task.name);
    std::vector<Attribute>& attrs = node.attrs;
    attrs.push_back(Attribute::Bool("is_cpu_op", false));
    Time duration = replay.timings[id].end - replay.timings[id].start;
    switch (task.kind) {
      case TaskKind::kCompute:
      case TaskKind::kDelay:
        node.type = kCompNode;
        if (task.kind == TaskKind::kDelay) {
          duration = task.duration;
          attrs.push_back(Attribute::String("stacksim_kind", "delay"));
        }
        attrs.push_back(Attribute::Int("num_ops", std::llround(task.compute.flops.value)));
        attrs.push_back(Attribute::Int("tensor_size", std::llround(task.compute.bytes.value)));
        break;
      case TaskKind::kCollective:
        node.type = kCollNode;
        attrs.push_back(Attribute::Int("comm_type", CommTypeOf(task.comm.kind)));
        AddBytes(task.comm.bytes, attrs);
        AddGroupAttrs(t.group(task.comm.group), attrs);
        if (task.comm.instance >= 0) attrs.push_back(Attribute::Int("stacksim_instance", task.comm.instance));
        if (task.comm.scale_out_bytes.value >= 0) {
          attrs.push_back(Attribute::Double("stacksim_scale_out_bytes", task.comm.scale_out_bytes.value));
        }
        break;
      case TaskKind::kTransfer:
        node.type = kSendNode;
        attrs.push_back(Attribute::Int("comm_src", task.rank));
        attrs.push_back(Attribute::Int("comm_dst", task.transfer.dst));
        attrs.push_back(Attribute::Int("comm_tag", id));
        AddBytes(task.transfer.bytes, attrs);
        AddGroupAttrs(t.group(task.transfer.group), attrs);
        break;
    }
    attrs.push_back(Attribute::String("stacksim_stream", t.stream_name(task.stream)));
    attrs.push_back(Attribute::String("stacksim_label", t.label(task.label)));
    if (task.layer >= 0) attrs.push_back(Attribute::Int("stacksim_layer", task.layer));
    if (task.micro_batch >= 0) attrs.push_back(Attribute::Int("stacksim_micro_batch", task.micro_batch));
    attrs.push_back(Attribute::Int("stacksim_duration_ns", duration.ns()));

    // Dependencies on the same rank are data deps; one on another rank's
    // transfer to this rank goes through this rank's receive node.
    for (const TaskId* d = t.deps_begin(id); d != t.deps_end(id); ++d) {
      const Task& dep = t.task(*d);
      TaskId ref = *d;
      if (dep.rank != task.rank) {
        if (dep.kind != TaskKind::kTransfer || dep.transfer.dst != task.rank) {
          throw InputError("", "", "task " + std::to_string(id) + " (" + t.name(task.name) + ") on rank " +
                                       std::to_string(task.rank) + " depends on task " + std::to_string(*d) +
                                       " of rank " + std::to_string(dep.rank) +
                                       ", which Chakra cannot express (only through a send to this rank)");
        }
        ref = recv_base + *d;
      }
      if (std::find(node.data_deps.begin(), node.data_deps.end(), ref) == node.data_deps.end()) {
        node.data_deps.push_back(ref);
      }
    }
    // Stream order, which Chakra has no word for, becomes a control dependency.
    auto [it, first] = last_on_stream.try_emplace({task.rank, task.stream}, id);
    if (!first) {
      if (std::find(node.data_deps.begin(), node.data_deps.end(), it->second) == node.data_deps.end()) {
        node.ctrl_deps.push_back(it->second);
      }
      it->second = id;
    }
    node.start_time_micros = Micros(replay.timings[id].start);
    node.duration_micros = Micros(duration);
    graphs[task.rank].nodes.push_back(std::move(node));

    if (task.kind == TaskKind::kTransfer) {
      ChakraNode recv;
      recv.id = recv_base + id;
      recv.name = t.name(task.name) + " (recv)";
      recv.type = kRecvNode;
      recv.attrs.push_back(Attribute::Bool("is_cpu_op", false));
      recv.attrs.push_back(Attribute::Int("comm_src", task.rank));
      recv.attrs.push_back(Attribute::Int("comm_dst", task.transfer.dst));
      recv.attrs.push_back(Attribute::Int("comm_tag", id));
      AddBytes(task.transfer.bytes, recv.attrs);
      AddGroupAttrs(t.group(task.transfer.group), recv.attrs);
      recv.start_time_micros = Micros(replay.timings[id].start);
      recv.duration_micros = Micros(duration);
      graphs[task.transfer.dst].nodes.push_back(std::move(recv));
    }
  }
  for (int r = 0; r < t.rank_count(); ++r) {
    graphs[r].version = "0.0.4";
    graphs[r].metadata = {Attribute::String("producer", "stacksim"), Attribute::Int("rank", r),
                          Attribute::Int("ranks", t.rank_count())};
  }
  return graphs;
}

// ---- JSON form: writing ----------------------------------------------------

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

std::vector<std::string> ExportChakraJson(const trace::Trace& t, const engine::ReplayResult& replay) {
  std::vector<std::string> out;
  for (const ChakraGraph& g : ExportChakraGraphs(t, replay)) out.push_back(ChakraJsonText(g));
  return out;
}

std::vector<std::string> WriteChakraDirectory(const trace::Trace& trace, const engine::ReplayResult& replay,
                                              const std::string& dir, FileForm form) {
  std::vector<ChakraGraph> graphs = ExportChakraGraphs(trace, replay);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError(dir, "", "cannot create directory: " + ec.message());
  std::vector<std::string> paths;
  const char* extension = form == FileForm::kEt ? ".et" : ".json";
  for (size_t r = 0; r < graphs.size(); ++r) {
    std::string path = (std::filesystem::path(dir) / ("stacksim." + std::to_string(r) + extension)).string();
    std::ofstream f(path, std::ios::binary);
    f << (form == FileForm::kEt ? EncodeChakraEt(graphs[r]) : ChakraJsonText(graphs[r]));
    if (!f) throw InputError(path, "", "cannot write");
    paths.push_back(path);
  }
  return paths;
}

// ---- JSON form: reading ----------------------------------------------------

namespace {

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

// ---- Import ----------------------------------------------------------------

namespace {

// A node as the importer sees it: attributes by name (the first of a name wins).
struct Node {
  int64_t id = 0;
  std::string name;
  int type = 0;
  std::vector<int64_t> deps;  // data then control
  int64_t duration_us = 0;
  std::map<std::string, const Attribute*> attrs;
  std::string where;  // "node 12"
};

Node ViewNode(const ChakraNode& n) {
  Node node;
  node.id = n.id;
  node.where = "node " + std::to_string(n.id);
  node.name = n.name.empty() ? node.where : n.name;
  node.type = n.type;
  node.deps = n.data_deps;
  node.deps.insert(node.deps.end(), n.ctrl_deps.begin(), n.ctrl_deps.end());
  node.duration_us = n.duration_micros;
  for (const Attribute& a : n.attrs) node.attrs.emplace(a.name, &a);
  return node;
}

// Attribute access with errors naming the file, node and attribute.
class NodeView {
 public:
  NodeView(const Node& node, const std::string& file) : node_(node), file_(file) {}
  bool Has(const std::string& name) const { return node_.attrs.count(name) > 0; }
  [[noreturn]] void Fail(const std::string& what) const { throw InputError(file_, node_.where, what); }
  int64_t Int(const std::string& name) const {
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
  int64_t IntOr(const std::string& name, int64_t fallback) const { return Has(name) ? Int(name) : fallback; }
  double Double(const std::string& name) const {
    const Attribute* a = Find(name);
    if (!a) Fail("attribute '" + name + "': expected a number");
    Usable(*a);
    if (a->type == Attribute::Type::kDouble) return a->double_value;
    if (a->type == Attribute::Type::kInt) return static_cast<double>(a->int_value);
    Fail("attribute '" + name + "': expected a number");
  }
  std::string String(const std::string& name, const std::string& fallback) const {
    const Attribute* a = Find(name);
    if (!a) return fallback;
    Usable(*a);
    if (a->type != Attribute::Type::kString) Fail("attribute '" + name + "': expected a string");
    return a->string_value;
  }
  std::vector<int64_t> IntList(const std::string& name) const {
    const Attribute* a = Find(name);
    if (!a) Fail("attribute '" + name + "': expected an integer list");
    Usable(*a);
    if (a->type != Attribute::Type::kIntList) Fail("attribute '" + name + "': expected an integer list");
    return a->ints;
  }
  Bytes CommBytes() const {
    if (Has("stacksim_comm_bytes")) return Bytes{Double("stacksim_comm_bytes")};
    int64_t b = Int("comm_size");
    if (b < 0) Fail("comm_size must not be negative");
    return Bytes{static_cast<double>(b)};
  }

 private:
  const Attribute* Find(const std::string& name) const {
    auto it = node_.attrs.find(name);
    return it == node_.attrs.end() ? nullptr : it->second;
  }
  void Usable(const Attribute& a) const {
    if (a.type == Attribute::Type::kInvalid) Fail("attribute '" + a.name + "': " + a.string_value);
  }
  const Node& node_;
  const std::string& file_;
};

// Groups, deduplicated by everything they record.
class GroupTable {
 public:
  GroupTable(trace::Trace& t, int ranks, int ranks_per_node) : t_(t), ranks_(ranks), ranks_per_node_(ranks_per_node) {}

  trace::GroupId FromNode(const NodeView& v, const std::vector<trace::RankId>& fallback_members) {
    trace::CommGroup g;
    g.name = v.String("pg_name", "");
    if (v.Has("stacksim_pg")) {
      std::vector<int64_t> p = v.IntList("stacksim_pg");
      if (p.size() != 7) v.Fail("attribute 'stacksim_pg': expected 7 values");
      g.size = static_cast<int>(p[0]);
      g.ranks_per_node = static_cast<int>(p[1]);
      g.nodes = static_cast<int>(p[2]);
      g.first_rank = p[3];
      g.stride = p[4];
      g.siblings = static_cast<int>(p[5]);
      g.sibling_stride = p[6];
      if (g.size < 1 || g.ranks_per_node < 1 || g.nodes < 1 || g.siblings < 1) {
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
    }
    if (g.name.empty()) g.name = "pg";
    g.role = trace::ParseGroupRole(g.name);
    for (trace::RankId r : g.simulated) {
      if (r < 0 || r >= ranks_) v.Fail("group member rank " + std::to_string(r) + " out of range");
    }
    std::ostringstream key;
    key << g.name << '|' << g.size << '|' << g.ranks_per_node << '|' << g.nodes << '|' << g.first_rank << '|'
        << g.stride << '|' << g.siblings << '|' << g.sibling_stride;
    for (trace::RankId r : g.simulated) key << ',' << r;
    auto [it, added] = index_.try_emplace(key.str(), 0);
    if (added) it->second = t_.AddGroup(g);
    return it->second;
  }

 private:
  trace::Trace& t_;
  int ranks_;
  int ranks_per_node_;
  std::map<std::string, trace::GroupId> index_;
};

struct Ref {  // a node of one rank
  int rank;
  int index;
  bool operator<(const Ref& o) const { return std::tie(rank, index) < std::tie(o.rank, o.index); }
};

}  // namespace

trace::Trace ImportChakraGraphs(const std::vector<RankGraph>& inputs, const ImportOptions& options) {
  const int ranks = static_cast<int>(inputs.size());
  if (ranks == 0) throw InputError("", "", "no Chakra files");
  std::vector<std::vector<Node>> nodes(ranks);
  std::vector<std::map<int64_t, int>> by_id(ranks);
  for (int r = 0; r < ranks; ++r) {
    const std::string& file = inputs[r].file;
    for (const ChakraNode& n : inputs[r].graph.nodes) {
      Node node = ViewNode(n);
      if (node.type == kMetadataNode) continue;
      if (!by_id[r].emplace(node.id, static_cast<int>(nodes[r].size())).second) {
        throw InputError(file, node.where, "duplicate node id");
      }
      nodes[r].push_back(std::move(node));
    }
    for (const Node& node : nodes[r]) {
      for (int64_t d : node.deps) {
        if (!by_id[r].count(d)) throw InputError(file, node.where, "dependency on unknown node " + std::to_string(d));
      }
      switch (node.type) {
        case kCompNode: case kCollNode: case kSendNode: case kRecvNode: case kMemLoadNode: case kMemStoreNode:
          break;
        default:
          throw InputError(file, node.where + ".type",
                           std::string("unsupported node type ") + NodeTypeName(node.type) + " (" +
                               std::to_string(node.type) + ")");
      }
    }
  }

  // Receives: each matches the next unmatched send with the same (src, dst, tag).
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::queue<Ref>> sends;
  for (int r = 0; r < ranks; ++r) {
    for (int i = 0; i < static_cast<int>(nodes[r].size()); ++i) {
      const Node& node = nodes[r][i];
      if (node.type != kSendNode) continue;
      NodeView v(node, inputs[r].file);
      int64_t src = v.IntOr("comm_src", r), dst = v.Int("comm_dst");
      if (src != r) v.Fail("comm_src " + std::to_string(src) + " is not this file's rank " + std::to_string(r));
      if (dst < 0 || dst >= ranks) v.Fail("comm_dst " + std::to_string(dst) + " out of range");
      sends[{src, dst, v.IntOr("comm_tag", 0)}].push({r, i});
    }
  }
  std::map<Ref, Ref> recv_send;  // receive -> its send
  for (int r = 0; r < ranks; ++r) {
    for (int i = 0; i < static_cast<int>(nodes[r].size()); ++i) {
      const Node& node = nodes[r][i];
      if (node.type != kRecvNode) continue;
      NodeView v(node, inputs[r].file);
      int64_t src = v.Int("comm_src"), dst = v.IntOr("comm_dst", r);
      if (dst != r) v.Fail("comm_dst " + std::to_string(dst) + " is not this file's rank " + std::to_string(r));
      auto it = sends.find({src, dst, v.IntOr("comm_tag", 0)});
      if (it == sends.end() || it->second.empty()) {
        v.Fail("no send matches this receive (comm_src " + std::to_string(src) + ", comm_tag " +
               std::to_string(v.IntOr("comm_tag", 0)) + ")");
      }
      recv_send[{r, i}] = it->second.front();
      it->second.pop();
    }
  }

  // Order: a topological order of all ranks' nodes (dependencies, receive
  // after send, and each stream in file order), smallest (id, rank) first so
  // that a stacksim export comes back in its original task order.
  auto stream_of = [&](const Node& node, const std::string& file) {
    NodeView v(node, file);
    switch (node.type) {
      case kCollNode: return v.String("stacksim_stream", "comm");
      case kSendNode: return v.String("stacksim_stream", "send");
      case kMemLoadNode: case kMemStoreNode: return v.String("stacksim_stream", "memory");
      default: return v.String("stacksim_stream", "compute");
    }
  };
  std::map<Ref, std::vector<Ref>> users;
  std::map<Ref, int> waiting;
  for (int r = 0; r < ranks; ++r) {
    std::map<std::string, int> last;
    for (int i = 0; i < static_cast<int>(nodes[r].size()); ++i) {
      const Node& node = nodes[r][i];
      Ref me{r, i};
      std::set<Ref> before;
      for (int64_t d : node.deps) before.insert({r, by_id[r][d]});
      if (node.type == kRecvNode) {
        before.insert(recv_send[me]);
      } else {
        auto [it, first] = last.try_emplace(stream_of(node, inputs[r].file), i);
        if (!first) before.insert({r, std::exchange(it->second, i)});
      }
      before.erase(me);
      waiting[me] = static_cast<int>(before.size());
      for (const Ref& b : before) users[b].push_back(me);
    }
  }
  // A receive sorts with its send: it resolves as soon as the send is added.
  auto key = [&](const Ref& a) {
    auto it = recv_send.find(a);
    const Ref& k = it == recv_send.end() ? a : it->second;
    return std::make_tuple(nodes[k.rank][k.index].id, k.rank, a.rank);
  };
  auto later = [&](const Ref& a, const Ref& b) { return key(a) > key(b); };
  std::priority_queue<Ref, std::vector<Ref>, decltype(later)> ready(later);
  for (const auto& [ref, count] : waiting) if (count == 0) ready.push(ref);

  trace::Trace t;
  t.SetRankCount(ranks);
  GroupTable groups(t, ranks, std::max(options.ranks_per_node, 1));
  std::map<Ref, std::vector<TaskId>> done;  // node -> the tasks that stand for its completion
  std::map<std::pair<trace::GroupId, int>, int> call_count;  // (group, rank) -> collectives so far
  std::map<std::pair<trace::GroupId, int>, int32_t> order_instance;  // (group, k-th call) -> instance
  std::map<int64_t, int32_t> instance_of;  // stacksim_instance -> instance
  int32_t next_instance = 0;
  size_t emitted = 0;
  while (!ready.empty()) {
    Ref me = ready.top();
    ready.pop();
    ++emitted;
    const Node& node = nodes[me.rank][me.index];
    const std::string& file = inputs[me.rank].file;
    NodeView v(node, file);
    std::vector<TaskId> deps;
    for (int64_t d : node.deps) {
      for (TaskId x : done[{me.rank, by_id[me.rank][d]}]) deps.push_back(x);
    }
    if (node.type == kRecvNode) {
      for (TaskId x : done[recv_send[me]]) deps.push_back(x);
    }
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());

    if (node.type == kRecvNode) {
      done[me] = deps;  // a receive is its send's arrival: no task of its own
    } else {
      Task task;
      task.rank = me.rank;
      task.name = t.InternName(node.name);
      task.stream = t.InternStream(stream_of(node, file));
      task.layer = static_cast<int32_t>(v.IntOr("stacksim_layer", -1));
      task.micro_batch = static_cast<int32_t>(v.IntOr("stacksim_micro_batch", -1));
      Time recorded = v.Has("stacksim_duration_ns") ? Time::Ns(v.Int("stacksim_duration_ns"))
                                                    : Time::Ns(node.duration_us * 1000);
      if (recorded < Time::Zero()) v.Fail("stacksim_duration_ns must not be negative");
      std::string label;
      if (node.type == kCollNode) {
        int64_t type = v.Int("comm_type");
        switch (type) {
          case kAllReduce: task.comm.kind = CollectiveKind::kAllReduce; break;
          case kAllGather: task.comm.kind = CollectiveKind::kAllGather; break;
          case kReduceScatter: task.comm.kind = CollectiveKind::kReduceScatter; break;
          case kAllToAll: task.comm.kind = CollectiveKind::kAllToAll; break;
          case kBroadcast: task.comm.kind = CollectiveKind::kBroadcast; break;
          default:
            v.Fail("comm_type " + std::to_string(type) + " (" +
                   CommTypeName(type >= 0 && type < 100 ? static_cast<int>(type) : -1) + ") is not supported");
        }
        task.comm.bytes = v.CommBytes();
        std::vector<trace::RankId> all(ranks);
        for (int r = 0; r < ranks; ++r) all[r] = r;
        task.comm.group = groups.FromNode(v, all);
        if (v.Has("stacksim_scale_out_bytes")) task.comm.scale_out_bytes = Bytes{v.Double("stacksim_scale_out_bytes")};
        if (options.recorded_comm_durations) {
          task.kind = TaskKind::kDelay;
          task.duration = recorded;
        } else {
          task.kind = TaskKind::kCollective;
          const trace::CommGroup& g = t.group(task.comm.group);
          if (v.Has("stacksim_instance")) {
            auto [it, added] = instance_of.try_emplace(v.Int("stacksim_instance"), next_instance);
            if (added) ++next_instance;
            task.comm.instance = it->second;
          } else if (g.simulated.size() > 1) {
            // Members issue a group's collectives in the same order (as NCCL requires).
            int k = call_count[{task.comm.group, me.rank}]++;
            auto [it, added] = order_instance.try_emplace({task.comm.group, k}, next_instance);
            if (added) ++next_instance;
            task.comm.instance = it->second;
          }
        }
        label = "comm";
      } else if (node.type == kSendNode) {
        task.kind = TaskKind::kTransfer;
        task.transfer.dst = static_cast<trace::RankId>(v.Int("comm_dst"));
        task.transfer.bytes = v.CommBytes();
        task.transfer.group = groups.FromNode(v, {me.rank, task.transfer.dst});
        label = "p2p";
      } else {
        task.kind = TaskKind::kDelay;
        task.duration = recorded;
        task.compute.flops = Flops{static_cast<double>(v.IntOr("num_ops", 0))};
        task.compute.bytes = Bytes{static_cast<double>(v.IntOr("tensor_size", 0))};
        if (node.type == kCompNode && recorded == Time::Zero() && options.roofline != nullptr &&
            !v.Has("stacksim_duration_ns")) {
          const config::ProfileConfig& p = *options.roofline;
          auto peak = p.Peak(config::Precision::kBf16);
          double bw = p.hbm_bandwidth.value.value * p.copy_efficiency.value;
          double s = std::max(peak && peak->value > 0 ? task.compute.flops.value / peak->value : 0.0,
                              bw > 0 ? task.compute.bytes.value / bw : 0.0);
          if (!(s < 1e6)) v.Fail("num_ops / tensor_size give a duration over 10^6 s on the roofline");
          task.duration = Time::FromSeconds(s);
        }
        label = node.type == kCompNode ? "compute" : "memory";
      }
      label = v.String("stacksim_label", label);
      task.role = trace::ParseTaskRole(label).value_or(trace::TaskRole::kOther);
      task.label = t.InternLabel(label);
      done[me] = {t.Add(task, deps)};
    }
    for (const Ref& u : users[me]) {
      if (--waiting[u] == 0) ready.push(u);
    }
  }
  if (emitted != waiting.size()) {
    for (const auto& [ref, count] : waiting) {
      if (count > 0) {
        throw InputError(inputs[ref.rank].file, nodes[ref.rank][ref.index].where,
                         "dependency cycle (or a receive waiting on its own rank's future)");
      }
    }
  }
  std::string problem = t.Check();
  if (!problem.empty()) throw InputError(inputs[0].file, "", "imported trace is inconsistent: " + problem);
  return t;
}

trace::Trace ImportChakraJson(const std::vector<RankText>& inputs, const ImportOptions& options) {
  std::vector<RankGraph> graphs;
  for (const RankText& in : inputs) graphs.push_back({in.file, ParseChakraJson(in)});
  return ImportChakraGraphs(graphs, options);
}

trace::Trace ReadChakraDirectory(const std::string& dir, const ImportOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InputError(dir, "", "not a directory");
  static const std::regex kName(R"((.*)\.(\d+)\.(json|et))");
  std::map<int, std::string> files;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::smatch m;
    std::string name = entry.path().filename().string();
    if (!std::regex_match(name, m, kName)) continue;
    int rank = std::stoi(m[2].str());
    if (!files.emplace(rank, entry.path().string()).second) {
      throw InputError(entry.path().string(), "", "a second file for rank " + std::to_string(rank));
    }
  }
  if (files.empty()) throw InputError(dir, "", "no Chakra files (NAME.RANK.json or NAME.RANK.et)");
  std::vector<RankGraph> graphs;
  for (const auto& [rank, path] : files) {
    if (rank != static_cast<int>(graphs.size())) {
      throw InputError(dir, "", "no file for rank " + std::to_string(graphs.size()));
    }
    std::ifstream f(path, std::ios::binary);
    if (!f) throw InputError(path, "", "cannot read");
    std::ostringstream text;
    text << f.rdbuf();
    RankText in{path, text.str()};
    graphs.push_back({path, path.ends_with(".et") ? DecodeChakraEt(in) : ParseChakraJson(in)});
  }
  return ImportChakraGraphs(graphs, options);
}

}  // namespace stacksim::chakra
