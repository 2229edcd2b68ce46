// Chakra traces other tools wrote (../shared/traces/, see its README):
// ASTRA-sim's microbenchmarks and custom ring all-reduce, and the .et that
// Chakra's converter made from a PyTorch execution trace. Each test reads the
// files where they lie and skips when the folder is not next to this checkout.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/chakra/chakra.h"
#include "sim/config/scenario.h"
#include "sim/engine/engine.h"
#include "sim/net/analytic_network.h"
#include "sim/util/error.h"
#include "tests/run_stacksim.h"

namespace stacksim {
namespace {

namespace fs = std::filesystem;

fs::path TracesDir() { return fs::path(STACKSIM_SOURCE_DIR) / ".." / "shared" / "traces"; }

const config::ScenarioConfig& Scenario() {
  static const config::ScenarioConfig s =
      config::LoadScenario(std::string(STACKSIM_SOURCE_DIR) + "/scenarios/llama3-8b-8xh100.json", {});
  return s;
}

Time Replay(const trace::Trace& t) {
  net::AnalyticNetwork network(Scenario().topology, Scenario().profile);
  engine::FixedCostModel no_compute(FlopRate{1});
  return engine::Engine(no_compute, network).Replay(t).makespan;
}

chakra::ImportOptions Options() {
  chakra::ImportOptions o;
  o.ranks_per_node = Scenario().topology.gpus_per_node;
  o.roofline = &Scenario().profile;
  return o;
}

TEST(ChakraTraces, EveryAstraSimMicrobenchmarkReplays) {
  const fs::path root = TracesDir() / "astra-sim" / "microbenchmarks";
  if (!fs::exists(root)) GTEST_SKIP() << root << " is not next to this checkout";
  int dirs = 0;
  for (const char* collective : {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"}) {
    for (int ranks : {4, 8, 16}) {
      const fs::path dir = root / collective / (std::to_string(ranks) + "npus_1MB");
      trace::Trace t = chakra::ReadChakraDirectory(dir.string(), Options());
      EXPECT_EQ(t.rank_count(), ranks) << dir;
      ASSERT_EQ(t.size(), static_cast<size_t>(ranks)) << dir;
      EXPECT_EQ(t.task(0).kind, trace::TaskKind::kCollective) << dir;
      EXPECT_GT(Replay(t), Time::Zero()) << dir;
      ++dirs;
    }
  }
  EXPECT_EQ(dirs, 12);
}

// ASTRA-sim's all-gather of comm_size 1 MB on 8 ranks is each rank's 1 MB
// gathered into 8 MB: the same cost as stacksim's all-gather of an 8 MB output.
TEST(ChakraTraces, AstraSimAllGatherCostsAnEightMegabyteOutput) {
  const fs::path dir = TracesDir() / "astra-sim/microbenchmarks/all_gather/8npus_1MB";
  if (!fs::exists(dir)) GTEST_SKIP() << dir << " is not next to this checkout";
  trace::Trace imported = chakra::ReadChakraDirectory(dir.string(), Options());

  auto all_gather = [](double bytes) {
    trace::Trace t;
    t.SetRankCount(8);
    trace::CommGroup g{.name = "pg", .size = 8, .ranks_per_node = 8, .nodes = 1};
    for (int r = 0; r < 8; ++r) g.simulated.push_back(r);
    trace::GroupId id = t.AddGroup(g);
    for (int r = 0; r < 8; ++r) {
      trace::Task task;
      task.rank = r;
      task.kind = trace::TaskKind::kCollective;
      task.stream = t.InternStream("comm");
      task.label = t.InternLabel("comm");
      task.comm = {.kind = trace::CollectiveKind::kAllGather, .bytes = Bytes{bytes}, .group = id, .instance = 0};
      t.Add(task);
    }
    return t;
  };
  const Time step = Replay(imported);
  EXPECT_EQ(step, Replay(all_gather(8.0 * 1048576)));
  EXPECT_GT(step, Replay(all_gather(1048576)));  // what it was priced at before
}

TEST(ChakraTraces, AstraSimCustomRingAllReduceReplays) {
  const fs::path dir = TracesDir() / "astra-sim/custom_collectives/custom_ring_allreduce_8npus_1MB";
  if (!fs::exists(dir)) GTEST_SKIP() << dir << " is not next to this checkout";
  trace::Trace t = chakra::ReadChakraDirectory(dir.string(), Options());
  EXPECT_EQ(t.rank_count(), 8);
  int sends = 0;
  for (size_t i = 0; i < t.size(); ++i) sends += t.task(i).kind == trace::TaskKind::kTransfer;
  EXPECT_EQ(sends, 8 * 14);  // 2 x (8 - 1) steps per rank, 1 MB / 8 each
  EXPECT_GT(Replay(t), Time::Zero());
}

// The converted PyTorch trace: its ctrl_deps are callers (they close cycles
// with data_deps: reported edge by edge when followed); by default they are
// then dropped, and with data_deps alone, as Chakra's feeder reads it, it
// replays on its own threads and streams, which overlap.
TEST(ChakraTraces, ConvertedPyTorchTraceReplaysWithItsOwnStreams) {
  const fs::path dir = TracesDir() / "chakra/feeder_tests_trace/tests/data";
  if (!fs::exists(dir)) GTEST_SKIP() << dir << " is not next to this checkout";
  chakra::ImportOptions follow = Options();
  follow.ctrl_deps = chakra::CtrlDeps::kFollow;
  try {
    chakra::ReadChakraDirectory(dir.string(), follow);
    ADD_FAILURE() << "ctrl deps followed: no cycle reported";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("chakra.0.et"), std::string::npos) << what;
    EXPECT_NE(what.find("dependency cycle: node "), std::string::npos) << what;
    EXPECT_NE(what.find("-> [ctrl dep] node "), std::string::npos) << what;
  }
  chakra::ImportNotes notes;
  trace::Trace t = chakra::ReadChakraDirectory(dir.string(), Options(), &notes);  // kAuto
  EXPECT_NE(notes.ctrl_cycle.find("dependency cycle: node "), std::string::npos) << notes.ctrl_cycle;
  EXPECT_GT(notes.ignored_ctrl_deps, 0);
  chakra::ImportOptions ignore = Options();
  ignore.ctrl_deps = chakra::CtrlDeps::kIgnore;
  chakra::ImportNotes ignored;
  EXPECT_EQ(chakra::ReadChakraDirectory(dir.string(), ignore, &ignored).size(), t.size());
  EXPECT_EQ(ignored.ignored_ctrl_deps, notes.ignored_ctrl_deps);
  EXPECT_TRUE(ignored.ctrl_cycle.empty());
  EXPECT_EQ(t.size(), 3664u);
  EXPECT_EQ(notes.host_collectives, 14);  // c10d::allreduce_ / broadcast_ on the CPU
  std::map<std::string, Time> busy;  // per stream, the recorded durations
  std::set<std::string> streams;
  Time all = Time::Zero();
  for (size_t i = 0; i < t.size(); ++i) {
    const trace::Task& task = t.task(i);
    streams.insert(t.stream_name(task.stream));
    if (task.kind == trace::TaskKind::kDelay) {
      busy[t.stream_name(task.stream)] += task.duration;
      all += task.duration;
    }
  }
  // CPU threads 1 and 2, the compute stream 7 and NCCL's stream 14.
  EXPECT_EQ(streams, (std::set<std::string>{"thread 1", "thread 2", "stream 7", "stream 14"}));
  Time longest = Time::Zero();
  for (const auto& [name, time] : busy) longest = std::max(longest, time);
  const Time step = Replay(t);
  EXPECT_GE(step, longest);  // a stream runs its kernels one at a time
  EXPECT_LT(step, all);      // threads and streams overlap: not one stream in file order
}

// More ranks than the scenario's GPUs: SimGrid's fabric is sized from the
// trace (a 64-rank trace on an 8-GPU scenario crashed it; 16 ranks lost the
// flows of ranks 8-15). Runs the command: SimGrid allows one simulation per
// process. Needs no shared traces.
TEST(ChakraTraces, MoreRanksThanTheScenarioSizesTheNetworkFromTheTrace) {
  const fs::path dir = fs::path(::testing::TempDir()) / "chakra_64_ranks";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (int r = 0; r < 64; ++r) {
    std::ofstream(dir / ("ar." + std::to_string(r) + ".json"))
        << R"({"version": "0.0.4"}{"id": "1", "type": "COMM_COLL_NODE", "attr": [{"name": "comm_type", "int64Val": "0"},
              {"name": "comm_size", "int64Val": "1048576"}]})";
  }
  const std::string scenario = std::string(STACKSIM_SOURCE_DIR) + "/scenarios/llama3-8b-8xh100.json";
  std::map<std::string, double> step;
  for (const char* network : {"analytic", "simgrid"}) {
    testing::CmdResult r = testing::Stacksim("replay-chakra " + dir.string() + " --scenario " + scenario + " --network " + network +
                           " --format json");
    ASSERT_EQ(r.status, 0) << network << ": " << r.out;
    nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["network_gpus"], 64) << network;
    step[network] = j["step_time_s"].get<double>();
  }
  // One all-reduce alone on the fabric: the flow-level model agrees with the
  // analytic one to a nanosecond or so.
  EXPECT_NEAR(step["simgrid"], step["analytic"], 1e-8);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace stacksim
