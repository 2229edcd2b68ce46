// Chakra's protobuf form (.et files, what Chakra's converters and ASTRA-sim's
// feeder read and write), without libprotobuf.
//
// A .et file is protobuf's "delimited" stream: a varint byte length and a
// GlobalMetadata message, then one varint length and Node message per node
// (schema: Chakra's et_def.proto, package ChakraProtoMsg). EncodeChakraEt
// writes proto3's canonical form: fields in number order, scalars at their
// default (0, "", false) left out, repeated integers packed; attribute values
// as int64_val, double_val, bool_val, string_val and int64_list. Decoding
// accepts every value kind of AttributeProto's oneof, packed or unpacked
// repeated fields, and skips unknown fields (later schema versions).
//
// Decoding is strict: a truncated or corrupt record, a bad varint, a length
// past the end, a known field with the wrong wire type, a node without a type,
// or an id of 2^63 or more is an InputError naming the file, the node's index
// in the file ("node #3", 0-based; its id once read) and the field.
// Everything the graph means (dependencies, attributes) is checked by the
// importer (chakra_import.h), the same way for both forms.
#ifndef STACKSIM_SIM_CHAKRA_CHAKRA_ET_H_
#define STACKSIM_SIM_CHAKRA_CHAKRA_ET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sim/chakra/chakra.h"
#include "sim/chakra/chakra_graph.h"

namespace stacksim::chakra {

// Field numbers of et_def.proto.
namespace et_field {
constexpr uint32_t kMetadataVersion = 1, kMetadataAttr = 2;
constexpr uint32_t kNodeId = 1, kNodeName = 2, kNodeType = 3, kNodeCtrlDeps = 4, kNodeDataDeps = 5,
                   kNodeStartTimeMicros = 6, kNodeDurationMicros = 7, kNodeInputs = 8, kNodeOutputs = 9,
                   kNodeAttr = 10;
// AttributeProto: name, doc_string, then the oneof: scalar kinds at odd
// numbers 3..31, each kind's list message at the next even number.
constexpr uint32_t kAttrName = 1, kAttrDocString = 2, kAttrDouble = 3, kAttrDoubleList = 4, kAttrFloat = 5,
                   kAttrFloatList = 6, kAttrInt32 = 7, kAttrInt32List = 8, kAttrInt64 = 9, kAttrInt64List = 10,
                   kAttrUint32 = 11, kAttrUint32List = 12, kAttrUint64 = 13, kAttrUint64List = 14,
                   kAttrSint32 = 15, kAttrSint32List = 16, kAttrSint64 = 17, kAttrSint64List = 18,
                   kAttrFixed32 = 19, kAttrFixed32List = 20, kAttrFixed64 = 21, kAttrFixed64List = 22,
                   kAttrSfixed32 = 23, kAttrSfixed32List = 24, kAttrSfixed64 = 25, kAttrSfixed64List = 26,
                   kAttrBool = 27, kAttrBoolList = 28, kAttrString = 29, kAttrStringList = 30, kAttrBytes = 31,
                   kAttrBytesList = 32;
constexpr uint32_t kListValues = 1;  // every *List message
}  // namespace et_field

std::string EncodeChakraEt(const ChakraGraph& graph);
// in.text holds the file's bytes.
ChakraGraph DecodeChakraEt(const RankText& in);

// ExportChakraGraphs in the .et form, per rank.
std::vector<std::string> ExportChakraEt(const trace::Trace& trace, const trace::ReplayResult& replay);
// Builds a trace from per-rank .et files (index = rank).
trace::Trace ImportChakraEt(const std::vector<RankText>& ranks, const ImportOptions& options = {});

}  // namespace stacksim::chakra

#endif  // STACKSIM_SIM_CHAKRA_CHAKRA_ET_H_
