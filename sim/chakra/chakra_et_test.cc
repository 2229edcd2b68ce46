#include "sim/chakra/chakra_et.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "sim/chakra/chakra_test_traces.h"
#include "sim/chakra/chakra_schema.pb.h"
#include "sim/engine/engine.h"
#include "sim/net/analytic_network.h"
#include "sim/util/error.h"

namespace stacksim::chakra {
namespace {

using trace::TaskKind;

std::string Bytes(std::initializer_list<int> bytes) {
  std::string out;
  for (int b : bytes) out.push_back(static_cast<char>(b));
  return out;
}

// GlobalMetadata {version: "0.0.4"} as a delimited record: length 7, then
// field 1 (tag 1 << 3 | 2 = 0x0a), length 5, "0.0.4".
const std::string kMetadata = Bytes({0x07, 0x0a, 0x05, '0', '.', '0', '.', '4'});

// Node {id: 1, name: "x", type: COMP_NODE}, derived by hand from et_def.proto:
// id = 1 (varint): tag 1 << 3 | 0 = 0x08, value 0x01; name = 2 (string):
// tag 2 << 3 | 2 = 0x12, length 1, 'x' = 0x78; type = 3 (enum, varint):
// tag 3 << 3 | 0 = 0x18, COMP_NODE = 4.
const std::string kNodeX = Bytes({0x08, 0x01, 0x12, 0x01, 0x78, 0x18, 0x04});

// A delimited record: the message's length as a varint, then the message.
std::string Record(const std::string& message) {
  std::string out;
  for (uint64_t n = message.size(); ; n >>= 7) {
    out.push_back(static_cast<char>((n & 0x7f) | (n >= 0x80 ? 0x80 : 0)));
    if (n < 0x80) break;
  }
  return out + message;
}

TEST(ChakraEt, NodeEncodesToHandComputedBytes) {
  ChakraGraph g;
  g.version = "0.0.4";
  ChakraNode x;
  x.id = 1;
  x.name = "x";
  x.type = kCompNode;
  g.nodes.push_back(x);
  const std::string expected = kMetadata + Bytes({0x07}) + kNodeX;
  EXPECT_EQ(EncodeChakraEt(g), expected);

  ChakraGraph back = DecodeChakraEt({"x.0.et", expected});
  EXPECT_EQ(back.version, "0.0.4");
  ASSERT_EQ(back.nodes.size(), 1u);
  EXPECT_EQ(back.nodes[0].id, 1);
  EXPECT_EQ(back.nodes[0].name, "x");
  EXPECT_EQ(back.nodes[0].type, kCompNode);
  EXPECT_TRUE(back.nodes[0].data_deps.empty());
}

// Node {id: 2, type: COMP_NODE, data_deps: [1], duration_micros: 10,
// attr: [{name: "n", int64_val: -1}]}: ids are packed (proto3's default),
// the negative int64 takes ten bytes (two's complement as a varint), id 0
// and empty fields are left out.
TEST(ChakraEt, DependenciesDurationsAndAttributesEncodeToHandComputedBytes) {
  ChakraNode n;
  n.id = 2;
  n.type = kCompNode;
  n.data_deps = {1};
  n.duration_micros = 10;
  n.attrs.push_back(Attribute::Int("n", -1));
  ChakraNode zero;  // id 0, a receive: only its type is written
  zero.type = kRecvNode;
  ChakraGraph g;
  g.nodes = {n, zero};
  const std::string attr = Bytes({0x0a, 0x01, 'n',  // name = 1
                                  0x48, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01});  // int64_val = 9
  const std::string node = Bytes({0x08, 0x02,        // id
                                  0x18, 0x04,        // type
                                  0x2a, 0x01, 0x01,  // data_deps = 5, packed: tag 5 << 3 | 2, length 1, [1]
                                  0x38, 0x0a,        // duration_micros = 7: tag 7 << 3 | 0, 10
                                  0x52, 0x0e}) +     // attr = 10: tag 10 << 3 | 2, length 14
                           attr;
  ASSERT_EQ(node.size(), 25u);
  const std::string expected = Bytes({0x00}) +  // an empty GlobalMetadata
                               Bytes({0x19}) + node + Bytes({0x02, 0x18, 0x06});
  EXPECT_EQ(EncodeChakraEt(g), expected);

  ChakraGraph back = DecodeChakraEt({"n.0.et", expected});
  ASSERT_EQ(back.nodes.size(), 2u);
  EXPECT_EQ(back.nodes[0].data_deps, std::vector<int64_t>{1});
  EXPECT_EQ(back.nodes[0].duration_micros, 10);
  ASSERT_EQ(back.nodes[0].attrs.size(), 1u);
  EXPECT_EQ(back.nodes[0].attrs[0].name, "n");
  EXPECT_EQ(back.nodes[0].attrs[0].type, Attribute::Type::kInt);
  EXPECT_EQ(back.nodes[0].attrs[0].int_value, -1);
  EXPECT_EQ(back.nodes[1].id, 0);
  EXPECT_EQ(back.nodes[1].type, kRecvNode);
}

// What other producers may write: every kind of the oneof, unpacked
// repeated fields, fields stacksim does not know.
TEST(ChakraEt, DecodesEveryValueKindAndSkipsUnknownFields) {
  ChakraProtoMsg::Node n;
  n.set_id(3);
  n.set_type(ChakraProtoMsg::COMP_NODE);
  n.mutable_inputs()->set_values("[[1, 2]]");
  auto attr = [&n](const std::string& name) {
    ChakraProtoMsg::AttributeProto* a = n.add_attr();
    a->set_name(name);
    a->set_doc_string("ignored");
    return a;
  };
  attr("sint64")->set_sint64_val(-5);
  attr("uint64")->set_uint64_val(7);
  attr("huge")->set_uint64_val(~uint64_t{0});
  attr("int32")->set_int32_val(-1);
  attr("fixed32")->set_fixed32_val(9);
  attr("sfixed64")->set_sfixed64_val(-3);
  attr("float")->set_float_val(0.5f);
  attr("bytes")->set_bytes_val("raw");
  auto* doubles = attr("doubles")->mutable_double_list();
  doubles->add_values(1.5);
  doubles->add_values(2.5);
  auto* strings = attr("strings")->mutable_string_list();
  strings->add_values("a");
  strings->add_values("b");
  auto* bools = attr("bools")->mutable_bool_list();
  bools->add_values(true);
  bools->add_values(false);
  attr("nothing");  // no value: as if absent
  std::string message = n.SerializeAsString();
  // By hand: ctrl_deps 1 and 2 unpacked (tag 4 << 3 | 0), an int64 list with
  // unpacked values, an unknown varint field 99, a later schema's
  // storage = 11 message, an unknown fixed32 field 98, and an attribute
  // whose oneof is set twice (the last member on the wire wins).
  message += Bytes({0x20, 0x01, 0x20, 0x02});
  message += Bytes({0x52, 0x0c, 0x0a, 0x04, 'i', 'n', 't', 's', 0x52, 0x04, 0x08, 0x04, 0x08, 0x05});
  message += Bytes({0x98, 0x06, 0x7b, 0x5a, 0x02, 0x08, 0x01, 0x95, 0x06, 7, 0, 0, 0});
  message += Bytes({0x52, 0x0d, 0x0a, 0x05, 't', 'w', 'i', 'c', 'e', 0xea, 0x01, 0x01, 'f', 0x48, 0x08});
  std::string file = Bytes({0x00}) + Record(message);

  ChakraGraph g = DecodeChakraEt({"k.0.et", file});
  ASSERT_EQ(g.nodes.size(), 1u);
  const ChakraNode& node = g.nodes[0];
  EXPECT_EQ(node.id, 3);
  EXPECT_EQ(node.ctrl_deps, (std::vector<int64_t>{1, 2}));
  ASSERT_EQ(node.attrs.size(), 13u);
  auto find = [&](const std::string& name) -> const Attribute& {
    for (const Attribute& a : node.attrs) if (a.name == name) return a;
    ADD_FAILURE() << "no attribute " << name;
    static const Attribute kNone;
    return kNone;
  };
  EXPECT_EQ(find("sint64").int_value, -5);
  EXPECT_EQ(find("uint64").int_value, 7);
  EXPECT_EQ(find("huge").type, Attribute::Type::kInvalid);
  EXPECT_EQ(find("int32").int_value, -1);
  EXPECT_EQ(find("fixed32").int_value, 9);
  EXPECT_EQ(find("sfixed64").int_value, -3);
  EXPECT_EQ(find("float").double_value, 0.5);
  EXPECT_EQ(find("bytes").string_value, "raw");
  EXPECT_EQ(find("doubles").doubles, (std::vector<double>{1.5, 2.5}));
  EXPECT_EQ(find("ints").ints, (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(find("strings").strings, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(find("bools").bools, (std::vector<bool>{true, false}));
  EXPECT_EQ(find("twice").type, Attribute::Type::kInt);
  EXPECT_EQ(find("twice").int_value, 8);
}

engine::FixedCostModel kCost(FlopRate{1e15});
engine::FixedNetworkModel kNet(Time::Us(5), Bandwidth{1e11});

std::vector<RankText> Files(const std::vector<std::string>& contents) {
  std::vector<RankText> out;
  for (size_t r = 0; r < contents.size(); ++r) out.push_back({"rank." + std::to_string(r) + ".et", contents[r]});
  return out;
}

// The .et form holds exactly what the JSON form holds.
TEST(ChakraEt, CarriesWhatTheJsonFormCarries) {
  trace::Trace t = test_traces::SmallTrace();
  engine::ReplayResult replay = engine::Engine(kCost, kNet).Replay(t);
  std::vector<std::string> json = ExportChakraJson(t, replay);
  std::vector<std::string> et = ExportChakraEt(t, replay);
  ASSERT_EQ(et.size(), 2u);
  for (size_t r = 0; r < et.size(); ++r) {
    EXPECT_EQ(ChakraJsonText(DecodeChakraEt({"r.et", et[r]})), json[r]) << r;
    EXPECT_EQ(EncodeChakraEt(ParseChakraJson({"r.json", json[r]})), et[r]) << r;
  }
}

TEST(ChakraEt, SmallTraceRoundTripsExactly) {
  trace::Trace t = test_traces::SmallTrace();
  engine::Engine engine(kCost, kNet);
  engine::ReplayResult before = engine.Replay(t);
  trace::Trace back = ImportChakraEt(Files(ExportChakraEt(t, before)));
  ASSERT_EQ(back.size(), t.size());
  EXPECT_EQ(back.task(0).kind, TaskKind::kDelay);
  EXPECT_EQ(back.task(1).kind, TaskKind::kTransfer);
  EXPECT_EQ(back.task(3).comm.bytes.value, 1e8 + 0.5);  // stacksim_comm_bytes, a double_val
  engine::ReplayResult after = engine.Replay(back);
  EXPECT_EQ(after.makespan.ns(), before.makespan.ns());
  for (size_t i = 0; i < t.size(); ++i) EXPECT_EQ(after.timings[i].end.ns(), before.timings[i].end.ns()) << i;
}

// The same stacksim-generated step as chakra_test.cc (Llama 3 8B, pp 2 x
// dp 4 on one DGX H100), through .et files on disk: the same step time to
// the nanosecond.
TEST(ChakraEt, TrainingStepRoundTripsToTheSameStepTime) {
  config::ScenarioConfig s = test_traces::TrainingStepScenario();
  simulate::SimulationResult res = test_traces::TrainingStep(s);
  ASSERT_TRUE(res.trace);
  const std::string dir = ::testing::TempDir() + "/chakra_et_round_trip";
  std::filesystem::remove_all(dir);
  std::vector<std::string> paths = WriteChakraDirectory(*res.trace, *res.replay, dir, FileForm::kEt);
  ASSERT_EQ(paths.size(), 2u);
  EXPECT_TRUE(paths[1].ends_with("stacksim.1.et"));

  net::AnalyticNetwork network(s.topology, s.profile);
  engine::FixedCostModel unused(FlopRate{1});
  engine::Engine engine(unused, network);
  trace::Trace back = ReadChakraDirectory(dir);
  ASSERT_EQ(back.size(), res.trace->size());
  Time step = engine.Replay(back).makespan;
  EXPECT_EQ(step.ns(), res.replay->makespan.ns());

  size_t json_bytes = 0, et_bytes = 0;
  for (const std::string& text : ExportChakraJson(*res.trace, *res.replay)) json_bytes += text.size();
  for (const std::string& p : paths) et_bytes += std::filesystem::file_size(p);
  std::cout << "Llama 3 8B pp2 dp4: " << res.trace->size() << " tasks, step " << step.ns() << " ns; JSON "
            << json_bytes << " bytes, .et " << et_bytes << " bytes\n";
  EXPECT_LT(et_bytes * 3, json_bytes);  // binary and packed: well under a third of the JSON
  std::filesystem::remove_all(dir);
}

void ExpectError(const std::vector<std::string>& nodes, const std::string& part) {
  std::string file = kMetadata;
  for (const std::string& n : nodes) file += n;
  try {
    ImportChakraEt({{"bad.0.et", file}});
    ADD_FAILURE() << "no error, expected: " << part;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    EXPECT_EQ(e.file(), "bad.0.et");
  }
}

std::string CollNode(std::initializer_list<ChakraProtoMsg::AttributeProto> attrs) {
  ChakraProtoMsg::Node n;
  n.set_id(2);
  n.set_type(ChakraProtoMsg::COMM_COLL_NODE);
  for (const auto& a : attrs) *n.add_attr() = a;
  return n.SerializeAsString();
}

TEST(ChakraEt, MalformedFilesAreErrorsNamingFileNodeAndField) {
  const std::string x = Record(kNodeX);
  // kMetadata takes bytes 0-7, the first node 8-15: the second starts at 16.
  ExpectError({x, x.substr(0, 7)}, "node #1: truncated record: 7 bytes at byte 17, 6 left in the file");
  ExpectError({x, Bytes({0x87})}, "node #1: truncated or corrupt record: bad length at byte 16");
  // A varint of eleven bytes for the id.
  ExpectError({Record(Bytes({0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}))},
              "node #0 (at byte 8): not a Node message");
  // A name whose length runs past the end of its node.
  ExpectError({Record(Bytes({0x08, 0x01, 0x12, 0x09, 'x'}))}, "node #0 (at byte 8): not a Node message");
  ExpectError({Record(Bytes({0x08, 0x01, 0x0b}))}, "not a Node message");
  ExpectError({Record(Bytes({0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x18, 0x04}))},
              "field id: 9223372036854775808 is 2^63 or more");
  // id as a length-delimited field (tag 1 << 3 | 2): protobuf keeps it as an
  // unknown field, so the node is node 0 without a type, which passes its
  // dependencies on (as ASTRA-sim skips INVALID_NODE); a second one is a
  // duplicate node 0.
  ExpectError({Record(Bytes({0x0a, 0x01, 0x01})), Record(Bytes({0x18, 0x04}))}, "node 0: duplicate node id");
  // What the graph means, checked as for JSON: the node named by its id.
  ExpectError({x, x}, "node 1: duplicate node id");
  ExpectError({Record(Bytes({0x08, 0x01, 0x18, 0x0b}))}, "unsupported node type ? (11)");
  ChakraProtoMsg::AttributeProto comm_type, huge;
  comm_type.set_name("comm_type");
  comm_type.set_int64_val(kAllReduce);
  ExpectError({Record(CollNode({comm_type}))}, "node 2: missing attribute 'comm_size'");
  huge.set_name("comm_size");
  huge.set_uint64_val(~uint64_t{0});
  ExpectError({Record(CollNode({comm_type, huge}))},
              "node 2: attribute 'comm_size': value 18446744073709551615 is beyond int64");

  try {
    DecodeChakraEt({"empty.0.et", ""});
    ADD_FAILURE() << "empty file accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("empty.0.et: empty file"), std::string::npos) << e.what();
  }
}

// A file that starts with a node says its GlobalMetadata is missing, naming
// the node it found instead.
TEST(ChakraEt, MissingGlobalMetadataIsSaidSo) {
  const std::string file = Record(kNodeX) + Record(kNodeX);
  try {
    DecodeChakraEt({"nometa.0.et", file});
    ADD_FAILURE() << "a file without GlobalMetadata accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("nometa.0.et: GlobalMetadata: missing: the first record is a node (id 1, "
                                         "COMP_NODE)"),
              std::string::npos)
        << e.what();
  }
  // A GlobalMetadata of a later schema (an unknown field 3) still reads.
  const std::string later = Bytes({0x09, 0x0a, 0x05, '0', '.', '0', '.', '4', 0x18, 0x01}) + Record(kNodeX);
  EXPECT_EQ(DecodeChakraEt({"later.0.et", later}).version, "0.0.4");
}

// A .et file named .json: the JSON reader says what it probably is.
TEST(ChakraEt, EtBytesReadAsJsonAreCalledBinary) {
  trace::Trace t = test_traces::SmallTrace();
  std::vector<std::string> et = ExportChakraEt(t, engine::Engine(kCost, kNet).Replay(t));
  try {
    ImportChakraJson({{"misnamed.0.json", et[0]}, {"misnamed.1.json", et[1]}});
    ADD_FAILURE() << ".et bytes accepted as JSON";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("misnamed.0.json: expected '{' at byte 0 (object 0): this looks binary"),
              std::string::npos)
        << e.what();
  }
}

// Every prefix of a valid file, and the file with any one byte changed,
// gives a trace or an InputError: never a crash or another exception.
TEST(ChakraEt, DamagedFilesNeverCrash) {
  trace::Trace t = test_traces::SmallTrace();
  std::vector<std::string> et = ExportChakraEt(t, engine::Engine(kCost, kNet).Replay(t));
  int rejected = 0;
  auto attempt = [&](const std::string& rank1) {
    try {
      ImportChakraEt(Files({et[0], rank1}));
    } catch (const InputError&) {
      ++rejected;
    }
  };
  for (size_t n = 0; n < et[1].size(); ++n) attempt(et[1].substr(0, n));
  EXPECT_GT(rejected, static_cast<int>(et[1].size()) / 2);
  for (size_t i = 0; i < et[1].size(); ++i) {
    for (int v : {0x00, 0x7f, 0x80, 0xff}) {
      std::string damaged = et[1];
      damaged[i] = static_cast<char>(v);
      attempt(damaged);
    }
  }
}

}  // namespace
}  // namespace stacksim::chakra
