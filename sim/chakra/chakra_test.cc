#include "sim/chakra/chakra.h"

#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <set>
#include <string>

#include "sim/chakra/chakra_test_traces.h"
#include "sim/chakra/comm_size.h"
#include "sim/config/scenario.h"
#include "sim/engine/engine.h"
#include "sim/net/analytic_network.h"
#include "sim/simulate/simulate.h"
#include "sim/util/error.h"

namespace stacksim::chakra {
namespace {

using trace::TaskKind;

using test_traces::SmallTrace;

engine::FixedCostModel kCost(FlopRate{1e15});
engine::FixedNetworkModel kNet(Time::Us(5), Bandwidth{1e11});

std::vector<RankText> Texts(const std::vector<std::string>& texts) {
  std::vector<RankText> out;
  for (size_t r = 0; r < texts.size(); ++r) out.push_back({"rank" + std::to_string(r) + ".json", texts[r]});
  return out;
}

TEST(Chakra, ExportWritesJsonizerShapedNodes) {
  trace::Trace t = SmallTrace();
  engine::ReplayResult replay = engine::Engine(kCost, kNet).Replay(t);
  std::vector<std::string> texts = ExportChakraJson(t, replay);
  ASSERT_EQ(texts.size(), 2u);
  EXPECT_NE(texts[0].find("\"version\": \"0.0.4\""), std::string::npos);
  EXPECT_NE(texts[0].find("\"type\": \"COMM_SEND_NODE\""), std::string::npos);
  EXPECT_NE(texts[1].find("\"type\": \"COMM_RECV_NODE\""), std::string::npos);
  EXPECT_NE(texts[0].find("\"durationMicros\": \"2000\""), std::string::npos);  // 2 TFLOP at 1 PFLOP/s
  EXPECT_NE(texts[0].find("\"comm_size\""), std::string::npos);
  EXPECT_NE(texts[0].find("\"pg_name\""), std::string::npos);
}

TEST(Chakra, SmallTraceRoundTripsExactly) {
  trace::Trace t = SmallTrace();
  engine::Engine engine(kCost, kNet);
  engine::ReplayResult before = engine.Replay(t);
  trace::Trace back = ImportChakraJson(Texts(ExportChakraJson(t, before)));
  ASSERT_EQ(back.size(), t.size());
  EXPECT_EQ(back.task(0).kind, TaskKind::kDelay);
  EXPECT_EQ(back.task(1).kind, TaskKind::kTransfer);
  EXPECT_EQ(back.task(2).rank, 1);
  EXPECT_EQ(back.task(3).comm.bytes.value, 1e8 + 0.5);
  engine::ReplayResult after = engine.Replay(back);
  EXPECT_EQ(after.makespan.ns(), before.makespan.ns());
  for (size_t i = 0; i < t.size(); ++i) EXPECT_EQ(after.timings[i].end.ns(), before.timings[i].end.ns()) << i;
}

// A group whose copies come in runs (a context-parallel group: tp copies per
// replica) keeps the runs through export and import.
TEST(Chakra, SiblingRunsRoundTrip) {
  trace::Trace t;
  t.SetRankCount(2);
  trace::CommGroup cp{.name = "cp", .size = 2, .ranks_per_node = 2, .nodes = 1, .simulated = {0, 1}};
  cp.stride = 2;
  cp.siblings = 6;
  cp.sibling_stride = 1;
  cp.sibling_run = 2;
  cp.sibling_run_stride = 4;
  cp.role = trace::GroupRole::kCp;
  const trace::GroupId g = t.AddGroup(cp);
  trace::Task ar;
  ar.kind = TaskKind::kCollective;
  ar.stream = t.InternStream("cp");
  ar.label = t.InternLabel("cp");
  ar.name = t.InternName("kv all-gather");
  ar.comm = {.kind = trace::CollectiveKind::kAllGather, .bytes = Bytes{1e6}, .group = g, .instance = 0};
  t.Add(ar);
  ar.rank = 1;
  t.Add(ar);
  ASSERT_EQ(t.Check(), "");
  trace::Trace back = ImportChakraJson(Texts(ExportChakraJson(t, engine::Engine(kCost, kNet).Replay(t))));
  const trace::CommGroup& b = back.group(back.task(0).comm.group);
  EXPECT_EQ(b.siblings, 6);
  EXPECT_EQ(b.sibling_run, 2);
  EXPECT_EQ(b.sibling_run_stride, 4);
  EXPECT_EQ(b.SiblingOffset(5), 9);  // run 2, copy 1
  EXPECT_EQ(GpusSpanned(back), 12);  // copy 5's second member is rank 11
}

// Without stacksim's attributes (what another Chakra producer writes): order-
// matched collectives, recv matched by tag, microsecond durations.
TEST(Chakra, PlainChakraImports) {
  const std::string r0 = R"({"version": "0.0.4"}
{"id": "1", "name": "gemm", "type": "COMP_NODE", "durationMicros": "10",
 "attr": [{"name": "num_ops", "int64Val": "100"}]}
{"id": "2", "name": "send", "type": "COMM_SEND_NODE", "dataDeps": ["1"],
 "attr": [{"name": "comm_dst", "int64Val": "1"}, {"name": "comm_tag", "int64Val": "7"}, {"name": "comm_size", "uint64Val": "1000000"}]}
{"id": "3", "name": "ar", "type": "COMM_COLL_NODE", "dataDeps": ["1"],
 "attr": [{"name": "comm_type", "int64Val": "0"}, {"name": "comm_size", "int64Val": "8000000"}, {"name": "pg_name", "stringVal": "0"}]})";
  const std::string r1 = R"({"version": "0.0.4"}
{"id": 5, "name": "recv", "type": "COMM_RECV_NODE",
 "attr": [{"name": "comm_src", "int64_val": 0}, {"name": "comm_tag", "int64_val": 7}, {"name": "comm_size", "int64_val": 1000000}]}
{"id": 6, "name": "gemm", "type": 4, "data_deps": [5], "duration_micros": 20}
{"id": 7, "name": "ar", "type": "COMM_COLL_NODE", "data_deps": [6],
 "attr": [{"name": "comm_type", "int64Val": "0"}, {"name": "comm_size", "int64Val": "8000000"}, {"name": "pg_name", "stringVal": "0"}]})";
  trace::Trace t = ImportChakraJson({{"a.0.json", r0}, {"a.1.json", r1}});
  ASSERT_EQ(t.size(), 5u);
  ASSERT_EQ(t.Check(), "");
  engine::ReplayResult res = engine::Engine(kCost, kNet).Replay(t);
  // rank 1: 10 us + send (5 us + 10 us) + 20 us, then the all-reduce (5 us + 80 us) together with rank 0.
  EXPECT_EQ(res.makespan, Time::Us(130));
}

