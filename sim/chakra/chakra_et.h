// Chakra's protobuf form (.et files, what Chakra's converters write and
// ASTRA-sim's feeder reads), through libprotobuf and the project's
// declaration of Chakra's schema (chakra_schema.proto).
//
// A .et file is protobuf's "delimited" stream: a varint byte length and a
// GlobalMetadata message, then one varint length and Node message per node.
// EncodeChakraEt writes what protobuf's serializer writes for the messages
// chakra_proto.h builds. Decoding skips unknown fields (later schema
// versions), as protobuf does, and is strict about the stream: a truncated
// record, a length past the end, a record that is not a valid message, or a
// first record that is a Node rather than the GlobalMetadata is an
// InputError naming the file, the record ("node #3", 0-based, with its byte
// offset) and the problem. Everything the graph means (dependencies,
// attributes) is checked by the importer (chakra_import.h), the same way for
// both forms.
#ifndef STACKSIM_SIM_CHAKRA_CHAKRA_ET_H_
#define STACKSIM_SIM_CHAKRA_CHAKRA_ET_H_

#include <string>
#include <vector>

#include "sim/chakra/chakra.h"
#include "sim/chakra/chakra_graph.h"

namespace stacksim::chakra {

std::string EncodeChakraEt(const ChakraGraph& graph);
// in.text holds the file's bytes.
ChakraGraph DecodeChakraEt(const RankText& in);

// ExportChakraGraphs in the .et form, per rank.
std::vector<std::string> ExportChakraEt(const trace::Trace& trace, const trace::ReplayResult& replay);
// Builds a trace from per-rank .et files (index = rank).
trace::Trace ImportChakraEt(const std::vector<RankText>& ranks, const ImportOptions& options = {});

}  // namespace stacksim::chakra

#endif  // STACKSIM_SIM_CHAKRA_CHAKRA_ET_H_
