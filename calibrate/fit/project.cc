// ProjectProfile (declared in fit_profile.h): a measured profile carried to
// another GPU. Efficiencies are what a measurement can transfer (how close
// the kernels get to a peak); the peaks, bandwidths, sizes and collectives
// are the target's own.
#include <string>
#include <vector>

#include "calibrate/fit/fit_profile.h"
#include "calibrate/fit/report_text.h"
#include "sim/config/profile.h"
#include "sim/util/json_reader.h"

namespace stacksim::calibrate {
namespace {

using nlohmann::json;

// Fields copied from the measured profile, as paths into the document.
const std::vector<std::vector<std::string>>& ProjectedFields() {
  static const std::vector<std::vector<std::string>> kFields = {
      {"gemm", "tile"},
      {"gemm", "k_overhead"},
      {"attention", "fwd_efficiency"},
      {"attention", "bwd_efficiency"},
      {"attention", "flash2_fwd_efficiency"},
      {"attention", "flash2_bwd_efficiency"},
      {"attention", "own_fwd_efficiency"},  // optional: calibrate's, of our own kernel
      {"attention", "own_bwd_efficiency"},
      {"copy_efficiency"},
      {"kernel_launch"},
  };
  return kFields;
}

std::string Dotted(const std::vector<std::string>& path) {
  std::string out;
  for (const std::string& k : path) out += (out.empty() ? "" : ".") + k;
  return out;
}

// The node at `path`, or null when a key on the way is missing.
const json* Find(const json& doc, const std::vector<std::string>& path) {
  const json* node = &doc;
  for (const std::string& k : path) {
    if (!node->is_object() || !node->contains(k)) return nullptr;
    node = &(*node)[k];
  }
  return node;
}

json& At(json& doc, const std::vector<std::string>& path) {
  json* node = &doc;
  for (const std::string& k : path) node = &(*node)[k];
  return *node;
}

}  // namespace

json ProjectProfile(const json& measured, const json& target_datasheet, const std::string& measured_name,
                    const std::string& target_name) {
  config::ProfileConfig m = config::ParseProfile(JsonNode(measured, measured_name, ""));
  config::ProfileConfig t = config::ParseProfile(JsonNode(target_datasheet, target_name, ""));
  if (m.kind != config::ProfileKind::kMeasured) {
    throw InputError(measured_name, "kind",
                     std::string("only a measured profile can be projected; this one is ") +
                         config::ProfileKindName(m.kind));
  }
  json out = target_datasheet;
  auto projected_source = [&](const json& sourced) {
    return "projected from " + measured_name + " (" + sourced["source"].get<std::string>() + ")";
  };
  std::vector<std::string> projected, from_target, notes;

  for (const std::vector<std::string>& path : ProjectedFields()) {
    const json* found = Find(measured, path);
    if (found == nullptr) continue;  // an optional field the measured profile lacks
    const json& from = *found;
    if (config::IsFallbackSource(from["source"].get<std::string>())) {
      // Not measured there: the target's own value is the honest fallback.
      from_target.push_back(Dotted(path) + " (not measured on " + measured_name + ")");
      continue;
    }
    At(out, path) = {{"value", from["value"]}, {"source", projected_source(from)}};
    projected.push_back(Dotted(path));
  }

  // GEMM efficiency per precision: where both GPUs have the precision.
  const json& effs = measured["gemm"]["max_efficiency"];
  for (const auto& [key, sourced] : effs.items()) {
    if (sourced.is_null() || sourced["value"].is_null()) continue;
    if (config::IsFallbackSource(sourced["source"].get<std::string>())) continue;  // listed below as the target's
    if (out["peak_flops"][key].is_null() || out["peak_flops"][key]["value"].is_null()) {
      notes.push_back(key + " (" + target_name + " has no " + key + " peak)");
      continue;
    }
    out["gemm"]["max_efficiency"][key] = {{"value", sourced["value"]}, {"source", projected_source(sourced)}};
    projected.push_back("gemm.max_efficiency." + key);
  }
  for (const auto& [key, sourced] : out["gemm"]["max_efficiency"].items()) {
    bool from_measured = effs.contains(key) && !effs[key].is_null() && !effs[key]["value"].is_null() &&
                         !config::IsFallbackSource(effs[key]["source"].get<std::string>());
    if (!from_measured) from_target.push_back("gemm.max_efficiency." + key + " (not measured on " + measured_name + ")");
  }
  for (const char* f :
       {"sm_count", "hbm_capacity", "hbm_bandwidth", "peak_flops", "eager_kernels", "host_bandwidth", "collectives"}) {
    from_target.push_back(f);
  }

  out["kind"] = "projected";
  std::string provenance = "projected from " + measured_name + " (" + m.gpu + ", measured: " + m.provenance +
                           ") to " + target_name + " (" + t.gpu + "): the measured efficiencies applied to " +
                           target_name + "'s peaks and bandwidths. Measured and projected: " + JoinList(projected) +
                           ". From " + target_name + "'s " + config::ProfileKindName(t.kind) +
                           " profile, with their sources: " + JoinList(from_target) + ".";
  if (!notes.empty()) provenance += " Measured but not projected: " + JoinList(notes) + ".";
  out["provenance"] = provenance;
  config::ParseProfile(JsonNode(out, "<" + measured_name + " projected to " + target_name + ">", ""));
  return out;
}

}  // namespace stacksim::calibrate
