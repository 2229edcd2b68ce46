#include "sim/diagnose/remedy.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "sim/diagnose/layer_split.h"
#include "sim/simulate/simulate.h"
#include "sim/util/error.h"

namespace stacksim::diagnose {
namespace {

// `base` with `plan` and `order`, simulated: everything of a Remedy but its
// layer and words.
Remedy Apply(const config::ScenarioConfig& base, const config::PlanConfig& plan, config::NodeOrder order, Time step,
             const std::string& network) {
  Remedy r;
  nlohmann::json before = config::PlanToJson(base.plan), after = config::PlanToJson(plan);
  r.plan_changes = nlohmann::json::object();
  for (auto it = after.begin(); it != after.end(); ++it) {
    if (!before.contains(it.key()) || before[it.key()] != it.value()) r.plan_changes[it.key()] = it.value();
  }
  // node_order is a scenario key, not a plan key: it rides along in
  // plan_changes under its own name (docs/diagnose.md).
  if (order != base.node_order) r.plan_changes["node_order"] = config::NodeOrderName(order);
  r.plan = plan;
  r.node_order = order;
  config::ScenarioConfig s = base;
  s.plan = plan;
  s.node_order = order;
  if (order != base.node_order && network == "analytic") {
    r.status = RemedyStatus::kNotSimulated;
    r.reason = fmt::format("the analytic network model does not see node order; measure it with stacksim simulate "
                           "--network simgrid --set node_order={}",
                           config::NodeOrderName(order));
    return r;
  }
  try {
    config::ValidatePlan(s, s.file);
    simulate::Options so;
    so.network = network;
    simulate::SimulationResult res = simulate::Simulate(s, so);
    if (res.out_of_memory) {
      Bytes peak;
      for (const auto& m : res.memory) peak = std::max(peak, m.total());
      r.status = RemedyStatus::kOutOfMemory;
      r.reason = fmt::format("needs {} per GPU, {} available", GibText(peak), GibText(res.capacity));
      return r;
    }
    r.status = RemedyStatus::kSimulated;
    r.predicted = res.iteration;
    r.gain = step - res.iteration;
  } catch (const InputError& e) {
    r.status = RemedyStatus::kInvalid;
    r.reason = e.what();
  }
  return r;
}

}  // namespace

const char* RemedyStatusName(RemedyStatus s) {
  switch (s) {
    case RemedyStatus::kNone: return "";
    case RemedyStatus::kSimulated: return "simulated";
    case RemedyStatus::kInvalid: return "invalid";
    case RemedyStatus::kOutOfMemory: return "out of memory";
    case RemedyStatus::kNotSimulated: return "not simulated";
  }
  return "?";
}

Remedy Evaluate(const config::ScenarioConfig& base, const Candidate& c, Time step, const std::string& network) {
  Remedy r = Apply(base, c.plan, c.node_order, step, network);
  r.layer = c.layer;
  r.finding = c.finding;
  r.change = c.change;
  return r;
}

std::vector<Remedy> EvaluateCandidates(const config::ScenarioConfig& base, const std::vector<Candidate>& candidates,
                                       Time step, const std::string& network) {
  auto key = [](const config::PlanConfig& plan, config::NodeOrder order) {
    return config::PlanToJson(plan).dump() + config::NodeOrderName(order);
  };
  std::vector<Remedy> remedies;
  std::set<std::string> seen{key(base.plan, base.node_order)};
  for (const Candidate& c : candidates) {
    if (!seen.insert(key(c.plan, c.node_order)).second) continue;
    remedies.push_back(Evaluate(base, c, step, network));
  }
  std::stable_sort(remedies.begin(), remedies.end(), [](const Remedy& a, const Remedy& b) {
    bool sa = a.status == RemedyStatus::kSimulated, sb = b.status == RemedyStatus::kSimulated;
    if (sa != sb) return sa;
    return sa && a.gain > b.gain;
  });
  return remedies;
}

Remedy CombineRemedies(const config::ScenarioConfig& base, const std::vector<Remedy>& remedies, Time step,
                       const std::string& network) {
  const config::PlanConfig& p = base.plan;
  nlohmann::json merged = config::PlanToJson(p);
  config::NodeOrder order = base.node_order;
  std::set<std::string> keys;
  std::vector<std::string> changes;
  Remedy best;
  best.predicted = step;
  for (const Remedy& r : remedies) {
    if (r.status != RemedyStatus::kSimulated || r.gain <= Time::Zero()) continue;
    bool clash = false;
    for (auto it = r.plan_changes.begin(); it != r.plan_changes.end(); ++it) clash |= keys.count(it.key()) > 0;
    if (clash) continue;
    nlohmann::json trial = merged;
    config::NodeOrder trial_order = order;
    for (auto it = r.plan_changes.begin(); it != r.plan_changes.end(); ++it) {
      if (it.key() == "node_order") {
        trial_order = r.node_order;
      } else {
        trial[it.key()] = it.value();
      }
    }
    config::PlanConfig plan;
    try {
      plan = config::ParsePlan(JsonNode(trial, base.file, "plan"), p);
    } catch (const InputError&) {
      continue;
    }
    Remedy e = Apply(base, plan, trial_order, step, network);
    if (e.status != RemedyStatus::kSimulated || e.predicted >= best.predicted) continue;
    e.finding = "the gaining remedies that change different plan keys";
    for (const auto& ch : changes) e.change += ch + " + ";
    e.change += r.change;
    best = e;
    merged = trial;
    order = trial_order;
    changes.push_back(r.change);
    for (auto it = r.plan_changes.begin(); it != r.plan_changes.end(); ++it) keys.insert(it.key());
  }
  return changes.size() >= 2 ? best : Remedy{};
}

}  // namespace stacksim::diagnose
