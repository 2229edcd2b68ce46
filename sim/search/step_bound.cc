#include "sim/search/step_bound.h"

#include <algorithm>

#include "sim/workload/layer_ops.h"
#include "sim/workload/pipeline_schedule.h"
#include "sim/workload/placement.h"
#include "sim/workload/training_step.h"

namespace stacksim::search {
namespace {

using config::PipelineScheduleKind;

// The compute-stream time of an op list, replayed on its own: kernels at the
// cost model's time, host waits at their length, blocking collectives at
// latency + unshared transfer, and async collectives on the TP stream (one
// after another, each after the compute op before it) delaying the ops that
// wait for them, as training_step.cc emits them. Under DualPipe the expert
// all-to-alls run on their own stream; they are left out (a lower bound), as
// are the ops a step's first micro-batch alone runs (Op::once_per_step).
// Anything else running beside the list can only make it later.
Time ListTime(const std::vector<workload::Op>& ops, const engine::CostModel& cost, const engine::NetworkModel& net,
              const workload::PlanGroups& groups, bool dual) {
  std::vector<Time> end(ops.size(), Time::Zero());
  Time compute = Time::Zero(), side = Time::Zero();
  for (size_t i = 0; i < ops.size(); ++i) {
    const workload::Op& op = ops[i];
    const Time dep = op.wait_for >= 0 ? end[op.wait_for] : Time::Zero();
    if (op.once_per_step) {
      // The first micro-batch's alone (an FP8 weight cast cached for the
      // step): left out of every micro-batch's (a lower bound).
      end[i] = std::max(compute, dep);
      continue;
    }
    if (op.is_collective) {
      if (dual && op.ep_group && op.collective == trace::CollectiveKind::kAllToAll) {
        end[i] = std::max(compute, dep);
        continue;
      }
      trace::CommOp c;
      c.kind = op.collective;
      c.bytes = op.bytes;
      c.scale_out_bytes = op.scale_out_bytes;
      const trace::CommGroup& g = op.ep_group ? groups.ep : op.cp_group ? groups.cp : groups.tp;
      engine::CommCost cc = net.Collective(c, g);
      if (op.async) {
        side = std::max({side, compute, dep}) + cc.latency + cc.transfer;
        end[i] = side;
      } else {
        compute = std::max(compute, dep) + cc.latency + cc.transfer;
        end[i] = compute;
      }
    } else {
      compute = std::max(compute, dep) + (op.host_wait > Time::Zero() ? op.host_wait : cost.ComputeTime(op.compute));
      end[i] = compute;
    }
  }
  return compute;
}

// The backward without its weight-gradient GEMMs (the B pass of zero-bubble
// schedules), as training_step.cc splits it: waits on removed ops are dropped.
std::vector<workload::Op> WithoutWeightGradients(const std::vector<workload::Op>& ops) {
  std::vector<workload::Op> out;
  std::vector<int> index(ops.size(), -1);
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].weight_grad) continue;
    workload::Op op = ops[i];
    if (op.wait_for >= 0) op.wait_for = index[op.wait_for];
    index[i] = static_cast<int>(out.size());
    out.push_back(op);
  }
  return out;
}

// The expert all-to-alls of an op list at their unshared cost: under DualPipe
// they run beside the compute stream (ListTime leaves them out).
Time AllToAllTime(const std::vector<workload::Op>& ops, const engine::NetworkModel& net,
                  const workload::PlanGroups& groups) {
  Time t = Time::Zero();
  for (const workload::Op& op : ops) {
    if (!op.is_collective || !op.ep_group || op.collective != trace::CollectiveKind::kAllToAll) continue;
    trace::CommOp c;
    c.kind = op.collective;
    c.bytes = op.bytes;
    c.scale_out_bytes = op.scale_out_bytes;
    engine::CommCost cc = net.Collective(c, groups.ep);
    t += cc.latency + cc.transfer;
  }
  return t;
}

Time WeightGradTime(const std::vector<workload::Op>& ops, const engine::CostModel& cost) {
  Time t = Time::Zero();
  for (const workload::Op& op : ops) {
    if (op.weight_grad && !op.is_collective) t += cost.ComputeTime(op.compute);
  }
  return t;
}

}  // namespace

