// Gradient reduction bookkeeping of the training step: how many gradient
// bytes each layer hands to the data-parallel reduction, and the buckets
// that collect them (Megatron-LM's DDP and PyTorch DDP reduce gradients in
// buckets: a bucket is reduced as soon as it is full when the reduction
// overlaps the backward, else everything once after it). Bytes throughout;
// the generator (training_step.cc) emits the collectives.
#ifndef STACKSIM_SIM_WORKLOAD_GRADIENT_BUCKETS_H_
#define STACKSIM_SIM_WORKLOAD_GRADIENT_BUCKETS_H_

#include <vector>

#include "sim/config/scenario.h"
#include "sim/util/units.h"

namespace stacksim::workload {

// Per layer kind ([0] dense, [1] MoE): the gradient bytes of one layer on one
// rank. The non-expert part (split over TP) is reduced over the data-parallel
// group, the routed experts (split over EP) over the expert-data-parallel one;
// in plan.grad_reduce_precision (Megatron's fp32 main gradients by default; the
// compute dtype under ZeRO-3 unless a framework or the plan says otherwise).
struct GradientSizes {
  // Per layer kind (config::LayerKind): the layer's gradients outside and
  // inside its routed experts, on one rank.
  Bytes dense[config::kNumLayerKinds];
  Bytes expert[config::kNumLayerKinds];
  Bytes fsdp_layer;  // ZeRO-3: one dense layer's gradients, reduce-scattered per micro-batch
};
GradientSizes ComputeGradientSizes(const config::ScenarioConfig& s);

// One bucket per simulated rank, dense and expert gradients side by side.
class GradientBuckets {
 public:
  GradientBuckets() = default;
  // `overlap`: buckets are reduced as soon as they hold `bucket_size` bytes.
  GradientBuckets(int ranks, Bytes bucket_size, bool overlap);

  // Adds gradients; true when the bucket is now full and must be reduced.
  bool Add(int rank, Bytes dense, Bytes expert);

  struct Pending {
    double dense = 0;   // bytes
    double expert = 0;  // bytes
  };
  // The rank's pending gradients; empties its bucket.
  Pending Take(int rank);

 private:
  std::vector<Pending> pending_;
  double bucket_size_ = 0;
  bool overlap_ = false;
};

}  // namespace stacksim::workload

#endif  // STACKSIM_SIM_WORKLOAD_GRADIENT_BUCKETS_H_
