// The shapes of calibrate's step check (docs/calibrate.md, "Step check"):
// one transformer layer's forward and backward for one micro-batch on one GPU
// of a tensor-parallel group (its slice of the layer, no collectives), plus
// the optimizer update of that slice's parameters. The harness builds and
// times them (calibrate/harness/step_check_step.cc); `stacksim calibrate`
// predicts the same steps with the simulator's cost model and joins the two
// (sim/stepcheck/). Plain C++, no CUDA: both sides read this one list.
//
// Widths are the whole model's, copied from the model files the prediction
// reads (models/<model>.json, each citing its Hugging Face config.json); the
// prediction checks that they still agree. Sizes in elements.
#ifndef STACKSIM_CALIBRATE_FIT_STEP_SHAPES_H_
#define STACKSIM_CALIBRATE_FIT_STEP_SHAPES_H_

#include <cstdint>
#include <string>
#include <vector>

namespace stacksim::calibrate {

struct StepShape {
  std::string model;         // models/<model>.json
  int tp = 1;                // tensor-parallel group; the GPU runs 1/tp of heads and FFN width
  int64_t seq = 0;           // tokens per sequence
  int64_t micro_batch = 1;   // sequences
  int64_t hidden = 0;
  int64_t ffn = 0;           // dense MLP width per gated half (0 for a MoE layer)
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  int64_t experts = 0;       // routed experts (0: dense layer); all on this GPU (ep 1)
  int64_t top_k = 0;
  int64_t expert_ffn = 0;    // per gated half

  bool moe() const { return experts > 0; }
  // "llama3-8b tp=2 seq=8192 mb=1": the key of step_measured.csv and step_check.csv.
  std::string Name() const;
  // Tokens each expert computes under exactly balanced routing (the harness
  // routes that way): micro_batch x seq x top_k / experts, rounded up.
  int64_t TokensPerExpert() const;
};

// Llama-3-8B and Llama-3-70B layers at tp 1, 2, 4, 8 and seq 2048, 8192, then
// one Mixtral-8x7B MoE layer (8 experts, top 2) at seq 4096: 17 shapes.
const std::vector<StepShape>& StepShapes();

}  // namespace stacksim::calibrate

#endif  // STACKSIM_CALIBRATE_FIT_STEP_SHAPES_H_
