#include "sim/cluster/cluster_scenario.h"

#include <filesystem>

#include "sim/config/scenario.h"

namespace stacksim::cluster {
namespace {

Time TimeAt(const JsonNode& n) {
  if (!n.IsString()) n.Fail("expected a time with its unit, such as \"4 h\"");
  return ParseClusterTime(n.String(), n.file(), n.path());
}

Time PositiveTimeAt(const JsonNode& n) {
  Time t = TimeAt(n);
  if (t <= Time::Zero()) n.Fail("must be positive");
  return t;
}

}  // namespace

ClusterScenario LoadClusterScenario(const std::string& path) {
  nlohmann::json doc = ReadJsonFile(path);
  return ParseClusterScenario(doc, path);
}

ClusterScenario ParseClusterScenario(const nlohmann::json& doc, const std::string& file) {
  JsonNode root(doc, file, "");
  if (!root.IsObject()) root.Fail("expected a cluster scenario object");
  JsonObject obj(root);
  ClusterScenario c;
  c.file = file;
  c.name = std::filesystem::path(file).stem().string();
  if (auto n = obj.Optional("name")) c.name = n->String();
  if (auto q = obj.Optional("question")) c.question = q->String();
  if (auto n = obj.Optional("notes")) c.notes = n->String();
  if (auto s = obj.Optional("source")) c.source = s->String();

  JsonNode topo = obj.Required("topology");
  c.topology_ref = topo.json();
  if (topo.IsObject()) {
    c.topology = config::ParseTopology(topo);
    c.topology_file = file;
  } else {
    const std::string ref = topo.String();
    c.topology_file = config::ResolveDataFile("topologies", ref, file);
    if (!std::filesystem::is_regular_file(c.topology_file)) {
      topo.Fail("unknown topology '" + ref + "': no file " + c.topology_file);
    }
    c.topology = config::LoadTopologyFile(c.topology_file);
  }
  JsonNode nodes = obj.Required("nodes");
  const int64_t node_count = nodes.PositiveInt();
  if (static_cast<double>(node_count) * c.topology.gpus_per_node > static_cast<double>(config::kMaxGpus)) {
    nodes.Fail(std::to_string(node_count) + " nodes is more than stacksim simulates (at most " +
               std::to_string(config::kMaxGpus) + " GPUs)");
  }
  c.nodes = static_cast<int>(node_count);
  // A cluster larger than the topology file describes: the fabric grows (more
  // leaf and spine groups of the same kind; docs/network.md).
  if (std::string grown = config::GrowFabricTo(c.topology, c.nodes); !grown.empty()) {
    c.topology.notes += (c.topology.notes.empty() ? "" : " ") + grown + ".";
  }
  c.shape = ShapeOf(c.topology, c.nodes);

  if (auto s = obj.Optional("scheduler")) {
    c.options.scheduler = ParseScheduler(s->OneOf({"fifo", "backfill", "fairshare"}), file);
  }
  if (auto p = obj.Optional("placement")) c.options.placement = ParsePlacement(p->OneOf({"topology", "first-fit"}), file);
  if (auto w = obj.Optional("leaf_wait")) c.options.leaf_wait = TimeAt(*w);
  if (auto r = obj.Optional("resolution")) c.options.resolution = PositiveTimeAt(*r);
  if (auto fs = obj.Optional("fairshare")) {
    JsonObject f(*fs);
    if (auto h = f.Optional("half_life")) c.options.fairshare.half_life = PositiveTimeAt(*h);
    if (auto shares = f.Optional("shares")) {
      if (!shares->IsObject()) shares->Fail("expected {\"user\": share, ...}");
      JsonObject s(*shares);
      for (const std::string& user : s.Keys()) c.options.fairshare.shares[user] = s.Required(user).PositiveNumber();
      s.Finish();
    }
    f.Finish();
  }
  if (auto fl = obj.Optional("failures")) {
    JsonObject f(*fl);
    FailureOptions& o = c.options.failures;
    o.node_mtbf = PositiveTimeAt(f.Required("node_mtbf"));
    o.repair_time = PositiveTimeAt(f.Required("repair_time"));
    if (auto ck = f.Optional("checkpoint_interval")) o.checkpoint_interval = PositiveTimeAt(*ck);
    if (auto s = f.Optional("seed")) o.seed = static_cast<uint64_t>(s->Int());
    f.Finish();
  }
  if (auto n = obj.Optional("network")) c.network = n->OneOf({"simgrid", "analytic"});
  c.plans.file = file;
  if (auto plans = obj.Optional("plans")) {
    if (!plans->IsObject()) plans->Fail("expected {\"name\": {\"training\": {...}, \"plan\": {...}}, ...}");
    JsonObject p(*plans);
    for (const std::string& name : p.Keys()) {
      JsonNode entry = p.Required(name);
      JsonObject e(entry);
      e.Required("training");
      e.Required("plan");
      e.Finish();  // the contents are checked when a job uses the plan (ParseScenario)
      c.plans.plans[name] = entry.json();
    }
    p.Finish();
  }

  const bool has_trace = obj.Has("trace"), has_generator = obj.Has("generate");
  if (has_trace == has_generator) root.Fail("give either \"trace\" (a job trace file) or \"generate\" (a generator)");
  if (has_trace) {
    JsonNode t = obj.Required("trace");
    std::filesystem::path p(t.String());
    c.trace_file = p.is_absolute() ? p.string() : (std::filesystem::path(file).parent_path() / p).lexically_normal().string();
    c.jobs = ReadJobTrace(c.trace_file);
  } else {
    c.jobs = GenerateJobs(ParseJobGenerator(obj.Required("generate")));
  }
  obj.Finish();
  for (const JobSpec& j : c.jobs) {
    if (j.is_model_job() && !c.plans.plans.count(j.plan)) {
      throw InputError(j.file, j.row + ": plan", "no plan '" + j.plan + "' in the scenario's \"plans\" (" + file + ")");
    }
    if (c.shape.NodesFor(j.gpus) > c.nodes) {
      throw InputError(j.file, j.row + ": gpus",
                       std::to_string(j.gpus) + " GPUs do not fit the cluster's " + std::to_string(c.shape.gpus()));
    }
  }
  return c;
}

ClusterResult RunClusterScenario(const ClusterScenario& scenario, const ClusterOptions& options) {
  std::vector<JobSpec> jobs = scenario.jobs;
  SimulatedStepTimes times(scenario.plans, scenario.topology_ref, scenario.network);
  ResolveModelJobs(jobs, times);
  ClusterResult r = RunCluster(scenario.shape, jobs, options);
  r.name = scenario.name;
  r.topology = scenario.topology.name;
  r.simulations = times.simulations();
  if (times.simulations() > 0) {
    r.notes.push_back(scenario.network == "simgrid"
                          ? "model jobs: step times from the flow-level network model, nodes packed and scattered "
                            "over their leaf groups (a job within one leaf group: packed only)"
                          : "model jobs: step times from the analytic network model, which prices every job "
                            "spanning leaf groups as loaded; placement does not change them");
  }
  return r;
}

}  // namespace stacksim::cluster
