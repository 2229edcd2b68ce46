#include "sim/config/topology.h"

#include <algorithm>
#include <climits>
#include <filesystem>

#include "sim/config/quantity_text.h"

namespace stacksim::config {
namespace {

int SmallPositiveInt(const JsonNode& node) {
  int64_t v = node.PositiveInt();
  if (v > INT_MAX / 2) node.Fail("value " + std::to_string(v) + " is too large");
  return static_cast<int>(v);
}

Bandwidth PositiveBandwidth(const JsonNode& node) {
  Bandwidth b = node.BandwidthValue();
  if (!(b.value > 0)) node.Fail("bandwidth must be positive");
  return b;
}

ScaleUp ParseScaleUp(const JsonNode& node) {
  JsonObject obj(node);
  ScaleUp s;
  std::string type = obj.Required("type").OneOf({"nvswitch", "nvlink-mesh", "pcie"});
  s.kind = type == "pcie" ? ScaleUpKind::kPcie : type == "nvlink-mesh" ? ScaleUpKind::kNvLinkMesh
                                                                       : ScaleUpKind::kNvSwitch;
  s.domain_gpus = SmallPositiveInt(obj.Required("domain_gpus"));
  s.per_gpu_bandwidth = PositiveBandwidth(obj.Required("bandwidth_per_gpu"));
  s.latency = obj.Required("latency").TimeValue();
  obj.Finish();
  return s;
}

Nics ParseNics(const JsonNode& node) {
  JsonObject obj(node);
  Nics n;
  n.per_node = SmallPositiveInt(obj.Required("count"));
  n.bandwidth = PositiveBandwidth(obj.Required("bandwidth"));
  n.latency = obj.Required("latency").TimeValue();
  obj.Finish();
  return n;
}

Bytes PositiveBytes(const JsonNode& node) {
  Bytes b = node.BytesValue();
  if (!(b.value > 0)) node.Fail("size must be positive");
  return b;
}

HostResources ParseHost(const JsonNode& node) {
  JsonObject obj(node);
  HostResources h;
  h.memory = PositiveBytes(obj.Required("memory"));
  h.memory_bandwidth = PositiveBandwidth(obj.Required("memory_bandwidth"));
  obj.Finish();
  return h;
}

NvmeStorage ParseNvme(const JsonNode& node) {
  JsonObject obj(node);
  NvmeStorage n;
  n.capacity = PositiveBytes(obj.Required("capacity"));
  n.bandwidth_read = PositiveBandwidth(obj.Required("bandwidth_read"));
  n.bandwidth_write = PositiveBandwidth(obj.Required("bandwidth_write"));
  obj.Finish();
  return n;
}

ClusterStorage ParseStorage(const JsonNode& node) {
  JsonObject obj(node);
  ClusterStorage s;
  s.write_bandwidth = PositiveBandwidth(obj.Required("write_bandwidth"));
  s.read_bandwidth = PositiveBandwidth(obj.Required("read_bandwidth"));
  s.source = obj.Required("source").String();
  obj.Finish();
  return s;
}

Sites ParseSites(const JsonNode& node) {
  JsonObject obj(node);
  Sites s;
  s.nodes_per_site = SmallPositiveInt(obj.Required("nodes_per_site"));
  s.link_bandwidth = PositiveBandwidth(obj.Required("link_bandwidth"));
  s.link_latency = obj.Required("link_latency").TimeValue();
  s.source = obj.Required("source").String();
  obj.Finish();
  return s;
}

FatTreeLevel ParseLevel(const JsonNode& node) {
  JsonObject obj(node);
  FatTreeLevel l;
  l.name = obj.Required("name").String();
  l.nodes_below = SmallPositiveInt(obj.Required("nodes_below"));
  JsonNode over = obj.Required("oversubscription");
  l.oversubscription = over.Number();
  if (l.oversubscription < 1) {
    over.Fail("oversubscription is downlink : uplink bandwidth and must be >= 1 (1 = non-blocking), got " +
              over.json().dump());
  }
  l.hop_latency = obj.Required("hop_latency").TimeValue();
  obj.Finish();
  return l;
}

Fabric ParseFabric(const JsonNode& node) {
  JsonObject obj(node);
  Fabric f;
  if (obj.Has("graph") || obj.Has("generator")) {
    // Read, strictly, by sim/fabric (graph_spec.h), which config does not include.
    f.graph = node.json();
    f.file = node.file();
    return f;
  }
  f.rail_optimized = obj.Required("rail_optimized").Bool();
  JsonNode levels = obj.Required("levels");
  std::vector<JsonNode> elements = levels.Elements();
  if (elements.empty()) levels.Fail("a fabric needs at least one level (the leaf)");
  for (const JsonNode& e : elements) {
    FatTreeLevel level = ParseLevel(e);
    if (!f.levels.empty() && level.nodes_below <= f.levels.back().nodes_below) {
      e.Child("nodes_below").Fail("each level must reach more nodes than the one below it (" +
                                  std::to_string(f.levels.back().nodes_below) + ")");
    }
    f.levels.push_back(std::move(level));
  }
  obj.Finish();
  return f;
}

}  // namespace

const char* ScaleUpKindName(ScaleUpKind k) {
  switch (k) {
    case ScaleUpKind::kNvSwitch: return "nvswitch";
    case ScaleUpKind::kNvLinkMesh: return "nvlink-mesh";
    case ScaleUpKind::kPcie: return "pcie";
  }
  return "?";
}

TopologyConfig ParseTopology(const JsonNode& node) {
  JsonObject obj(node);
  TopologyConfig t;
  if (auto n = obj.Optional("name")) {
    t.name = n->String();
  } else {
    t.name = std::filesystem::path(node.file()).stem().string();
  }
  if (auto s = obj.Optional("source")) t.source = s->String();
  if (auto s = obj.Optional("notes")) t.notes = s->String();

  JsonObject n(obj.Required("node"));
  t.gpu = n.Required("gpu").String();
  t.gpus_per_node = SmallPositiveInt(n.Required("gpus_per_node"));
  JsonNode scale_up_node = n.Required("scale_up");
  t.scale_up = ParseScaleUp(scale_up_node);
  t.pcie_bandwidth = PositiveBandwidth(n.Required("pcie_bandwidth"));
  t.nics = ParseNics(n.Required("nics"));
  if (auto host = n.Optional("host")) t.host = ParseHost(*host);
  if (auto nvme = n.Optional("nvme")) t.nvme = ParseNvme(*nvme);
  n.Finish();

  // The scale-up domain holds whole nodes: the node itself, or (rack-scale
  // systems such as GB200 NVL72) several trays sharing one NVLink domain.
  JsonNode domain = scale_up_node.Child("domain_gpus");
  const int d = t.scale_up.domain_gpus;
  const int g = t.gpus_per_node;
  if (t.scale_up.kind == ScaleUpKind::kPcie && d != g) {
    domain.Fail("a PCIe scale-up domain is the node itself: domain_gpus must equal gpus_per_node (" +
                std::to_string(g) + ")");
  }
  if (d < g) {
    domain.Fail("domain_gpus (" + std::to_string(d) + ") is smaller than gpus_per_node (" + std::to_string(g) +
                "); only whole nodes (or racks of them) form a domain");
  }
  if (d % g != 0) {
    domain.Fail("a rack-scale domain holds whole nodes: domain_gpus (" + std::to_string(d) +
                ") must be a multiple of gpus_per_node (" + std::to_string(g) + ")");
  }

  t.fabric = ParseFabric(obj.Required("fabric"));
  if (auto storage = obj.Optional("storage")) t.storage = ParseStorage(*storage);
  if (auto sites = obj.Optional("sites")) t.sites = ParseSites(*sites);
  if (auto mn = obj.Optional("max_nodes")) {
    int64_t v = mn->Int();
    if (v < 0 || v > INT_MAX / 2) mn->Fail("expected a node count >= 0 (0: unbounded), got " + std::to_string(v));
    t.max_nodes = static_cast<int>(v);
    if (!t.fabric.levels.empty() && t.max_nodes > t.fabric.levels.back().nodes_below) {
      mn->Fail("max_nodes (" + std::to_string(t.max_nodes) + ") is more than the fabric's top level reaches (" +
               std::to_string(t.fabric.levels.back().nodes_below) + " nodes)");
    }
  }
  if (auto price = obj.Optional("gpu_hour_usd")) t.gpu_hour_usd = price->NonNegativeNumber();
  obj.Finish();
  return t;
}

nlohmann::json TopologyToJson(const TopologyConfig& t) {
  nlohmann::json j;
  j["name"] = t.name;
  if (!t.source.empty()) j["source"] = t.source;
  if (!t.notes.empty()) j["notes"] = t.notes;
  j["node"] = {
      {"gpu", t.gpu},
      {"gpus_per_node", t.gpus_per_node},
      {"scale_up",
       {{"type", ScaleUpKindName(t.scale_up.kind)},
        {"domain_gpus", t.scale_up.domain_gpus},
        {"bandwidth_per_gpu", BandwidthText(t.scale_up.per_gpu_bandwidth)},
        {"latency", TimeText(t.scale_up.latency)}}},
      {"pcie_bandwidth", BandwidthText(t.pcie_bandwidth)},
      {"nics",
       {{"count", t.nics.per_node},
        {"bandwidth", BandwidthText(t.nics.bandwidth)},
        {"latency", TimeText(t.nics.latency)}}}};
  if (t.host) {
    j["node"]["host"] = {{"memory", BytesText(t.host->memory)},
                         {"memory_bandwidth", BandwidthText(t.host->memory_bandwidth)}};
  }
  if (t.nvme) {
    j["node"]["nvme"] = {{"capacity", BytesText(t.nvme->capacity)},
                         {"bandwidth_read", BandwidthText(t.nvme->bandwidth_read)},
                         {"bandwidth_write", BandwidthText(t.nvme->bandwidth_write)}};
  }
  nlohmann::json levels = nlohmann::json::array();
  for (const FatTreeLevel& l : t.fabric.levels) {
    levels.push_back({{"name", l.name},
                      {"nodes_below", l.nodes_below},
                      {"oversubscription", l.oversubscription},
                      {"hop_latency", TimeText(l.hop_latency)}});
  }
  j["fabric"] = t.fabric.graph.is_null() ? nlohmann::json{{"rail_optimized", t.fabric.rail_optimized}, {"levels", levels}}
                                         : t.fabric.graph;
  if (t.storage) {
    j["storage"] = {{"write_bandwidth", BandwidthText(t.storage->write_bandwidth)},
                    {"read_bandwidth", BandwidthText(t.storage->read_bandwidth)},
                    {"source", t.storage->source}};
  }
  if (t.sites) {
    j["sites"] = {{"nodes_per_site", t.sites->nodes_per_site},
                  {"link_bandwidth", BandwidthText(t.sites->link_bandwidth)},
                  {"link_latency", TimeText(t.sites->link_latency)},
                  {"source", t.sites->source}};
  }
  j["max_nodes"] = t.max_nodes;
  if (t.gpu_hour_usd > 0) j["gpu_hour_usd"] = t.gpu_hour_usd;
  return j;
}

TopologyConfig LoadTopologyFile(const std::string& path) {
  nlohmann::json doc = ReadJsonFile(path);
  return ParseTopology(JsonNode(doc, path, ""));
}

std::string GrowFabricTo(TopologyConfig& t, int64_t nodes) {
  if (t.max_nodes <= 0 || nodes <= t.max_nodes || t.fabric.levels.empty()) return "";
  std::vector<FatTreeLevel>& levels = t.fabric.levels;
  FatTreeLevel& top = levels.back();
  // The unit the top level is built from: one switch group of the level below
  // (a node when the fabric has one level).
  const int64_t unit = levels.size() > 1 ? std::max(1, levels[levels.size() - 2].nodes_below) : 1;
  const int64_t grown = (nodes + unit - 1) / unit * unit;
  if (grown > INT_MAX / 2) return "";  // beyond kMaxGpus: ValidatePlan reports the size
  const int before = t.max_nodes;
  top.nodes_below = std::max<int>(top.nodes_below, static_cast<int>(grown));
  t.max_nodes = static_cast<int>(grown);
  std::string note = "fabric grown from the " + std::to_string(before) + " nodes " + t.name + " describes to " +
                     std::to_string(grown) + " (";
  if (levels.size() > 1) {
    note += std::to_string(grown / unit) + " " + levels[levels.size() - 2].name + " groups of " + std::to_string(unit) +
            " nodes, ";
  }
  note += "the " + top.name + " level spanning " + std::to_string(top.nodes_below) +
          " nodes); every level keeps the oversubscription and hop latency the file gives it";
  return note;
}

std::string SystemTopologyFor(const std::string& gpu_profile) {
  static const std::pair<const char*, const char*> kSystems[] = {
      {"a100-sxm-80gb", "dgx-a100"},   {"a100-sxm-40gb", "dgx-a100-40gb"}, {"h100-sxm-80gb", "dgx-h100"},
      {"h100-sxm-96gb", "dgx-h100"},   {"h800-sxm-80gb", "h800-node"},     {"h200-sxm-141gb", "hgx-h200"},
      {"b200", "dgx-b200"},            {"gb200", "gb200-nvl72"},           {"h100-pcie", "h100-pcie-node"},
      {"l40s", "pcie-l40s"},           {"mi300x", "mi300x-platform"},      {"mi325x", "mi325x-platform"},
  };
  for (const auto& [gpu, system] : kSystems) {
    if (gpu_profile == gpu) return system;
  }
  return "";
}

}  // namespace stacksim::config
