// Pipeline schedules: the order in which each pipeline rank runs the forward
// and backward passes of its micro-batches.
//
// A virtual stage is one model chunk on one pipeline rank; with v chunks per
// rank (interleaving) the model is cut into p*v virtual stages, chunk c of
// rank s being virtual stage c*p + s (Megatron-LM's layout, Narayanan et al.
// SC'21 §2.2.2). The schedule says only the order of work on each rank; the
// timing (bubbles included) comes from replaying it.
#ifndef STACKSIM_SIM_WORKLOAD_PIPELINE_SCHEDULE_H_
#define STACKSIM_SIM_WORKLOAD_PIPELINE_SCHEDULE_H_

#include <string>
#include <vector>

#include "sim/config/plan.h"

namespace stacksim::workload {

// kBackward is the whole backward of a chunk; zero-bubble schedules split it
// into kBackwardInput (B: activation gradients, what the previous stage
// waits for) and kWeight (W: the weight-gradient GEMMs, run later).
enum class Pass : uint8_t { kForward, kBackward, kBackwardInput, kWeight };

struct PipelineStep {
  Pass pass = Pass::kForward;
  int micro_batch = 0;
  int chunk = 0;  // model chunk on this rank, 0..chunks()-1
  // This step and the next one run as one overlapped forward-backward pair
  // (their expert all-to-alls hide behind the other's compute): DualPipe's
  // pairs, and 1F1B's steady state under PlanConfig::moe_a2a_overlap.
  bool overlap_with_next = false;

  bool forward() const { return pass == Pass::kForward; }
  bool operator==(const PipelineStep&) const = default;
};

// Where the pieces of the model live. The layer stack is cut into stages()
// consecutive model stages; each pipeline rank holds chunks() of them.
// Interleaved: stage c*p + r is chunk c of rank r (v chunks). DualPipe: two
// copies of a p-stage model run in opposite directions; chunk 0 of rank r is
// stage r of the copy fed at rank 0, chunk 1 stage p-1-r of the copy fed at
// rank p-1; the first half of the micro-batches take the first copy.
struct PipelineLayout {
  config::PipelineScheduleKind kind = config::PipelineScheduleKind::kOneFOneB;
  int p = 1, v = 1, m = 1;
  int group = 0;             // interleaved: micro-batches per chunk group (PlanConfig::microbatch_group; 0: p)
  bool a2a_overlap = false;  // PlanConfig::moe_a2a_overlap
  bool single_round_all_forwards = false;  // PlanConfig::single_round_all_forwards

  static PipelineLayout Of(const config::PlanConfig& plan);
  int chunks() const;
  int stages() const;
  bool dual() const { return kind == config::PipelineScheduleKind::kDualPipe; }
  // Forward and backward chunks run in overlapped pairs (DualPipe, or the
  // 1F1B all-to-all overlap): expert all-to-alls go to their own stream.
  bool paired() const { return dual() || a2a_overlap; }
  // Direction of a micro-batch (DualPipe; 0 otherwise).
  int Direction(int micro_batch) const { return dual() && micro_batch >= m / 2 ? 1 : 0; }
  int Stage(int rank, int chunk) const;
  int Rank(int stage, int micro_batch) const;
  int Chunk(int stage, int micro_batch) const;
  // The model stages rank `rank` holds (one per chunk).
  std::vector<int> StagesOfRank(int rank) const;
};

// REQUIRES: p >= 1, v >= 1, m >= 1; for kInterleaved, m % p == 0 (Megatron's
// rule); for kDualPipe, p even and m even with m >= 2p (ValidatePlan checks).
// Returns, per pipeline rank, the ordered steps (each micro-batch's forward and
// backward of each chunk exactly once; split schedules give B and W once each).
// a2a_overlap (1F1B and interleaved only, else std::invalid_argument): one
// more warm-up forward per rank and every steady-state forward-backward pair
// marked overlap_with_next.
// group (interleaved only; 0: p): micro-batches that run a chunk before the
// next chunk starts, Megatron-Core's microbatch_group_size_per_vp_stage
// (schedules.py get_schedule_table: groups of `group` micro-batches, chunk
// by chunk, the last group what remains; warm-up (p-1-rank) x 2 +
// (v-1) x group).
// single_round_all_forwards (interleaved only): with m == p and the default
// group, every forward first (Megatron-LM through Megatron-Core 0.9).
std::vector<std::vector<PipelineStep>> BuildSchedule(config::PipelineScheduleKind kind, int p, int v, int m,
                                                     bool a2a_overlap = false, int group = 0,
                                                     bool single_round_all_forwards = false);
std::vector<std::vector<PipelineStep>> BuildSchedule(const PipelineLayout& layout);

// The most chunk forwards whose activations are still held, over the
// schedule, counted in chunks (divide by chunks() for whole micro-batches). A
// chunk's activations are released by its backward, or by its W pass when the
// backward is split (the W pass still needs the GEMM inputs: conservative).
int PeakInFlightChunks(const std::vector<PipelineStep>& steps);

}  // namespace stacksim::workload

#endif  // STACKSIM_SIM_WORKLOAD_PIPELINE_SCHEDULE_H_
