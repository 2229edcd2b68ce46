#include "sim/simulate/input_pipeline.h"

#include <algorithm>
#include <cmath>

namespace stacksim::simulate {

InputPipeline EstimateInputPipeline(const config::ScenarioConfig& s, Time compute_step) {
  const config::DataLoaderConfig& d = *s.data_loader;
  const config::PlanConfig& p = s.plan;
  InputPipeline in;
  const double dp = p.dp;
  in.samples_per_loader = static_cast<double>(p.global_batch) / dp;
  // Loaders on one node: its GPUs' share of the replicas, at least one.
  const double gpn = s.topology.gpus_per_node > 0 ? s.topology.gpus_per_node : 1;
  const double nodes = std::max(1.0, std::ceil(static_cast<double>(s.gpus) / gpn));
  const double loaders_per_node = std::max(1.0, dp / nodes);
  const double cores = d.host_cores_per_gpu * gpn / loaders_per_node;
  in.workers_possible = std::max(1, static_cast<int>(std::floor(cores)));
  in.parallel = d.workers == 0 ? 1.0 : std::min<double>(d.workers, in.workers_possible);
  // Host seconds of preprocessing one loader owes per step, on one core.
  const double preprocess_serial = in.samples_per_loader * d.preprocess_per_sample.seconds();
  in.preprocess = Time::FromSeconds(preprocess_serial / in.parallel);
  if (d.sample_bytes.value > 0 && d.storage_read_bandwidth.value > 0) {
    in.storage = Time::FromSeconds(in.samples_per_loader * loaders_per_node * d.sample_bytes.value /
                                   d.storage_read_bandwidth.value);
  }
  in.input = std::max(in.preprocess, in.storage);
  in.stall = d.workers == 0 ? in.input : std::max(Time::Zero(), in.input - compute_step);
  // Workers that keep preprocessing within the step; storage-bound or more
  // than the cores allow: none is enough.
  const double needed = std::ceil(preprocess_serial / compute_step.seconds());
  const bool storage_bound = in.storage > compute_step;
  in.workers_needed = storage_bound || needed > in.workers_possible ? 0 : std::max(1, static_cast<int>(needed));
  return in;
}

}  // namespace stacksim::simulate
