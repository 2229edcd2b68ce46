#include "sim/workload/dense_mlp.h"

#include "sim/workload/lora.h"
#include "sim/workload/op_builders.h"

namespace stacksim::workload {
namespace {

double D(int64_t v) { return static_cast<double>(v); }

}  // namespace

void DenseMlpForward(std::vector<Op>& ops, const LayerShape& s) {
  const int64_t T = s.tokens();
  const int64_t f_rank = s.ffn / s.tp;
  AddGather(ops, "ag-mlp", s);
  AddForwardCasts(ops, "fc1", T, (s.gated ? 2 : 1) * f_rank, s.hidden, 1, /*input_is_fp8=*/true, s);
  LinearForward(ops, "fc1", Projection::kMlpIn, T, (s.gated ? 2 : 1) * f_rank, s.hidden, s);
  // Eager GeLU with a bias is two kernels (bias add, activation); the eager
  // SwiGLU efficiency was measured on the unfused silu-then-multiply pair.
  ops.push_back(Memory(s.gated ? "swiglu" : "gelu", ActBytes(s, (s.gated ? 3.0 : 2.0) * D(T) * D(f_rank)), s, 1,
                       ActivationKernel(s), !s.gated && s.bias ? 2.0 : 1.0, !s.gated && s.bias ? 2 : 1));
  AddForwardCasts(ops, "fc2", T, s.hidden, f_rank, 1, false, s);
  LinearForward(ops, "fc2", Projection::kMlpOut, T, s.hidden, f_rank, s);
  AddReduce(ops, "tp-mlp", s);
}

void DenseMlpBackward(std::vector<Op>& ops, const LayerShape& s) {
  const int64_t T = s.tokens();
  const int64_t f_rank = s.ffn / s.tp;
  AddGather(ops, "ag-mlp-grad", s);  // row-parallel FC2: gather the output gradient
  LinearBackward(ops, "fc2", Projection::kMlpOut, T, s.hidden, f_rank, s);
  ops.push_back(Memory(s.gated ? "swiglu-bwd" : "gelu-bwd", ActBytes(s, (s.gated ? 5.0 : 3.0) * D(T) * D(f_rank)), s,
                       1, ActivationKernel(s)));
  // SP: FC1's weight gradient needs the gathered norm output again; Megatron
  // re-gathers it on the side while the data gradient is computed.
  int regather = -1;
  if (LinearBackwardNeedsInput(Projection::kMlpIn, s)) {
    AddGather(ops, "ag-mlp-input", s, /*async=*/true);
    if (s.sequence_parallel && s.tp > 1) regather = static_cast<int>(ops.size()) - 1;
  }
  AddFp8InputTranspose(ops, "fc1", D(T) * D(s.hidden), s);
  LinearBackward(ops, "fc1", Projection::kMlpIn, T, (s.gated ? 2 : 1) * f_rank, s.hidden, s, regather);
  AddReduce(ops, "tp-mlp-grad", s);
}

}  // namespace stacksim::workload
