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
    for (Bytes& b : out.dense) b = adapters;
    out.fsdp_layer = adapters;
    return out;
  }
  for (int kind = 0; kind < config::kNumLayerKinds; ++kind) {
    // The kind's first layer stands for all of its layers; a plain
    // transformer without dense (or without MoE) layers gets a dense
    // layer's sizes there.
    int64_t first = 0;
    while (first < s.model.num_layers && static_cast<int>(s.model.LayerKindAt(first)) != kind) ++first;
    double all = 0, expert = 0;
    if (first < s.model.num_layers) {
      all = static_cast<double>(s.model.LayerParameterCount(first));
      if (s.model.IsMoeLayer(first)) expert = static_cast<double>(s.model.ExpertParameterCount());
    } else if (kind == 0 || (kind == 1 && !s.model.is_moe())) {
      all = static_cast<double>(s.model.LayerParameterCount());
    } else {
      continue;
    }
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
