// The memory a training process holds beyond the tensors it allocates, and
// how much of the GPU's capacity the allocated peak may use.
//
// PyTorch measures two peaks (torch.cuda.memory_stats): "allocated" (live
// tensors, including the library workspaces allocated through the caching
// allocator) and "reserved" (the segments the caching allocator holds from
// cudaMalloc: allocated plus its cache and fragmentation). Neither counts
// the CUDA context or NCCL's own buffers, which NCCL allocates itself.
// EstimateMemory's StageFootprint::other holds the sourced parts below
// (RuntimeParts); the allocator's cache is one fitted fraction of the
// allocated peak (validation/fitted_constants.json, fitted by
// `stacksim validate-memory --fit-reserve`).
//
// Units: bytes. Every constant cites its source beside it (reserve.cc).
#ifndef STACKSIM_SIM_MEMORY_RESERVE_H_
#define STACKSIM_SIM_MEMORY_RESERVE_H_

#include <optional>
#include <string>

#include "sim/config/scenario.h"
#include "sim/util/units.h"

namespace stacksim::memory {

// Memory not tied to the model, per GPU. `workspaces` (cuBLAS and Transformer
// Engine GEMM workspaces) go through PyTorch's caching allocator and count in
// the allocated peak; the CUDA context and NCCL buffers do not.
struct RuntimeParts {
  Bytes cuda_context;
  Bytes nccl_buffers;
  Bytes workspaces;
  Bytes allocated() const { return workspaces; }
  Bytes outside_allocator() const { return cuda_context + nccl_buffers; }
  Bytes total() const { return cuda_context + nccl_buffers + workspaces; }
};
RuntimeParts RuntimeMemory(const config::ScenarioConfig& s);

// The caching allocator's cache above the allocated peak, as a fraction of
// the allocated peak: the one constant fitted on end-to-end measurements.
struct AllocatorReserve {
  double cache_fraction = 0;
  std::string source;  // the file, the command that fitted it and the date
};
// Reads {"allocator_cache_fraction": {"value": f, ...}} from a
// stacksim.fitted_constants/1 file. Throws InputError naming file and key.
AllocatorReserve LoadAllocatorReserve(const std::string& path);
// validation/fitted_constants.json under the data root (read once).
const AllocatorReserve& FittedAllocatorReserve();

// What one GPU needs beyond its allocated peak: the allocator's cache, the
// CUDA context and NCCL's buffers. A plan fits when
// allocated peak + Reserve(...).total() <= capacity.
struct Reserve {
  Bytes allocator_cache;
  Bytes cuda_context;
  Bytes nccl_buffers;
  Bytes total() const { return allocator_cache + cuda_context + nccl_buffers; }
};
Reserve ReserveFor(const config::ScenarioConfig& s, Bytes allocated_peak, const AllocatorReserve& fitted);
Reserve ReserveFor(const config::ScenarioConfig& s, Bytes allocated_peak);  // with FittedAllocatorReserve()

// The caching allocator's reserved peak: allocated x (1 + cache fraction),
// but never more than the GPU leaves it (capacity less the CUDA context and
// NCCL buffers): on a failed cudaMalloc the allocator frees its cached
// blocks and retries (PyTorch CUDA semantics, "Memory management"), so near
// capacity the cache is what is left.
Bytes ReservedPeak(const config::ScenarioConfig& s, Bytes allocated_peak, const AllocatorReserve& fitted);

// The headroom that search, compare and serve-search keep below HBM capacity
// for every plan they rank or recommend, and that simulate warns about. The
// footprint (EstimateMemory's stage total) already holds the CUDA context,
// NCCL buffers and GEMM workspaces (RuntimeMemory); what it does not hold is
// the caching allocator's cache and fragmentation, the fitted fraction of the
// allocated peak. By default a plan keeps that cache free, and never less
// than kDefaultMinHeadroom; HeadroomPolicy::fixed (--min-headroom) replaces
// the default with a fixed amount (0: fill HBM to the byte, as before).
inline constexpr double kDefaultMinHeadroomBytes = kGiB;
struct HeadroomPolicy {
  std::optional<Bytes> fixed;
};
struct PlanReserve {
  Bytes required;          // what must stay free below capacity
  Bytes allocator_cache;   // fitted fraction x allocated peak (0 when fixed)
  bool fixed = false;
};
// `footprint_peak`: the fullest stage's total (StageFootprint::total()).
PlanReserve PlanningReserve(const config::ScenarioConfig& s, Bytes footprint_peak, const HeadroomPolicy& policy,
                            const AllocatorReserve& fitted);
PlanReserve PlanningReserve(const config::ScenarioConfig& s, Bytes footprint_peak, const HeadroomPolicy& policy = {});
// One line for reports: "max(1 GiB, allocator cache = 8.55% of the allocated
// peak, fitted: validation/fitted_constants.json ...)" or "--min-headroom 2 GiB".
std::string PlanningReserveBasis(const HeadroomPolicy& policy, const AllocatorReserve& fitted);
std::string PlanningReserveBasis(const HeadroomPolicy& policy = {});
// simulate's warning when the fullest stage's footprint fits HBM but leaves
// less than the planning reserve free; "" when it keeps the reserve (or does
// not fit at all: that is out of memory, not a warning).
std::string ReserveWarning(const config::ScenarioConfig& s, Bytes footprint_peak, const HeadroomPolicy& policy = {});

}  // namespace stacksim::memory

#endif  // STACKSIM_SIM_MEMORY_RESERVE_H_