StepTimeBound::StepTimeBound(const config::ScenarioConfig& scenario)
    : scenario_(scenario),
      scratch_(scenario),
      cost_(scenario.profile, scenario.plan.cuda_graphs),
      network_(scenario.topology, scenario.profile, scenario.gpus) {}

const StepTimeBound::LayerCosts& StepTimeBound::Costs(const config::PlanConfig& plan, int gpus) {
  // Paired schedules (DualPipe, the 1F1B all-to-all overlap) run the expert
  // all-to-alls on their own stream: priced apart from the compute lists.
  const bool dual = plan.schedule == PipelineScheduleKind::kDualPipe || plan.moe_a2a_overlap;
  // The rank order is not part of the key: it moves dp and pp ranks only, and
  // the tp, cp and ep groups these op lists use sit the same under both
  // orders (tp-cp-pp-dp needs cp 1 and ep 1). PipelineBound and
  // GradientTail place pipeline pairs and DP groups per plan.
  // Selective recomputation's list follows the plan's modules.
  auto key = std::make_tuple(plan.tp, plan.cp, plan.ep, plan.etp, plan.sequence_parallel, plan.micro_batch, dual,
                             plan.recompute_modules.bits);
  auto it = cache_.find(key);
  if (it != cache_.end()) return *it->second;
  auto c = std::make_unique<LayerCosts>();
  const auto& model = scenario_.model;
  const workload::PlanGroups groups = workload::PlacePlan(plan, scenario_.topology);
  const workload::LayerShape shape = workload::LayerShape::From(model, plan, scenario_.seq_len, scenario_.profile);
  const auto present = model.LayerKindsPresent();
  for (int kind = 0; kind < config::kNumLayerKinds; ++kind) {
    if (!present[kind]) continue;
    const workload::LayerShape ls =
        shape.Kind(model, plan, static_cast<config::LayerKind>(kind), workload::DomainSize(scenario_.topology));
    auto bwd = workload::LayerBackward(ls);
    c->fwd[kind] = ListTime(workload::LayerForward(ls), cost_, network_, groups, dual);
    c->bwd[kind] = ListTime(bwd, cost_, network_, groups, dual);
    c->weight[kind] = WeightGradTime(bwd, cost_);
    c->bwd_input[kind] = ListTime(WithoutWeightGradients(bwd), cost_, network_, groups, dual);
    c->recompute_full[kind] = c->fwd[kind];
    c->recompute_selective[kind] = ListTime(workload::SelectiveRecompute(ls), cost_, network_, groups, dual);
    if (dual) {
      c->a2a_fwd[kind] = AllToAllTime(workload::LayerForward(ls), network_, groups);
      c->a2a_bwd[kind] = AllToAllTime(bwd, network_, groups);
    }
  }
  c->emb_fwd = ListTime(workload::EmbeddingForward(shape), cost_, network_, groups, dual);
  c->emb_bwd = ListTime(workload::EmbeddingBackward(shape), cost_, network_, groups, dual);
  c->head_fwd = ListTime(workload::HeadForward(shape), cost_, network_, groups, dual);
  auto head_bwd = workload::HeadBackward(shape);
  c->head_bwd = ListTime(head_bwd, cost_, network_, groups, dual);
  c->head_weight = WeightGradTime(head_bwd, cost_);
  c->head_bwd_input = ListTime(WithoutWeightGradients(head_bwd), cost_, network_, groups, dual);
  const LayerCosts& ref = *c;
  cache_.emplace(key, std::move(c));
  return ref;
}

