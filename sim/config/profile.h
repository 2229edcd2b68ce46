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
#include <string_view>
#include <utility>
#include <vector>

#include "sim/util/json_reader.h"
#include "sim/util/precision.h"
#include "sim/util/units.h"

namespace stacksim::config {

using stacksim::kNumPrecisions;
using stacksim::Precision;
using stacksim::PrecisionBytes;
using stacksim::PrecisionName;

template <typename T>
struct Sourced {
  T value{};
  std::string source;
};

enum class ProfileKind { kDatasheet, kMeasured, kProjected };
const char* ProfileKindName(ProfileKind k);

// The source of a value that a calibration did not measure and took from a
// datasheet (base) profile begins with this prefix, e.g. "datasheet fallback:
// h200-sxm-141gb, not measured (base source: ...)". Such a value is never
// reported as measured, whatever the rest of its source says.
inline constexpr std::string_view kFallbackSourcePrefix = "datasheet fallback: ";
bool IsFallbackSource(const std::string& source);

// One thing a calibration set out to measure and did not (a failed NCCL
// init, an out-of-memory GEMM, timings too unstable to keep): the harness
// step, why, and the profile fields it leaves at their datasheet fallback
// (may be empty: some measurements of a section were left out, the fields
// were fitted from the rest).
struct MissingMeasurement {
  std::string section;              // "nccl", "gemm", ...
  std::string reason;               // "ncclCommInitAll: unhandled system error"
  std::vector<std::string> fields;  // "collectives.intra_node.ring"
};

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
  // FP8's own per-tile cost, where measured (optional; absent: k_overhead).
  // An FP8 MMA covers twice the K of a 16-bit one, so the fixed prologue and
  // epilogue of each tile are worth more elements of K.
  std::optional<Sourced<double>> k_overhead_fp8;
  // The per-tile cost in elements of K for GEMMs in precision `p`.
  double KOverhead(Precision p) const {
    return p == Precision::kFp8 && k_overhead_fp8 ? k_overhead_fp8->value : k_overhead.value;
  }
};

// Memory-bound kernel families whose generic (eager PyTorch) kernels reach
// different fractions of the device copy bandwidth: the keys of a profile's
// "eager_kernels" section, in this order.
enum class EagerKernel { kElementwise, kLayerNorm, kRmsNorm, kGelu, kGatedActivation, kSoftmax, kDropout, kCast };
inline constexpr int kNumEagerKernels = 8;
inline constexpr std::array<EagerKernel, kNumEagerKernels> kAllEagerKernels = {
    EagerKernel::kElementwise, EagerKernel::kLayerNorm, EagerKernel::kRmsNorm, EagerKernel::kGelu,
    EagerKernel::kGatedActivation, EagerKernel::kSoftmax, EagerKernel::kDropout, EagerKernel::kCast};
// The profile key: "elementwise", "layer_norm", "rms_norm", "gelu",
// "gated_activation", "softmax", "dropout", "cast".
const char* EagerKernelName(EagerKernel k);

// One point of the attention kernels' efficiency against sequence length:
// at `seq` keys, the forward and backward efficiencies are `fwd` and `bwd`
// times the profile's (which hold at the length they were measured at).
struct AttentionSeqPoint {
  double seq = 0;
  double fwd = 1;
  double bwd = 1;
};

// How the GPU's SM clock follows its board power limit (sim/cost/power_state.h):
// watts above idle at the maximum clock while GEMMs, fused attention or
// memory-bound kernels run, how compute power and throughput scale with the
// clock, and the states the profile's rates were measured in: GEMMs back to
// back under reference_limit_w (so at the clock that limit allows them),
// attention at attention_reference_clock (of the maximum). Absent: every
// step runs at the profile's rates.
struct PowerModel {
  Sourced<double> board_limit_w;      // this GPU's power limit
  Sourced<double> reference_limit_w;  // the limit the GEMM efficiencies were measured under
  Sourced<double> attention_reference_clock;  // the clock ratio the attention efficiencies were measured at
  Sourced<double> idle_w;
  Sourced<double> gemm_w;
  Sourced<double> attention_w;
  Sourced<double> memory_w;
  Sourced<double> power_exponent;  // compute power ~ clock^power_exponent
  Sourced<double> rate_exponent;   // GEMM and attention throughput ~ clock^rate_exponent
};

// Calls f(key, field) for each of the power block's fields, in file order
// (parsing, writing and source listing share it).
template <typename Model, typename F>
void ForEachPowerField(Model& m, F f) {
  f("board_limit_w", m.board_limit_w);
  f("reference_limit_w", m.reference_limit_w);
  f("attention_reference_clock", m.attention_reference_clock);
  f("idle_w", m.idle_w);
  f("gemm_w", m.gemm_w);
  f("attention_w", m.attention_w);
  f("memory_w", m.memory_w);
  f("power_exponent", m.power_exponent);
  f("rate_exponent", m.rate_exponent);
}

