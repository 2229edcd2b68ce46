#include "sim/config/topology.h"

#include <filesystem>
#include <functional>

#include <gtest/gtest.h>

#include "sim/config/scenario.h"
#include "tests/input_error.h"

namespace stacksim::config {
namespace {

const std::string kSourceDir = STACKSIM_SOURCE_DIR;

using testing::ErrorFrom;

nlohmann::json DgxH100() { return ReadJsonFile(kSourceDir + "/topologies/dgx-h100.json"); }

TopologyConfig Parse(const nlohmann::json& doc) { return ParseTopology(JsonNode(doc, "t.json", "")); }

InputError ParseError(const nlohmann::json& doc) {
  return ErrorFrom([&] { Parse(doc); });
}

// Every GPU with a shipped system maps to a system built around that GPU
// (the H100 SXM 96GB rides in the DGX H100's system).
TEST(Topology, EachGpuMapsToASystemOfThatGpu) {
  for (const char* gpu : {"a100-sxm-80gb", "a100-sxm-40gb", "h100-sxm-80gb", "h100-sxm-96gb", "h800-sxm-80gb",
                          "h200-sxm-141gb", "b200", "gb200", "h100-pcie", "l40s", "mi300x", "mi325x"}) {
    const std::string system = SystemTopologyFor(gpu);
    ASSERT_FALSE(system.empty()) << gpu;
    const TopologyConfig t = LoadTopologyFile(ResolveDataFile("topologies", system, ""));
    EXPECT_EQ(t.gpu, std::string(gpu) == "h100-sxm-96gb" ? "h100-sxm-80gb" : gpu) << system;
  }
  EXPECT_EQ(SystemTopologyFor("v100"), "");
}

TEST(Topology, ParsesDgxH100WithUnits) {
  TopologyConfig t = LoadTopologyFile(kSourceDir + "/topologies/dgx-h100.json");
  EXPECT_EQ(t.name, "dgx-h100");
  EXPECT_EQ(t.gpu, "h100-sxm-80gb");
  EXPECT_EQ(t.gpus_per_node, 8);
  EXPECT_EQ(t.scale_up.kind, ScaleUpKind::kNvSwitch);
  EXPECT_EQ(t.scale_up.domain_gpus, 8);
  EXPECT_DOUBLE_EQ(t.scale_up.per_gpu_bandwidth.value, 450e9);  // per direction
  EXPECT_EQ(t.scale_up.latency, Time::Us(1));
  EXPECT_DOUBLE_EQ(t.nics.bandwidth.value, 50e9);  // 400 Gb/s in bytes
  EXPECT_EQ(t.nics.per_node, 8);
  ASSERT_EQ(t.fabric.levels.size(), 3u);
  EXPECT_EQ(t.fabric.levels[0].nodes_below, 32);
  EXPECT_TRUE(t.fabric.rail_optimized);
  EXPECT_EQ(t.max_nodes, 2048);
}

TEST(Topology, RackScaleDomainSpansTrays) {
  TopologyConfig t = LoadTopologyFile(kSourceDir + "/topologies/gb200-nvl72.json");
  EXPECT_EQ(t.gpus_per_node, 4);
  EXPECT_EQ(t.scale_up.domain_gpus, 72);
}

TEST(Topology, MissingUnitIsAnError) {
  nlohmann::json doc = DgxH100();
  doc["node"]["scale_up"]["bandwidth_per_gpu"] = "450";
  InputError e = ParseError(doc);
  EXPECT_EQ(e.file(), "t.json");
  EXPECT_EQ(e.key_path(), "node.scale_up.bandwidth_per_gpu");
  doc["node"]["scale_up"]["bandwidth_per_gpu"] = 450;  // a bare number has no unit either
  EXPECT_EQ(ParseError(doc).key_path(), "node.scale_up.bandwidth_per_gpu");
}

TEST(Topology, WrongUnitIsAnError) {
  nlohmann::json doc = DgxH100();
  doc["node"]["nics"]["latency"] = "2 GB";
  EXPECT_EQ(ParseError(doc).key_path(), "node.nics.latency");
  doc = DgxH100();
  doc["node"]["pcie_bandwidth"] = "64 GB";  // a size, not a bandwidth
  EXPECT_EQ(ParseError(doc).key_path(), "node.pcie_bandwidth");
}

TEST(Topology, UnknownNestedKeyIsAnError) {
  nlohmann::json doc = DgxH100();
  doc["node"]["nics"]["speed"] = "400 Gb/s";
  InputError e = ParseError(doc);
  EXPECT_EQ(e.key_path(), "node.nics.speed");
}

TEST(Topology, MissingKeyIsAnError) {
  nlohmann::json doc = DgxH100();
  doc["fabric"]["levels"][1].erase("hop_latency");
  EXPECT_EQ(ParseError(doc).key_path(), "fabric.levels[1].hop_latency");
}

TEST(Topology, GpusPerNodeMustBePositive) {
  nlohmann::json doc = DgxH100();
  doc["node"]["gpus_per_node"] = 0;
  EXPECT_EQ(ParseError(doc).key_path(), "node.gpus_per_node");
}

TEST(Topology, OversubscriptionBelowOneIsAnError) {
  nlohmann::json doc = DgxH100();
  doc["fabric"]["levels"][1]["oversubscription"] = 0.5;
  InputError e = ParseError(doc);
  EXPECT_EQ(e.key_path(), "fabric.levels[1].oversubscription");
}

TEST(Topology, DomainSmallerThanTheNodeIsAnError) {
  nlohmann::json doc = DgxH100();
  doc["node"]["scale_up"]["domain_gpus"] = 4;
  EXPECT_EQ(ParseError(doc).key_path(), "node.scale_up.domain_gpus");
  doc["node"]["scale_up"]["domain_gpus"] = 12;  // not whole nodes
  EXPECT_EQ(ParseError(doc).key_path(), "node.scale_up.domain_gpus");
  doc["node"]["scale_up"]["domain_gpus"] = 16;  // two nodes in one domain: rack-scale, allowed
  EXPECT_EQ(Parse(doc).scale_up.domain_gpus, 16);
}

TEST(Topology, PcieDomainIsTheNode) {
  nlohmann::json doc = ReadJsonFile(kSourceDir + "/topologies/pcie-l40s.json");
  doc["node"]["scale_up"]["domain_gpus"] = 16;
  EXPECT_EQ(ParseError(doc).key_path(), "node.scale_up.domain_gpus");
}

TEST(Topology, LevelsMustGrowAndReachMaxNodes) {
  nlohmann::json doc = DgxH100();
  doc["fabric"]["levels"][1]["nodes_below"] = 32;
  EXPECT_EQ(ParseError(doc).key_path(), "fabric.levels[1].nodes_below");
  doc = DgxH100();
  doc["max_nodes"] = 4096;
  EXPECT_EQ(ParseError(doc).key_path(), "max_nodes");
  doc["max_nodes"] = 0;  // unbounded
  EXPECT_EQ(Parse(doc).max_nodes, 0);
  doc["fabric"]["levels"] = nlohmann::json::array();
  EXPECT_EQ(ParseError(doc).key_path(), "fabric.levels");
}

TEST(Topology, NameDefaultsToFileStem) {
  nlohmann::json doc = DgxH100();
  doc.erase("name");
  EXPECT_EQ(ParseTopology(JsonNode(doc, "dir/my-cluster.json", "")).name, "my-cluster");
}

TEST(Topology, WritesBackWhatItReads) {
  for (const char* name : {"dgx-h100", "gb200-nvl72", "meta-h100-roce"}) {
    SCOPED_TRACE(name);
    TopologyConfig t = LoadTopologyFile(kSourceDir + "/topologies/" + name + ".json");
    nlohmann::json j = TopologyToJson(t);
    TopologyConfig back = Parse(j);
    EXPECT_EQ(TopologyToJson(back), j);
    EXPECT_DOUBLE_EQ(back.nics.bandwidth.value, t.nics.bandwidth.value);
    EXPECT_EQ(back.fabric.levels.back().oversubscription, t.fabric.levels.back().oversubscription);
  }
}

TEST(Topology, EveryShippedTopologyLoadsAndCitesItsSource) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kSourceDir + "/topologies")) {
    if (entry.path().extension() != ".json") continue;
    SCOPED_TRACE(entry.path().string());
    TopologyConfig t = LoadTopologyFile(entry.path().string());
    EXPECT_FALSE(t.source.empty());
    EXPECT_EQ(t.name, entry.path().stem().string());
    ++count;
  }
  EXPECT_GE(count, 9);
}