const StepTimeBound::StageCosts& StepTimeBound::PerStage(const config::PlanConfig& plan, int gpus) {
  const workload::PipelineLayout layout = workload::PipelineLayout::Of(plan);
  const bool dual_key = plan.schedule == PipelineScheduleKind::kDualPipe || plan.moe_a2a_overlap;
  auto key = std::make_tuple(plan.tp, plan.cp, plan.ep, plan.etp, plan.sequence_parallel, plan.micro_batch, dual_key, plan.pp,
                             layout.v, static_cast<int>(plan.recompute), plan.recompute_layers, plan.recompute_modules.bits);
  auto it = stage_costs_.find(key);
  if (it != stage_costs_.end()) return *it->second;
  const LayerCosts& c = Costs(plan, gpus);
  const auto& model = scenario_.model;
  const std::vector<int> layers = workload::LayersPerVirtualStage(static_cast<int>(model.PipelineLayerCount()), plan.pp, layout.v);
  const int stages = layout.stages();
  const bool full = plan.recompute == config::Recompute::kFull;
  const bool selective = plan.recompute == config::Recompute::kSelective;
  auto owned = std::make_unique<StageCosts>();
  StageCosts& out = *owned;
  out.fwd.assign(stages, Time::Zero());
  out.bwd.assign(stages, Time::Zero());
  out.bwd_input.assign(stages, Time::Zero());
  out.weight.assign(stages, Time::Zero());
  out.a2a_fwd.assign(stages, Time::Zero());
  out.a2a_bwd.assign(stages, Time::Zero());
  int first = 0;
  for (int vs = 0; vs < stages; ++vs) {
    Time f = Time::Zero(), b = Time::Zero(), bi = Time::Zero(), w = Time::Zero();
    for (int l = first; l < first + layers[vs]; ++l) {
      const int k = static_cast<int>(model.LayerKindAt(l));
      const Time rec = plan.RecomputesLayer(l - first) ? c.recompute_full[k]
                       : selective                     ? c.recompute_selective[k]
                                                       : Time::Zero();
      f += c.fwd[k];
      b += c.bwd[k] + rec;
      bi += c.bwd_input[k] + rec;
      w += c.weight[k];
      out.a2a_fwd[vs] += c.a2a_fwd[k];
      out.a2a_bwd[vs] += c.a2a_bwd[k];
    }
    first += layers[vs];
    if (vs == 0) {
      f += c.emb_fwd;
      const Time e = c.emb_bwd + (full ? c.emb_fwd : Time::Zero());  // the B pass runs the whole embedding backward
      b += e;
      bi += e;
    }
    if (vs == stages - 1) {
      f += c.head_fwd;
      b += c.head_bwd;
      bi += c.head_bwd_input;
      w += c.head_weight;
    }
    out.fwd[vs] = f;
    out.bwd[vs] = b;
    out.weight[vs] = w;
    out.bwd_input[vs] = bi;
  }
  return *stage_costs_.emplace(key, std::move(owned)).first->second;
}

Time StepTimeBound::Bound(const config::PlanConfig& plan, int gpus) {
  const StageCosts& sc = PerStage(plan, gpus);
  const workload::PipelineLayout layout = workload::PipelineLayout::Of(plan);
  const bool dual = layout.dual();
  // Split-backward schedules may defer weight gradients past the last
  // activation-gradient pass: no drain term for them.
  const bool whole_backward = plan.schedule == PipelineScheduleKind::kOneFOneB ||
                              plan.schedule == PipelineScheduleKind::kInterleaved ||
                              plan.schedule == PipelineScheduleKind::kGpipe;
  const int64_t per_chunk_mb = dual ? layout.m / 2 : layout.m;
  Time min_fwd = Time::Max();
  for (Time f : sc.fwd) min_fwd = std::min(min_fwd, f);
  Time best = Time::Zero();
  Time fill = Time::Zero(), drain = Time::Zero();
  for (int r = 0; r < plan.pp; ++r) {
    Time work = Time::Zero();
    for (int chunk = 0; chunk < layout.chunks(); ++chunk) {
      const int vs = layout.Stage(r, chunk);
      // A split backward (B, then W after B's async collectives) can take
      // less than the whole one, whose weight GEMMs wait for them in place.
      const Time b = whole_backward ? sc.bwd[vs] : std::min(sc.bwd[vs], sc.bwd_input[vs] + sc.weight[vs]);
      work += Time::Ns((sc.fwd[vs] + b).ns() * per_chunk_mb);
    }
    Time bound;
    if (dual) {
      bound = Time::Ns(min_fwd.ns() * std::min(r, plan.pp - 1 - r)) + work;
    } else {
      bound = fill + work + (whole_backward ? drain : Time::Zero());
      fill += sc.fwd[r];
      drain += sc.bwd[r];
    }
    best = std::max(best, bound);
  }
  return best;
}

