#include "sim/chakra/chakra_et.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <cstdint>

#include "sim/chakra/chakra_proto.h"
#include "sim/util/error.h"

namespace stacksim::chakra {
namespace {

void AppendDelimited(const google::protobuf::Message& m, std::string& out) {
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.WriteVarint32(static_cast<uint32_t>(m.ByteSizeLong()));
  m.SerializeWithCachedSizes(&coded);
}

bool Clean(const google::protobuf::Message& m) {
  return m.GetReflection()->GetUnknownFields(m).empty();
}

}  // namespace

std::string EncodeChakraEt(const ChakraGraph& graph) {
  std::string out;
  AppendDelimited(ToProto(graph), out);
  for (const ChakraNode& node : graph.nodes) AppendDelimited(ToProto(node), out);
  return out;
}

ChakraGraph DecodeChakraEt(const RankText& in) {
  if (in.text.empty()) throw InputError(in.file, "", "empty file (a Chakra .et file starts with its GlobalMetadata)");
  const auto* data = reinterpret_cast<const uint8_t*>(in.text.data());
  const size_t size = in.text.size();
  ChakraGraph graph;
  size_t at = 0;
  // Each record: a varint length, then that many bytes of one message.
  // index: of the node record; -1 for the GlobalMetadata.
  auto next = [&](int64_t index, const uint8_t*& record, uint32_t& length) {
    const std::string who = index < 0 ? "GlobalMetadata" : "node #" + std::to_string(index);
    google::protobuf::io::CodedInputStream coded(data + at, static_cast<int>(std::min<size_t>(size - at, INT32_MAX)));
    if (!coded.ReadVarint32(&length)) {
      throw InputError(in.file, who, "truncated or corrupt record: bad length at byte " + std::to_string(at));
    }
    const size_t start = at + static_cast<size_t>(coded.CurrentPosition());
    if (length > size - start) {
      throw InputError(in.file, who,
                       "truncated record: " + std::to_string(length) + " bytes at byte " + std::to_string(start) +
                           ", " + std::to_string(size - start) + " left in the file");
    }
    record = data + start;
    const std::string where = who + " (at byte " + std::to_string(at) + ")";
    at = start + length;
    return where;
  };
  const uint8_t* record = nullptr;
  uint32_t length = 0;
  {
    const std::string where = next(-1, record, length);
    ChakraProtoMsg::GlobalMetadata m;
    const bool metadata = m.ParseFromArray(record, static_cast<int>(length));
    if (!metadata || !Clean(m)) {
      // A file without its GlobalMetadata starts with a Node: say so.
      ChakraProtoMsg::Node n;
      if (n.ParseFromArray(record, static_cast<int>(length)) && Clean(n) && n.type() != 0) {
        throw InputError(in.file, "GlobalMetadata",
                         "missing: the first record is a node (id " + std::to_string(n.id()) + ", " +
                             NodeTypeName(n.type()) + "); every Chakra .et file starts with a GlobalMetadata record");
      }
      if (!metadata) throw InputError(in.file, where, "not a GlobalMetadata message (corrupt record)");
    }
    FromProto(m, graph);
  }
  for (int64_t index = 0; at < size; ++index) {
    const std::string where = next(index, record, length);
    ChakraProtoMsg::Node n;
    if (!n.ParseFromArray(record, static_cast<int>(length))) {
      throw InputError(in.file, where, "not a Node message (corrupt record)");
    }
    graph.nodes.push_back(FromProto(n, in.file, where + (n.id() ? " id " + std::to_string(n.id()) : "")));
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
