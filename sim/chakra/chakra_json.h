// Chakra's JSON form: what Chakra's jsonizer writes. Per rank, the
// GlobalMetadata object followed by one object per node, concatenated, field
// names in protobuf's JSON spelling (camelCase; 64-bit integers as strings).
// Writing gives exactly that form, keys in protobuf's order. Reading also
// accepts the proto field names (snake_case), plain numbers and a JSON array
// of the same objects; every value kind of AttributeProto's oneof is read
// (chakra_graph.h says into what). Parsing is strict about the JSON's shape
// (unknown fields are errors, naming the file and the object); what the
// graph means is checked by the importer (chakra_import.h), the same way for
// both forms.
#ifndef STACKSIM_SIM_CHAKRA_CHAKRA_JSON_H_
#define STACKSIM_SIM_CHAKRA_CHAKRA_JSON_H_

#include <string>
#include <vector>

#include "sim/chakra/chakra_export.h"
#include "sim/chakra/chakra_graph.h"
#include "sim/chakra/chakra_import.h"
#include "sim/trace/replay_result.h"
#include "sim/trace/trace.h"

namespace stacksim::chakra {

// A graph in the JSON form (jsonizer-shaped), and back. Parse errors name the
// file and the object.
std::string ChakraJsonText(const ChakraGraph& graph);
ChakraGraph ParseChakraJson(const RankText& in);

// ExportChakraGraphs in the JSON form, per rank.
std::vector<std::string> ExportChakraJson(const trace::Trace& trace, const trace::ReplayResult& replay);

// Builds a trace from per-rank Chakra JSON (index = rank).
trace::Trace ImportChakraJson(const std::vector<RankText>& ranks, const ImportOptions& options = {},
                              ImportNotes* notes = nullptr);

}  // namespace stacksim::chakra

#endif  // STACKSIM_SIM_CHAKRA_CHAKRA_JSON_H_
