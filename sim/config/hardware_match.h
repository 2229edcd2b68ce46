// Whether a hardware profile can be part of a topology: a GPU's profile
// prices its collectives from curves measured over its own links, and the
// network models scale those curves to the topology's links. Some pairings
// cannot exist, and pricing them gives numbers for hardware nobody can buy:
//
//  - a profile measured over PCIe (a PCIe card such as the L40S) on a
//    topology whose GPUs are joined by NVLink or NVSwitch: an error;
//  - a profile measured over NVLink on a PCIe topology: a warning (an SXM
//    module needs an NVLink baseboard; the curves are scaled down to PCIe);
//  - a profile whose intra-node all-reduce was measured with NVLink SHARP
//    (NVLS) on an NVSwitch without it (older than the third generation: the
//    DGX/HGX A100), which the topology's own GPU profile shows (its
//    all-reduce, measured on that system, has no NVLS): a warning, the
//    all-reduce inside a node is priced with NVLS it would not have.
//
// Third-generation NVSwitch (NVLink4, H100) is the first with SHARP
// in-network reductions: NVIDIA, "Upgrading Multi-GPU Interconnectivity with
// the Third-Generation NVIDIA NVSwitch" (developer blog, 2022).
#ifndef STACKSIM_SIM_CONFIG_HARDWARE_MATCH_H_
#define STACKSIM_SIM_CONFIG_HARDWARE_MATCH_H_

#include <string>
#include <vector>

#include "sim/config/profile.h"
#include "sim/config/topology.h"

namespace stacksim::config {

struct HardwareMismatch {
  bool error = false;   // true: the pairing cannot exist; false: a warning
  std::string key;      // the topology or profile key it concerns ("node.scale_up")
  std::string message;  // names the profile, the topology and what to use instead
};

// `native`: the profile of the topology's own GPU (topology.gpu) when it is
// another one; without it the NVLS rule is not checked.
std::vector<HardwareMismatch> CheckHardwareMatch(const ProfileConfig& profile, const TopologyConfig& topology,
                                                 const ProfileConfig* native = nullptr);

// Throws InputError(file, key, ...) when the profile has no GEMM rate for
// `precision` (fp8 on an A100; fp32 runs on tf32 tensor cores): a plan's
// mistake, said for every command before anything is simulated.
void RequireGemmPrecision(const ProfileConfig& profile, const std::string& profile_file, Precision precision,
                          const std::string& file, const std::string& key);

// Throws InputError(file, key, message) for the first error of
// CheckHardwareMatch; returns the warnings' messages.
std::vector<std::string> RequireHardwareMatch(const ProfileConfig& profile, const TopologyConfig& topology,
                                              const std::string& file, const ProfileConfig* native = nullptr);

// The warnings for a scenario's profile on its topology, reading the
// topology's own GPU profile (<data root>/profiles/<topology.gpu>.json) when
// the scenario uses another one. REQUIRES: RequireHardwareMatch passed.
std::vector<std::string> HardwareWarnings(const ProfileConfig& profile, const TopologyConfig& topology,
                                          const std::string& file);

}  // namespace stacksim::config

#endif  // STACKSIM_SIM_CONFIG_HARDWARE_MATCH_H_
