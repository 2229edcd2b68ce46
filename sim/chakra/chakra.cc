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

#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace stacksim::chakra {
namespace {

using nlohmann::json;
using trace::CollectiveKind;
using trace::Task;
using trace::TaskId;
using trace::TaskKind;

// Chakra's enums (et_def.proto: NodeType, CollectiveCommType).
constexpr int kMetadataNode = 1, kMemLoadNode = 2, kMemStoreNode = 3, kCompNode = 4, kSendNode = 5,
              kRecvNode = 6, kCollNode = 7;
const std::map<std::string, int>& NodeTypes() {
  static const std::map<std::string, int> kTypes = {
      {"INVALID_NODE", 0},  {"METADATA_NODE", 1},  {"MEM_LOAD_NODE", 2}, {"MEM_STORE_NODE", 3},
      {"COMP_NODE", 4},     {"COMM_SEND_NODE", 5}, {"COMM_RECV_NODE", 6}, {"COMM_COLL_NODE", 7},
      {"STORAGE_NODE", 8}, {"BATCH_NODE", 9},     {"CHECKPOINT_NODE", 10}};
  return kTypes;
}
const char* NodeTypeName(int type) {
  for (const auto& [name, t] : NodeTypes()) if (t == type) return name.c_str();
  return "?";
}

constexpr int kAllReduce = 0, kAllGather = 2, kBroadcast = 5, kAllToAll = 6, kReduceScatter = 7;
const std::map<std::string, int>& CommTypes() {
  static const std::map<std::string, int> kTypes = {
      {"ALL_REDUCE", 0}, {"REDUCE", 1},         {"ALL_GATHER", 2},     {"GATHER", 3},  {"SCATTER", 4},
      {"BROADCAST", 5},  {"ALL_TO_ALL", 6},     {"REDUCE_SCATTER", 7}, {"REDUCE_SCATTER_BLOCK", 8},
      {"BARRIER", 9}};
  return kTypes;
}
int CommType(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::kAllReduce: return kAllReduce;
    case CollectiveKind::kAllGather: return kAllGather;
    case CollectiveKind::kReduceScatter: return kReduceScatter;
    case CollectiveKind::kAllToAll: return kAllToAll;
    case CollectiveKind::kBroadcast: return kBroadcast;
  }
  return kAllReduce;
}

// ---- Export ----------------------------------------------------------------

// Keys in the order protobuf writes them (name before value).
using ojson = nlohmann::ordered_json;

// protobuf's JSON form writes 64-bit integers as strings.
std::string U64(int64_t v) { return std::to_string(v); }
int64_t Micros(Time t) { return std::llround(t.us()); }

ojson IntAttr(const std::string& name, int64_t v) { return {{"name", name}, {"int64Val", U64(v)}}; }
ojson StringAttr(const std::string& name, const std::string& v) { return {{"name", name}, {"stringVal", v}}; }
ojson IntListAttr(const std::string& name, const std::vector<int64_t>& values) {
  ojson list = ojson::array();
  for (int64_t v : values) list.push_back(U64(v));
  return {{"name", name}, {"int64List", {{"values", list}}}};
}

void AddGroupAttrs(const trace::CommGroup& g, ojson& attrs) {
  attrs.push_back(StringAttr("pg_name", g.name));
  attrs.push_back(IntListAttr("stacksim_pg", {g.size, g.ranks_per_node, g.nodes, g.first_rank, g.stride,
                                              g.siblings, g.sibling_stride}));
  attrs.push_back(IntListAttr("stacksim_pg_members", std::vector<int64_t>(g.simulated.begin(), g.simulated.end())));
}

// comm_size is an integer; a fractional byte count also travels exactly.
void AddBytes(Bytes b, ojson& attrs) {
  attrs.push_back(IntAttr("comm_size", std::llround(b.value)));
  if (b.value != std::round(b.value)) attrs.push_back({{"name", "stacksim_comm_bytes"}, {"doubleVal", b.value}});
}

}  // namespace

