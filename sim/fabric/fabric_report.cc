#include "sim/fabric/fabric_report.h"

#include <fmt/format.h>

namespace stacksim::fabric {
namespace {

std::string Rate(Bandwidth b) {
  if (b.value >= 1e12) return fmt::format("{:.6g} TB/s", b.value / 1e12);
  return fmt::format("{:.6g} GB/s", b.value / 1e9);
}

std::string Range(Bandwidth lo, Bandwidth hi) {
  return lo == hi ? Rate(lo) : Rate(lo) + " to " + Rate(hi);
}

}  // namespace

std::string SummaryText(const FabricGraph& f, const FabricSummary& s) {
  std::string out = "fabric: " + f.name + "\n";
  std::string parts;
  for (int k = 0; k < kVertexKinds; ++k) {
    if (s.vertices[k] == 0) continue;
    parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", s.vertices[k],
                         VertexKindName(static_cast<VertexKind>(k)));
  }
  out += "vertices: " + parts + "\n";
  out += "links:\n";
  for (int k = 0; k < kLinkKinds; ++k) {
    const LinkTally& t = s.links[k];
    if (t.count == 0) continue;
    out += fmt::format("  {:<7} {:>8}  {} in all, per direction\n", LinkKindName(static_cast<LinkKind>(k)), t.count,
                       Rate(t.total));
  }
  out += fmt::format("bisection bandwidth: {} per direction (max-flow from GPUs 0-{} to {}-{})\n", Rate(s.bisection),
                     s.gpus / 2 - 1, s.gpus / 2, s.gpus - 1);
  if (s.diameter_hops < 0) {
    out += "diameter: some GPUs cannot reach each other\n";
  } else {
    out += fmt::format("diameter: {} links between GPUs{}\n", s.diameter_hops,
                       s.diameter_exact ? "" : " (from 257 evenly spaced GPUs)");
  }
  out += fmt::format("injection per GPU: scale-up {}, scale-out {}\n", Range(s.scale_up_min, s.scale_up_max),
                     Range(s.scale_out_min, s.scale_out_max));
  if (s.oversubscription.empty()) {
    out += "oversubscription: no switch level has uplinks\n";
  } else {
    out += "oversubscription (down : up):\n";
    for (const LevelOversubscription& o : s.oversubscription) {
      out += fmt::format("  level {} ({} switches): {}\n", o.level, o.switches,
                         o.min == o.max ? fmt::format("{:.4g}:1", o.min)
                                        : fmt::format("{:.4g}:1 to {:.4g}:1", o.min, o.max));
    }
  }
  return out;
}

nlohmann::json SummaryJson(const FabricGraph& f, const FabricSummary& s) {
  nlohmann::json j;
  j["fabric"] = f.name;
  j["gpus"] = s.gpus;
  nlohmann::json vertices = nlohmann::json::object();
  for (int k = 0; k < kVertexKinds; ++k) vertices[VertexKindName(static_cast<VertexKind>(k))] = s.vertices[k];
  j["vertices"] = vertices;
  nlohmann::json links = nlohmann::json::object();
  for (int k = 0; k < kLinkKinds; ++k) {
    links[LinkKindName(static_cast<LinkKind>(k))] = {{"count", s.links[k].count},
                                                     {"bandwidth_Bps", s.links[k].total.value}};
  }
  j["links"] = links;
  j["bisection_Bps"] = s.bisection.value;
  j["bisection_split"] = "GPUs [0, n/2) against [n/2, n), max-flow";
  j["diameter_hops"] = s.diameter_hops;
  j["diameter_exact"] = s.diameter_exact;
  j["injection_Bps"] = {{"scale_up_min", s.scale_up_min.value}, {"scale_up_max", s.scale_up_max.value},
                        {"scale_out_min", s.scale_out_min.value}, {"scale_out_max", s.scale_out_max.value}};
  nlohmann::json over = nlohmann::json::array();
  for (const LevelOversubscription& o : s.oversubscription) {
    over.push_back({{"level", o.level}, {"switches", o.switches}, {"min", o.min}, {"max", o.max}});
  }
  j["oversubscription"] = over;
  return j;
}

}  // namespace stacksim::fabric
