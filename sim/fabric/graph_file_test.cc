// GraphML and DOT fabrics: read with Boost.Graph's readers, written back as
// DOT, and bad files reported by file, vertex or edge, and property.
#include "sim/fabric/graph_file.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "sim/fabric/fabric_metrics.h"
#include "sim/fabric/generators.h"
#include "sim/util/error.h"

namespace stacksim::fabric {
namespace {

// Two GPUs on one NVSwitch, each with a NIC on one leaf.
const char* kGraphml = R"(<?xml version="1.0" encoding="UTF-8"?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
  <key id="vk" for="node" attr.name="kind" attr.type="string"/>
  <key id="vn" for="node" attr.name="name" attr.type="string"/>
  <key id="vl" for="node" attr.name="level" attr.type="string"/>
  <key id="ek" for="edge" attr.name="kind" attr.type="string"/>
  <key id="eb" for="edge" attr.name="bandwidth" attr.type="string"/>
  <key id="el" for="edge" attr.name="latency" attr.type="string"/>
  <graph id="G" edgedefault="undirected">
    <node id="g0"><data key="vk">gpu</data><data key="vn">GPU 0</data></node>
    <node id="g1"><data key="vk">gpu</data><data key="vn">GPU 1</data></node>
    <node id="sw"><data key="vk">nvswitch</data></node>
    <node id="n0"><data key="vk">nic</data></node>
    <node id="n1"><data key="vk">nic</data></node>
    <node id="leaf"><data key="vk">switch</data><data key="vl">0</data></node>
    <edge source="g0" target="sw"><data key="ek">nvlink</data><data key="eb">450 GB/s</data><data key="el">0.5 us</data></edge>
    <edge source="g1" target="sw"><data key="ek">nvlink</data><data key="eb">450 GB/s</data><data key="el">0.5 us</data></edge>
    <edge source="g0" target="n0"><data key="ek">pcie</data><data key="eb">64 GB/s</data><data key="el">0 us</data></edge>
    <edge source="g1" target="n1"><data key="ek">pcie</data><data key="eb">64 GB/s</data><data key="el">0 us</data></edge>
    <edge source="n0" target="leaf"><data key="ek">ib</data><data key="eb">400 Gb/s</data><data key="el">1 us</data></edge>
    <edge source="n1" target="leaf"><data key="ek">ib</data><data key="eb">400 Gb/s</data><data key="el">1 us</data></edge>
  </graph>
</graphml>
)";

std::string ErrorOf(const std::string& text, bool dot) {
  std::istringstream in(text);
  try {
    if (dot) {
      ReadDot(in, "f.dot");
    } else {
      ReadGraphml(in, "f.graphml");
    }
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(GraphFile, ReadsGraphmlVerticesEdgesAndProperties) {
  std::istringstream in(kGraphml);
  FabricGraph f = ReadGraphml(in, "two.graphml");
  FabricSummary s = Summarize(f);
  EXPECT_EQ(s.gpus, 2);
  EXPECT_EQ(s.vertices[static_cast<int>(VertexKind::kSwitch)], 1);
  EXPECT_EQ(s.links[static_cast<int>(LinkKind::kInfiniBand)].count, 2);
  EXPECT_DOUBLE_EQ(s.links[static_cast<int>(LinkKind::kInfiniBand)].total.value, 100e9);
  EXPECT_EQ(f.graph[f.gpus[1]].name, "GPU 1");
  // GPU 0 to GPU 1 through the NVSwitch (450) or the NICs (50): 500 GB/s.
  EXPECT_DOUBLE_EQ(s.bisection.value, 500e9);
  EXPECT_EQ(s.diameter_hops, 2);
}

TEST(GraphFile, DotWrittenReadsBackToTheSameFabric) {
  FabricGraph torus = Torus({{4, 4}, LinkKind::kIci, Bandwidth{75e9}, Time::Ns(1000)});
  std::ostringstream out;
  WriteDot(torus, out);
  std::istringstream in(out.str());
  FabricGraph back = ReadDot(in, "torus.dot");
  FabricSummary a = Summarize(torus), b = Summarize(back);
  EXPECT_EQ(boost::num_vertices(back.graph), boost::num_vertices(torus.graph));
  EXPECT_EQ(boost::num_edges(back.graph), boost::num_edges(torus.graph));
  EXPECT_DOUBLE_EQ(b.bisection.value, a.bisection.value);
  EXPECT_EQ(b.diameter_hops, a.diameter_hops);
  EXPECT_EQ(back.graph[back.gpus[5]].name, "GPU 5");
  auto e = boost::edge(back.gpus[0], back.gpus[1], back.graph);
  ASSERT_TRUE(e.second);
  EXPECT_EQ(back.graph[e.first].latency, Time::Ns(1000));
}

TEST(GraphFile, ErrorsNameTheFileVertexOrEdgeAndProperty) {
  EXPECT_EQ(ErrorOf("graph { a [kind=gpu]; b [kind=gpu]; a -- b [kind=nvlink, latency=\"1 us\"]; }", true),
            "f.dot: edge vertex 'a' -- vertex 'b': bandwidth: missing (per direction, e.g. \"400 Gb/s\")");
  EXPECT_EQ(ErrorOf("graph { a [kind=gpu]; b [kind=router]; }", true),
            "f.dot: vertex 'b': kind: 'router' is not one of gpu, nvswitch, pcie-switch, nic, switch");
  std::string bad_unit = ErrorOf(
      "graph { a [kind=gpu]; b [kind=gpu]; a -- b [kind=nvlink, bandwidth=\"450 GHz\", latency=\"1 us\"]; }", true);
  EXPECT_NE(bad_unit.find("f.dot: edge vertex 'a' -- vertex 'b': bandwidth"), std::string::npos) << bad_unit;
  std::string unknown = ErrorOf("graph { a [kind=gpu, colour=red]; }", true);
  EXPECT_NE(unknown.find("unknown property 'colour'"), std::string::npos) << unknown;
  EXPECT_NE(ErrorOf("digraph { a [kind=gpu]; }", true).find("f.dot: not a readable DOT graph"), std::string::npos);
  EXPECT_EQ(ErrorOf("graph { s [kind=switch]; }", true), "f.dot: the graph has no vertex of kind gpu");

  std::string graphml = kGraphml;
  std::string no_kind = graphml;
  no_kind.replace(no_kind.find("<data key=\"vk\">nvswitch</data>"), 30, "");
  EXPECT_EQ(ErrorOf(no_kind, false),
            "f.graphml: vertex 2: kind: missing (one of gpu, nvswitch, pcie-switch, nic, switch)");
  std::string typed = graphml;
  typed.replace(typed.find("attr.name=\"level\" attr.type=\"string\""), 36, "attr.name=\"level\" attr.type=\"int\"");
  EXPECT_NE(ErrorOf(typed, false).find("attr.type=\"string\""), std::string::npos);
  EXPECT_NE(ErrorOf("<graphml><graph", false).find("f.graphml: not a readable GraphML graph"), std::string::npos);
}

}  // namespace
}  // namespace stacksim::fabric