std::vector<std::string> ExportChakraJson(const trace::Trace& t, const engine::ReplayResult& replay) {
  const TaskId n = static_cast<TaskId>(t.size());
  const TaskId recv_base = n;  // the receive node of transfer x has id n + x
  std::vector<std::vector<ojson>> nodes(t.rank_count());
  std::map<std::pair<trace::RankId, trace::StreamId>, TaskId> last_on_stream;
  for (TaskId id = 0; id < n; ++id) {
    const Task& task = t.task(id);
    ojson node = {{"id", U64(id)}, {"name", t.name(task.name)}};
    ojson attrs = ojson::array();
    attrs.push_back({{"name", "is_cpu_op"}, {"boolVal", false}});
    Time duration = replay.timings[id].end - replay.timings[id].start;
    switch (task.kind) {
      case TaskKind::kCompute:
      case TaskKind::kDelay:
        node["type"] = "COMP_NODE";
        if (task.kind == TaskKind::kDelay) {
          duration = task.duration;
          attrs.push_back(StringAttr("stacksim_kind", "delay"));
        }
        attrs.push_back(IntAttr("num_ops", std::llround(task.compute.flops.value)));
        attrs.push_back(IntAttr("tensor_size", std::llround(task.compute.bytes.value)));
        break;
      case TaskKind::kCollective:
        node["type"] = "COMM_COLL_NODE";
        attrs.push_back(IntAttr("comm_type", CommType(task.comm.kind)));
        AddBytes(task.comm.bytes, attrs);
        AddGroupAttrs(t.group(task.comm.group), attrs);
        if (task.comm.instance >= 0) attrs.push_back(IntAttr("stacksim_instance", task.comm.instance));
        if (task.comm.scale_out_bytes.value >= 0) {
          attrs.push_back({{"name", "stacksim_scale_out_bytes"}, {"doubleVal", task.comm.scale_out_bytes.value}});
        }
        break;
      case TaskKind::kTransfer:
        node["type"] = "COMM_SEND_NODE";
        attrs.push_back(IntAttr("comm_src", task.rank));
        attrs.push_back(IntAttr("comm_dst", task.transfer.dst));
        attrs.push_back(IntAttr("comm_tag", id));
        AddBytes(task.transfer.bytes, attrs);
        AddGroupAttrs(t.group(task.transfer.group), attrs);
        break;
    }
    attrs.push_back(StringAttr("stacksim_stream", t.stream_name(task.stream)));
    attrs.push_back(StringAttr("stacksim_label", t.label(task.label)));
    if (task.layer >= 0) attrs.push_back(IntAttr("stacksim_layer", task.layer));
    if (task.micro_batch >= 0) attrs.push_back(IntAttr("stacksim_micro_batch", task.micro_batch));
    attrs.push_back(IntAttr("stacksim_duration_ns", duration.ns()));

    // Dependencies on the same rank are data deps; one on another rank's
    // transfer to this rank goes through this rank's receive node.
    ojson data_deps = ojson::array();
    std::vector<TaskId> local;
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
      if (std::find(local.begin(), local.end(), ref) == local.end()) {
        local.push_back(ref);
        data_deps.push_back(U64(ref));
      }
    }
    // Stream order, which Chakra has no word for, becomes a control dependency.
    ojson ctrl_deps = ojson::array();
    auto [it, first] = last_on_stream.try_emplace({task.rank, task.stream}, id);
    if (!first) {
      if (std::find(local.begin(), local.end(), it->second) == local.end()) ctrl_deps.push_back(U64(it->second));
      it->second = id;
    }
    if (!ctrl_deps.empty()) node["ctrlDeps"] = ctrl_deps;
    if (!data_deps.empty()) node["dataDeps"] = data_deps;
    node["startTimeMicros"] = U64(Micros(replay.timings[id].start));
    node["durationMicros"] = U64(Micros(duration));
    node["attr"] = attrs;
    nodes[task.rank].push_back(std::move(node));

    if (task.kind == TaskKind::kTransfer) {
      ojson recv = {{"id", U64(recv_base + id)}, {"name", t.name(task.name) + " (recv)"}, {"type", "COMM_RECV_NODE"}};
      ojson rattrs = ojson::array();
      rattrs.push_back({{"name", "is_cpu_op"}, {"boolVal", false}});
      rattrs.push_back(IntAttr("comm_src", task.rank));
      rattrs.push_back(IntAttr("comm_dst", task.transfer.dst));
      rattrs.push_back(IntAttr("comm_tag", id));
      AddBytes(task.transfer.bytes, rattrs);
      AddGroupAttrs(t.group(task.transfer.group), rattrs);
      recv["startTimeMicros"] = U64(Micros(replay.timings[id].start));
      recv["durationMicros"] = U64(Micros(duration));
      recv["attr"] = rattrs;
      nodes[task.transfer.dst].push_back(std::move(recv));
    }
  }
  std::vector<std::string> out;
  for (int r = 0; r < t.rank_count(); ++r) {
    ojson metadata = {{"version", "0.0.4"},
                     {"attr", ojson::array({StringAttr("producer", "stacksim"), IntAttr("rank", r),
                                           IntAttr("ranks", t.rank_count())})}};
    std::string text = metadata.dump(2);
    for (const ojson& node : nodes[r]) text += node.dump(2);
    out.push_back(text + "\n");
  }
  return out;
}

