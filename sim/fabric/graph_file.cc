#include "sim/fabric/graph_file.h"

#include <boost/graph/graphml.hpp>
#include <boost/graph/graphviz.hpp>
#include <boost/property_map/dynamic_property_map.hpp>

#include <filesystem>
#include <fstream>
#include <boost/shared_ptr.hpp>
#include <sstream>
#include <string>

#include "sim/config/quantity_text.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace stacksim::fabric {
namespace {

// The file's graph as text, before any property is checked.
struct RawVertex {
  std::string id;  // DOT node id ("" for GraphML)
  std::string kind, name, level;
};
struct RawEdge {
  std::string kind, bandwidth, latency;
};
using RawGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, RawVertex, RawEdge>;
using RawVertexId = boost::graph_traits<RawGraph>::vertex_descriptor;
using RawEdgeId = boost::graph_traits<RawGraph>::edge_descriptor;

constexpr const char* kVertexProperties = "kind, name, level";
constexpr const char* kEdgeProperties = "kind, bandwidth, latency";

// Thrown from the readers' callback for a property the format does not have.
struct UnknownProperty {
  std::string what;
};

boost::dynamic_properties RawProperties(RawGraph& g, bool with_node_id) {
  boost::dynamic_properties dp([&g](const std::string& name, const boost::any& key,
                                    const boost::any&) -> boost::shared_ptr<boost::dynamic_property_map> {
    if (const auto* v = boost::any_cast<RawVertexId>(&key)) {
      throw UnknownProperty{"vertex " + std::to_string(*v) + ": unknown property '" + name +
                            "' (vertex properties: " + kVertexProperties + ")"};
    }
    if (const auto* e = boost::any_cast<RawEdgeId>(&key)) {
      throw UnknownProperty{"edge " + std::to_string(boost::source(*e, g)) + " -- " +
                            std::to_string(boost::target(*e, g)) + ": unknown property '" + name +
                            "' (edge properties: " + kEdgeProperties + ")"};
    }
    throw UnknownProperty{"graph property '" + name + "' is not read (a fabric graph has none)"};
  });
  if (with_node_id) dp.property("node_id", boost::get(&RawVertex::id, g));
  dp.property("kind", boost::get(&RawVertex::kind, g));
  dp.property("name", boost::get(&RawVertex::name, g));
  dp.property("level", boost::get(&RawVertex::level, g));
  dp.property("kind", boost::get(&RawEdge::kind, g));
  dp.property("bandwidth", boost::get(&RawEdge::bandwidth, g));
  dp.property("latency", boost::get(&RawEdge::latency, g));
  return dp;
}

std::string VertexLabel(const RawGraph& g, RawVertexId v) {
  const RawVertex& r = g[v];
  if (!r.id.empty()) return "vertex '" + r.id + "'";
  std::string s = "vertex " + std::to_string(v);
  if (!r.name.empty()) s += " ('" + r.name + "')";
  return s;
}

FabricGraph Convert(const RawGraph& g, const std::string& file) {
  FabricGraph out;
  out.name = std::filesystem::path(file).filename().string();
  for (RawVertexId v = 0; v < boost::num_vertices(g); ++v) {
    const RawVertex& r = g[v];
    const std::string where = VertexLabel(g, v);
    if (r.kind.empty()) throw InputError(file, where + ": kind", "missing (one of gpu, nvswitch, pcie-switch, nic, switch)");
    std::optional<VertexKind> kind = ParseVertexKind(r.kind);
    if (!kind) {
      throw InputError(file, where + ": kind",
                       "'" + r.kind + "' is not one of gpu, nvswitch, pcie-switch, nic, switch");
    }
    int level = -1;
    if (!r.level.empty()) {
      size_t used = 0;
      try {
        level = std::stoi(r.level, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != r.level.size() || level < -1 || level > 64) {
        throw InputError(file, where + ": level", "'" + r.level + "' is not a tier (an integer, 0 for leaves)");
      }
    }
    std::string name = !r.name.empty() ? r.name : !r.id.empty() ? r.id : "v" + std::to_string(v);
    out.AddVertex(*kind, std::move(name), level);
  }
  boost::graph_traits<RawGraph>::edge_iterator e, end;
  for (std::tie(e, end) = boost::edges(g); e != end; ++e) {
    const RawEdge& r = g[*e];
    RawVertexId a = boost::source(*e, g), b = boost::target(*e, g);
    const std::string where = "edge " + VertexLabel(g, a) + " -- " + VertexLabel(g, b);
    if (a == b) throw InputError(file, where, "an edge joins a vertex to itself");
    if (r.kind.empty()) throw InputError(file, where + ": kind", "missing (one of nvlink, pcie, ib, roce, ici)");
    std::optional<LinkKind> kind = ParseLinkKind(r.kind);
    if (!kind) throw InputError(file, where + ": kind", "'" + r.kind + "' is not one of nvlink, pcie, ib, roce, ici");
    if (r.bandwidth.empty()) throw InputError(file, where + ": bandwidth", "missing (per direction, e.g. \"400 Gb/s\")");
    if (r.latency.empty()) throw InputError(file, where + ": latency", "missing (e.g. \"1 us\")");
    Bandwidth bw = ParseBandwidth(r.bandwidth, file, where + ": bandwidth");
    if (!(bw.value > 0)) throw InputError(file, where + ": bandwidth", "must be positive");
    Time latency = ParseTime(r.latency, file, where + ": latency");
    if (latency < Time::Zero()) throw InputError(file, where + ": latency", "must not be negative");
    out.AddLink(a, b, *kind, bw, latency);
  }
  if (out.gpus.empty()) throw InputError(file, "", "the graph has no vertex of kind gpu");
  return out;
}

}  // namespace

FabricGraph ReadGraphml(std::istream& in, const std::string& file) {
  RawGraph g;
  boost::dynamic_properties dp = RawProperties(g, false);
  try {
    boost::read_graphml(in, g, dp);
  } catch (const UnknownProperty& e) {
    throw InputError(file, "", e.what);
  } catch (const boost::bad_any_cast&) {
    throw InputError(file, "", "a key is declared with a type other than attr.type=\"string\" (every fabric property "
                               "is a string: kind, name, level, bandwidth, latency)");
  } catch (const std::exception& e) {
    throw InputError(file, "", std::string("not a readable GraphML graph: ") + e.what());
  }
  return Convert(g, file);
}

FabricGraph ReadDot(std::istream& in, const std::string& file) {
  RawGraph g;
  boost::dynamic_properties dp = RawProperties(g, true);
  try {
    if (!boost::read_graphviz(in, g, dp, "node_id")) throw InputError(file, "", "not a readable DOT graph");
  } catch (const UnknownProperty& e) {
    throw InputError(file, "", e.what);
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(file, "", std::string("not a readable DOT graph (an undirected `graph { ... }`): ") + e.what());
  }
  return Convert(g, file);
}

FabricGraph ReadFabricGraphFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "", "cannot open the graph file");
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".graphml" || ext == ".xml") return ReadGraphml(in, path);
  if (ext == ".dot" || ext == ".gv") return ReadDot(in, path);
  throw InputError(path, "", "a fabric graph file ends in .graphml, .xml, .dot or .gv");
}