const std::vector<std::vector<workload::PipelineStep>>& StepTimeBound::Schedule(const workload::PipelineLayout& l) {
  auto key =
      std::make_tuple(static_cast<int>(l.kind), l.p, l.v, l.m, l.a2a_overlap, l.group, l.single_round_all_forwards);
  auto it = schedules_.find(key);
  if (it == schedules_.end()) it = schedules_.emplace(key, workload::BuildSchedule(l)).first;
  return it->second;
}

Time StepTimeBound::PipelineBound(const config::PlanConfig& plan, int gpus) {
  const StageCosts& sc = PerStage(plan, gpus);
  const workload::PipelineLayout layout = workload::PipelineLayout::Of(plan);
  const auto& schedule = Schedule(layout);
  const int p = layout.p, stages = layout.stages(), m = layout.m;
  const auto& model = scenario_.model;
  const auto& topo = scenario_.topology;

  // A pipeline send between neighbouring stages (both directions carry the
  // same bytes: the activation or its gradient, split over TP).
  const workload::LayerShape shape = workload::LayerShape::From(model, plan, scenario_.seq_len, scenario_.profile);
  trace::TransferOp send;
  send.bytes = Bytes{static_cast<double>(shape.tokens()) * shape.hidden * shape.element_bytes() / plan.tp};
  std::vector<Time> send_to_next(stages, Time::Zero());  // stage vs -> vs+1 (and back)
  for (int vs = 0; vs + 1 < stages; ++vs) {
    // DualPipe's second copy runs stage vs on rank p-1-vs: the cheaper of
    // the two placements bounds both.
    Time best = Time::Max();
    for (int dir = 0; dir < (layout.dual() ? 2 : 1); ++dir) {
      const int a = dir == 0 ? layout.Rank(vs, 0) : p - 1 - vs, b = dir == 0 ? layout.Rank(vs + 1, 0) : p - 2 - vs;
      if (a == b) {
        best = Time::Zero();
        continue;
      }
      engine::CommCost cc = network_.Transfer(send, workload::PlacePipelinePair(plan, topo, std::min(a, b), std::max(a, b)));
      best = std::min(best, cc.latency + cc.transfer);
    }
    send_to_next[vs] = best;
  }

  // The distributed optimizer's parameter all-gathers, issued at the start
  // on each rank's DP stream one chunk after another; a chunk's first forward
  // waits for its gather (training_step.cc). Only the non-expert parameters
  // are counted (a smaller gather: still a lower bound).
  std::vector<std::vector<Time>> gather_done(p, std::vector<Time>(layout.chunks(), Time::Zero()));
  if ((plan.sharding == config::Sharding::kZero1 || plan.sharding == config::Sharding::kZero2) && plan.dp > 1 &&
      plan.overlap_param_gather) {
    const std::vector<int> layers = workload::LayersPerVirtualStage(static_cast<int>(model.PipelineLayerCount()), p, layout.v);
    std::vector<int> first(layers.size(), 0);
    for (size_t i = 1; i < layers.size(); ++i) first[i] = first[i - 1] + layers[i - 1];
    const workload::PlanGroups groups = workload::PlacePlan(plan, topo);
    for (int r = 0; r < p; ++r) {
      Time t = Time::Zero();
      for (int c = 0; c < layout.chunks(); ++c) {
        const int vs = layout.Stage(r, c);
        double params = 0;
        for (int l = first[vs]; l < first[vs] + layers[vs]; ++l) {
          const double e = model.IsMoeLayer(l) ? static_cast<double>(model.ExpertParameterCount()) : 0.0;
          params += (static_cast<double>(model.LayerParameterCount(l)) - e) / plan.tp;
        }
        if (vs == 0 || vs == stages - 1) params += static_cast<double>(model.vocab_size) * model.hidden_size / plan.tp;
        trace::CommOp g;
        g.kind = trace::CollectiveKind::kAllGather;
        g.bytes = Bytes{params * shape.element_bytes()};
        engine::CommCost cc = network_.Collective(g, groups.dp);
        t += cc.latency + cc.transfer;
        gather_done[r][c] = t;
      }
    }
  }

  // Replay: per rank the compute stream's free time; per (micro-batch,
  // stage) when its forward output / input gradient is ready to send.
  const Time kNotYet = Time::Max();
  std::vector<Time> fwd_out(static_cast<size_t>(m) * stages, kNotYet), bwd_out(static_cast<size_t>(m) * stages, kNotYet);
  auto at = [&](std::vector<Time>& v, int mb, int vs) -> Time& { return v[static_cast<size_t>(mb) * stages + vs]; };
  std::vector<Time> stream(p, Time::Zero());
  std::vector<size_t> next(p, 0);
  // When a pass's input is available (kNotYet: not yet known).
  auto input = [&](int rank, const workload::PipelineStep& st) -> Time {
    const int vs = layout.Stage(rank, st.chunk);
    Time t = Time::Zero();
    switch (st.pass) {
      case workload::Pass::kForward:
        if (vs > 0) {
          Time o = at(fwd_out, st.micro_batch, vs - 1);
          if (o == kNotYet) return kNotYet;
          t = o + send_to_next[vs - 1];
        }
        t = std::max(t, gather_done[rank][st.chunk]);
        return t;
      case workload::Pass::kBackward:
      case workload::Pass::kBackwardInput:
        if (vs < stages - 1) {
          Time o = at(bwd_out, st.micro_batch, vs + 1);
          if (o == kNotYet) return kNotYet;
          t = o + send_to_next[vs];
        }
        return t;
      case workload::Pass::kWeight:
        return t;
    }
    return t;
  };
  // DualPipe's expert all-to-alls (a recomputed forward's are left out: a
  // lower bound). training_step.cc puts those of an overlapped pair on the
  // rank's one "ep" stream, which runs one at a time, and those of any other
  // pass on the compute stream, blocking.
  auto all_to_all = [&](int rank, const workload::PipelineStep& st) {
    const int vs = layout.Stage(rank, st.chunk);
    switch (st.pass) {
      case workload::Pass::kForward: return sc.a2a_fwd[vs];
      case workload::Pass::kBackward:
      case workload::Pass::kBackwardInput: return sc.a2a_bwd[vs];
      case workload::Pass::kWeight: return Time::Zero();
    }
    return Time::Zero();
  };
  std::vector<Time> ep_stream(p, Time::Zero());
  auto cost = [&](int rank, const workload::PipelineStep& st) {
    const int vs = layout.Stage(rank, st.chunk);
    switch (st.pass) {
      case workload::Pass::kForward: return sc.fwd[vs];
      case workload::Pass::kBackward: return sc.bwd[vs];
      case workload::Pass::kBackwardInput: return sc.bwd_input[vs];
      case workload::Pass::kWeight: return sc.weight[vs];
    }
    return Time::Zero();
  };
  // When each stage's weight gradients are complete: after its whole
  // backward (or W pass) of the last micro-batch the stage runs.
  std::vector<Time> grads_done(stages, Time::Zero());
  auto finish = [&](int rank, const workload::PipelineStep& st, Time end) {
    const int vs = layout.Stage(rank, st.chunk);
    if (st.pass == workload::Pass::kForward) at(fwd_out, st.micro_batch, vs) = end;
    if (st.pass == workload::Pass::kBackward || st.pass == workload::Pass::kBackwardInput) {
      at(bwd_out, st.micro_batch, vs) = end;
    }
    const int last_mb = layout.dual() && st.chunk == 0 ? m / 2 - 1 : m - 1;
    if ((st.pass == workload::Pass::kBackward || st.pass == workload::Pass::kWeight) && st.micro_batch == last_mb) {
      grads_done[vs] = end;
    }
  };
  size_t remaining = 0;
  for (const auto& steps : schedule) remaining += steps.size();
  while (remaining > 0) {
    bool progressed = false;
    for (int r = 0; r < p; ++r) {
      const auto& steps = schedule[r];
      while (next[r] < steps.size()) {
        const workload::PipelineStep& st = steps[next[r]];
        const Time in = input(r, st);
        if (in == kNotYet) break;
        if (st.overlap_with_next) {
          // DualPipe's overlapped pair: the two passes' kernels alternate on
          // the compute stream. Each pass ends no earlier than its input plus
          // its own work, nor than the stream's free time plus its own work;
          // the pair holds the stream for at least both passes' work.
          const workload::PipelineStep& other = steps[next[r] + 1];
          const Time in2 = input(r, other);
          if (in2 == kNotYet) break;
          const Time a = cost(r, st), b = cost(r, other);
          const Time end_a = std::max(in, stream[r]) + a, end_b = std::max(in2, stream[r]) + b;
          finish(r, st, end_a);
          finish(r, other, end_b);
          stream[r] = std::max({stream[r] + a + b, end_a, end_b});
          ep_stream[r] += all_to_all(r, st) + all_to_all(r, other);
          next[r] += 2;
          remaining -= 2;
        } else {
          stream[r] = std::max(stream[r], in) + cost(r, st) + (layout.paired() ? all_to_all(r, st) : Time::Zero());
          finish(r, st, stream[r]);
          ++next[r];
          --remaining;
        }
        progressed = true;
      }
    }
    if (!progressed) return Bound(plan, gpus);  // a schedule this replay cannot order: the simple bound
  }
  Time end = Time::Zero();
  for (Time t : stream) end = std::max(end, t);
  for (Time t : ep_stream) end = std::max(end, t);
  // Under LoRA / QLoRA the gradients are the adapters' and the gathered
  // weights frozen (workload/lora.h): the tail and the ZeRO-3 sum below count
  // full layers, so they are left out there (the bound stays below).
  const bool full_training = !plan.finetune.frozen_base();
  if (full_training) end = std::max(end, GradientTail(plan, layout, grads_done));

  // ZeRO-3 (FSDP): per micro-batch every layer's parameters are all-gathered
  // for its forward and again for its backward, and its gradients
  // reduce-scattered, all on the rank's one DP stream (training_step.cc),
  // which runs one task at a time: the step lasts at least their sum. Where
  // the DP group crosses nodes (large dp, or the pipeline-inner rank order)
  // this is what bounds the plan.
  // The dense parameters' gather and reduce-scatter run over the shard group
  // (dp x cp, or shard_group x cp with hybrid sharding); a MoE layer's routed
  // experts go over another group and are left out (the bound stays below).
  if (full_training && plan.sharding == config::Sharding::kZero3 && plan.FsdpShardRanks() > 1) {
    const workload::PlanGroups groups = workload::PlacePlan(plan, topo);
    double dense_params = static_cast<double>(model.LayerParameterCount());
    for (int64_t l = 0; l < model.num_layers && (model.is_moe() || model.is_hybrid()); ++l) {
      const int64_t experts = model.IsMoeLayer(l) ? model.ExpertParameterCount() : 0;
      if (experts == 0 && !model.is_hybrid()) continue;
      dense_params = std::min(dense_params, static_cast<double>(model.LayerParameterCount(l) - experts));
      if (!model.is_hybrid()) break;  // a transformer's MoE layers are alike: the first stands for all
    }
    const double layer_params = dense_params / plan.tp;
    trace::CommOp gather, scatter;
    gather.kind = trace::CollectiveKind::kAllGather;
    gather.bytes = Bytes{layer_params * shape.element_bytes()};
    scatter.kind = trace::CollectiveKind::kReduceScatter;
    scatter.bytes = Bytes{layer_params * config::PrecisionBytes(plan.GradReducePrecision())};  // as gradient_buckets.cc
    const engine::CommCost g = network_.Collective(gather, groups.fsdp), rs = network_.Collective(scatter, groups.fsdp);
    const Time per_layer = (g.latency + g.transfer) + (g.latency + g.transfer) + rs.latency + rs.transfer;
    const std::vector<int> layers = workload::LayersPerVirtualStage(static_cast<int>(model.PipelineLayerCount()), p, layout.v);
    const int64_t per_chunk_mb = layout.dual() ? m / 2 : m;
    for (int r = 0; r < p; ++r) {
      int64_t passes = 0;
      for (int c = 0; c < layout.chunks(); ++c) passes += per_chunk_mb * layers[layout.Stage(r, c)];
      end = std::max(end, Time::Ns(per_layer.ns() * passes));
    }
  }
  return std::max(end, Bound(plan, gpus));
}

