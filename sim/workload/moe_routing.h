// Routing statistics of a mixture-of-experts layer: how many distinct EP
// ranks (or nodes) a token's experts fall on, how much busier the busiest EP
// rank is than the mean, and what share of tokens a capacity limit drops.
//
// Pure functions of the model and plan; dimensionless results (counts of
// units, ratios, fractions). The layer's ops (moe.h) and shape
// (layer_shape.h) use them.
#ifndef STACKSIM_SIM_WORKLOAD_MOE_ROUTING_H_
#define STACKSIM_SIM_WORKLOAD_MOE_ROUTING_H_

#include <cstdint>

#include "sim/config/model.h"
#include "sim/config/plan.h"

namespace stacksim::workload {

// Expected number of distinct units a token's top_k experts fall on, when the
// experts are split into `units` equal contiguous blocks (EP ranks, or EP
// nodes) and routing is uniform: top_k distinct experts drawn at random,
// within groups_per_token of `groups` equal expert groups drawn at random
// when routing is group-limited (groups > 0; DeepSeek-V3 §2.1.2).
// REQUIRES: units and groups (if > 0) divide experts.
double ExpectedDistinctUnits(int64_t experts, int64_t top_k, int64_t units, int64_t groups = 0,
                             int64_t groups_per_token = 0);

// Tokens on the busiest EP rank over the mean tokens per EP rank, for the
// plan's routing (uniform: 1; Zipf or a histogram with Megatron's contiguous
// expert placement: max over ranks of the rank's share x ep). With a capacity
// factor every expert's buffer is padded to capacity: the factor itself.
double MoeLoadFactor(const config::ModelConfig& model, const config::PlanConfig& plan);
// Fraction of routed tokens dropped by the capacity limit (0 when dropless).
double MoeDroppedFraction(const config::ModelConfig& model, const config::PlanConfig& plan);

}  // namespace stacksim::workload

#endif  // STACKSIM_SIM_WORKLOAD_MOE_ROUTING_H_