struct ProfileConfig {
  std::string name;         // "h100-sxm-80gb"
  std::string gpu;          // human name, "NVIDIA H100 SXM5 80GB"
  ProfileKind kind = ProfileKind::kDatasheet;
  std::string provenance;   // who/what/when, free text (GPU, driver, date for measured)
  // A partial profile: a calibration that did not measure all it set out to
  // ("partial": true in the file, with a non-empty "missing" list; only in
  // measured and projected profiles).
  bool partial = false;
  std::vector<MissingMeasurement> missing;
  int gpus_used = 0;       // GPUs a calibration measured with; 0: not stated
  int gpus_requested = 0;  // GPUs it was asked to use (--gpus); 0: not stated

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
  // The project's own FlashAttention-2-style kernel (kernels/attention.cu),
  // as calibrate measured it on this GPU (attention.own_fwd_efficiency,
  // own_bwd_efficiency); absent in profiles calibrate did not write, where
  // the FlashAttention-2 rates stand in.
  std::optional<Sourced<double>> own_attention_fwd_efficiency;
  std::optional<Sourced<double>> own_attention_bwd_efficiency;
  // The FlashAttention-1 class (FlashAttention v1 and its Triton port, the
  // attention of 2022-23 frameworks), same units.
  Sourced<double> flash1_fwd_efficiency;
  Sourced<double> flash1_bwd_efficiency;
  // Attention efficiency against the key length, applied to every attention
  // kernel above: points sorted by seq, linear in log2(seq) between them,
  // the end values outside. Empty: no dependence.
  Sourced<std::vector<AttentionSeqPoint>> attention_seq_factors;
  // Eager (generic PyTorch) memory-bound kernels, per family: achieved
  // bandwidth over the device copy's, a fraction in (0, 1]. Plans with
  // unfused kernels (plan.kernels "eager") run their memory-bound work at
  // these fractions of the copy bandwidth.
  std::array<Sourced<double>, kNumEagerKernels> eager_kernels;
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
  std::optional<PowerModel> power;

  std::optional<FlopRate> Peak(Precision p) const;
  // attention_seq_factors at `seq` keys (1 when empty or seq <= 0).
  double AttentionSeqFactor(double seq, bool backward) const;
  double EagerEfficiency(EagerKernel k) const { return eager_kernels[static_cast<int>(k)].value; }
};

// Strict, like every input: besides unknown/missing keys and wrong units, a
// value that is not {"value": ..., "source": "..."} is an error ("every profile
// value must state its source"); curve sizes must be strictly increasing;
// efficiencies are fractions in (0, 1]; all five peak_flops keys are present
// (null for a precision the GPU lacks); "eager_kernels" has every family of
// EagerKernel, each a fraction. A partial profile's marker is checked
// too: "partial" is a bool, only in a measured or projected profile; "missing"
// is present exactly when partial is true, each entry {"section", "reason",
// "fields"} with every listed field a value of the profile whose source is a
// datasheet fallback; "gpus_used" and "gpus_requested" are positive integers.
ProfileConfig ParseProfile(const JsonNode& node);
ProfileConfig LoadProfileFile(const std::string& path);

// Every value of a profile as (field path, source): "sm_count",
// "peak_flops.bf16", "gemm.max_efficiency.fp8", "eager_kernels.softmax",
// "collectives.intra_node.ring"
// (a curve's source), in file order; absent optional values are left out.
std::vector<std::pair<std::string, std::string>> ProfileFieldSources(const ProfileConfig& p);
// The source of `field`, or nullopt when the profile has no such value.
std::optional<std::string> FieldSource(const ProfileConfig& p, const std::string& field);
// Whether `field` was measured on this profile's GPU: the profile is
// measured, the source begins with "measured", is not a datasheet fallback,
// and no missing entry lists the field. False for unknown fields.
bool IsMeasured(const ProfileConfig& p, const std::string& field);
// Fields whose source is a datasheet fallback, in file order.
std::vector<std::string> FallbackFields(const ProfileConfig& p);
// One line: "complete" or "partial: nccl (why: fields); gemm (why)".
std::string PartialSummary(const ProfileConfig& p);
// The profile in the file format, sources included; ParseProfile reads it back.
nlohmann::json ProfileToJson(const ProfileConfig& p);

}  // namespace stacksim::config

#endif  // STACKSIM_SIM_CONFIG_PROFILE_H_
