// How often a training job is interrupted, and how long each interruption
// takes to handle, parsed from reliability/*.json.
//
// A cause (faulty GPU, HBM, switch, software bug, ...) has a rate per
// component-hour and names the component it scales with: a GPU, a node, a
// NIC, or the job itself (software). A job's interruption rate is the sum over
// causes of rate x that component's count in the job. Interruptions are
// independent Poisson processes (the Llama 3 table gives counts, not their
// correlation). Hardware causes take a node out of the job until a spare
// replaces it or it is repaired; software causes only restart the job.
//
// Detection (the failure noticed and the job stopped), restart (the job
// relaunched) and repair (a failed node back in service) are times; reading the
// checkpoint back is not here: it follows from the checkpoint's size and the
// storage (campaign/checkpoint.h).
#ifndef STACKSIM_SIM_CAMPAIGN_RELIABILITY_H_
#define STACKSIM_SIM_CAMPAIGN_RELIABILITY_H_

#include <string>
#include <string_view>
#include <vector>

#include "sim/util/json_reader.h"
#include "sim/util/units.h"

namespace stacksim::campaign {

enum class Component { kGpu, kNode, kNic, kJob };
const char* ComponentName(Component c);  // "gpu", "node", "nic", "job"

struct FailureCause {
  std::string name;          // "gpu", "hbm", ...
  std::string description;   // "Faulty GPU (incl. NVLink)"
  Component per = Component::kGpu;
  double rate_per_component_hour = 0;  // interruptions per component per hour, >= 0
  bool takes_node_out = true;          // the node needs a spare or a repair
  std::string source;
};

struct ReliabilityConfig {
  std::string name;
  std::string file;     // where it was read from
  std::string source;
  std::string notes;
  std::vector<FailureCause> causes;
  Time detection;       // failure to job stopped
  Time restart;         // job relaunched, before the checkpoint is read
  Time repair;          // failed node back in service
  std::string detection_source, restart_source, repair_source;
};

// How many of each component one job holds.
struct ComponentCounts {
  int64_t gpus = 0, nodes = 0, nics = 0;
  int64_t Of(Component c) const;
};

// Interruptions per hour of one job, per cause (in the config's order).
std::vector<double> CauseRatesPerHour(const ReliabilityConfig& r, const ComponentCounts& n);

// Strict, as every stacksim input: unknown or missing keys, a negative rate,
// an unknown component, a duplicate cause name or a time without a unit are
// InputErrors naming the file and key path ("causes[3].per").
ReliabilityConfig ParseReliability(const JsonNode& node);
ReliabilityConfig LoadReliabilityFile(const std::string& path);
// The shipped default: <data root>/reliability/llama3-16k-h100.json.
std::string DefaultReliabilityFile();

// A duration with its unit: "90 s", "30 min", "4 h", "54 d" (and every unit
// ParseTime takes). Throws InputError(file, path, ...).
Time ParseDuration(std::string_view text, const std::string& file, const std::string& path);

}  // namespace stacksim::campaign

#endif  // STACKSIM_SIM_CAMPAIGN_RELIABILITY_H_
