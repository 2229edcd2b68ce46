#include "sim/campaign/checkpoint.h"

#include "sim/config/profile.h"

namespace stacksim::campaign {

double CheckpointBytesPerParameter(const config::PlanConfig& plan) {
  // The same per-parameter terms as memory::EstimateMemory's weights and optimizer.
  const bool fp32 = plan.precision == config::Precision::kFp32;
  const double weights =
      config::PrecisionBytes(plan.precision == config::Precision::kFp8 ? config::Precision::kBf16 : plan.precision);
  const double master = fp32 ? 0.0 : 4.0;
  const double adam_moments = 8.0;
  return weights + master + adam_moments;
}

CheckpointCost CheckpointCostOf(const config::ScenarioConfig& s, const config::ClusterStorage& storage) {
  CheckpointCost c;
  const double params = static_cast<double>(s.model.ParameterCount() + s.model.MtpParameterCount());
  c.bytes = Bytes{params * CheckpointBytesPerParameter(s.plan)};
  c.bytes_per_gpu = c.bytes / static_cast<double>(s.gpus);
  c.write = TransferTime(c.bytes, storage.write_bandwidth);
  c.read = TransferTime(c.bytes, storage.read_bandwidth);
  c.snapshot = TransferTime(c.bytes_per_gpu, s.topology.pcie_bandwidth);
  return c;
}

}  // namespace stacksim::campaign
