// What a GPU costs to rent and how much power it draws: the inputs of the
// cost and energy objectives.
//
// Price per GPU-hour (USD): the topology's "gpu_hour_usd" when it gives one,
// else the entry for the topology's GPU in <data root>/economics/gpus.json
// (published on-demand cloud prices, each with its source and date). Power
// (W per GPU): that file's "tdp_watts" (datasheet TDP; the board's limit,
// so energy from it is an upper estimate of what the GPUs draw). Callers may
// override both (the CLI's --gpu-hour-usd and --gpu-watts).
#ifndef STACKSIM_SIM_SEARCH_ECONOMICS_H_
#define STACKSIM_SIM_SEARCH_ECONOMICS_H_

#include <string>

#include "sim/config/scenario.h"

namespace stacksim::search {

struct Economics {
  double gpu_hour_usd = 0;     // 0: unknown
  std::string price_source;
  // What kind of price it is ("Spheron on-demand, 2026", "topology file"):
  // prices of different bases do not compare well (compare warns).
  std::string price_basis;
  double gpu_watts = 0;        // 0: unknown
  std::string power_source;
};

// Looks up the scenario's GPU (topology node.gpu). Missing entries stay 0;
// a malformed economics file is an InputError naming it.
Economics LookUpEconomics(const config::ScenarioConfig& s);

// The price per GPU-hour of one topology's GPU, as `serve` prices a
// deployment: the topology's gpu_hour_usd (basis "topology file"), else the
// entry for its GPU in <data root>/economics/gpus.json (read only then; its
// basis). Sets gpu_hour_usd and price_basis only; both stay empty when
// neither gives a price.
Economics LookUpTopologyPrice(const config::TopologyConfig& topology);

// Reads one economics file (for tests): entries keyed by profile name, each
// {"gpu_hour_usd": {"value", "source", "basis"}, "tdp_watts": {"value",
// "source"}}, both optional.
Economics LookUpEconomics(const std::string& path, const std::string& gpu);

}  // namespace stacksim::search

#endif  // STACKSIM_SIM_SEARCH_ECONOMICS_H_
