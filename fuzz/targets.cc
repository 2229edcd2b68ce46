#include "fuzz/targets.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "sim/campaign/reliability.h"
#include "sim/campaign/training_campaign.h"
#include "sim/chakra/chakra.h"
#include "sim/chakra/chakra_et.h"
#include "sim/cluster/cluster_scenario.h"
#include "sim/engine/engine.h"
#include "sim/net/network_factory.h"
#include "sim/cluster/cluster_sim.h"
#include "sim/cluster/job_trace.h"
#include "sim/compare/compare.h"
#include "sim/util/token_count.h"
#include "sim/config/model.h"
#include "sim/config/profile.h"
#include "sim/config/scenario.h"
#include "sim/config/topology.h"
#include "sim/importer/megatron_bridge_config.h"
#include "sim/importer/yaml_subset.h"
#include "sim/ingest/kineto.h"
#include "sim/search/economics.h"
#include "sim/search/search.h"
#include "sim/serve/request_workload.h"
#include "sim/serve/serve_config.h"
#include "sim/serve/serve_search.h"
#include "sim/serve/serve_validate.h"
#include "sim/straggler/straggler_spec.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"
#include "sim/validate/run_scenario.h"

namespace stacksim::fuzz {
namespace {

// Scenarios name their parts relative to their own file: put the made-up
// file in the data root's scenarios/, as a shipped scenario would be.
std::string ScenarioOrigin(const char* name) { return config::DataRoot() + "/scenarios/" + name; }

// For the readers that take a path: the bytes go to a file of this process
// (the name keeps the extension the reader may look at).
class TempFile {
 public:
  TempFile(const std::string& text, const std::string& name) {
    path_ = (std::filesystem::temp_directory_path() /
             ("stacksim-fuzz-" + std::to_string(::getpid()) + "-" + name)).string();
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
  }
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The JSON reader every input goes through (ParseJsonText), then a walk of
// the whole document as a reader does it (dump() recurses like one): depth
// limit and key given twice, before any schema.
void Json(const std::string& text) {
  const std::string file = "fuzz/any.json";
  nlohmann::json doc = ParseJsonText(text, file);
  (void)doc.dump();
}

void Model(const std::string& text) {
  const std::string file = "fuzz/model.json";
  nlohmann::json doc = ParseJsonText(text, file);
  config::ParseModel(JsonNode(doc, file, ""));
}

void Topology(const std::string& text) {
  const std::string file = "fuzz/topology.json";
  nlohmann::json doc = ParseJsonText(text, file);
  config::ParseTopology(JsonNode(doc, file, ""));
}

void Profile(const std::string& text) {
  const std::string file = "fuzz/profile.json";
  nlohmann::json doc = ParseJsonText(text, file);
  config::ParseProfile(JsonNode(doc, file, ""));
}

void Scenario(const std::string& text) {
  const std::string file = ScenarioOrigin("fuzz.json");
  nlohmann::json doc = ParseJsonText(text, file);
  config::ParseScenario(doc, file, {});
}

// --set KEY=VALUE on a small valid scenario (the bytes are the assignment).
void ScenarioSet(const std::string& text) {
  static const nlohmann::json base = nlohmann::json::parse(R"({
    "model": "llama3-8b", "topology": "dgx-h100", "gpus": 8,
    "training": {"seq_len": 8192, "global_batch": 64},
    "plan": {"tp": 1, "pp": 1, "dp": 8, "micro_batch": 1, "recompute": "full",
             "sharding": "zero1", "precision": "bf16"}})");
  config::ScenarioOptions options;
  options.overrides.push_back(text);
  config::ParseScenario(base, ScenarioOrigin("fuzz-set.json"), options);
}

void ServeScenario(const std::string& text) {
  const std::string file = ScenarioOrigin("serve-fuzz.json");
  nlohmann::json doc = ParseJsonText(text, file);
  serve::ParseServeScenario(doc, file);
}

void ClusterScenario(const std::string& text) {
  const std::string file = ScenarioOrigin("cluster-fuzz.json");
  nlohmann::json doc = ParseJsonText(text, file);
  cluster::ParseClusterScenario(doc, file);
}

// What RunValidation reads of the document and of each run before it
// simulates: the top level, the summary fields, then ScenarioForRun. A run's
// InputError is recorded there and the next run read, as here.
void TrainingValidation(const std::string& text) {
  const std::string file = "fuzz/training_runs.json";
  nlohmann::json doc = ParseJsonText(text, file);
  JsonObject top(JsonNode(doc, file, ""));
  std::string schema = top.Required("schema").String();
  if (schema != "stacksim.validation.training/1") throw InputError(file, "schema", "wrong schema");
  auto runs = top.Required("runs").Elements();
  top.Finish();
  for (const JsonNode& run : runs) {
    JsonObject r(run);
    r.Required("id").String();
    if (r.Has("tier")) r.Required("tier").String();
    if (r.Has("scored")) r.Required("scored").Bool();
    try {
      validate::ScenarioForRun(run.json(), file, run.path());
    } catch (const InputError&) {
    }
  }
}

// The same for RunServingValidation and PlanServingRun.
void ServingValidation(const std::string& text) {
  const std::string file = "fuzz/serving_runs.json";
  nlohmann::json doc = ParseJsonText(text, file);
  JsonObject top(JsonNode(doc, file, ""));
  std::string schema = top.Required("schema").String();
  if (schema != "stacksim.validation.serving/1") throw InputError(file, "schema", "wrong schema");
  top.Ignore({"notes"});
  auto runs = top.Required("runs").Elements();
  top.Finish();
  for (const JsonNode& run : runs) {
    JsonObject r(run);
    r.Required("id").String();
    r.Required("tier").OneOf({"A", "B", "C"});
    r.Required("scored").Bool();
    if (r.Has("kind")) r.Required("kind").String();
    try {
      serve::PlanServingRun(run.json(), file, run.path());
    } catch (const InputError&) {
    }
  }
}

void Kineto(const std::string& text) { ingest::ParseKinetoTrace(text, "fuzz/trace.json"); }

// The bytes as a trace file: gzip or plain, by content (ReadMaybeGzip).
void KinetoGzip(const std::string& text) {
  TempFile f(text, "trace.json.gz");
  ingest::ReadKinetoTrace(f.path());
}

// Ranks separated by NUL bytes (at most 16), rank r named fuzz/trace.<r>.json.
void ChakraJson(const std::string& text) {
  std::vector<chakra::RankText> ranks;
  size_t begin = 0;
  while (ranks.size() < 16) {
    size_t end = text.find('\0', begin);
    ranks.push_back({"fuzz/trace." + std::to_string(ranks.size()) + ".json", text.substr(begin, end - begin)});
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  chakra::ImportChakraJson(ranks);
}

// One rank's protobuf .et file (length-delimited GlobalMetadata, then nodes).
void ChakraEt(const std::string& text) { chakra::ImportChakraEt({{"fuzz/trace.0.et", text}}); }

// Rank counts against the scenario's GPUs, as replay-chakra meets them: the
// first byte gives the ranks (1-128), the rest is one rank's Chakra JSON,
// used for every rank. Imported and replayed on an 8-GPU scenario with the
// network sized as replay-chakra sizes it (the larger of the scenario's GPUs
// and chakra::GpusSpanned). SimGrid allows one simulation per process, so
// the replay is analytic and the invariant SimGrid needs (every rank a group
// places lies on the fabric: a rank off it crashed SimGrid) is checked here.
void ChakraReplay(const std::string& text) {
  if (text.empty()) return;
  static const config::ScenarioConfig scenario =
      config::LoadScenario(config::DataRoot() + "/scenarios/llama3-8b-8xh100.json", {});
  const int ranks = 1 + static_cast<unsigned char>(text[0]) % 128;
  std::vector<chakra::RankGraph> graphs;
  for (int r = 0; r < ranks; ++r) {
    const std::string file = "fuzz/trace." + std::to_string(r) + ".json";
    graphs.push_back({file, chakra::ParseChakraJson({file, text.substr(1)})});
  }
  chakra::ImportOptions import;
  import.ranks_per_node = scenario.topology.gpus_per_node;
  import.roofline = &scenario.profile;
  trace::Trace t = chakra::ImportChakraGraphs(graphs, import);
  const int64_t gpus = std::max<int64_t>(scenario.gpus, chakra::GpusSpanned(t));
  for (const trace::CommGroup& g : t.groups()) {
    for (int i = 0; i < g.size; ++i) {
      for (int j = 0; j < g.siblings; ++j) {
        const int64_t rank = g.first_rank + i * g.stride + g.SiblingOffset(j);
        if (rank < 0 || rank >= gpus) std::abort();  // off the fabric
      }
    }
  }
  auto network = net::MakeNetwork("analytic", scenario.topology, scenario.profile, static_cast<int>(gpus));
  engine::FixedCostModel no_compute(FlopRate{1});
  engine::Engine(no_compute, *network).Replay(t);
}

void JobTraceCsv(const std::string& text) { cluster::ParseJobTrace(text, "fuzz/jobs.csv"); }
void JobTraceJson(const std::string& text) { cluster::ParseJobTrace(text, "fuzz/jobs.json"); }

void RequestTrace(const std::string& text) {
  TempFile f(text, "requests.csv");
  serve::ReadRequestTrace(f.path());
}

void Reliability(const std::string& text) {
  const std::string file = "fuzz/reliability.json";
  nlohmann::json doc = ParseJsonText(text, file);
  campaign::ParseReliability(JsonNode(doc, file, ""));
}

void Economics(const std::string& text) {
  TempFile f(text, "gpus.json");
  search::LookUpEconomics(f.path(), "h100-sxm-80gb");
}

void StragglerDistribution(const std::string& text) {
  const std::string file = "fuzz/stragglers.json";
  nlohmann::json doc = ParseJsonText(text, file);
  straggler::ParseStragglerDistribution(JsonNode(doc, file, ""));
}

// Command-line values: the first byte picks the parser, the rest is the text.
void CliValues(const std::string& text) {
  if (text.empty()) return;
  const std::string v = text.substr(1);
  const std::string file = "--option";
  switch (static_cast<unsigned char>(text[0]) % 17) {
    case 0: ParseTime(v, file, "time"); break;
    case 1: ParseBytes(v, file, "bytes"); break;
    case 2: ParseBandwidth(v, file, "bandwidth"); break;
    case 3: ParseFlopRate(v, file, "flops"); break;
    case 4: campaign::ParseDuration(v, file, "duration"); break;
    case 5: cluster::ParseClusterTime(v, file, "time"); break;
    case 6: campaign::ParseTokens(v); break;
    case 7: ParseTokenCount(v); break;
    case 8: campaign::ParseInterval(v, "--checkpoint-interval"); break;
    case 9: compare::ParseClusterSpec(v); break;
    case 10: {
      static const config::TopologyConfig topology =
          config::LoadTopologyFile(config::DataRoot() + "/topologies/dgx-h100.json");
      search::ParseGpuRange(v, topology);
      break;
    }
    case 11: serve::ParseSlo(v); break;
    case 12: serve::ParseServeObjective(v); break;
    case 13: search::ParseObjective(v); break;
    case 14: cluster::ParseScheduler(v, "--scheduler"); break;
    case 15: cluster::ParsePlacement(v, "--placement"); break;
    case 16: straggler::ParseStragglerText(v, "--stragglers"); break;
  }
}

}  // namespace

// stacksim import of a Megatron-Bridge configuration dump: the YAML subset
// reader, then the field mapping (megatron_bridge_config.h).
void MegatronBridgeYaml(const std::string& text) {
  const std::string file = "fuzz/run_config.yaml";
  nlohmann::json doc = importer::ParseYamlSubset(text, file);
  if (importer::LooksLikeMegatronBridge(doc)) importer::ReadMegatronBridge(doc, file);
}

const std::vector<FuzzTarget>& AllTargets() {
  static const std::vector<FuzzTarget> targets = {
      {"json", Json},
      {"model", Model},
      {"topology", Topology},
      {"profile", Profile},
      {"scenario", Scenario},
      {"scenario_set", ScenarioSet},
      {"serve_scenario", ServeScenario},
      {"cluster_scenario", ClusterScenario},
      {"training_validation", TrainingValidation},
      {"serving_validation", ServingValidation},
      {"kineto", Kineto},
      {"kineto_gzip", KinetoGzip},
      {"chakra_json", ChakraJson},
      {"chakra_et", ChakraEt},
      {"chakra_replay", ChakraReplay},
      {"job_trace_csv", JobTraceCsv},
      {"job_trace_json", JobTraceJson},
      {"request_trace", RequestTrace},
      {"reliability", Reliability},
      {"economics", Economics},
      {"straggler_distribution", StragglerDistribution},
      {"cli_values", CliValues},
      {"megatron_bridge_yaml", MegatronBridgeYaml},
  };
  return targets;
}

const FuzzTarget* FindTarget(const std::string& name) {
  for (const FuzzTarget& t : AllTargets()) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

void RunInput(EntryFunction entry, const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    entry(text);
  } catch (const InputError&) {
    // The documented way to reject an input.
  }
}

}  // namespace stacksim::fuzz
