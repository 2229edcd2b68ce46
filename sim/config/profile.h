// A hardware profile: how fast one GPU type computes, moves memory, launches
// kernels and runs collectives, parsed from profiles/*.json.
//
// Every value in the file is {"value": ..., "source": "..."}: measured by
// calibrate (GPU, driver, date) or taken from a named datasheet or published
// measurement. The parsed struct keeps the sources so reports can cite them.
#ifndef STACKSIM_SIM_CONFIG_PROFILE_H_
#define STACKSIM_SIM_CONFIG_PROFILE_H_

#include <array>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/util/json_reader.h"
#include "sim/util/units.h"

namespace stacksim::config {

enum class Precision { kFp32, kTf32, kBf16, kFp16, kFp8 };
inline constexpr int kNumPrecisions = 5;
const char* PrecisionName(Precision p);
// Bytes per element of a tensor stored in this precision.
double PrecisionBytes(Precision p);

template <typename T>
struct Sourced {
  T value{};
  std::string source;
};

enum class ProfileKind { kDatasheet, kMeasured, kProjected };
const char* ProfileKindName(ProfileKind k);

// A bus-bandwidth curve (nccl-tests convention) over message size, measured on
// a reference system whose per-GPU link bandwidth is reference_link. Points
// are sorted by size; between points busbw is interpolated in log(size).
struct BusBandwidthCurve {
  std::vector<std::pair<Bytes, Bandwidth>> points;
  int gpus = 0;            // GPUs in the measured collective
  std::string source;
  // busbw at `size`, clamped to the first and last point; linear in busbw
  // against log(size) between points. 0 for an empty curve.
  Bandwidth At(Bytes size) const;
};

struct GemmModel {
  // Best fraction of dense peak reached by large, well-shaped GEMMs (per precision).
  std::array<std::optional<Sourced<double>>, kNumPrecisions> max_efficiency;
  Sourced<std::pair<int, int>> tile;  // CTA output tile (rows, cols) for wave quantization
  // Fixed per-tile cost of a GEMM, in elements of K: efficiency scales by
  // k / (k + k_overhead) (prologue, epilogue and pipeline fill of each tile).
  Sourced<double> k_overhead;
};

struct ProfileConfig {
  std::string name;         // "h100-sxm-80gb"
  std::string gpu;          // human name, "NVIDIA H100 SXM5 80GB"
  ProfileKind kind = ProfileKind::kDatasheet;
  std::string provenance;   // who/what/when, free text (GPU, driver, date for measured)

  Sourced<int> sm_count;
  Sourced<Bytes> hbm_capacity;
  Sourced<Bandwidth> hbm_bandwidth;      // datasheet peak
  Sourced<double> copy_efficiency;       // achieved device copy / hbm_bandwidth
  std::array<std::optional<Sourced<FlopRate>>, kNumPrecisions> peak_flops;  // dense
  GemmModel gemm;
  Sourced<double> attention_fwd_efficiency;  // fused attention fwd, fraction of bf16 peak
  Sourced<double> attention_bwd_efficiency;
  // The FlashAttention-2 kernels (2023 frameworks), same units.
  Sourced<double> flash2_fwd_efficiency;
  Sourced<double> flash2_bwd_efficiency;
  Sourced<Time> kernel_launch;           // host issue time per eager kernel launch
  Sourced<Bandwidth> host_bandwidth;     // pinned host<->device, per direction

  // Collectives inside one NVLink domain: all-reduce (may use NVLink SHARP) and
  // the ring collectives (all-gather, reduce-scatter), with the per-GPU link
  // bandwidth of the system they were measured on.
  Sourced<Bandwidth> intra_reference_link;
  BusBandwidthCurve intra_all_reduce;
  BusBandwidthCurve intra_ring;
  Sourced<Time> intra_latency;           // per ring step inside the node
  // Across nodes: achieved fraction of NIC line rate, and per-step latency.
  Sourced<double> nic_efficiency;
  Sourced<Time> inter_latency;

  std::optional<FlopRate> Peak(Precision p) const;
};

// Strict, like every input: besides unknown/missing keys and wrong units, a
// value that is not {"value": ..., "source": "..."} is an error ("every profile
// value must state its source"); curve sizes must be strictly increasing;
// efficiencies are fractions in (0, 1]; all five peak_flops keys are present
// (null for a precision the GPU lacks).
ProfileConfig ParseProfile(const JsonNode& node);
ProfileConfig LoadProfileFile(const std::string& path);
// The profile in the file format, sources included; ParseProfile reads it back.
nlohmann::json ProfileToJson(const ProfileConfig& p);

}  // namespace stacksim::config

#endif  // STACKSIM_SIM_CONFIG_PROFILE_H_
