#include "sim/report/json_report.h"

#include <string>

namespace stacksim::report {
namespace {

using nlohmann::json;

// Seconds as the double nearest the exact value (1.2, not the
// 1.2000000000000002 that multiplying by 1e-9 gives).
double Seconds(Time t) { return static_cast<double>(t.ns()) / 1e9; }

json MemoryJson(const simulate::StageMemory& m) {
  return {
      {"stage", m.stage},
      {"weights_bytes", m.weights.value},
      {"gradients_bytes", m.gradients.value},
      {"optimizer_bytes", m.optimizer.value},
      {"activations_bytes", m.activations.value},
      {"other_bytes", m.other.value},
      {"total_bytes", m.total().value},
  };
}

json PlanJson(const config::PlanConfig& p) {
  json j = {
      {"tp", p.tp},
      {"pp", p.pp},
      {"dp", p.dp},
      {"cp", p.cp},
      {"cp_comm", config::CpCommName(p.cp_comm)},
      {"ep", p.ep},
      {"etp", p.etp},
      {"vp", p.vp},
      {"sequence_parallel", p.sequence_parallel},
      {"micro_batch", p.micro_batch},
      {"global_batch", p.global_batch},
      {"micro_batches", p.micro_batches()},
      {"recompute", config::RecomputeName(p.recompute)},
      {"sharding", config::ShardingName(p.sharding)},
      {"schedule", config::ScheduleName(p.schedule)},
      {"precision", config::PrecisionName(p.precision)},
      {"overlap_grad_reduce", p.overlap_grad_reduce},
      {"overlap_param_gather", p.overlap_param_gather},
      {"grad_bucket_bytes", p.grad_bucket.value},
      {"cuda_graphs", p.cuda_graphs},
      {"attention", config::AttentionName(p.attention)},
      {"grad_reduce_precision", config::PrecisionName(p.GradReducePrecision())},
      {"offload_optimizer", config::OffloadName(p.offload_optimizer)},
      {"offload_optimizer_fraction", p.offload_optimizer_fraction},
      {"offload_params", config::OffloadName(p.offload_params)},
      {"overlap_offload", p.overlap_offload},
  };
  if (p.finetune.frozen_base()) j["finetune"] = config::FinetuneToJson(p.finetune);  // LoRA / QLoRA only
  return j;
}

json ModelJson(const config::ModelConfig& m) {
  return {
      {"name", m.name},
      {"parameters", m.ParameterCount()},
      {"num_layers", m.num_layers},
      {"hidden_size", m.hidden_size},
      {"num_attention_heads", m.num_attention_heads},
      {"num_kv_heads", m.num_kv_heads},
      {"head_dim", m.head_dim},
      {"intermediate_size", m.intermediate_size},
      {"vocab_size", m.vocab_size},
      {"activation", config::ActivationName(m.activation)},
      {"norm", config::NormName(m.norm)},
  };
}

}  // namespace

json BreakdownJson(const simulate::Breakdown& b) {
  return {
      {"gemm_s", Seconds(b.gemm)},
      {"attention_s", Seconds(b.attention)},
      {"memory_bound_s", Seconds(b.memory_bound)},
      {"optimizer_s", Seconds(b.optimizer)},
      {"tp_exposed_s", Seconds(b.tp_exposed)},
      {"dp_exposed_s", Seconds(b.dp_exposed)},
      {"pp_exposed_s", Seconds(b.pp_exposed)},
      {"ep_exposed_s", Seconds(b.ep_exposed)},
      {"offload_exposed_s", Seconds(b.offload_exposed)},
      {"bubble_s", Seconds(b.bubble)},
      {"other_s", Seconds(b.other)},
      {"input_stall_s", Seconds(b.input_stall)},
      // Subtotals, not parts: compute = gemm + attention + memory-bound +
      // optimizer; exposed communication = tp + dp + pp + ep (offload, a
      // chain of PCIe copies, host work and NVMe I/O, is its own part).
      {"compute_s", Seconds(b.compute())},
      {"exposed_comm_s", Seconds(b.tp_exposed + b.dp_exposed + b.pp_exposed + b.ep_exposed)},
  };
}

json UtilizationJson(const simulate::Utilization& u) {
  return {{"gpu_busy", u.gpu_busy}, {"sm_active", u.sm_active}, {"hbm_bandwidth", u.hbm_bandwidth}, {"pcie", u.pcie}};
}

json JsonReport(const simulate::SimulationResult& r) {
  const config::ScenarioConfig& s = r.scenario;
  json peak = json::array();
  json memory = json::array();
  for (const simulate::StageMemory& m : r.memory) {
    peak.push_back(m.total().value);
    memory.push_back(MemoryJson(m));
  }
  json per_stage = json::array();
  for (size_t i = 0; i < r.per_stage.size(); ++i) {
    json b = BreakdownJson(r.per_stage[i]);
    b["stage"] = static_cast<int>(i);
    per_stage.push_back(std::move(b));
  }
  json input = nullptr;
  if (r.input) {
    const simulate::InputPipeline& in = *r.input;
    input = {{"samples_per_loader", in.samples_per_loader},
             {"parallel_samples", in.parallel},
             {"preprocess_s", Seconds(in.preprocess)},
             {"storage_s", Seconds(in.storage)},
             {"input_s", Seconds(in.input)},
             {"stall_s", Seconds(in.stall)},
             {"input_bound", in.input_bound()},
             {"workers_needed", in.workers_needed > 0 ? json(in.workers_needed) : json()},
             {"workers_possible", in.workers_possible}};
  }
  json per_stage_utilization = json::array();
  for (size_t i = 0; i < r.per_stage_utilization.size(); ++i) {
    json u = UtilizationJson(r.per_stage_utilization[i]);
    u["stage"] = static_cast<int>(i);
    per_stage_utilization.push_back(std::move(u));
  }
  json moe = nullptr;
  if (s.model.is_moe()) {
    const double step = r.iteration.seconds();
    moe = {{"experts", s.model.num_experts},
           {"experts_per_token", s.model.experts_per_token},
           {"ep", s.plan.ep},
           {"routing", config::RoutingName(s.plan.routing)},
           {"capacity_factor", s.plan.capacity_factor > 0 ? json(s.plan.capacity_factor) : json()},
           {"load_factor", r.moe_load_factor},
           {"dropped_fraction", r.moe_dropped_fraction},
           {"expert_compute_s", Seconds(r.moe_expert_time)},
           {"imbalance_cost_s", Seconds(r.moe_imbalance_cost)},
           {"all_to_all_share", step > 0 ? r.breakdown.ep_exposed.seconds() / step : 0.0},
           {"all_to_all_s", Seconds(r.moe_alltoall_time)},
           {"active_parameters", s.model.ActiveParameterCount()},
           {"parameters", s.model.ParameterCount()}};
  }
  json offload = nullptr;
  if (s.plan.offload_optimizer != config::OffloadTarget::kNone) {
    auto per_gpu = [](const std::vector<Bytes>& per_stage) {  // one value per pipeline stage
      json a = json::array();
      for (Bytes b : per_stage) a.push_back(b.value);
      return a;
    };
    offload = {{"optimizer", config::OffloadName(s.plan.offload_optimizer)},
               {"optimizer_fraction", s.plan.offload_optimizer_fraction},
               {"params", config::OffloadName(s.plan.offload_params)},
               {"overlap", s.plan.overlap_offload},
               {"host_bytes_per_gpu", per_gpu(r.host_offload)},
               {"nvme_bytes_per_gpu", per_gpu(r.nvme_offload)},
               {"host_bytes_per_node", r.host_offload_per_node.value},
               {"host_memory_bytes", s.topology.host ? json(s.topology.host->memory.value) : json()},
               {"nvme_bytes_per_node", r.nvme_offload_per_node.value},
               {"nvme_capacity_bytes", s.topology.nvme ? json(s.topology.nvme->capacity.value) : json()},
               {"exposed_s", Seconds(r.breakdown.offload_exposed)}};
  }
  json dp_sync = nullptr;
  if (r.dp_sync) {
    const simulate::DpSyncResult& d = *r.dp_sync;
    dp_sync = {{"method", config::DpSyncMethodName(d.method)},
               {"step_s", Seconds(d.step)},
               {"average_step_s", Seconds(d.average_step)},
               {"tokens_per_s", d.tokens_per_s},
               {"basis", d.basis},
               {"scope", simulate::kDpSyncScope}};
    if (d.method == config::DpSyncMethod::kDiLoCo) {
      dp_sync["inner_step_s"] = Seconds(d.step);
      dp_sync["sync_step_s"] = Seconds(d.sync_step);
      dp_sync["sync_every"] = s.plan.dp_sync.sync_every;
      dp_sync["workers"] = s.plan.dp_sync.workers;
      dp_sync["extra_memory_bytes_per_gpu"] = d.extra_memory_per_gpu.value;
    }
    if (d.method == config::DpSyncMethod::kAsync) {
      dp_sync["synchronous_step_s"] = Seconds(d.step);
      dp_sync["without_reduction_s"] = Seconds(d.without_reduction);
      dp_sync["reduction_busy_s"] = Seconds(d.reduction_busy);
      dp_sync["staleness"] = s.plan.dp_sync.staleness;
    }
    if (d.token_budget > 0) {
      dp_sync["token_budget"] = d.token_budget;
      dp_sync["steps_to_budget"] = d.steps_to_budget;
      dp_sync["time_to_budget_s"] = Seconds(d.time_to_budget);
    }
  }
  return {
      {"scenario", s.name},
      {"moe", std::move(moe)},
      {"dp_sync", std::move(dp_sync)},
      {"offload", std::move(offload)},
      {"iteration_s", Seconds(r.iteration)},
      {"tokens_per_s", r.tokens_per_s},
      {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu},
      {"tokens_per_step", s.tokens_per_step()},
      {"mfu", r.mfu},
      {"hfu", r.hfu},
      {"model_tflops_per_gpu", r.model_tflops_per_gpu},
      {"model_flops_per_step", r.model_flops.value},
      {"hardware_flops_per_step", r.hardware_flops.value},
      {"memory_peak_bytes", std::move(peak)},
      {"memory", std::move(memory)},
      {"capacity_bytes", r.capacity.value},
      {"out_of_memory", r.out_of_memory},
      {"breakdown", BreakdownJson(r.breakdown)},
      {"breakdown_stage", r.breakdown_stage},
      {"per_stage_breakdown", std::move(per_stage)},
      {"utilization", UtilizationJson(r.utilization)},
      {"input_pipeline", std::move(input)},
      {"per_stage_utilization", std::move(per_stage_utilization)},
      {"network_model", r.network_model},
      {"profile",
       {{"name", s.profile.name},
        {"gpu", s.profile.gpu},
        {"kind", config::ProfileKindName(s.profile.kind)},
        {"provenance", s.profile.provenance}}},
      {"plan", PlanJson(s.plan)},
      {"model", ModelJson(s.model)},
      {"seq_len", s.seq_len},
      {"gpus", s.gpus},
      {"topology",
       {{"name", s.topology.name},
        {"gpu", s.topology.gpu},
        {"gpus_per_node", s.topology.gpus_per_node},
        {"nodes", s.topology.gpus_per_node > 0 ? s.nodes() : 0}}},
      {"notes", r.notes},
      {"algorithms", r.algorithms},
      {"bottlenecks", r.bottlenecks},
      {"simulated_ranks", r.simulated_ranks},
      {"tasks", r.tasks},
      {"wall_s", r.wall_seconds},
  };
}

}  // namespace stacksim::report
