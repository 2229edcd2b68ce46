// Tensor-parallel collectives that run beside a GEMM (plan.tp_comm_overlap):
// a rewrite of a layer's op list that turns blocking TP collectives into
// asynchronous ones on the TP stream, running while the GEMM they pair with
// runs on the compute stream, with the op after that GEMM waiting for them.
//
// kBackward: a column-parallel layer's data-gradient reduction (all-reduce,
// or reduce-scatter under sequence parallelism) is issued after the
// data-gradient GEMM and runs beside the weight-gradient GEMM, as
// Megatron-Core's and Transformer Engine's linear layers do.
// kGemm (sequence parallelism only; else as kBackward): also each
// all-gather before a GEMM and each reduce-scatter after one run beside that
// GEMM (Transformer Engine userbuffers, PyTorch's async TP pipeline the GEMM
// in tp chunks with the communication). The chunk that cannot overlap is
// modelled: the GEMM rows of the last gathered chunk run after the gather
// (a "-last-chunk" GEMM of 1/tp of the rows), and the last 1/tp of a
// reduce-scatter runs after its GEMM, blocking. The multiprocessors the
// communication takes are the engine's (overlap_comm_sms).
#ifndef STACKSIM_SIM_WORKLOAD_TP_OVERLAP_H_
#define STACKSIM_SIM_WORKLOAD_TP_OVERLAP_H_

#include <vector>

#include "sim/config/plan.h"
#include "sim/workload/op.h"

namespace stacksim::workload {

// The op list with its TP collectives overlapped as `mode` says (kGemm
// without sequence parallelism acts as kBackward). wait_for indices are
// renumbered; an op that already waits for something keeps its collective
// blocking.
// kPipelined: the chunked pairs of kGemm only (without sequence parallelism,
// nothing).
std::vector<Op> OverlapTpCollectives(std::vector<Op> ops, config::TpCommOverlap mode, bool sequence_parallel, int tp);

}  // namespace stacksim::workload

#endif  // STACKSIM_SIM_WORKLOAD_TP_OVERLAP_H_
