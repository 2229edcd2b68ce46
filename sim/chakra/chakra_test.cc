#include "sim/chakra/chakra.h"

#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <string>

#include "sim/chakra/chakra_test_traces.h"
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

void ExpectError(const std::string& text, const std::string& part) {
  try {
    ImportChakraJson({{"bad.0.json", text}});
    ADD_FAILURE() << "no error for: " << text;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad.0.json"), std::string::npos) << e.what();
  }
}

TEST(Chakra, MalformedInputIsAnErrorNamingFileAndNode) {
  ExpectError("", "empty");
  ExpectError(R"({"version": "0.0.4"}{"id": "1", "type": "COMP_NODE", "durat)", "truncated");
  ExpectError(R"({"id": "1", "type": "COMP_NODE", "dataDeps": ["9"]})", "node 1: dependency on unknown node 9");
  ExpectError(R"({"id": "1", "type": "COMP_NODE"}{"id": "1", "type": "COMP_NODE"})", "duplicate node id");
  ExpectError(R"({"type": "COMP_NODE"}{"type": "COMP_NODE"})", "duplicate node id");  // two node 0s
  ExpectError(R"({"id": "x1", "type": "COMP_NODE"})", "expected an integer");
  ExpectError(R"({"id": "1", "type": "WEIRD_NODE"})", "unknown node type");
  ExpectError(R"({"id": "1", "type": "COMP_NODE", "colour": 3})", "colour");
  ExpectError(R"({"id": "2", "type": "COMM_COLL_NODE", "attr": [{"name": "comm_type", "int64Val": "0"}]})",
              "node 2: missing attribute 'comm_size'");
  ExpectError(R"({"id": "2", "type": "COMM_COLL_NODE", "attr": [{"name": "comm_type", "int64Val": "9"},
              {"name": "comm_size", "int64Val": "1"}]})", "BARRIER");
  ExpectError(R"({"id": "3", "type": "COMM_RECV_NODE", "attr": [{"name": "comm_src", "int64Val": "0"}]})",
              "node 3: no send matches");
  ExpectError(R"({"id": "1", "type": "COMP_NODE", "dataDeps": ["2"]}{"id": "2", "type": "COMP_NODE", "dataDeps": ["1"]})",
              "cycle");
  ExpectError(R"({"id": "1", "type": "COMP_NODE", "attr": [{"name": "num_ops", "int64Val": true}]})", "num_ops");
  ExpectError(R"([1, 2])", "expected an object");
  ExpectError(R"({"id": "1", "type": "COMP_NODE"} garbage)", "expected '{'");
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