// What a synthetic Chakra generator writes: protobuf-JSON with defaults left
// out (node 0 has no "id") and compute nodes with num_ops / tensor_size but no
// duration. Those are timed on the roofline of the profile given.
TEST(Chakra, DurationlessComputeNodesRunOnTheRoofline) {
  const std::string r0 = R"({"version": "0.0.4"}
{"name": "gemm", "type": "COMP_NODE", "attr": [{"name": "num_ops", "int64Val": "2000000000000"}]}
{"id": "1", "name": "copy", "type": "COMP_NODE", "dataDeps": ["0"],
 "attr": [{"name": "num_ops", "int64Val": "1000"}, {"name": "tensor_size", "uint64Val": "400000000"}]})";
  config::ProfileConfig p;
  p.peak_flops[static_cast<int>(config::Precision::kBf16)] = config::Sourced<FlopRate>{FlopRate{1e15}, "test"};
  p.hbm_bandwidth = {Bandwidth{4e12}, "test"};
  p.copy_efficiency = {0.5, "test"};
  ImportOptions with;
  with.roofline = &p;
  trace::Trace t = ImportChakraJson({{"synthetic.0.json", r0}}, with);
  ASSERT_EQ(t.size(), 2u);
  // 2 TFLOP at 1 PFLOP/s = 2 ms; 400 MB at 2 TB/s = 200 us (its 1000 FLOP are nothing).
  EXPECT_EQ(engine::Engine(kCost, kNet).Replay(t).makespan, Time::Us(2200));
  // Without a profile they take no time.
  EXPECT_EQ(engine::Engine(kCost, kNet).Replay(ImportChakraJson({{"synthetic.0.json", r0}})).makespan, Time::Zero());
}

// Errors as `--ctrl-deps follow` reports them (auto would drop the ctrl deps
// of a cycle they are on; see AutoDropsCtrlDepsOnlyWhenTheyCloseACycle).
void ExpectError(const std::string& text, const std::string& part) {
  ImportOptions follow;
  follow.ctrl_deps = CtrlDeps::kFollow;
  try {
    ImportChakraJson({{"bad.0.json", text}}, follow);
    ADD_FAILURE() << "no error for: " << text;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad.0.json"), std::string::npos) << e.what();
  }
}

const std::string kMeta = R"({"version": "0.0.4"})";

