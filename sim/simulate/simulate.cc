#include "sim/simulate/simulate.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <stdexcept>

#include "sim/config/hardware_match.h"
#include "sim/cost/profile_cost_model.h"
#include "sim/memory/memory_model.h"
#include "sim/net/network_factory.h"
#include "sim/simulate/attribution.h"
#include "sim/simulate/step_replay.h"
#include "sim/workload/gated_delta_net.h"
#include "sim/workload/layer_ops.h"
#include "sim/workload/lora.h"
#include "sim/workload/mamba.h"
#include "sim/workload/offload.h"
#include "sim/workload/training_step.h"

namespace stacksim::simulate {
namespace {

using trace::TaskId;

std::string Fixed2(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", v);
  return buf;
}

// What the power state did to the step's compute rates (cost/power_state.h).
std::string PowerStateNote(const cost::ClockState& c, const config::PowerModel& power) {
  std::string out = "power: the step's compute draws about " + std::to_string(static_cast<int>(c.watts + 0.5)) +
                    " W at " + Fixed2(c.clock_ratio) + " of the maximum clock (board limit " +
                    std::to_string(static_cast<int>(power.board_limit_w.value + 0.5)) + " W" +
                    (c.limited ? ", which binds" : ", not reached") + "); GEMMs priced at x" + Fixed2(c.gemm_rate) +
                    " and attention at x" + Fixed2(c.attention_rate) +
                    " of the profile's rates (GEMMs measured back to back under " +
                    std::to_string(static_cast<int>(power.reference_limit_w.value + 0.5)) + " W, attention at " +
                    Fixed2(power.attention_reference_clock.value) + " of the maximum clock)";
  return out;
}

double NonEmbeddingFlopParams(const config::ModelConfig& m) {
  // Parameters that take part in matrix products per token: every layer plus
  // the output head (the input embedding is a lookup, positions an add). A
  // MoE layer counts the experts a token uses (top-k), not all of them.
  double layers = 0;
  for (int64_t l = 0; l < m.num_layers; ++l) layers += static_cast<double>(m.ActiveLayerParameterCount(l));
  return layers + static_cast<double>(m.vocab_size) * static_cast<double>(m.hidden_size);
}

}  // namespace

Time Breakdown::total() const {
  return gemm + attention + memory_bound + optimizer + tp_exposed + dp_exposed + pp_exposed + ep_exposed +
         offload_exposed + bubble + other + input_stall;
}

SimulationResult Simulate(const config::ScenarioConfig& scenario, const Options& options) {
  auto wall0 = std::chrono::steady_clock::now();
  config::ValidatePlan(scenario, scenario.file);
  memory::CheckOffloadCapacity(scenario, scenario.file);
  SimulationResult res;
  res.scenario = scenario;
  const auto& plan = scenario.plan;
  const auto& profile = scenario.profile;

  auto peak = profile.Peak(plan.precision == config::Precision::kFp32 ? config::Precision::kTf32 : plan.precision);
  if (!peak || !profile.gemm.max_efficiency[static_cast<int>(
                   plan.precision == config::Precision::kFp32 ? config::Precision::kTf32 : plan.precision)]) {
    throw InputError(scenario.file, "plan.precision",
                     std::string("profile '") + profile.name + "' has no " + config::PrecisionName(plan.precision) +
                         " GEMM rate");
  }

  // Pairings of GPU and fabric that no vendor ships (an error was thrown by
  // ValidatePlan already) are said beside the result.
  for (std::string& w : config::HardwareWarnings(profile, scenario.topology, scenario.file)) {
    res.notes.push_back("hardware: " + w);
  }

  // Memory first: a plan that does not fit is reported, not simulated.
  res.capacity = profile.hbm_capacity.value;
  for (const auto& f : memory::EstimateMemory(scenario)) {
    StageMemory sm;
    sm.stage = f.stage;
    sm.weights = f.weights;
    sm.gradients = f.gradients;
    sm.optimizer = f.optimizer;
    sm.activations = f.activations;
    sm.other = f.other;
    // DiLoCo keeps the outer parameters and momentum beside the inner state.
    if (plan.dp_sync.method == config::DpSyncMethod::kDiLoCo) sm.optimizer += OuterStateBytes(scenario, f.stage);
    if (sm.total() > res.capacity) res.out_of_memory = true;
    res.memory.push_back(sm);
  }
  for (const auto& o : memory::EstimateOffload(scenario)) {
    res.host_offload.push_back(o.host);
    res.nvme_offload.push_back(o.nvme);
  }
  const memory::OffloadPerNode per_node = memory::OffloadOfFullestNode(scenario);
  res.host_offload_per_node = per_node.host;
  res.nvme_offload_per_node = per_node.nvme;
  const double gpus = scenario.gpus;
  const double tokens = static_cast<double>(scenario.tokens_per_step());
  // Model FLOPs per step: 6N per token for the matrix products plus
  // 12 * layers * hidden * seq for attention (Chowdhery et al. 2022, PaLM,
  // App. B), halved for the causal mask that causal attention kernels skip
  // (so that HFU >= MFU whenever the kernels do not recompute). MLA's QK^T
  // is head_dim (nope + rope) wide, its PV v_head_dim: their mean stands for d.
  const double v_dim = static_cast<double>(scenario.model.is_mla() ? scenario.model.v_head_dim : scenario.model.head_dim);
  const double attn_dim = (static_cast<double>(scenario.model.head_dim) + v_dim) / 2.0;
  // LoRA / QLoRA: frozen weights run forward and data gradient only (4N),
  // the adapters all three products (6 x their parameters, whole model).
  double matrix_flops = 6.0 * NonEmbeddingFlopParams(scenario.model);
  if (plan.finetune.frozen_base()) {
    config::PlanConfig whole = plan;
    whole.tp = 1;
    matrix_flops = 4.0 * NonEmbeddingFlopParams(scenario.model) +
                   6.0 * static_cast<double>(scenario.model.num_layers) *
                       workload::LayerAdapterParameters(scenario.model, whole);
  }
  // Hybrid models: attention in their attention blocks only, and each
  // Mamba-2 block's SSD products (forward, and twice that backward).
  double ssd_flops = 0;
  if (scenario.model.is_hybrid()) {
    const auto& p = scenario.model.hybrid_pattern;
    ssd_flops = 3.0 * static_cast<double>(std::count(p.begin(), p.end(), 'M')) *
                workload::SsdForwardFlops(scenario.model.mamba, 1.0);
  }
  if (scenario.model.has_linear_attention()) {
    const auto& linear = scenario.model.linear_layers;
    ssd_flops += 3.0 * static_cast<double>(std::count(linear.begin(), linear.end(), true)) *
                 workload::GatedDeltaRuleForwardFlops(scenario.model.gdn, 1.0);
  }
  res.model_flops = Flops{tokens * (matrix_flops + ssd_flops +
                                    6.0 * static_cast<double>(scenario.model.AttentionLayerCount()) *
                                        scenario.model.num_attention_heads * attn_dim * scenario.seq_len)};
  if (res.out_of_memory && !options.simulate_if_out_of_memory) {
    res.notes.push_back("the plan does not fit in GPU memory; not simulated");
    res.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    return res;
  }

  StepModels step = BuildStep(scenario, options.network);
  std::shared_ptr<trace::Trace> trace = step.trace;
  res.network_model = step.network->name();
  if (step.clock.watts > 0) {
    res.notes.push_back(PowerStateNote(step.clock, *scenario.profile.power));
  }
  auto replay = std::make_shared<engine::ReplayResult>(ReplayStep(step));

  res.iteration = replay->makespan;
  if (scenario.data_loader) {
    res.input = EstimateInputPipeline(scenario, replay->makespan);
    res.iteration += res.input->stall;
  }
  res.tasks = trace->size();
  res.simulated_ranks = trace->rank_count();
  res.bottlenecks = replay->bottlenecks;
  for (const auto& a : replay->algorithms) {
    if (std::find(res.algorithms.begin(), res.algorithms.end(), a) == res.algorithms.end()) res.algorithms.push_back(a);
  }
  const double seconds = res.iteration.seconds();
  res.tokens_per_s = tokens / seconds;
  res.tokens_per_s_per_gpu = res.tokens_per_s / gpus;

  // Hardware FLOPs: everything the simulated ranks computed (recomputation
  // included), times the ranks each stands for.
  double hw = 0;
  for (TaskId i = 0; i < static_cast<TaskId>(trace->size()); ++i) {
    if (trace->kind(i) == trace::TaskKind::kCompute) hw += trace->compute(i).flops.value;
  }
  res.hardware_flops = Flops{hw * plan.tp * plan.dp * plan.cp};
  res.model_tflops_per_gpu = res.model_flops.value / seconds / gpus / 1e12;
  res.mfu = res.model_flops.value / seconds / gpus / peak->value;
  res.hfu = res.hardware_flops.value / seconds / gpus / peak->value;

  const trace::StreamId compute = trace->compute_stream();
  Time busiest = Time::Zero();
  std::vector<std::vector<TaskId>> rank_tasks(trace->rank_count());
  for (size_t i = 0; i < trace->size(); ++i) {
    rank_tasks[trace->rank(static_cast<TaskId>(i))].push_back(static_cast<TaskId>(i));
  }
  const StepEnd step_end = FindStepEnd(*trace, *replay);
  for (int r = 0; r < trace->rank_count(); ++r) {
    Breakdown b = Attribute(*trace, *replay, rank_tasks[r], compute, replay->makespan, step_end);
    if (res.input) b.input_stall = res.input->stall;
    if (b.compute() > busiest) {
      busiest = b.compute();
      res.breakdown = b;
      res.breakdown_stage = r;
    }
    res.per_stage.push_back(b);
    res.per_stage_utilization.push_back(RankUtilization(*trace, *replay, rank_tasks[r], profile, res.iteration));
  }
  res.utilization = res.per_stage_utilization[res.breakdown_stage];
  if (scenario.model.is_moe()) {
    res.moe_load_factor = workload::MoeLoadFactor(scenario.model, plan);
    res.moe_dropped_fraction = workload::MoeDroppedFraction(scenario.model, plan);
    Time scaled = Time::Zero();
    for (TaskId i : rank_tasks[res.breakdown_stage]) {
      Time d = replay->timings[i].end - replay->timings[i].start;
      const bool all_to_all = trace->role(i) == trace::TaskRole::kEpComm;
      if (all_to_all) res.moe_alltoall_time += d;
      if (trace->stream(i) != compute) continue;
      const bool expert = trace->expert(i);
      if (expert) res.moe_expert_time += d;
      if (expert || all_to_all) scaled += d;
    }
    res.moe_imbalance_cost = scaled * (1.0 - 1.0 / res.moe_load_factor);
  }
  const config::DpSyncMethod method = plan.dp_sync.method;
  if (method != config::DpSyncMethod::kEveryStep || scenario.token_budget > 0) {
    DpSyncResult d;
    d.method = method;
    d.step = res.iteration;
    if (method == config::DpSyncMethod::kDiLoCo) {
      StepModels sync = BuildStep(scenario, options.network, workload::DpSyncPhase::kOuterSyncStep);
      d.sync_step = ReplayStep(sync).makespan;
      for (const StageMemory& m : res.memory) d.extra_memory_per_gpu = std::max(d.extra_memory_per_gpu, OuterStateBytes(scenario, m.stage));
      res.notes.push_back("dp_sync diloco: the step shown is an inner step; every " +
                          std::to_string(plan.dp_sync.sync_every) + "th step also synchronises the workers");
    } else if (method == config::DpSyncMethod::kAsync) {
      StepModels alone = BuildStep(scenario, options.network, workload::DpSyncPhase::kWithoutGradientReduction);
      d.without_reduction = ReplayStep(alone).makespan;
      d.reduction_busy = GradientReductionBusy(*trace, *replay);
      res.notes.push_back("dp_sync async: the step shown is the synchronous one; the asynchronous period is in dp_sync");
    }
    FinishDpSync(scenario, d);
    if (method != config::DpSyncMethod::kEveryStep) res.notes.push_back(std::string("dp_sync: ") + kDpSyncScope);
    res.dp_sync = d;
  }
  if (options.keep_trace) {
    res.trace = trace;
    res.replay = replay;
  }
  res.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return res;
}

}  // namespace stacksim::simulate
