#include "sim/fabric/graph_spec.h"

#include <climits>
#include <filesystem>
#include <string>

#include "sim/fabric/generators.h"
#include "sim/fabric/graph_file.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace stacksim::fabric {
namespace {

int SmallPositive(const JsonNode& node, int64_t most) {
  int64_t v = node.PositiveInt();
  if (v > most) node.Fail("value " + std::to_string(v) + " is more than " + std::to_string(most));
  return static_cast<int>(v);
}

Bandwidth PositiveBandwidth(const JsonNode& node) {
  Bandwidth b = node.BandwidthValue();
  if (!(b.value > 0)) node.Fail("bandwidth must be positive");
  return b;
}

LinkKind ParseKind(const JsonNode& node) {
  return *ParseLinkKind(node.OneOf({"nvlink", "pcie", "ib", "roce", "ici"}));
}

std::vector<config::FatTreeLevel> ParseLevels(const JsonNode& node) {
  std::vector<config::FatTreeLevel> levels;
  std::vector<JsonNode> elements = node.Elements();
  if (elements.empty()) node.Fail("a fabric needs at least one level (the leaf)");
  for (const JsonNode& e : elements) {
    JsonObject obj(e);
    config::FatTreeLevel l;
    l.name = obj.Required("name").String();
    JsonNode below = obj.Required("nodes_below");
    l.nodes_below = SmallPositive(below, INT_MAX / 2);
    if (!levels.empty() && l.nodes_below <= levels.back().nodes_below) {
      below.Fail("each level must reach more nodes than the one below it");
    }
    JsonNode over = obj.Required("oversubscription");
    l.oversubscription = over.Number();
    if (l.oversubscription < 1) over.Fail("oversubscription is downlink : uplink and must be >= 1");
    l.hop_latency = obj.Required("hop_latency").TimeValue();
    obj.Finish();
    levels.push_back(std::move(l));
  }
  return levels;
}

int64_t DefaultNodes(const config::TopologyConfig& t, int64_t nodes, const JsonNode& where) {
  if (nodes > 0) return nodes;
  if (t.max_nodes > 0) return t.max_nodes;
  if (!t.fabric.levels.empty()) return t.fabric.levels.back().nodes_below;
  where.Fail("the topology gives no size: set max_nodes");
}

void CheckFits(const FabricGraph& f, const config::TopologyConfig& t, int64_t nodes, const std::string& file) {
  const int64_t gpus = nodes * std::max(1, t.gpus_per_node);
  if (nodes > 0 && gpus > static_cast<int64_t>(f.gpus.size())) {
    throw InputError(file, "fabric", "the fabric holds " + std::to_string(f.gpus.size()) + " GPUs, not " +
                                         std::to_string(gpus) + " (" + std::to_string(nodes) + " nodes)");
  }
}

}  // namespace

FabricGraph BuildFabric(const config::TopologyConfig& t, int64_t nodes) {
  if (t.fabric.graph.is_null()) {
    if (nodes <= 0) nodes = t.max_nodes > 0 ? t.max_nodes : t.fabric.levels.back().nodes_below;
    return FatTree(t, nodes);
  }
  const std::string& file = t.fabric.file;
  JsonNode node(t.fabric.graph, file, "fabric");
  JsonObject obj(node);
  if (auto graph = obj.Optional("graph")) {
    obj.Finish();
    std::filesystem::path path = graph->String();
    if (path.is_relative()) path = std::filesystem::path(file).parent_path() / path;
    if (!std::filesystem::is_regular_file(path)) graph->Fail("no graph file " + path.string());
    FabricGraph f = ReadFabricGraphFile(path.string());
    CheckFits(f, t, nodes, file);
    return f;
  }
  JsonNode generator = obj.Required("generator");
  const std::string name = generator.OneOf({"rail-only", "multi-plane", "torus", "dragonfly"});
  if (name == "rail-only") {
    Time hop = obj.Required("hop_latency").TimeValue();
    obj.Finish();
    return RailOnly(t, DefaultNodes(t, nodes, node), hop);
  }
  if (name == "multi-plane") {
    const int planes = SmallPositive(obj.Required("planes"), 16);
    config::TopologyConfig copy = t;
    copy.fabric.rail_optimized = obj.Required("rail_optimized").Bool();
    copy.fabric.levels = ParseLevels(obj.Required("levels"));
    copy.fabric.graph = nullptr;
    obj.Finish();
    if (nodes <= 0) nodes = t.max_nodes > 0 ? t.max_nodes : copy.fabric.levels.back().nodes_below;
    return FatTree(copy, nodes, planes);
  }
  if (name == "torus") {
    TorusSpec spec;
    JsonNode dims = obj.Required("dims");
    int64_t total = 1;
    for (const JsonNode& d : dims.Elements()) {
      spec.dims.push_back(SmallPositive(d, 4096));
      total *= spec.dims.back();
    }
    if (spec.dims.size() < 2 || spec.dims.size() > 3) dims.Fail("a torus has 2 or 3 dimensions");
    if (total % std::max(1, t.gpus_per_node) != 0) {
      dims.Fail("the torus's " + std::to_string(total) + " GPUs are not whole nodes of " +
                std::to_string(t.gpus_per_node));
    }
    spec.link_kind = ParseKind(obj.Required("link_kind"));
    spec.link_bandwidth = PositiveBandwidth(obj.Required("link_bandwidth"));
    spec.link_latency = obj.Required("link_latency").TimeValue();
    obj.Finish();
    FabricGraph f = Torus(spec);
    f.name += " " + t.name;
    CheckFits(f, t, nodes, file);
    return f;
  }
  DragonflySpec spec;
  JsonNode groups = obj.Required("groups");
  spec.groups = SmallPositive(groups, 4096);
  spec.routers_per_group = SmallPositive(obj.Required("routers_per_group"), 4096);
  spec.nodes_per_router = SmallPositive(obj.Required("nodes_per_router"), 4096);
  JsonNode global = obj.Required("global_links_per_router");
  spec.global_links_per_router = SmallPositive(global, 4096);
  spec.link_kind = ParseKind(obj.Required("link_kind"));
  spec.local_bandwidth = PositiveBandwidth(obj.Required("local_bandwidth"));
  spec.global_bandwidth = PositiveBandwidth(obj.Required("global_bandwidth"));
  spec.hop_latency = obj.Required("hop_latency").TimeValue();
  obj.Finish();
  if (spec.groups < 2) groups.Fail("a dragonfly has at least 2 groups");
  const int ports = spec.routers_per_group * spec.global_links_per_router;
  if (ports < spec.groups - 1 || ports % (spec.groups - 1) != 0) {
    global.Fail("routers_per_group x global_links_per_router (" + std::to_string(ports) +
                ") must be a multiple of groups - 1 (" + std::to_string(spec.groups - 1) +
                ") so that every pair of groups gets the same number of global links");
  }
  if (static_cast<int64_t>(spec.groups) * spec.routers_per_group * spec.nodes_per_router > (1 << 20)) {
    groups.Fail("more than 2^20 nodes");
  }
  FabricGraph f = Dragonfly(t, spec);
  CheckFits(f, t, nodes, file);
  return f;
}

}  // namespace stacksim::fabric