TEST(Chakra, AutoDropsCtrlDepsOnlyWhenTheyCloseACycle) {
  // Node 2 waits for 1 by a ctrl dep that the data deps contradict.
  const std::string cyclic = kMeta + R"(
{"id": "1", "name": "a", "type": "COMP_NODE", "durationMicros": "10", "dataDeps": ["2"]}
{"id": "2", "name": "b", "type": "COMP_NODE", "durationMicros": "20", "ctrlDeps": ["1"], "attr": [{"name": "stream", "int64Val": "2"}]})";
  ImportNotes notes;
  trace::Trace t = ImportChakraJson({{"c.0.json", cyclic}}, ImportOptions{}, &notes);
  EXPECT_NE(notes.ctrl_cycle.find("dependency cycle"), std::string::npos) << notes.ctrl_cycle;
  EXPECT_EQ(notes.ignored_ctrl_deps, 1);
  EXPECT_EQ(engine::Engine(kCost, kNet).Replay(t).makespan, Time::Us(30));  // b, then a
  // Ctrl deps that close no cycle are followed.
  const std::string acyclic = kMeta + R"(
{"id": "1", "name": "a", "type": "COMP_NODE", "durationMicros": "10"}
{"id": "2", "name": "b", "type": "COMP_NODE", "durationMicros": "20", "ctrlDeps": ["1"], "attr": [{"name": "stream", "int64Val": "2"}]})";
  ImportNotes followed;
  EXPECT_EQ(engine::Engine(kCost, kNet).Replay(ImportChakraJson({{"c.0.json", acyclic}}, ImportOptions{}, &followed)).makespan,
            Time::Us(30));
  EXPECT_TRUE(followed.ctrl_cycle.empty());
  EXPECT_EQ(followed.ignored_ctrl_deps, 0);
}

TEST(Chakra, MalformedInputIsAnErrorNamingFileAndNode) {
  ExpectError("", "empty");
  ExpectError(kMeta + R"({"id": "1", "type": "COMP_NODE", "durat)", "truncated");
  ExpectError(kMeta + R"({"id": "1", "type": "COMP_NODE"}{"id": "1", "type": "COMP_NODE"})", "duplicate node id");
  ExpectError(kMeta + R"({"type": "COMP_NODE"}{"type": "COMP_NODE"})", "duplicate node id");  // two node 0s
  ExpectError(kMeta + R"({"id": "x1", "type": "COMP_NODE"})", "object 1: ");
  ExpectError(kMeta + R"({"id": "1", "type": "WEIRD_NODE"})", "WEIRD_NODE");
  ExpectError(kMeta + R"({"id": "1", "type": "COMP_NODE", "colour": 3})", "colour");
  ExpectError(kMeta + R"({"id": "2", "type": "COMM_COLL_NODE", "attr": [{"name": "comm_type", "int64Val": "0"}]})",
              "node 2: missing attribute 'comm_size'");
  ExpectError(kMeta + R"({"id": "2", "type": "COMM_COLL_NODE", "attr": [{"name": "comm_type", "int64Val": "9"},
              {"name": "comm_size", "int64Val": "1"}]})", "BARRIER");
  ExpectError(kMeta + R"({"id": "3", "type": "COMM_RECV_NODE", "attr": [{"name": "comm_src", "int64Val": "0"}]})",
              "node 3: no send matches");
  ExpectError(kMeta + R"({"id": "1", "name": "a", "type": "COMP_NODE", "dataDeps": ["2"]}
                         {"id": "2", "type": "COMP_NODE", "ctrlDeps": ["1"]})",
              "node 2 -> [data dep] node 1 (a) -> [ctrl dep] node 2");
  ExpectError(kMeta + R"({"id": "1", "type": "COMP_NODE", "attr": [{"name": "num_ops", "int64Val": true}]})",
              "object 1: ");
  ExpectError(R"([1, 2])", "expected an object");
  ExpectError(kMeta + R"({"id": "1", "type": "COMP_NODE"} garbage)", "expected '{'");
  // A file without its GlobalMetadata says so, naming the node it found.
  ExpectError(R"({"id": "1", "type": "COMP_NODE"})",
              "bad.0.json: GlobalMetadata: missing: object 0 is a node (id 1, COMP_NODE)");
}