std::vector<std::string> WriteChakraDirectory(const trace::Trace& trace, const engine::ReplayResult& replay,
                                              const std::string& dir) {
  std::vector<std::string> texts = ExportChakraJson(trace, replay);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError(dir, "", "cannot create directory: " + ec.message());
  std::vector<std::string> paths;
  for (size_t r = 0; r < texts.size(); ++r) {
    std::string path = (std::filesystem::path(dir) / ("stacksim." + std::to_string(r) + ".json")).string();
    std::ofstream f(path);
    f << texts[r];
    if (!f) throw InputError(path, "", "cannot write");
    paths.push_back(path);
  }
  return paths;
}

// ---- Import ----------------------------------------------------------------

namespace {

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
        throw InputError(in.file, "", "expected '{' at byte " + std::to_string(i) + " (object " +
                                          std::to_string(out.size()) + ")");
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

// A uint64/int64 in protobuf JSON: a number or a decimal string.
int64_t ReadInt(const JsonNode& v) {
  if (v.IsString()) {
    std::string s = v.json().get<std::string>();
    size_t pos = 0;
    int64_t x = 0;
    try {
      x = std::stoll(s, &pos);
    } catch (const std::exception&) {
      pos = 0;
    }
    if (s.empty() || pos != s.size()) v.Fail("expected an integer, got \"" + s + "\"");
    return x;
  }
  if (!v.IsNumber()) v.Fail("expected an integer");
  return v.Int();
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

struct Attr {
  JsonNode value;  // the oneof value (for lists: the "values" array)
  bool list = false;
};

struct Node {
  int64_t id = 0;
  std::string name;
  int type = 0;
  std::vector<int64_t> deps;  // data then control
  int64_t duration_us = 0;
  std::map<std::string, Attr> attrs;
  std::string where;  // "node 12"
};

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

std::map<std::string, Attr> ReadAttrs(const JsonNode& list) {
  std::map<std::string, Attr> attrs;
  if (!list.IsArray()) list.Fail("expected an array of attributes");
  for (const JsonNode& a : list.Elements()) {
    JsonObject o(a);
    std::string name = o.Required("name").String();
    o.Ignore({"docString", "doc_string"});
    std::optional<Attr> value;
    for (const char* k : kScalarKeys) {
      if (auto v = o.Optional(k)) value = Attr{*v, false};
    }
    for (const char* k : kListKeys) {
      if (auto v = o.Optional(k)) {
        JsonObject lo(*v);
        auto values = lo.Optional("values");
        lo.Finish();
        static const json kEmpty = json::array();
        value = Attr{values ? *values : JsonNode(kEmpty, v->file(), v->path() + ".values"), true};
      }
    }
    o.Finish();
    if (value) attrs.emplace(name, *value);  // an attribute without a value is proto's default: absent
  }
  return attrs;
}

Node ReadNode(const JsonNode& n) {
  JsonObject o(n);
  Node node;
  node.id = ReadNonNegative(o.Required("id"));
  node.where = "node " + std::to_string(node.id);
  if (auto v = o.Optional("name")) node.name = v->json().is_string() ? v->json().get<std::string>() : "";
  if (node.name.empty()) node.name = node.where;
  JsonNode type = o.Required("type");
  if (type.IsString()) {
    auto it = NodeTypes().find(type.json().get<std::string>());
    if (it == NodeTypes().end()) type.Fail("unknown node type '" + type.json().get<std::string>() + "'");
    node.type = it->second;
  } else {
    node.type = static_cast<int>(ReadInt(type));
  }
  for (auto [camel, snake] : {std::pair{"dataDeps", "data_deps"}, std::pair{"ctrlDeps", "ctrl_deps"}}) {
    if (auto v = Field(o, camel, snake)) {
      if (!v->IsArray()) v->Fail("expected an array of node ids");
      for (const JsonNode& d : v->Elements()) node.deps.push_back(ReadNonNegative(d));
    }
  }
  if (auto v = Field(o, "durationMicros", "duration_micros")) node.duration_us = ReadNonNegative(*v);
  if (auto v = Field(o, "startTimeMicros", "start_time_micros")) ReadNonNegative(*v);
  if (auto v = o.Optional("attr")) node.attrs = ReadAttrs(*v);
  o.Ignore({"inputs", "outputs"});
  o.Finish();
  return node;
}

// Attribute access with errors naming the file, node and attribute.
class NodeView {
 public:
  NodeView(const Node& node, const std::string& file) : node_(node), file_(file) {}
  bool Has(const std::string& name) const { return node_.attrs.count(name) > 0; }
  [[noreturn]] void Fail(const std::string& what) const { throw InputError(file_, node_.where, what); }
  int64_t Int(const std::string& name) const {
    const Attr* a = Find(name);
    if (!a) Fail("missing attribute '" + name + "'");
    if (a->list || a->value.json().is_boolean()) Fail("attribute '" + name + "': expected an integer");
    return ReadInt(a->value);
  }
  int64_t IntOr(const std::string& name, int64_t fallback) const { return Has(name) ? Int(name) : fallback; }
  double Double(const std::string& name) const {
    const Attr* a = Find(name);
    if (!a || a->list) Fail("attribute '" + name + "': expected a number");
    if (a->value.IsString()) return static_cast<double>(ReadInt(a->value));
    return a->value.Number();
  }
  std::string String(const std::string& name, const std::string& fallback) const {
    const Attr* a = Find(name);
    if (!a) return fallback;
    if (a->list || !a->value.IsString()) Fail("attribute '" + name + "': expected a string");
    return a->value.json().get<std::string>();
  }
  std::vector<int64_t> IntList(const std::string& name) const {
    const Attr* a = Find(name);
    if (!a || !a->list || !a->value.IsArray()) Fail("attribute '" + name + "': expected an integer list");
    std::vector<int64_t> out;
    for (const JsonNode& v : a->value.Elements()) out.push_back(ReadInt(v));
    return out;
  }
  Bytes CommBytes() const {
    if (Has("stacksim_comm_bytes")) return Bytes{Double("stacksim_comm_bytes")};
    int64_t b = Int("comm_size");
    if (b < 0) Fail("comm_size must not be negative");
    return Bytes{static_cast<double>(b)};
  }

 private:
  const Attr* Find(const std::string& name) const {
    auto it = node_.attrs.find(name);
    return it == node_.attrs.end() ? nullptr : &it->second;
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

trace::Trace ImportChakraJson(const std::vector<RankText>& inputs, const ImportOptions& options) {
  const int ranks = static_cast<int>(inputs.size());
  if (ranks == 0) throw InputError("", "", "no Chakra files");
  std::vector<std::vector<Node>> nodes(ranks);
  std::vector<std::map<int64_t, int>> by_id(ranks);
  std::vector<std::vector<json>> documents(ranks);  // the nodes' attributes point into them
  for (int r = 0; r < ranks; ++r) {
    const std::string& file = inputs[r].file;
    try {
      documents[r] = ParseObjects(inputs[r]);
      const std::vector<json>& objects = documents[r];
      for (size_t i = 0; i < objects.size(); ++i) {
        JsonNode n(objects[i], file, "object " + std::to_string(i));
        if (!n.IsObject()) n.Fail("expected an object");
        if (!objects[i].contains("type") && objects[i].contains("version")) continue;  // GlobalMetadata
        Node node = ReadNode(n);
        if (node.type == kMetadataNode) continue;
        if (!by_id[r].emplace(node.id, static_cast<int>(nodes[r].size())).second) {
          throw InputError(file, node.where, "duplicate node id");
        }
        nodes[r].push_back(std::move(node));
      }
    } catch (const json::exception& e) {
      throw InputError(file, "", std::string("malformed Chakra JSON: ") + e.what());
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
          default: {
            std::string name = "?";
            for (const auto& [n, c] : CommTypes()) if (c == type) name = n;
            v.Fail("comm_type " + std::to_string(type) + " (" + name + ") is not supported");
          }
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
        label = node.type == kCompNode ? "compute" : "memory";
      }
      task.label = t.InternLabel(v.String("stacksim_label", label));
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

trace::Trace ReadChakraDirectory(const std::string& dir, const ImportOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InputError(dir, "", "not a directory");
  static const std::regex kName(R"((.*)\.(\d+)\.json)");
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
  if (files.empty()) throw InputError(dir, "", "no Chakra JSON files (NAME.RANK.json)");
  std::vector<RankText> inputs;
  for (const auto& [rank, path] : files) {
    if (rank != static_cast<int>(inputs.size())) {
      throw InputError(dir, "", "no file for rank " + std::to_string(inputs.size()));
    }
    std::ifstream f(path, std::ios::binary);
    if (!f) throw InputError(path, "", "cannot read");
    std::ostringstream text;
    text << f.rdbuf();
    inputs.push_back({path, text.str()});
  }
  return ImportChakraJson(inputs, options);
}

}  // namespace stacksim::chakra
