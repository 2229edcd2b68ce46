// The building blocks every part of a layer's op list is made of: GEMMs
// (2mnk FLOPs; the 16-bit ones FP8 training keeps), memory-bound kernels
// (each input read once and each output written once; fused, or as generic
// eager kernels at the profile's efficiency for their family), FP8 casts
// (Transformer Engine, delayed scaling), tensor-parallel collectives (the
// all-reduce after a row-parallel GEMM, the SP gather before a
// column-parallel one), norms, residual adds, and the data- and
// weight-gradient GEMMs of a backward.
//
// Shapes follow Megatron-LM's tensor parallelism (Shoeybi et al. 2019) and
// sequence parallelism (Korthikanti et al. 2022). Sizes are elements; byte
// counts are doubles of bytes (Bytes in the ops they build).
#ifndef STACKSIM_SIM_WORKLOAD_OP_BUILDERS_H_
#define STACKSIM_SIM_WORKLOAD_OP_BUILDERS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sim/workload/layer_shape.h"
#include "sim/workload/op.h"

namespace stacksim::workload {

// A GEMM y = x W of an m x k by k x n product, `batch` of them.
Op Gemm(const std::string& name, int64_t m, int64_t n, int64_t k, int64_t batch, const LayerShape& s);
// The shape with FP8 training replaced by bf16: Transformer Engine runs only
// the linear layers in FP8 (attention, router and logits stay bf16).
LayerShape AsBf16(const LayerShape& s);
// A GEMM that stays 16-bit under FP8 training.
Op Gemm16(const std::string& name, int64_t m, int64_t n, int64_t k, int64_t batch, const LayerShape& s);

// A memory-bound kernel moving `bytes` (as a fused kernel would). With eager
// kernels the same work runs as `eager_passes` times the bytes in
// `eager_kernels` generic kernels of the given family, at the shape's eager
// efficiency for it.
Op Memory(const std::string& name, double bytes, const LayerShape& s, int kernels = 1,
          config::EagerKernel kind = config::EagerKernel::kElementwise, double eager_passes = 1.0,
          int eager_kernels = 0);

// FP8 casting: a memory-bound kernel reads `elements` 16-bit values and
// writes them as FP8, recording the amax on the way (3 bytes per element),
// or the FP8 copy and its transpose under Transformer Engine's casts (4;
// plan.fp8_casts). No-op unless training in FP8.
void AddCast(std::vector<Op>& ops, const std::string& name, double elements, const LayerShape& s);
// FP8 casts before a linear GEMM y = x W (x: m x k, W: k x n, `batch` of
// them): the weight (each micro-batch, or on the step's first one only under
// Transformer Engine's weight cache: Op::once_per_step), and the input unless
// the fused norm before it already wrote it in FP8 (TE's LayerNormLinear).
void AddForwardCasts(std::vector<Op>& ops, const std::string& name, int64_t m, int64_t n, int64_t k, int64_t batch,
                     bool input_is_fp8, const LayerShape& s);
// Under Transformer Engine's FP8 casts (plan.fp8_casts): the transpose of a
// linear layer's FP8 input that the fused norm wrote (LayerNormLinear), for
// the weight gradient: 1 + 1 bytes an element; nothing otherwise.
void AddFp8InputTranspose(std::vector<Op>& ops, const std::string& name, double elements, const LayerShape& s);

// A collective over the TP group (kTpComm) of a `bytes` per-rank buffer.
Op Collective(const std::string& name, trace::CollectiveKind kind, double bytes, bool async = false);
// The all-reduce after a row-parallel GEMM (or its reduce-scatter under SP).
void AddReduce(std::vector<Op>& ops, const std::string& name, const LayerShape& s);
// The all-gather before a column-parallel GEMM of the layer under SP (FP8
// data when the GEMM runs in FP8 and the framework gathers FP8:
// LayerShape::gather_element_bytes).
void AddGather(std::vector<Op>& ops, const std::string& name, const LayerShape& s, bool async = false);
// The same before a 16-bit consumer (the output layer's GEMM, the embedding's
// gradient scatter): 16-bit data whatever the layers' GEMMs run in.
void AddGather16(std::vector<Op>& ops, const std::string& name, const LayerShape& s);

// Tokens the norms, dropouts and residual adds touch on one rank.
double NormTokens(const LayerShape& s);
// Bytes of `elements` activation elements.
double ActBytes(const LayerShape& s, double elements);

// The eager kernel family of the model's norm (LayerNorm or RMSNorm).
config::EagerKernel NormKernel(const LayerShape& s);
// The eager kernel family of the MLP activation (GeLU, or the gated pair).
config::EagerKernel ActivationKernel(const LayerShape& s);
// Bytes an eager op moves in kernels of one family.
struct EagerPart {
  double bytes = 0;
  config::EagerKernel kind = config::EagerKernel::kElementwise;
};
// A memory-bound op that fused kernels run as `fused_bytes` in
// `fused_kernels` kernels at copy speed, and eager kernels as `parts` in
// `eager_kernels` kernels, at the bandwidth efficiency of their sum (each
// part at the profile's eager efficiency for its family).
Op EagerParts(const std::string& name, double fused_bytes, int fused_kernels, const std::vector<EagerPart>& parts,
              int eager_kernels, const LayerShape& s);
Op NormForward(const std::string& name, const LayerShape& s);
Op NormBackward(const std::string& name, const LayerShape& s);
// Residual add with bias and dropout, and its backward.
Op ResidualForward(const std::string& name, const LayerShape& s);
Op ResidualBackward(const std::string& name, const LayerShape& s);

// Backward of a GEMM y = x W (x: m x k, W: k x n): dgrad dx = dy W^T and
// wgrad dW = x^T dy (a weight-gradient op, waiting for op `wait_for`).
void GemmBackward(std::vector<Op>& ops, const std::string& name, int64_t m, int64_t n, int64_t k,
                  const LayerShape& s, int wait_for = -1);
// Backward of a batched GEMM (one per local expert). dy_is_fp8: the output
// gradient arrives in FP8 already (no cast).
void GroupedGemmBackward(std::vector<Op>& ops, const std::string& name, int64_t m, int64_t n, int64_t k,
                         int64_t batch, const LayerShape& s, bool dy_is_fp8 = false);

// A sequence mixer's (Mamba-2, Gated DeltaNet) batched 16-bit GEMM over
// chunks x heads, counted as the mixer's work like attention's.
Op MixerGemm(const std::string& name, int64_t m, int64_t n, int64_t k, int64_t batch, const LayerShape& s);
// A mixer's projections, named `proj` + "in-proj" / "out-proj", with
// collectives named after `tag` ("ag-<tag>", "tp-<tag>", ...). In: the
// column-parallel hidden -> width projection (the pre-norm fused in, as for
// QKV) after the SP all-gather. Out: the row-parallel width -> hidden
// projection and its TP reduction. The backward re-gathers the input beside
// the data gradient under SP.
void MixerInProjForward(std::vector<Op>& ops, const std::string& proj, const std::string& tag, int64_t width,
                        const LayerShape& s);
void MixerInProjBackward(std::vector<Op>& ops, const std::string& proj, const std::string& tag, int64_t width,
                         const LayerShape& s);
void MixerOutProjForward(std::vector<Op>& ops, const std::string& proj, const std::string& tag, int64_t width,
                         const LayerShape& s);
void MixerOutProjBackward(std::vector<Op>& ops, const std::string& proj, const std::string& tag, int64_t width,
                          const LayerShape& s);

}  // namespace stacksim::workload

#endif  // STACKSIM_SIM_WORKLOAD_OP_BUILDERS_H_
