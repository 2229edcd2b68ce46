// The input pipeline: whether loading and preprocessing the step's samples
// keeps up with the GPUs, and what it costs the step when it does not.
//
// Each data-parallel replica has one loader (its tensor-, context- and
// pipeline-parallel ranks share the batch it reads, as Megatron-LM
// broadcasts it over the tensor-parallel group), which must prepare the
// replica's global_batch / dp samples per step. A loader with `workers`
// worker processes prepares that many samples at once, on at most the host
// cores its node gives it (host_cores_per_gpu x GPUs per node, shared by the
// node's loaders); with no workers the training process loads them itself,
// one at a time, before the step (PyTorch DataLoader, num_workers = 0).
// Storage: the node's loaders share its read bandwidth.
//
// With workers, loading overlaps the previous step (the DataLoader keeps
// prefetch_factor batches per worker in flight), so in steady state the step
// waits max(0, input - compute) where input is the slower of preprocessing
// and storage; prefetching hides jitter, not a shortfall in throughput.
// Without workers it waits the whole input time.
#ifndef STACKSIM_SIM_SIMULATE_INPUT_PIPELINE_H_
#define STACKSIM_SIM_SIMULATE_INPUT_PIPELINE_H_

#include "sim/config/scenario.h"
#include "sim/util/units.h"

namespace stacksim::simulate {

struct InputPipeline {
  double samples_per_loader = 0;  // per step
  double parallel = 1;            // samples prepared at once by one loader
  Time preprocess;                // per step, one loader
  Time storage;                   // per step, one loader's share of its node's reads
  Time input;                     // the slower of the two
  Time stall;                     // what the step waits for its input
  int workers_needed = 0;         // workers per loader that remove the stall (0: none is)
  int workers_possible = 0;       // at most this many run at once on the loader's cores
  bool input_bound() const { return stall > Time::Zero(); }
};

// REQUIRES: s.data_loader is set; compute_step > 0 (the step without input).
InputPipeline EstimateInputPipeline(const config::ScenarioConfig& s, Time compute_step);

}  // namespace stacksim::simulate

#endif  // STACKSIM_SIM_SIMULATE_INPUT_PIPELINE_H_
