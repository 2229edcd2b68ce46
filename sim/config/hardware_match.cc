#include "sim/config/hardware_match.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "sim/config/scenario.h"
#include "sim/util/error.h"

namespace stacksim::config {
namespace {

// Per GPU, per direction. PCIe Gen5 x16 is 64 GB/s; the slowest NVLink any
// shipped profile was measured on (H800) is 200 GB/s.
constexpr double kPcieClassLink = 100e9;
// An all-reduce curve this much above the ring curve's peak was measured
// with NVLS (the same rule as the analytic network's, sim/net).
constexpr double kNvlsPeakRatio = 1.05;

double PeakBusBandwidth(const BusBandwidthCurve& c) {
  double peak = 0;
  for (const auto& [size, bw] : c.points) peak = std::max(peak, bw.value);
  return peak;
}

bool NvlsCurve(const ProfileConfig& p) {
  const double ring_peak = PeakBusBandwidth(p.intra_ring);
  return ring_peak > 0 && PeakBusBandwidth(p.intra_all_reduce) > kNvlsPeakRatio * ring_peak;
}

std::string Gbps(double bytes_per_s) { return fmt::format("{:.0f} GB/s", bytes_per_s / 1e9); }

}  // namespace

std::vector<HardwareMismatch> CheckHardwareMatch(const ProfileConfig& profile, const TopologyConfig& topology,
                                                 const ProfileConfig* native) {
  std::vector<HardwareMismatch> out;
  const double reference = profile.intra_reference_link.value.value;
  const bool nvlink_topology = topology.scale_up.kind != ScaleUpKind::kPcie;
  const double link = topology.scale_up.per_gpu_bandwidth.value;
  if (reference > 0 && reference < kPcieClassLink && nvlink_topology) {
    out.push_back({true, "profile",
                   fmt::format("profile '{}' was measured on GPUs joined by PCIe ({} per GPU), but topology '{}' "
                               "joins its GPUs by {} at {}: that GPU cannot sit on that fabric, and its collectives "
                               "would be priced {:.0f}x faster than measured. Use a PCIe topology for it, or the "
                               "profile of the topology's own GPU ('{}')",
                               profile.name, Gbps(reference), topology.name, ScaleUpKindName(topology.scale_up.kind),
                               Gbps(link), link / reference, topology.gpu)});
  }
  if (reference >= kPcieClassLink && !nvlink_topology) {
    out.push_back({false, "node.scale_up",
                   fmt::format("profile '{}' was measured over NVLink ({} per GPU) but topology '{}' joins its GPUs "
                               "by PCIe: its collectives are scaled down to PCIe, a pairing no vendor ships",
                               profile.name, Gbps(reference), topology.name)});
  }
  if (native != nullptr && NvlsCurve(profile) && !NvlsCurve(*native) &&
      topology.scale_up.kind == ScaleUpKind::kNvSwitch) {
    out.push_back({false, "node.scale_up",
                   fmt::format("profile '{}' measured its intra-node all-reduce with NVLink SHARP (NVLS), which "
                               "came with the third-generation NVSwitch; topology '{}' ({} per GPU) has an NVSwitch "
                               "without it (its own GPU's profile, '{}', measured none): all-reduce inside a node is "
                               "priced with NVLS it would not have",
                               profile.name, topology.name, Gbps(link), native->name)});
  }
  return out;
}

void RequireGemmPrecision(const ProfileConfig& profile, const std::string& profile_file, Precision precision,
                          const std::string& file, const std::string& key) {
  const Precision gemm = precision == Precision::kFp32 ? Precision::kTf32 : precision;
  if (profile.Peak(gemm) && profile.gemm.max_efficiency[static_cast<int>(gemm)]) return;
  throw InputError(file, key,
                   fmt::format("profile '{}' ({}) has no {} GEMM rate: the GPU lacks it; choose a precision its "
                               "peak_flops lists, or another GPU",
                               profile.name, profile_file.empty() ? "built in" : profile_file,
                               PrecisionName(precision)));
}

std::vector<std::string> HardwareWarnings(const ProfileConfig& profile, const TopologyConfig& topology,
                                          const std::string& file) {
  std::optional<ProfileConfig> native;
  if (!topology.gpu.empty() && profile.name != topology.gpu) {
    const std::string path = ResolveDataFile("profiles", topology.gpu, "");
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) native = LoadProfileFile(path);
  }
  return RequireHardwareMatch(profile, topology, file, native ? &*native : nullptr);
}

std::vector<std::string> RequireHardwareMatch(const ProfileConfig& profile, const TopologyConfig& topology,
                                              const std::string& file, const ProfileConfig* native) {
  std::vector<std::string> warnings;
  for (const HardwareMismatch& m : CheckHardwareMatch(profile, topology, native)) {
    if (m.error) throw InputError(file, m.key, m.message);
    warnings.push_back(m.message);
  }
  return warnings;
}

}  // namespace stacksim::config
