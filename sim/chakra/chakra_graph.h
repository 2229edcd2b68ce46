// One rank's Chakra graph as Chakra's schema has it (et_def.proto, package
// ChakraProtoMsg): GlobalMetadata, then Node messages with typed attributes.
// It is the one model both file forms are read into and written from: the
// JSON form (chakra_json.h) and the protobuf .et form (chakra_et.h). Mapping
// it to and from a stacksim trace (chakra_export.h, chakra_import.h) does not
// depend on the form. RankText and RankGraph pair a rank's file text or graph
// with the file's name, which every error names.
//
// Times are Chakra's: integer microseconds. Ids and dependencies are
// Chakra's uint64 node ids; stacksim keeps them as int64 (readers reject ids
// of 2^63 and above).
#ifndef STACKSIM_SIM_CHAKRA_CHAKRA_GRAPH_H_
#define STACKSIM_SIM_CHAKRA_CHAKRA_GRAPH_H_

#include <cstdint>
#include <string>
#include <vector>

namespace stacksim::chakra {

// NodeType values (et_def.proto).
enum NodeType : int {
  kInvalidNode = 0,
  kMetadataNode = 1,
  kMemLoadNode = 2,
  kMemStoreNode = 3,
  kCompNode = 4,
  kSendNode = 5,
  kRecvNode = 6,
  kCollNode = 7,
  kStorageNode = 8,
  kBatchNode = 9,
  kCheckpointNode = 10,
};
// CollectiveCommType values (et_def.proto).
enum CommType : int {
  kAllReduce = 0,
  kReduce = 1,
  kAllGather = 2,
  kGather = 3,
  kScatter = 4,
  kBroadcast = 5,
  kAllToAll = 6,
  kReduceScatter = 7,
  kReduceScatterBlock = 8,
  kBarrier = 9,
};
// "COMP_NODE", ...; "?" for a value the schema does not have.
const char* NodeTypeName(int type);
// -1 for a name the schema does not have.
int NodeTypeFromName(const std::string& name);
const char* CommTypeName(int type);

// An AttributeProto: a name and the value its oneof holds. The schema's
// integer kinds (int32/64, uint32/64, sint32/64, fixed32/64, sfixed32/64)
// read as kInt, float as kDouble, bytes as kString, and lists likewise;
// writers use int64, double, bool, string and int64 lists. A value that
// cannot be read (JSON of the wrong kind, a uint64 past int64) is kInvalid
// with the reason, an error only where stacksim uses the attribute.
struct Attribute {
  enum class Type { kInt, kDouble, kBool, kString, kIntList, kDoubleList, kBoolList, kStringList, kInvalid };
  std::string name;
  Type type = Type::kInt;
  int64_t int_value = 0;
  double double_value = 0;
  bool bool_value = false;
  std::string string_value;  // kString; kInvalid: the reason
  std::vector<int64_t> ints;
  std::vector<double> doubles;
  std::vector<bool> bools;
  std::vector<std::string> strings;

  static Attribute Make(std::string name, Type type) {
    Attribute a;
    a.name = std::move(name);
    a.type = type;
    return a;
  }
  static Attribute Int(std::string name, int64_t v) {
    Attribute a = Make(std::move(name), Type::kInt);
    a.int_value = v;
    return a;
  }
  static Attribute Double(std::string name, double v) {
    Attribute a = Make(std::move(name), Type::kDouble);
    a.double_value = v;
    return a;
  }
  static Attribute Bool(std::string name, bool v) {
    Attribute a = Make(std::move(name), Type::kBool);
    a.bool_value = v;
    return a;
  }
  static Attribute String(std::string name, std::string v) {
    Attribute a = Make(std::move(name), Type::kString);
    a.string_value = std::move(v);
    return a;
  }
  static Attribute IntList(std::string name, std::vector<int64_t> v) {
    Attribute a = Make(std::move(name), Type::kIntList);
    a.ints = std::move(v);
    return a;
  }
  static Attribute Invalid(std::string name, std::string reason) {
    Attribute a = Make(std::move(name), Type::kInvalid);
    a.string_value = std::move(reason);
    return a;
  }
};

struct ChakraNode {
  int64_t id = 0;
  std::string name;
  int type = kInvalidNode;  // NodeType
  std::vector<int64_t> ctrl_deps;
  std::vector<int64_t> data_deps;
  int64_t start_time_micros = 0;
  int64_t duration_micros = 0;
  std::vector<Attribute> attrs;
  // Node.inputs / outputs (IOInfo) are read and dropped: stacksim has no use
  // for them.
};

struct ChakraGraph {
  std::string version;              // GlobalMetadata.version
  std::vector<Attribute> metadata;  // GlobalMetadata.attr
  std::vector<ChakraNode> nodes;    // file order
};

// One rank's Chakra file (JSON text or .et bytes): `file` names it in errors.
struct RankText {
  std::string file;
  std::string text;
};

// One rank's graph and the file it came from (named in errors).
struct RankGraph {
  std::string file;
  ChakraGraph graph;
};

}  // namespace stacksim::chakra

#endif  // STACKSIM_SIM_CHAKRA_CHAKRA_GRAPH_H_
