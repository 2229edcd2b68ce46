// stacksim topology FILE: the fabric of a topology (topologies/*.json, or a
// GraphML / DOT graph file) as a graph: vertices and links by kind,
// bisection bandwidth, diameter, injection bandwidth per GPU and
// oversubscription by level; --dot writes it for Graphviz.
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "sim/cli/command.h"
#include "sim/cli/flags.h"
#include "sim/config/scenario.h"
#include "sim/config/topology.h"
#include "sim/fabric/fabric_metrics.h"
#include "sim/fabric/fabric_report.h"
#include "sim/fabric/graph_file.h"
#include "sim/fabric/graph_spec.h"
#include "sim/util/error.h"

namespace stacksim::cli {
namespace {

struct TopologyArgs {
  std::string file;
  int64_t nodes = 0;
  std::string dot;
  std::string format = "text";
};

int RunTopology(const TopologyArgs& a) {
  std::string path = a.file;
  if (!std::filesystem::exists(path)) path = config::ResolveDataFile("topologies", a.file, "");
  if (!std::filesystem::is_regular_file(path)) throw InputError(a.file, "", "no such topology or graph file");
  const std::string ext = std::filesystem::path(path).extension().string();
  fabric::FabricGraph f;
  if (ext == ".json") {
    f = fabric::BuildFabric(config::LoadTopologyFile(path), a.nodes);
  } else {
    if (a.nodes > 0) throw InputError(path, "", "--nodes applies to topology files, not graph files");
    f = fabric::ReadFabricGraphFile(path);
  }
  fabric::FabricSummary s = fabric::Summarize(f);
  PrintResult(a.format, [&] { return fabric::SummaryJson(f, s); }, [&] { return fabric::SummaryText(f, s); });
  if (!a.dot.empty()) {
    std::ofstream out(a.dot);
    if (!out) throw InputError(a.dot, "", "cannot write the DOT file");
    fabric::WriteDot(f, out);
  }
  return 0;
}

}  // namespace

RunFunction AddTopologyOptions(CLI::App* cmd) {
  auto a = std::make_shared<TopologyArgs>();
  cmd->add_option("file", a->file, "Topology JSON (or its name), or a .graphml / .dot fabric graph")->required();
  cmd->add_option("--nodes", a->nodes, "Nodes to build a fat-tree or rail-only fabric for (default: max_nodes)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  cmd->add_option("--dot", a->dot, "Write the fabric graph as Graphviz DOT to this file");
  AddFormat(cmd, &a->format);
  return [a] { return RunTopology(*a); };
}

}  // namespace stacksim::cli
