#include "sim/memory/reserve.h"

#include <algorithm>
#include <filesystem>
#include <mutex>

#include <fmt/format.h>

#include "sim/config/fitted_constants.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace stacksim::memory {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// The CUDA context: PyTorch's first CUDA call creates it, and it is counted
// by neither allocated nor reserved bytes. 723 MiB for a bare PyTorch
// process with eagerly loaded modules (discuss.pytorch.org/t/73021, "What
// is the reason for pytorch's GPU memory floor"); CUDA 12.2+ loads modules
// lazily by default (CUDA_MODULE_LOADING=LAZY, CUDA programming guide), so
// half a GiB is taken.
constexpr double kCudaContextBytes = 512 * kMiB;

// NCCL buffers: NCCL_BUFFSIZE, 4 MiB by default (NCCL docs, environment
// variables), per channel and per receiving connection; ring and tree give
// each rank two per channel. 16 channels: what NCCL's topology search builds
// on an 8-GPU NVSwitch node (NCCL_DEBUG=INFO "16 coll channels" on DGX
// H100; NCCL_MAX_NCHANNELS caps it at 32). One communicator per parallel
// group a rank belongs to (tp, cp, dp x cp, and pp's point-to-point pair).
constexpr double kNcclBuffSize = 4 * kMiB;
constexpr int kNcclChannels = 16;
constexpr int kNcclConnectionsPerChannel = 2;

// GEMM workspaces: cuBLAS recommends 32 MiB on Hopper and later, 4 MiB
// before (cuBLAS docs, cublasSetWorkspace); Transformer Engine allocates
// the same per stream (get_cublas_workspace_size_bytes: 32 MiB on sm90+).
// Two streams run GEMMs in a step (compute, and the overlapped
// communication's side stream or the weight-gradient stream).
constexpr int kGemmStreams = 2;

bool HopperOrLater(const config::ProfileConfig& p) {
  // The GPUs with FP8 tensor cores (Hopper, Ada, Blackwell) are sm89+.
  return p.peak_flops[static_cast<int>(config::Precision::kFp8)].has_value();
}

}  // namespace

RuntimeParts RuntimeMemory(const config::ScenarioConfig& s) {
  const auto& p = s.plan;
  int communicators = 0;
  if (p.tp > 1) ++communicators;
  if (p.cp > 1) ++communicators;
  if (p.dp * p.cp > 1) ++communicators;
  if (p.pp > 1) ++communicators;
  RuntimeParts r;
  r.cuda_context = Bytes{kCudaContextBytes};
  r.nccl_buffers = Bytes{communicators * kNcclChannels * kNcclConnectionsPerChannel * kNcclBuffSize};
  r.workspaces = Bytes{kGemmStreams * (HopperOrLater(s.profile) ? 32 : 4) * kMiB};
  return r;
}

AllocatorReserve LoadAllocatorReserve(const std::string& path) {
  AllocatorReserve r;
  r.source = *config::ReadFittedConstant(path, "allocator_cache_fraction", true, [&](JsonObject& c) {
    r.cache_fraction = c.Required("value").NonNegativeNumber();
    c.Ignore({"fitted_on", "what", "leave_one_source_out"});
  });
  return r;
}

const AllocatorReserve& FittedAllocatorReserve() {
  static std::once_flag once;
  static AllocatorReserve fitted;
  std::call_once(once, [] {
    const std::string path = config::FittedConstantsPath();
    if (std::filesystem::exists(path)) fitted = LoadAllocatorReserve(path);
  });
  return fitted;
}

Reserve ReserveFor(const config::ScenarioConfig& s, Bytes allocated_peak, const AllocatorReserve& fitted) {
  const RuntimeParts rt = RuntimeMemory(s);
  Reserve r;
  r.cuda_context = rt.cuda_context;
  r.nccl_buffers = rt.nccl_buffers;
  r.allocator_cache = ReservedPeak(s, allocated_peak, fitted) - allocated_peak;
  if (r.allocator_cache.value < 0) r.allocator_cache = Bytes{0};
  return r;
}

Reserve ReserveFor(const config::ScenarioConfig& s, Bytes allocated_peak) {
  return ReserveFor(s, allocated_peak, FittedAllocatorReserve());
}

Bytes ReservedPeak(const config::ScenarioConfig& s, Bytes allocated_peak, const AllocatorReserve& fitted) {
  const Bytes wanted = allocated_peak * (1.0 + fitted.cache_fraction);
  const Bytes room = s.profile.hbm_capacity.value - RuntimeMemory(s).outside_allocator();
  return Bytes{std::max(allocated_peak.value, std::min(wanted.value, room.value))};
}

PlanReserve PlanningReserve(const config::ScenarioConfig& s, Bytes footprint_peak, const HeadroomPolicy& policy,
                            const AllocatorReserve& fitted) {
  PlanReserve r;
  if (policy.fixed) {
    r.required = *policy.fixed;
    r.fixed = true;
    return r;
  }
  const Bytes allocated = footprint_peak - RuntimeMemory(s).outside_allocator();
  r.allocator_cache = Bytes{std::max(0.0, allocated.value) * fitted.cache_fraction};
  r.required = Bytes{std::max(kDefaultMinHeadroomBytes, r.allocator_cache.value)};
  return r;
}

PlanReserve PlanningReserve(const config::ScenarioConfig& s, Bytes footprint_peak, const HeadroomPolicy& policy) {
  return PlanningReserve(s, footprint_peak, policy, FittedAllocatorReserve());
}

std::string PlanningReserveBasis(const HeadroomPolicy& policy, const AllocatorReserve& fitted) {
  if (policy.fixed) return fmt::format("{:.2f} GiB of HBM kept free per GPU (--min-headroom)", policy.fixed->value / kGiB);
  // The source names the file under the data root: keep it relative, so the
  // report reads the same in every checkout.
  std::string source = fitted.source;
  const std::string root = config::DataRoot() + "/";
  if (source.rfind(root, 0) == 0) source = source.substr(root.size());
  if (const size_t paren = source.find(" ("); paren != std::string::npos) source = source.substr(0, paren);
  return fmt::format(
      "max({:.0f} GiB, allocator cache = {:.2f}% of the allocated peak, fitted in {}) of HBM kept free per GPU; "
      "CUDA context, NCCL buffers and GEMM workspaces are in the peak",
      kDefaultMinHeadroomBytes / kGiB, 100.0 * fitted.cache_fraction, source.empty() ? "no file" : source);
}

std::string PlanningReserveBasis(const HeadroomPolicy& policy) {
  return PlanningReserveBasis(policy, FittedAllocatorReserve());
}

std::string ReserveWarning(const config::ScenarioConfig& s, Bytes footprint_peak, const HeadroomPolicy& policy) {
  const Bytes capacity = s.profile.hbm_capacity.value;
  if (footprint_peak > capacity) return "";
  const PlanReserve r = PlanningReserve(s, footprint_peak, policy);
  const Bytes free = capacity - footprint_peak;
  if (free >= r.required) return "";
  return fmt::format(
      "memory: the peak of {:.2f} GiB leaves {:.2f} GiB of the {:.1f} GiB HBM free, inside the {:.2f} GiB reserve "
      "that search keeps (allocator cache and fragmentation): the run may fail with out-of-memory errors or slow "
      "down on allocator retries",
      footprint_peak.value / kGiB, free.value / kGiB, capacity.value / kGiB, r.required.value / kGiB);
}

}  // namespace stacksim::memory
