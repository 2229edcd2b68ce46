#include "sim/workload/stage_layers.h"

#include "sim/workload/lora.h"
#include "sim/workload/pipeline_schedule.h"

namespace stacksim::workload {

std::vector<int> LayersPerVirtualStage(int layers, int pp, int vp) {
  const int n = pp * vp;
  const int per = (layers + n - 1) / n;
  std::vector<int> out(n, per);
  int extra = per * n - layers;
  // Take the surplus from the ends first: they also hold embedding and head.
  for (int i = 0; extra > 0; i = (i + 1) % ((n + 1) / 2)) {
    for (int idx : {i, n - 1 - i}) {
      if (extra > 0 && out[idx] > 0) {
        --out[idx];
        --extra;
      }
      if (idx == n - 1 - idx) break;
    }
  }
  return out;
}

int64_t LayerParametersPerGpu(const config::ModelConfig& model, const config::PlanConfig& plan, int64_t layer) {
  int64_t expert = model.IsMoeLayer(layer) ? model.ExpertParameterCount() : 0;
  return (model.LayerParameterCount(layer) - expert) / plan.tp + expert / plan.ExpertShards();
}

int64_t StageParameters(const config::ScenarioConfig& s, int stage) {
  const auto& plan = s.plan;
  const PipelineLayout layout = PipelineLayout::Of(plan);
  auto layers = LayersPerVirtualStage(static_cast<int>(s.model.PipelineLayerCount()), plan.pp, layout.v);
  std::vector<int> first(layers.size(), 0);
  for (size_t i = 1; i < layers.size(); ++i) first[i] = first[i - 1] + layers[i - 1];
  const int64_t embedding = s.model.vocab_size * s.model.hidden_size / plan.tp;
  const int last = layout.stages() - 1;
  int64_t params = 0;
  for (int vs : layout.StagesOfRank(stage)) {
    for (int l = first[vs]; l < first[vs] + layers[vs]; ++l) {
      params += LayerParametersPerGpu(s.model, plan, l);
    }
    if (vs == 0) {
      params += embedding + (s.model.learned_position_embeddings ? s.model.max_position_embeddings * s.model.hidden_size : 0);
    }
    if (vs == last) {
      // The output head: its own weights, or the tied copy when it lives on another stage.
      if (!s.model.tie_word_embeddings || last > 0) params += embedding;
      params += 2 * s.model.hidden_size;  // final norm
      // Each MTP module's projection (column-parallel) and its three norms;
      // its layer is counted with the layers above.
      params += s.model.mtp_modules *
                (2 * s.model.hidden_size * s.model.hidden_size / plan.tp + 3 * s.model.NormParameterCount());
    }
  }
  return params;
}

int64_t StageExpertParameters(const config::ScenarioConfig& s, int stage) {
  if (!s.model.is_moe()) return 0;
  const auto& plan = s.plan;
  const PipelineLayout layout = PipelineLayout::Of(plan);
  auto layers = LayersPerVirtualStage(static_cast<int>(s.model.PipelineLayerCount()), plan.pp, layout.v);
  std::vector<int> first(layers.size(), 0);
  for (size_t i = 1; i < layers.size(); ++i) first[i] = first[i - 1] + layers[i - 1];
  int64_t params = 0;
  for (int vs : layout.StagesOfRank(stage)) {
    for (int l = first[vs]; l < first[vs] + layers[vs]; ++l) {
      if (s.model.IsMoeLayer(l)) params += s.model.ExpertParameterCount() / plan.ExpertShards();
    }
  }
  return params;
}

namespace {

// Transformer layers held by one GPU of `stage` (all its virtual stages).
int StageLayerCount(const config::ScenarioConfig& s, int stage) {
  const PipelineLayout layout = PipelineLayout::Of(s.plan);
  const auto layers = LayersPerVirtualStage(static_cast<int>(s.model.PipelineLayerCount()), s.plan.pp, layout.v);
  int n = 0;
  for (int vs : layout.StagesOfRank(stage)) n += layers[vs];
  return n;
}

}  // namespace

double StageTrainableParameters(const config::ScenarioConfig& s, int stage) {
  if (!s.plan.finetune.frozen_base()) return static_cast<double>(StageParameters(s, stage));
  return StageLayerCount(s, stage) * LayerAdapterParameters(s.model, s.plan);
}

double StageFrozenBytes(const config::ScenarioConfig& s, int stage, double element_bytes) {
  if (!s.plan.finetune.frozen_base()) return 0;
  const int n = StageLayerCount(s, stage);
  // StageParameters counts dense layers as LayerParameterCount / tp each.
  const double rest = static_cast<double>(StageParameters(s, stage) - n * (s.model.LayerParameterCount() / s.plan.tp));
  return n * LayerFrozenBytes(s.model, s.plan, element_bytes) + rest * element_bytes;
}

}  // namespace stacksim::workload