// After a rank's last gradients exist, its data-parallel reduction still has
// to move the last bucket (training_step.cc's buckets: the last item added
// is the embedding's gradient on the first and last stage, else the first
// layer of the stage that finished last, and a bucket holds at least its
// last item), and tied input/output embeddings are all-reduced between the
// first and last rank after both ranks' reductions (the DP stream runs in
// order). The optimizer step waits for both; its own time is left out.
Time StepTimeBound::GradientTail(const config::PlanConfig& plan, const workload::PipelineLayout& layout,
                                 const std::vector<Time>& grads_done) {
  const auto& model = scenario_.model;
  const auto& topo = scenario_.topology;
  const int p = layout.p, stages = layout.stages();
  const std::vector<int> layers = workload::LayersPerVirtualStage(static_cast<int>(model.PipelineLayerCount()), p, layout.v);
  std::vector<int> first(layers.size(), 0);
  for (size_t i = 1; i < layers.size(); ++i) first[i] = first[i - 1] + layers[i - 1];
  const double grad_bytes = config::PrecisionBytes(plan.GradReducePrecision());
  const double embedding = static_cast<double>(model.vocab_size) * model.hidden_size / plan.tp * grad_bytes;
  const bool reduce = plan.sharding != config::Sharding::kZero3 && plan.dp * plan.cp > 1;
  const workload::PlanGroups groups = workload::PlacePlan(plan, topo);
  std::vector<Time> dp_free(p, Time::Zero());
  Time end = Time::Zero();
  for (int r = 0; r < p; ++r) {
    int last_vs = -1;
    for (int vs : layout.StagesOfRank(r)) {
      if (last_vs < 0 || grads_done[vs] > grads_done[last_vs]) last_vs = vs;
    }
    dp_free[r] = grads_done[last_vs];
    if (reduce) {
      const bool has_copy = last_vs == 0 || !model.tie_word_embeddings || stages > 1;
      double bytes;
      if ((last_vs == 0 || last_vs == stages - 1) && has_copy) {
        bytes = embedding;
      } else {
        const int l = first[last_vs];
        const double e = model.IsMoeLayer(l) ? static_cast<double>(model.ExpertParameterCount()) : 0.0;
        bytes = (static_cast<double>(model.LayerParameterCount(l)) - e) / plan.tp * grad_bytes;
      }
      trace::CommOp c;
      c.kind = plan.sharding == config::Sharding::kNone ? trace::CollectiveKind::kAllReduce
                                                        : trace::CollectiveKind::kReduceScatter;
      c.bytes = Bytes{bytes};
      engine::CommCost cc = network_.Collective(c, groups.dp);
      dp_free[r] += cc.latency + cc.transfer;
    }
    end = std::max(end, dp_free[r]);
  }
  auto all_reduce = [&](double bytes, int a, int b) {
    trace::CommOp c;
    c.kind = trace::CollectiveKind::kAllReduce;
    c.bytes = Bytes{bytes};
    engine::CommCost cc = network_.Collective(c, workload::PlacePipelinePair(plan, topo, a, b));
    return cc.latency + cc.transfer;
  };
  if (model.tie_word_embeddings && p > 1) {
    Time start = std::max(dp_free[0], dp_free[p - 1]);
    if (!layout.dual()) start = std::max({start, grads_done[0], grads_done[stages - 1]});
    dp_free[0] = dp_free[p - 1] = start + all_reduce(embedding, 0, p - 1);
    end = std::max(end, dp_free[0]);
  }
  if (layout.dual()) {
    // DualPipe: mirror ranks sum their reduced gradient shards.
    scratch_.plan = plan;
    for (int r = 0; r < p / 2; ++r) {
      const double all = static_cast<double>(workload::StageParameters(scratch_, r));
      const double expert = static_cast<double>(workload::StageExpertParameters(scratch_, r));
      const double edp = static_cast<double>(plan.ExpertDpRanks());
      const double shard =
          plan.sharding == config::Sharding::kNone ? all : (all - expert) / (plan.dp * plan.cp) + expert / edp;
      const Time start = std::max(dp_free[r], dp_free[p - 1 - r]);
      end = std::max(end, start + all_reduce(shard * grad_bytes, r, p - 1 - r));
    }
  }
  return end;
}

}  // namespace stacksim::search
