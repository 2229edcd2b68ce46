#include "sim/campaign/reliability.h"

#include <cctype>
#include <set>

#include "sim/config/scenario.h"

namespace stacksim::campaign {
namespace {

// A time with its source: {"time": "5 min", "source": "..."}. Every number in
// a reliability file says where it comes from, so the source is required.
Time ParseSourcedTime(JsonObject& parent, std::string_view key, std::string* source) {
  JsonObject obj(parent.Required(key));
  JsonNode time = obj.Required("time");
  Time t = ParseDuration(time.String(), time.file(), time.path());
  *source = obj.Required("source").String();
  obj.Finish();
  return t;
}

FailureCause ParseCause(const JsonNode& node) {
  JsonObject obj(node);
  FailureCause c;
  c.name = obj.Required("name").String();
  if (auto d = obj.Optional("description")) c.description = d->String();
  const std::string per = obj.Required("per").OneOf({"gpu", "node", "nic", "job"});
  c.per = per == "gpu" ? Component::kGpu : per == "node" ? Component::kNode : per == "nic" ? Component::kNic
                                                                                         : Component::kJob;
  c.rate_per_component_hour = obj.Required("rate_per_component_hour").NonNegativeNumber();
  c.takes_node_out = obj.Required("takes_node_out").Bool();
  c.source = obj.Required("source").String();
  obj.Finish();
  return c;
}

}  // namespace

const char* ComponentName(Component c) {
  switch (c) {
    case Component::kGpu: return "gpu";
    case Component::kNode: return "node";
    case Component::kNic: return "nic";
    case Component::kJob: return "job";
  }
  return "?";
}

int64_t ComponentCounts::Of(Component c) const {
  switch (c) {
    case Component::kGpu: return gpus;
    case Component::kNode: return nodes;
    case Component::kNic: return nics;
    case Component::kJob: return 1;
  }
  return 0;
}

std::vector<double> CauseRatesPerHour(const ReliabilityConfig& r, const ComponentCounts& n) {
  std::vector<double> rates;
  for (const FailureCause& c : r.causes) rates.push_back(c.rate_per_component_hour * static_cast<double>(n.Of(c.per)));
  return rates;
}

ReliabilityConfig ParseReliability(const JsonNode& node) {
  JsonObject obj(node);
  ReliabilityConfig r;
  r.file = node.file();
  r.name = obj.Required("name").String();
  r.source = obj.Required("source").String();
  if (auto n = obj.Optional("notes")) r.notes = n->String();
  JsonNode causes = obj.Required("causes");
  std::set<std::string> names;
  for (const JsonNode& e : causes.Elements()) {
    FailureCause c = ParseCause(e);
    if (!names.insert(c.name).second) e.Child("name").Fail("cause '" + c.name + "' is listed twice");
    r.causes.push_back(std::move(c));
  }
  if (r.causes.empty()) causes.Fail("list at least one failure cause");
  r.detection = ParseSourcedTime(obj, "detection", &r.detection_source);
  r.restart = ParseSourcedTime(obj, "restart", &r.restart_source);
  r.repair = ParseSourcedTime(obj, "repair", &r.repair_source);
  obj.Finish();
  return r;
}

ReliabilityConfig LoadReliabilityFile(const std::string& path) {
  nlohmann::json doc = ReadJsonFile(path);
  return ParseReliability(JsonNode(doc, path, ""));
}

std::string DefaultReliabilityFile() { return config::DataRoot() + "/reliability/llama3-16k-h100.json"; }

Time ParseDuration(std::string_view text, const std::string& file, const std::string& path) {
  // ParseTime knows ns..d and rejects spans beyond 100 years.
  return ParseTime(text, file, path);
}

}  // namespace stacksim::campaign
