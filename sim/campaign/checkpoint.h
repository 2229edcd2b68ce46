// The checkpoint of a training job: its size, and what writing and reading it
// costs on the cluster's storage.
//
// Size follows the memory model's model state (memory/memory_model.h): every
// parameter once (one data-parallel replica; ZeRO shards are disjoint) with
// its training weights, fp32 master copy and Adam's two moments. Gradients are
// not saved. The job writes and reads it in parallel from all GPUs, so the
// storage's aggregate bandwidth bounds the time; an asynchronous checkpoint
// first copies each GPU's share to host memory over its PCIe link.
#ifndef STACKSIM_SIM_CAMPAIGN_CHECKPOINT_H_
#define STACKSIM_SIM_CAMPAIGN_CHECKPOINT_H_

#include "sim/config/scenario.h"
#include "sim/config/topology.h"
#include "sim/util/units.h"

namespace stacksim::campaign {

// Bytes per parameter in a checkpoint: 16-bit weights (fp8 training keeps them
// too; its fp8 copy is derived and not saved; fp32 training: 4 bytes), a 4-byte
// fp32 master copy unless training in fp32, and 8 bytes of Adam moments. bf16
// + Adam: 14 bytes. shared/reference/hardware.md section 5 quotes ~16 bytes per
// parameter, which is the whole training state (gradients included); NVIDIA's
// 782 GB for a 70B model (same section) is ~11-12: master weights and moments
// without the 16-bit copy.
double CheckpointBytesPerParameter(const config::PlanConfig& plan);

struct CheckpointCost {
  Bytes bytes;          // the whole job's checkpoint
  Bytes bytes_per_gpu;  // each GPU's share (writes are spread evenly over the job's GPUs)
  Time write;           // bytes / storage write bandwidth
  Time read;            // bytes / storage read bandwidth
  Time snapshot;        // asynchronous: bytes_per_gpu over the GPU's host link (topology pcie_bandwidth)
};

// REQUIRES: storage bandwidths > 0.
CheckpointCost CheckpointCostOf(const config::ScenarioConfig& s, const config::ClusterStorage& storage);

}  // namespace stacksim::campaign

#endif  // STACKSIM_SIM_CAMPAIGN_CHECKPOINT_H_
