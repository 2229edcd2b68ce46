// Compare clusters before buying: for each candidate cluster, the best plan a
// search finds for one model and batch, and what training a token budget on
// it takes in days, money and energy.
//
//   Comparison c = Compare(request, options);   // c.clusters in request order
//
// Each cluster is a topology and a GPU count (or a range of counts: the search
// then picks the count too). Its search (search::Search) ranks the plans by
// the chosen objective; the best one gives the step time, and from it
//   days        = token budget / tokens per second / 86,400
//   GPU-hours   = GPUs x days x 24
//   cost (USD)  = GPU-hours x price per GPU-hour (economics.h)
//   energy (MWh)= GPU-hours x GPU power / 10^6 (datasheet TDP: an upper
//                 estimate of what the GPUs draw; hosts, network and cooling
//                 are not counted)
// A cluster on which no plan fits keeps its search counts and says why; the
// others are still compared. Prices from different bases (providers, dates,
// on-demand or reserved) are flagged: their ratio says little.
//
// Uncertainty: each ranked plan carries its likely range and coverage
// warnings (search.h). The best cluster is picked under options.ranking; a
// second search per cluster (top 1) under the other reading finds the best
// plan if steps were read the other way (pessimistic: at the likely range's
// high end), and the comparison says whether the winner changes.
#ifndef STACKSIM_SIM_COMPARE_COMPARE_H_
#define STACKSIM_SIM_COMPARE_COMPARE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/config/scenario.h"
#include "sim/search/search.h"

namespace stacksim::compare {

// One candidate cluster as the user wrote it: "TOPOLOGY:GPUS[@USD]" with
// TOPOLOGY a name in topologies/ or a path, GPUS "N" or "LO..HI", and an
// optional price per GPU-hour that overrides the economics file.
struct ClusterSpec {
  std::string text;            // as given, for errors and reports
  std::string topology;        // name or path
  std::string gpus;            // "1024" or "512..2048"
  double gpu_hour_usd = 0;     // 0: look it up
};
// Throws InputError("--cluster", ...) on a malformed spec.
ClusterSpec ParseClusterSpec(const std::string& text);

struct CompareRequest {
  // Model, sequence length, global batch and the plan fields a search does not
  // vary (precision, kernels, ...); its topology and GPU count are replaced by
  // each cluster's. Build it with BaseScenario() or from a scenario file.
  config::ScenarioConfig base;
  std::vector<ClusterSpec> clusters;
  int64_t tokens = 0;          // the token budget to train
};

// A scenario for `model` (a name in models/ or a path) with the given training
// batch and default plan fields (precision as given); topology and GPUs are
// left for the clusters. Throws InputError naming the model file.
config::ScenarioConfig BaseScenario(const std::string& model, int64_t seq_len, int64_t global_batch,
                                    config::Precision precision);

struct CompareOptions {
  search::Objective objective = search::Objective::kTime;
  int runners_up = 2;          // plans ranked after the best (for the gap)
  int threads = 0;
  const search::PlanRunner* runner = nullptr;  // as in SearchOptions
  search::Ranking ranking = search::Ranking::kExpected;
  memory::HeadroomPolicy headroom;
  bool other_reading = true;   // also search under the other ranking (needs the error table)
};

// A cluster's best plan under one reading of the steps, and what the budget
// takes at that reading's step.
struct BudgetAtReading {
  search::RankedPlan plan;
  double step_s = 0;     // the step as the reading takes it
  double days = 0;
  double cost_usd = 0;   // 0 without a price
  double energy_mwh = 0; // 0 without a power figure
};

struct ClusterResult {
  ClusterSpec spec;
  config::ScenarioConfig scenario;   // base with this cluster's topology (GPUs: the best plan's)
  search::SearchResult search;       // its ranking, best first (empty: nothing fits)
  std::string failure;               // why no plan fits ("" when one does)
  // Of the best plan, for the token budget:
  int gpus = 0;
  double days = 0;
  double gpu_hours = 0;
  double cost_usd = 0;               // 0 without a price
  double energy_mwh = 0;             // 0 without a power figure
  // The best plan under the other ranking (unset without the error table or
  // when no plan fits).
  std::optional<BudgetAtReading> other;
  bool ok() const { return !search.plans.empty(); }
  const search::RankedPlan& best() const { return search.plans.front(); }
};

struct Comparison {
  std::string model;
  int64_t seq_len = 0, global_batch = 0, tokens_per_step = 0;
  int64_t tokens = 0;
  search::Objective objective = search::Objective::kTime;
  std::vector<ClusterResult> clusters;   // in request order
  // Index of the cluster best by the objective over the token budget (time:
  // days, throughput: days, cost: USD, energy: MWh); -1 when none fits or the
  // figure is missing for every cluster.
  int best = -1;
  std::vector<std::string> warnings;     // mixed price bases, missing prices
  search::Ranking ranking = search::Ranking::kExpected;
  // The best cluster under the other ranking (-1: none or not searched), and
  // a sentence saying whether the winner changes.
  int best_other = -1;
  std::string winner_note;
};

// REQUIRES: request.tokens > 0 and at least one cluster. Throws InputError on
// a bad cluster spec or file, and when the objective needs a price or power a
// cluster lacks.
Comparison Compare(const CompareRequest& request, const CompareOptions& options = {});

std::string ComparisonText(const Comparison& c);
nlohmann::json ComparisonJson(const Comparison& c);

}  // namespace stacksim::compare

#endif  // STACKSIM_SIM_COMPARE_COMPARE_H_
