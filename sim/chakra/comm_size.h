// Chakra's comm_size, as ASTRA-sim reads it, against stacksim's CommOp.bytes.
//
// ASTRA-sim's system layer hands comm_size to each collective algorithm as
// that rank's input buffer (astra-sim/system/astraccl/native_collectives/
// collective_algorithm/Ring.cc, HalvingDoubling.cc: an all-gather's result
// is comm_size x the ranks, a reduce-scatter's comm_size / the ranks).
// stacksim's CommOp.bytes is the gathered output for an all-gather and the
// unreduced input for a reduce-scatter (trace.h). So the two differ for an
// all-gather only: an 8-rank all-gather of comm_size 1 MiB moves an 8 MiB
// output. All-reduce, reduce-scatter, all-to-all and broadcast mean the same
// bytes in both. Bytes are bytes; group_size is the collective's ranks.
#ifndef STACKSIM_SIM_CHAKRA_COMM_SIZE_H_
#define STACKSIM_SIM_CHAKRA_COMM_SIZE_H_

#include <cstdint>

#include "sim/trace/trace.h"
#include "sim/util/units.h"

namespace stacksim::chakra {

// stacksim bytes -> comm_size (rounded to a whole byte).
int64_t ChakraCommSize(trace::CollectiveKind kind, Bytes bytes, int group_size);
// comm_size -> stacksim bytes.
Bytes StacksimCommBytes(trace::CollectiveKind kind, int64_t comm_size, int group_size);

}  // namespace stacksim::chakra

#endif  // STACKSIM_SIM_CHAKRA_COMM_SIZE_H_
