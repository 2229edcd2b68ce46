// ChakraGraph (chakra_graph.h) to and from the messages protoc generates from
// the project's declaration of Chakra's schema (chakra_schema.proto). Both
// file forms go through these: .et (chakra_et.h) and JSON (chakra_json.h).
//
// Writing: attribute values as int64_val, double_val, bool_val, string_val
// and their lists. Reading: every kind of AttributeProto's oneof (integers
// of every encoding are one integer, float a double, bytes a string); an
// attribute whose oneof is unset is absent. A uint64 past int64 reads as an
// invalid attribute (an error only where stacksim uses it); an id,
// dependency or time of 2^63 or more is an InputError naming the file and
// the node (`where`).
#ifndef STACKSIM_SIM_CHAKRA_CHAKRA_PROTO_H_
#define STACKSIM_SIM_CHAKRA_CHAKRA_PROTO_H_

#include <string>

#include "sim/chakra/chakra_graph.h"
#include "sim/chakra/chakra_schema.pb.h"

namespace stacksim::chakra {

ChakraProtoMsg::GlobalMetadata ToProto(const ChakraGraph& graph);  // version and attributes
ChakraProtoMsg::Node ToProto(const ChakraNode& node);
void FromProto(const ChakraProtoMsg::GlobalMetadata& m, ChakraGraph& graph);
ChakraNode FromProto(const ChakraProtoMsg::Node& n, const std::string& file, const std::string& where);

}  // namespace stacksim::chakra

#endif  // STACKSIM_SIM_CHAKRA_CHAKRA_PROTO_H_
