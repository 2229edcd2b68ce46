#include "sim/workload/gradient_buckets.h"

#include "sim/workload/lora.h"

namespace stacksim::workload {

GradientSizes ComputeGradientSizes(const config::ScenarioConfig& s) {
  const config::PlanConfig& plan = s.plan;
  GradientSizes out;
  const config::Precision precision = plan.GradReducePrecision();
  const double layer_params = static_cast<double>(s.model.LayerParameterCount()) / plan.tp;
  out.fsdp_layer = Bytes{layer_params * config::PrecisionBytes(precision)};
  if (plan.finetune.frozen_base()) {
    // LoRA / QLoRA: only the adapters have gradients (MoE models are refused).
    const Bytes adapters{LayerAdapterParameters(s.model, plan) * config::PrecisionBytes(precision)};
    out.fsdp_layer = out.dense[0] = out.dense[1] = adapters;
    return out;
  }
  for (int kind = 0; kind < 2; ++kind) {
    double expert = kind == 1 && s.model.is_moe() ? static_cast<double>(s.model.ExpertParameterCount()) : 0.0;
    int64_t first_moe = 0;
    while (first_moe < s.model.num_layers - 1 && !s.model.IsMoeLayer(first_moe)) ++first_moe;
    double all =
        static_cast<double>(kind == 1 ? s.model.LayerParameterCount(first_moe) : s.model.LayerParameterCount());
    out.dense[kind] = Bytes{(all - expert) / plan.tp * config::PrecisionBytes(precision)};
    out.expert[kind] = Bytes{expert / plan.ExpertShards() * config::PrecisionBytes(precision)};
  }
  return out;
}

GradientBuckets::GradientBuckets(int ranks, Bytes bucket_size, bool overlap)
    : pending_(ranks), bucket_size_(bucket_size.value), overlap_(overlap) {}

bool GradientBuckets::Add(int rank, Bytes dense, Bytes expert) {
  Pending& p = pending_[rank];
  p.expert += expert.value;
  p.dense += dense.value;
  return overlap_ && p.dense + p.expert >= bucket_size_;
}

GradientBuckets::Pending GradientBuckets::Take(int rank) {
  Pending p = pending_[rank];
  pending_[rank] = Pending{};
  return p;
}

}  // namespace stacksim::workload
