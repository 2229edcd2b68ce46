#include "calibrate/harness/base_profile.h"

namespace stacksim::calibrate {

std::string BaseProfileName(const std::string& gpu_name, size_t memory_bytes) {
  auto has = [&](const char* part) { return gpu_name.find(part) != std::string::npos; };
  const double gib = static_cast<double>(memory_bytes) / (1ull << 30);
  // Most specific names first: "GB200" contains "B200".
  if (has("GB200")) return "gb200";
  if (has("B200")) return "b200";
  if (has("H200")) return "h200-sxm-141gb";
  if (has("H800")) return "h800-sxm-80gb";
  if (has("H100")) {
    if (has("PCIe")) return "h100-pcie";
    return gib > 85 ? "h100-sxm-96gb" : "h100-sxm-80gb";
  }
  if (has("A100")) return gib > 45 ? "a100-sxm-80gb" : "a100-sxm-40gb";
  if (has("L40S")) return "l40s";
  return "";
}

}  // namespace stacksim::calibrate
