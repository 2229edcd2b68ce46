#include "sim/search/economics.h"

#include <filesystem>

#include "sim/util/json_reader.h"

namespace stacksim::search {
namespace {

// {"value": number, "source": "..."}: every figure states where it is from;
// prices also say what kind of price they are ("basis").
double Sourced(const JsonNode& node, std::string* source, std::string* basis = nullptr) {
  JsonObject obj(node);
  double v = obj.Required("value").PositiveNumber();
  *source = obj.Required("source").String();
  if (basis != nullptr) *basis = obj.Required("basis").String();
  obj.Finish();
  return v;
}

}  // namespace

Economics LookUpEconomics(const std::string& path, const std::string& gpu) {
  Economics e;
  nlohmann::json doc = ReadJsonFile(path);
  JsonObject root(JsonNode(doc, path, ""));
  root.Ignore({"about"});
  JsonObject gpus(root.Required("gpus"));
  root.Finish();
  // Every entry is read (a typo anywhere is an error), the named one kept.
  for (const std::string& name : gpus.Keys()) {
    JsonObject entry(gpus.Required(name));
    Economics here;
    if (auto p = entry.Optional("gpu_hour_usd")) {
      here.gpu_hour_usd = Sourced(*p, &here.price_source, &here.price_basis);
      here.price_source = path + ": " + here.price_source;
    }
    if (auto w = entry.Optional("tdp_watts")) {
      here.gpu_watts = Sourced(*w, &here.power_source);
      here.power_source = path + ": " + here.power_source;
    }
    entry.Finish();
    if (name == gpu) e = here;
  }
  return e;
}

Economics LookUpEconomics(const config::ScenarioConfig& s) {
  const std::string path = config::DataRoot() + "/economics/gpus.json";
  std::error_code ec;
  Economics e;
  if (std::filesystem::is_regular_file(path, ec)) {
    e = LookUpEconomics(path, s.topology.gpu);
    // Name the file as the data root's, not this machine's path.
    for (std::string* src : {&e.price_source, &e.power_source}) {
      if (src->rfind(path, 0) == 0) *src = "economics/gpus.json" + src->substr(path.size());
    }
  }
  if (s.topology.gpu_hour_usd > 0) {
    e.gpu_hour_usd = s.topology.gpu_hour_usd;
    e.price_basis = "topology " + s.topology.name;
    e.price_source = "gpu_hour_usd of topology " + s.topology.name +
                     (s.topology_file.empty() ? std::string() : " (" + s.topology_file + ")");
  }
  return e;
}

Economics LookUpTopologyPrice(const config::TopologyConfig& topology) {
  Economics price;
  if (topology.gpu_hour_usd > 0) {
    price.gpu_hour_usd = topology.gpu_hour_usd;
    price.price_basis = "topology file";
    return price;
  }
  const std::string path = config::DataRoot() + "/economics/gpus.json";
  if (!std::filesystem::is_regular_file(path)) return price;
  const Economics e = LookUpEconomics(path, topology.gpu);
  price.gpu_hour_usd = e.gpu_hour_usd;
  price.price_basis = e.price_basis;
  return price;
}

}  // namespace stacksim::search
