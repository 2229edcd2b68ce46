#include "sim/chakra/chakra_json.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "sim/chakra/chakra_proto.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace stacksim::chakra {
namespace {

using nlohmann::json;
namespace pbu = google::protobuf::util;

std::string MessageJson(const google::protobuf::Message& m) {
  pbu::JsonPrintOptions opts;
  opts.add_whitespace = true;  // as Chakra's jsonizer (protobuf's MessageToJson) indents
  std::string out;
  pbu::MessageToJsonString(m, &out, opts);
  return out;
}

}  // namespace

std::string ChakraJsonText(const ChakraGraph& graph) {
  std::string text = MessageJson(ToProto(graph));
  for (const ChakraNode& node : graph.nodes) text += MessageJson(ToProto(node));
  return text;
}

std::vector<std::string> ExportChakraJson(const trace::Trace& t, const trace::ReplayResult& replay) {
  std::vector<std::string> out;
  for (const ChakraGraph& g : ExportChakraGraphs(t, replay)) out.push_back(ChakraJsonText(g));
  return out;
}

// ---- Reading ---------------------------------------------------------------

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

// One object in protobuf's JSON mapping (either field spelling, integers as
// numbers or strings, enums by name or number; unknown fields are errors).
template <typename Message>
bool ParseMessage(const json& object, Message& m, std::string& problem) {
  pbu::JsonParseOptions opts;
  opts.ignore_unknown_fields = false;
  auto status = pbu::JsonStringToMessage(object.dump(), &m, opts);
  if (status.ok()) return true;
  problem = std::string(status.message());
  return false;
}

// Chakra's feeder also reads a JSON dialect of its own (src/feeder/
// json_node.cpp in mlcommons/chakra): {"workload_graph": [nodes]}, each node
// with Id, Name, NodeType (a number), data_deps, runtime (us), is_cpu_op and
// the communication fields as plain keys.
ChakraGraph ReadWorkloadGraph(const json& doc, const std::string& file) {
  ChakraGraph graph;
  const json& list = doc.at("workload_graph");
  if (!list.is_array()) throw InputError(file, "workload_graph", "expected an array of nodes");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = "workload_graph[" + std::to_string(i) + "]";
    const json& o = list[i];
    if (!o.is_object()) throw InputError(file, where, "expected an object");
    auto integer = [&](const std::string& key) -> int64_t {
      const json& v = o.at(key);
      if (v.is_number_unsigned() && v.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX)) return v.get<int64_t>();
      if (v.is_number_integer() && v.get<int64_t>() >= 0) return v.get<int64_t>();
      throw InputError(file, where + "." + key, "expected a non-negative integer");
    };
    auto ids = [&](const std::string& key, std::vector<int64_t>& out) {
      if (!o.at(key).is_array()) throw InputError(file, where + "." + key, "expected an array of node ids");
      for (const json& d : o.at(key)) {
        if (!d.is_number_integer() || d.get<int64_t>() < 0) {
          throw InputError(file, where + "." + key, "expected an array of node ids");
        }
        out.push_back(d.get<int64_t>());
      }
    };
    ChakraNode node;
    for (const auto& [key, value] : o.items()) {
      if (key == "Id") node.id = integer(key);
      else if (key == "Name") node.name = value.is_string() ? value.get<std::string>() : "";
      else if (key == "NodeType") node.type = static_cast<int>(std::min<int64_t>(integer(key), INT32_MAX));
      else if (key == "data_deps") ids(key, node.data_deps);
      else if (key == "ctrl_deps" || key == "ctrlDeps") ids(key, node.ctrl_deps);
      else if (key == "runtime") node.duration_micros = integer(key);
      else if (key == "is_cpu_op") {
        if (!value.is_boolean()) throw InputError(file, where + "." + key, "expected true or false");
        node.attrs.push_back(Attribute::Bool(key, value.get<bool>()));
      } else if (key == "num_ops" || key == "tensor_size" || key == "comm_type" || key == "comm_priority" ||
                 key == "comm_size" || key == "comm_src" || key == "comm_dst" || key == "comm_tag") {
        node.attrs.push_back(Attribute::Int(key, integer(key)));
      } else {
        throw InputError(file, where + "." + key, "unknown key of Chakra's feeder JSON");
      }
    }
    if (!o.contains("Id")) throw InputError(file, where + ".Id", "required key is missing");
    if (!o.contains("NodeType")) throw InputError(file, where + ".NodeType", "required key is missing");
    graph.nodes.push_back(std::move(node));
  }
  return graph;
}

}  // namespace

ChakraGraph ParseChakraJson(const RankText& in) {
  ChakraGraph graph;
  try {
    std::vector<json> objects = ParseObjects(in);
    if (objects.size() == 1 && objects[0].is_object() && objects[0].contains("workload_graph")) {
      return ReadWorkloadGraph(objects[0], in.file);
    }
    for (size_t i = 0; i < objects.size(); ++i) {
      const std::string where = "object " + std::to_string(i);
      if (!objects[i].is_object()) throw InputError(in.file, where, "expected an object");
      std::string problem;
      if (i == 0) {  // the GlobalMetadata
        ChakraProtoMsg::GlobalMetadata m;
        if (!ParseMessage(objects[i], m, problem)) {
          ChakraProtoMsg::Node n;
          std::string as_node;
          if (ParseMessage(objects[i], n, as_node)) {
            throw InputError(in.file, "GlobalMetadata",
                             "missing: object 0 is a node (id " + std::to_string(n.id()) + ", " +
                                 NodeTypeName(n.type()) +
                                 "); a Chakra JSON file starts with the GlobalMetadata object");
          }
          throw InputError(in.file, where + " (GlobalMetadata)", problem);
        }
        FromProto(m, graph);
        continue;
      }
      ChakraProtoMsg::Node n;
      if (!ParseMessage(objects[i], n, problem)) throw InputError(in.file, where, problem);
      graph.nodes.push_back(FromProto(n, in.file, where));
    }
  } catch (const json::exception& e) {
    throw InputError(in.file, "", std::string("malformed Chakra JSON: ") + e.what());
  }
  return graph;
}

trace::Trace ImportChakraJson(const std::vector<RankText>& inputs, const ImportOptions& options, ImportNotes* notes) {
  std::vector<RankGraph> graphs;
  for (const RankText& in : inputs) graphs.push_back({in.file, ParseChakraJson(in)});
  return ImportChakraGraphs(graphs, options, notes);
}

}  // namespace stacksim::chakra
