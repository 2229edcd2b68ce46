#include "calibrate/fit/run_outcome.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "sim/util/json_reader.h"

namespace stacksim::calibrate {

const char* SectionStatusName(SectionStatus s) {
  switch (s) {
    case SectionStatus::kOk: return "ok";
    case SectionStatus::kFailed: return "failed";
    case SectionStatus::kNotMeasurable: return "not_measurable";
    case SectionStatus::kSkipped: return "skipped";
  }
  return "?";
}

SectionOutcome& RunOutcome::Section(const std::string& name) {
  for (SectionOutcome& s : sections_) {
    if (s.name == name) return s;
  }
  SectionOutcome s;
  s.name = name;
  sections_.push_back(s);
  return sections_.back();
}

const SectionOutcome* RunOutcome::Find(const std::string& name) const {
  for (const SectionOutcome& s : sections_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::vector<std::string> RunOutcome::Problems() const {
  std::vector<std::string> out;
  if (gpus_requested && *gpus_requested > gpus_used) {
    out.push_back("gpus: " + std::to_string(*gpus_requested) + " asked for, " + std::to_string(gpus_visible) +
                  " visible, measured with " + std::to_string(gpus_used));
  }
  if (busy) out.push_back("preflight: GPU busy: " + busy_reason);
  for (const SectionOutcome& s : sections_) {
    std::string line;
    if (s.status != SectionStatus::kOk) line = SectionStatusName(s.status) + std::string(": ") + s.reason;
    if (s.unstable > 0) {
      line += (line.empty() ? "" : "; ") + std::to_string(s.unstable) + " of " + std::to_string(s.measured) +
              " measurements unstable";
    }
    if (s.failed_items > 0) {
      line += (line.empty() ? "" : "; ") + std::to_string(s.failed_items) + " measurement(s) failed";
    }
    if (!line.empty()) out.push_back(s.name + ": " + line);
  }
  return out;
}

nlohmann::json RunOutcome::ToJson() const {
  nlohmann::json sections = nlohmann::json::array();
  for (const SectionOutcome& s : sections_) {
    sections.push_back({{"name", s.name},
                        {"status", SectionStatusName(s.status)},
                        {"reason", s.reason},
                        {"measured", s.measured},
                        {"unstable", s.unstable},
                        {"failed_items", s.failed_items},
                        {"stopped_early", s.stopped_early}});
  }
  return {{"gpus_requested", gpus_requested ? nlohmann::json(*gpus_requested) : nlohmann::json()},
          {"gpus_visible", gpus_visible},
          {"gpus_used", gpus_used},
          {"faults", faults},
          {"busy", busy},
          {"busy_reason", busy_reason},
          {"sections", sections}};
}

namespace {

int Count(JsonObject& obj, const char* key) {
  JsonNode n = obj.Required(key);
  int64_t v = n.Int();
  if (v < 0 || v > 1000000000) n.Fail("must be a count >= 0");
  return static_cast<int>(v);
}

std::string Text(JsonObject& obj, const char* key) {
  JsonNode n = obj.Required(key);
  if (!n.IsString()) n.Fail("expected a string");
  return n.json().get<std::string>();  // may be empty
}

}  // namespace

RunOutcome RunOutcome::FromJson(const nlohmann::json& doc, const std::string& file) {
  JsonNode root(doc, file, "");
  JsonObject obj(root);
  RunOutcome o;
  if (auto r = obj.Optional("gpus_requested")) o.gpus_requested = static_cast<int>(r->PositiveInt());
  o.gpus_visible = Count(obj, "gpus_visible");
  o.gpus_used = Count(obj, "gpus_used");
  for (const JsonNode& f : obj.Required("faults").Elements()) o.faults.push_back(f.String());
  o.busy = obj.Required("busy").Bool();
  o.busy_reason = Text(obj, "busy_reason");
  for (const JsonNode& n : obj.Required("sections").Elements()) {
    JsonObject s(n);
    SectionOutcome out;
    out.name = s.Required("name").String();
    std::string status = s.Required("status").OneOf({"ok", "failed", "not_measurable", "skipped"});
    out.status = status == "failed"           ? SectionStatus::kFailed
                 : status == "not_measurable" ? SectionStatus::kNotMeasurable
                 : status == "skipped"        ? SectionStatus::kSkipped
                                              : SectionStatus::kOk;
    out.reason = Text(s, "reason");
    if (out.status != SectionStatus::kOk && out.reason.empty()) {
      s.Required("reason").Fail("a section that is not ok must say why");
    }
    out.measured = Count(s, "measured");
    out.unstable = Count(s, "unstable");
    if (out.unstable > out.measured) s.Required("unstable").Fail("more unstable rows than measured ones");
    out.failed_items = Count(s, "failed_items");
    out.stopped_early = s.Required("stopped_early").Bool();
    s.Finish();
    if (o.Find(out.name)) n.Fail("section '" + out.name + "' appears twice");
    o.sections_.push_back(out);
  }
  obj.Finish();
  return o;
}

void RunOutcome::Write(const std::string& path) const {
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    f << ToJson().dump(1) << "\n";
    if (!f) throw std::runtime_error("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error("cannot rename " + tmp + " to " + path);
}

std::optional<RunOutcome> RunOutcome::Read(const std::string& path) {
  std::ifstream f(path);
  if (!f) return std::nullopt;
  return FromJson(ReadJsonFile(path), path);
}

const std::vector<std::string>& KnownFaults() {
  static const std::vector<std::string> kFaults = {"busy", "oom", "cuda-error", "nccl-init", "nccl-missing"};
  return kFaults;
}

std::set<std::string> ParseFaults(const std::string& text) {
  std::set<std::string> out;
  std::stringstream ss(text);
  std::string name;
  while (std::getline(ss, name, ',')) {
    if (name.empty()) continue;
    bool known = false;
    for (const std::string& k : KnownFaults()) known = known || k == name;
    if (!known) {
      std::string list;
      for (const std::string& k : KnownFaults()) list += (list.empty() ? "" : ", ") + k;
      throw std::invalid_argument("STACKSIM_CALIBRATE_FAULT: unknown fault '" + name + "' (known: " + list + ")");
    }
    out.insert(name);
  }
  return out;
}

}  // namespace stacksim::calibrate