TEST(Topology, ParsesHostAndNvmeForOffload) {
  TopologyConfig t = LoadTopologyFile(kSourceDir + "/topologies/dgx-h100.json");
  ASSERT_TRUE(t.host.has_value());
  EXPECT_DOUBLE_EQ(t.host->memory.value, 2e12);
  EXPECT_DOUBLE_EQ(t.host->memory_bandwidth.value, 614.4e9);  // 2 x 8 DDR5-4800 channels
  ASSERT_TRUE(t.nvme.has_value());
  EXPECT_DOUBLE_EQ(t.nvme->capacity.value, 8 * 3.84e12);
  EXPECT_DOUBLE_EQ(t.nvme->bandwidth_read.value, 8 * 6.4e9);
  EXPECT_DOUBLE_EQ(t.nvme->bandwidth_write.value, 8 * 3.8e9);
  // Written back and read again.
  TopologyConfig back = Parse(TopologyToJson(t));
  EXPECT_EQ(back.host->memory_bandwidth, t.host->memory_bandwidth);
  EXPECT_EQ(back.nvme->capacity, t.nvme->capacity);
}

TEST(Topology, HostAndNvmeAreOptional) {
  TopologyConfig t = LoadTopologyFile(kSourceDir + "/topologies/h100-pcie-node.json");
  EXPECT_FALSE(t.host.has_value());
  EXPECT_FALSE(t.nvme.has_value());
  EXPECT_FALSE(TopologyToJson(t)["node"].contains("host"));
  // An HGX build lists its host memory but not its drives.
  TopologyConfig h = LoadTopologyFile(kSourceDir + "/topologies/hgx-h200.json");
  EXPECT_TRUE(h.host.has_value());
  EXPECT_FALSE(h.nvme.has_value());
}