// What Chakra's feeder does: a dependency on a node the file does not hold
// (Chakra's PyTorch converter links ops to callers outside the trace) or on
// the node itself never blocks; the import counts them.
TEST(Chakra, DependenciesOnAbsentNodesAreDroppedAndCounted) {
  const std::string r0 = kMeta + R"({"id": "1", "type": "COMP_NODE", "durationMicros": "10", "ctrlDeps": ["3"]}
{"id": "2", "type": "COMP_NODE", "durationMicros": "5", "dataDeps": ["1", "9", "2"]})";
  ImportNotes notes;
  trace::Trace t = ImportChakraGraphs({{"a.0.json", ParseChakraJson({"a.0.json", r0})}}, {}, &notes);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(notes.absent_dependencies, 2);
  EXPECT_EQ(notes.self_dependencies, 1);
  EXPECT_EQ(engine::Engine(kCost, kNet).Replay(t).makespan, Time::Us(15));
}

// Streams come from the trace: Chakra's PyTorch converter gives each node the
// tid of its CPU thread, and GPU ops their stream (in `stream`, or in `tid` in
// earlier versions). Nodes of different threads and streams overlap; a
// collective on the CPU is its host side, a delay on its thread.
TEST(Chakra, ThreadsAndStreamsComeFromTheTrace) {
  const std::string r0 = kMeta + R"(
{"id": "10", "name": "cpu op", "type": "COMP_NODE", "durationMicros": "30",
 "attr": [{"name": "is_cpu_op", "boolVal": true}, {"name": "tid", "int64Val": "1"}]}
{"id": "11", "name": "kernel a", "type": "COMP_NODE", "durationMicros": "50",
 "attr": [{"name": "is_cpu_op", "boolVal": false}, {"name": "tid", "int64Val": "7"}]}
{"id": "12", "name": "kernel b", "type": "COMP_NODE", "durationMicros": "40",
 "attr": [{"name": "is_cpu_op", "boolVal": false}, {"name": "stream", "int64Val": "20"}, {"name": "tid", "int64Val": "7"}]}
{"id": "13", "name": "c10d::allreduce_", "type": "COMM_COLL_NODE", "durationMicros": "20",
 "attr": [{"name": "is_cpu_op", "boolVal": true}, {"name": "tid", "int64Val": "2"}]}
{"id": "14", "name": "kernel c", "type": "COMP_NODE", "durationMicros": "5", "dataDeps": ["10"],
 "attr": [{"name": "is_cpu_op", "boolVal": false}, {"name": "tid", "int64Val": "7"}]})";
  ImportNotes notes;
  trace::Trace t = ImportChakraGraphs({{"p.0.json", ParseChakraJson({"p.0.json", r0})}}, {}, &notes);
  EXPECT_EQ(notes.host_collectives, 1);
  std::set<std::string> streams;
  for (size_t i = 0; i < t.size(); ++i) streams.insert(t.stream_name(t.task(i).stream));
  EXPECT_EQ(streams, (std::set<std::string>{"thread 1", "thread 2", "stream 7", "stream 20"}));
  // stream 7 runs a (50 us) then c (5 us, also after the 30 us CPU op): 55 us.
  // On one stream in file order it would be 30 + 50 + 40 + 20 + 5 = 145 us.
  EXPECT_EQ(engine::Engine(kCost, kNet).Replay(t).makespan, Time::Us(55));
}

// Chakra's feeder JSON dialect ({"workload_graph": [...]}, src/feeder/
// json_node.cpp in mlcommons/chakra) reads too.
TEST(Chakra, FeederJsonDialectReads) {
  const std::string text = R"({"workload_graph": [
  {"Id": 5, "Name": "gemm", "NodeType": 4, "data_deps": [], "runtime": 12, "is_cpu_op": false},
  {"Id": 6, "Name": "ar", "NodeType": 7, "data_deps": [5], "runtime": 3, "is_cpu_op": false,
   "comm_type": 0, "comm_size": 1048576}]})";
  ChakraGraph g = ParseChakraJson({"w.0.json", text});
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[1].type, kCollNode);
  EXPECT_EQ(g.nodes[1].data_deps, std::vector<int64_t>{5});
  trace::Trace t = ImportChakraGraphs({{"w.0.json", g}});
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t.task(1).comm.bytes.value, 1048576);
  ExpectError(R"({"workload_graph": [{"Id": 5, "NodeType": 4, "runtim": 3}]})", "workload_graph[0].runtim");
  ExpectError(R"({"workload_graph": [{"Name": "x", "NodeType": 4}]})", "workload_graph[0].Id: required key");
}

