// The linear projections of a layer under LoRA / QLoRA fine-tuning
// (config::FinetuneConfig; Hu et al. 2021, arXiv:2106.09685; Dettmers et
// al. 2023, arXiv:2305.14314): what changes in a layer's op list when its
// base weights are frozen.
//
// - Frozen weights get no weight-gradient GEMM; the data-gradient GEMMs still
//   run, since earlier layers' adapters need the activation gradient.
// - QLoRA keeps the frozen linear weights in NF4 and, as bitsandbytes'
//   MatMul4Bit does (bitsandbytes/autograd/_functions.py: the forward calls
//   F.dequantize_4bit before F.linear and the backward dequantizes again for
//   grad_A; functional.py dequantize_4bit first dequantizes the
//   double-quantized absmax), dequantizes them to 16-bit before every GEMM
//   that reads them: a memory-bound op reading the 4-bit weights and block
//   constants and writing the 16-bit copy.
// - Each targeted projection W (d_in x d_out) gets A (d_in x r) and B (r x
//   d_out), run as PEFT's LoRA layer does (peft/tuners/lora/layer.py
//   Linear.forward: result + lora_B(lora_A(x)) * scaling): two skinny GEMMs
//   and a scale-and-add forward; four GEMMs (dB, dh, dA, dx) and the
//   gradient's scale-and-accumulate backward. Under TP, a column-parallel
//   projection's A is replicated and B split over its outputs; a row-parallel
//   one's A is split over its inputs and B replicated, its partial product
//   summed by the projection's own all-reduce.
//
// Sizes in elements, as op_builders.h.
#ifndef STACKSIM_SIM_WORKLOAD_LORA_H_
#define STACKSIM_SIM_WORKLOAD_LORA_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sim/config/model.h"
#include "sim/config/plan.h"
#include "sim/workload/layer_shape.h"
#include "sim/workload/op.h"

namespace stacksim::workload {

// The linear projections of a dense layer with standard attention, as the
// workload builds them: QKV (column-parallel, holding the q, k and v
// targets), the attention output (row-parallel, o), the MLP's first linear
// (column-parallel: gate and up) and its second (row-parallel, down).
enum class Projection { kQkv, kAttnOut, kMlpIn, kMlpOut };

// The forward of a linear y = x W of `projection` (x: m x k, W: k x n on
// this rank): QLoRA's dequantization, the GEMM, then the projection's
// adapters.
void LinearForward(std::vector<Op>& ops, const std::string& name, Projection projection, int64_t m, int64_t n,
                   int64_t k, const LayerShape& s);
// Its backward: GemmBackward when the weights train; with frozen weights the
// data gradient only (after QLoRA's dequantization) and the adapters'
// backward. wait_for: the op the weight gradients need (the SP re-gather of x).
void LinearBackward(std::vector<Op>& ops, const std::string& name, Projection projection, int64_t m, int64_t n,
                    int64_t k, const LayerShape& s, int wait_for = -1);
// Whether the backward needs the projection's input x (the SP re-gather):
// for its weight gradient, or (frozen weights) for its adapters' dA.
bool LinearBackwardNeedsInput(Projection projection, const LayerShape& s);

// Adapter parameters of one dense layer on one TP rank (the replicated
// factor counted whole). 0 without LoRA.
double LayerAdapterParameters(const config::ModelConfig& model, const config::PlanConfig& plan);
// Parameters one rank trains per layer: the adapters under LoRA / QLoRA,
// else the layer's parameters split over tp (dense layers).
double LayerTrainableParameters(const config::ModelConfig& model, const config::PlanConfig& plan);
// The frozen base weights of one dense layer on one TP rank, in bytes: the
// linear weights (NF4 under QLoRA) and the norms (16-bit). 0 without LoRA.
double LayerFrozenBytes(const config::ModelConfig& model, const config::PlanConfig& plan, double element_bytes);
// The largest frozen linear weight of a layer on one TP rank, in elements
// (QLoRA holds one dequantized 16-bit copy of it at a time).
double LargestLinearElements(const config::ModelConfig& model, const config::PlanConfig& plan);

}  // namespace stacksim::workload

#endif  // STACKSIM_SIM_WORKLOAD_LORA_H_