TEST(Topology, BadHostOrNvmeFieldsNameTheirKey) {
  nlohmann::json doc = DgxH100();
  doc["node"]["host"].erase("memory_bandwidth");
  EXPECT_EQ(ParseError(doc).key_path(), "node.host.memory_bandwidth");
  doc = DgxH100();
  doc["node"]["host"]["memory"] = "2 TB/s";  // a bandwidth, not a size
  EXPECT_EQ(ParseError(doc).key_path(), "node.host.memory");
  doc = DgxH100();
  doc["node"]["nvme"]["bandwidth_read"] = "0 GB/s";
  EXPECT_EQ(ParseError(doc).key_path(), "node.nvme.bandwidth_read");
  doc = DgxH100();
  doc["node"]["nvme"]["iops"] = 1000000;
  InputError e = ParseError(doc);
  EXPECT_EQ(e.file(), "t.json");
  EXPECT_EQ(e.key_path(), "node.nvme.iops");
}

// MegaScale's 12,288 A100 (1,536 DGX nodes) on the dgx-a100 fabric, which
// describes 560: the core level grows to whole 140-node spine groups (11 of
// them, 1,540 nodes); leaves and spines keep their spans, every level its
// oversubscription and hop latency.
TEST(Topology, FatTreeGrowsToTheClusterAsked) {
  TopologyConfig t = LoadTopologyFile(kSourceDir + "/topologies/dgx-a100.json");
  const TopologyConfig before = t;
  ASSERT_EQ(t.max_nodes, 560);
  EXPECT_EQ(GrowFabricTo(t, 560), "");  // fits: nothing changes
  const std::string note = GrowFabricTo(t, 12288 / 8);
  EXPECT_NE(note.find("1540"), std::string::npos) << note;
  EXPECT_EQ(t.max_nodes, 1540);
  ASSERT_EQ(t.fabric.levels.size(), 3u);
  EXPECT_EQ(t.fabric.levels[0].nodes_below, 20);
  EXPECT_EQ(t.fabric.levels[1].nodes_below, 140);
  EXPECT_EQ(t.fabric.levels[2].nodes_below, 1540);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(t.fabric.levels[i].oversubscription, before.fabric.levels[i].oversubscription);
    EXPECT_EQ(t.fabric.levels[i].hop_latency, before.fabric.levels[i].hop_latency);
  }
  // The grown topology is a valid file again.
  EXPECT_EQ(Parse(TopologyToJson(t)).max_nodes, 1540);
}

}  // namespace
}  // namespace stacksim::config