// ASTRA-sim's comm_size for an all-gather is each rank's input (Ring.cc:
// the result is comm_size x ranks): an 8-rank all-gather of comm_size 1 MiB
// is priced as stacksim's all-gather of an 8 MiB output, and stacksim's
// export writes comm_size in that convention.
TEST(Chakra, AllGatherCommSizeIsEachRanksInput) {
  std::vector<RankGraph> ranks;
  for (int r = 0; r < 8; ++r) {
    const std::string text = kMeta + R"({"id": "1", "type": "COMM_COLL_NODE",
      "attr": [{"name": "comm_type", "int64Val": "2"}, {"name": "comm_size", "int64Val": "1048576"}]})";
    const std::string file = "ag." + std::to_string(r) + ".json";
    ranks.push_back({file, ParseChakraJson({file, text})});
  }
  trace::Trace t = ImportChakraGraphs(ranks);
  ASSERT_EQ(t.size(), 8u);
  EXPECT_EQ(t.task(0).comm.kind, trace::CollectiveKind::kAllGather);
  EXPECT_EQ(t.task(0).comm.bytes.value, 8.0 * 1048576);
  EXPECT_EQ(t.group(t.task(0).comm.group).size, 8);

  // Export: the same collective written back has comm_size 1 MiB and no
  // stacksim_comm_bytes (comm_size says it all).
  engine::ReplayResult replay = engine::Engine(kCost, kNet).Replay(t);
  std::vector<ChakraGraph> back = ExportChakraGraphs(t, replay);
  int64_t comm_size = -1;
  bool exact_bytes = false;
  for (const Attribute& a : back[0].nodes[0].attrs) {
    if (a.name == "comm_size") comm_size = a.int_value;
    if (a.name == "stacksim_comm_bytes") exact_bytes = true;
  }
  EXPECT_EQ(comm_size, 1048576);
  EXPECT_FALSE(exact_bytes);
  // A reduce-scatter's comm_size is its (unreduced) input in both tools.
  EXPECT_EQ(StacksimCommBytes(trace::CollectiveKind::kReduceScatter, 1048576, 8).value, 1048576);
  EXPECT_EQ(ChakraCommSize(trace::CollectiveKind::kAllGather, Bytes{8.0 * 1048576}, 8), 1048576);
}

// Every prefix of a valid file is rejected cleanly, never a crash.
TEST(Chakra, TruncatedFilesNeverCrash) {
  trace::Trace t = SmallTrace();
  std::vector<std::string> texts = ExportChakraJson(t, engine::Engine(kCost, kNet).Replay(t));
  for (size_t n = 0; n < texts[1].size(); n += 7) {
    try {
      ImportChakraJson({{"a.0.json", texts[0]}, {"a.1.json", texts[1].substr(0, n)}});
    } catch (const InputError&) {
    }
  }
}

// A stacksim-generated training step (Llama 3 8B, pp 2 x dp 4 on one DGX
// H100) exported to Chakra and imported back replays to the same step time:
// exactly with stacksim_duration_ns, and within 0.5 us per task on the
// longest chain from microsecond durations alone.
TEST(Chakra, TrainingStepRoundTripsToTheSameStepTime) {
  config::ScenarioConfig s = test_traces::TrainingStepScenario();
  simulate::SimulationResult res = test_traces::TrainingStep(s);
  ASSERT_TRUE(res.trace);
  ASSERT_EQ(res.trace->rank_count(), 2);
  std::vector<std::string> texts = ExportChakraJson(*res.trace, *res.replay);

  net::AnalyticNetwork network(s.topology, s.profile);
  engine::FixedCostModel unused(FlopRate{1});
  engine::Engine engine(unused, network);
  trace::Trace back = ImportChakraJson(Texts(texts));
  ASSERT_EQ(back.size(), res.trace->size());
  EXPECT_EQ(engine.Replay(back).makespan.ns(), res.replay->makespan.ns());

  // Drop the exact durations: integer microseconds only.
  std::vector<std::string> coarse;
  static const std::regex kNs(R"(,\s*\{\s*"name": "stacksim_duration_ns",\s*"int64Val": "\d+"\s*\})");
  for (const std::string& text : texts) coarse.push_back(std::regex_replace(text, kNs, ""));
  ASSERT_EQ(coarse[0].find("stacksim_duration_ns"), std::string::npos);
  Time approx = engine.Replay(ImportChakraJson(Texts(coarse))).makespan;
  double per_rank_tasks = static_cast<double>(res.trace->size()) / res.trace->rank_count();
  EXPECT_LE(std::abs((approx - res.replay->makespan).us()), 0.5 * per_rank_tasks);
  EXPECT_NE(approx, res.replay->makespan);  // the microsecond path really was taken
}

}  // namespace
}  // namespace stacksim::chakra