void WriteDot(const FabricGraph& fabric, std::ostream& out) {
  // Written through a RawGraph, so the properties are the ones ReadDot reads.
  // Ids of one width, so that Boost's reader, which orders vertices by id,
  // keeps the GPUs' order.
  const size_t n = boost::num_vertices(fabric.graph);
  const size_t width = std::to_string(n > 0 ? n - 1 : 0).size();
  RawGraph g(n);
  for (Vertex v = 0; v < n; ++v) {
    const FabricVertex& f = fabric.graph[v];
    std::string id = std::to_string(v);
    id = "v" + std::string(width - id.size(), '0') + id;
    g[v] = RawVertex{id, VertexKindName(f.kind), f.name, std::to_string(f.level)};
  }
  boost::graph_traits<Graph>::edge_iterator e, end;
  for (std::tie(e, end) = boost::edges(fabric.graph); e != end; ++e) {
    const FabricLink& l = fabric.graph[*e];
    boost::add_edge(boost::source(*e, fabric.graph), boost::target(*e, fabric.graph),
                    RawEdge{LinkKindName(l.kind), config::BandwidthText(l.bandwidth), config::TimeText(l.latency)}, g);
  }
  boost::dynamic_properties dp = RawProperties(g, true);
  boost::write_graphviz_dp(out, g, dp, "node_id");
}

}  // namespace stacksim::fabric
