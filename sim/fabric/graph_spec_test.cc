// Topology files whose fabric is a generator or a graph file: read strictly,
// errors naming the file and key path.
#include "sim/fabric/graph_spec.h"

#include <gtest/gtest.h>

#include <string>

#include "sim/config/topology.h"
#include "sim/fabric/fabric_metrics.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace stacksim::fabric {
namespace {

const std::string kSourceDir = STACKSIM_SOURCE_DIR;

config::TopologyConfig WithFabric(const nlohmann::json& fabric) {
  nlohmann::json doc = ReadJsonFile(kSourceDir + "/topologies/dgx-h100.json");
  doc["fabric"] = fabric;
  doc["max_nodes"] = 16;
  return config::ParseTopology(JsonNode(doc, kSourceDir + "/topologies/test.json", ""));
}

std::string ErrorOf(const nlohmann::json& fabric) {
  try {
    BuildFabric(WithFabric(fabric));
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(GraphSpec, GeneratorsAreReadStrictly) {
  const std::string file = kSourceDir + "/topologies/test.json: ";
  EXPECT_NE(ErrorOf({{"generator", "torus"}, {"dims", {4, 4}}, {"link_kind", "nvlink"}, {"link_bandwidth", "75 GB/s"},
                     {"link_latency", "1 us"}, {"dimz", 3}})
                .find(file + "fabric.dimz: unknown key"),
            std::string::npos);
  EXPECT_NE(ErrorOf({{"generator", "torus"}, {"dims", {3, 4}}, {"link_kind", "nvlink"}, {"link_bandwidth", "75 GB/s"},
                     {"link_latency", "1 us"}})
                .find(file + "fabric.dims: the torus's 12 GPUs are not whole nodes of 8"),
            std::string::npos);
  EXPECT_NE(ErrorOf({{"generator", "hypercube"}}).find(file + "fabric.generator"), std::string::npos);
  EXPECT_NE(ErrorOf({{"generator", "dragonfly"}, {"groups", 4}, {"routers_per_group", 2}, {"nodes_per_router", 1},
                     {"global_links_per_router", 1}, {"link_kind", "ib"}, {"local_bandwidth", "400 Gb/s"},
                     {"global_bandwidth", "400 Gb/s"}, {"hop_latency", "0.5 us"}})
                .find(file + "fabric.global_links_per_router: routers_per_group x global_links_per_router (2)"),
            std::string::npos);
  EXPECT_NE(ErrorOf({{"graph", "no-such.graphml"}}).find(file + "fabric.graph: no graph file"), std::string::npos);
}

TEST(GraphSpec, TopologyWithAGeneratorRoundTripsThroughItsJson) {
  config::TopologyConfig t = WithFabric({{"generator", "rail-only"}, {"hop_latency", "0.5 us"}});
  EXPECT_TRUE(t.fabric.levels.empty());
  nlohmann::json back = config::TopologyToJson(t);
  EXPECT_EQ(back["fabric"]["generator"], "rail-only");
  FabricGraph f = BuildFabric(t);
  EXPECT_EQ(f.gpus.size(), 16u * 8);
  EXPECT_DOUBLE_EQ(Summarize(f).bisection.value, 64 * 50e9);
}

}  // namespace
}  // namespace stacksim::fabric

namespace stacksim::fabric {
namespace {

// The shipped GraphML topology, by hand: the two servers meet only through
// their 4 NICs (4 x 50 GB/s); across rails a path takes 6 links (GPU, NIC,
// rail, NIC, GPU, PCIe switch, GPU).
TEST(GraphSpec, ShippedGraphmlTopologyHasTheHandCountedBisection) {
  config::TopologyConfig t = config::LoadTopologyFile(kSourceDir + "/topologies/h100-pcie-bridged.json");
  FabricGraph f = BuildFabric(t);
  FabricSummary s = Summarize(f);
  EXPECT_EQ(s.gpus, 16);
  EXPECT_EQ(s.links[static_cast<int>(LinkKind::kNvLink)].count, 8);
  EXPECT_EQ(s.links[static_cast<int>(LinkKind::kRoce)].count, 8);
  EXPECT_DOUBLE_EQ(s.bisection.value, 4 * 50e9);
  EXPECT_EQ(s.diameter_hops, 6);
  // Scale-up: PCIe 64 + bridge 300; scale-out: a NIC shared by two GPUs.
  EXPECT_DOUBLE_EQ(s.scale_up_min.value, 364e9);
  EXPECT_DOUBLE_EQ(s.scale_out_min.value, 25e9);
  EXPECT_EQ(f.graph[f.gpus[9]].name, "node 1 GPU 1");
}

}  // namespace
}  // namespace stacksim::fabric
