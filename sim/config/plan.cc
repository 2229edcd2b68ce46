#include "sim/config/plan.h"

#include <climits>

#include "sim/config/quantity_text.h"

namespace stacksim::config {

const char* AttentionName(AttentionImpl a) {
  switch (a) {
    case AttentionImpl::kFlash: return "flash";
    case AttentionImpl::kFlash2: return "flash2";
    case AttentionImpl::kFlash1: return "flash1";
    case AttentionImpl::kUnfused: return "unfused";
    case AttentionImpl::kOwn: return "stacksim";
  }
  return "?";
}

AttentionImpl ReadAttention(const JsonNode& v) {
  const std::string name = v.OneOf({"flash", "flash2", "flash1", "unfused", "stacksim"});
  for (AttentionImpl a : {AttentionImpl::kFlash, AttentionImpl::kFlash2, AttentionImpl::kFlash1, AttentionImpl::kOwn}) {
    if (name == AttentionName(a)) return a;
  }
  return AttentionImpl::kUnfused;
}

const char* CpCommName(CpComm c) {
  switch (c) {
    case CpComm::kP2p: return "p2p";
    case CpComm::kAllGather: return "allgather";
  }
  return "?";
}

const char* RankOrderName(RankOrder o) { return o == RankOrder::kTpCpPpDp ? "tp-cp-pp-dp" : "tp-cp-dp-pp"; }

const char* MoeDispatcherName(MoeDispatcher d) {
  return d == MoeDispatcher::kHierarchical ? "hierarchical" : "alltoall";
}

const char* RoutingName(Routing r) {
  switch (r) {
    case Routing::kUniform: return "uniform";
    case Routing::kZipf: return "zipf";
    case Routing::kHistogram: return "histogram";
  }
  return "?";
}

namespace {

int Degree(const JsonNode& node) {
  int64_t v = node.PositiveInt();
  if (v > (1 << 24)) node.Fail("parallel degree " + std::to_string(v) + " is implausibly large");
  return static_cast<int>(v);
}

}  // namespace

const char* OffloadName(OffloadTarget t) {
  switch (t) {
    case OffloadTarget::kNone: return "none";
    case OffloadTarget::kHost: return "host";
    case OffloadTarget::kNvme: return "nvme";
  }
  return "?";
}

// SelectivePolicy's names, in the enum's order.
constexpr const char* kSelectivePolicyNames[] = {"modules", "op-policy", "save-qkv-proj"};

const char* SelectivePolicyName(SelectivePolicy p) { return kSelectivePolicyNames[static_cast<int>(p)]; }

const char* LossLogitsName(LossLogits l) { return l == LossLogits::kUpcast ? "upcast" : "inplace"; }
const char* EagerModulesName(EagerModules m) {
  switch (m) {
    case EagerModules::kLibrary:
      return "library";
    case EagerModules::kFp32TensorOps:
      return "fp32-tensor-ops";
    case EagerModules::kHfTensorOps:
      return "hf-tensor-ops";
  }
  return "library";
}

EagerModules ReadEagerModules(const JsonNode& v) {
  const std::string name = v.OneOf({"library", "fp32-tensor-ops", "hf-tensor-ops"});
  return name == "fp32-tensor-ops" ? EagerModules::kFp32TensorOps
         : name == "hf-tensor-ops" ? EagerModules::kHfTensorOps
                                   : EagerModules::kLibrary;
}

// Fp8Casts' names, in the enum's order.
constexpr const char* kFp8CastsNames[] = {"per-forward", "transformer-engine", "into-producers"};

const char* Fp8CastsName(Fp8Casts c) { return kFp8CastsNames[static_cast<int>(c)]; }

Fp8Casts ReadFp8Casts(const JsonNode& v) {
  const std::string name = v.OneOf({kFp8CastsNames[0], kFp8CastsNames[1], kFp8CastsNames[2]});
  int i = 0;
  while (name != kFp8CastsNames[i]) ++i;  // OneOf accepted one of them
  return static_cast<Fp8Casts>(i);
}

const char* StateDtypeName(StateDtype d) {
  switch (d) {
    case StateDtype::kFp32: return "fp32";
    case StateDtype::kBf16: return "bf16";
    case StateDtype::kFp16: return "fp16";
    case StateDtype::kFp8: return "fp8";
  }
  return "?";
}

double StateDtypeBytes(StateDtype d) {
  return d == StateDtype::kFp32 ? 4.0 : d == StateDtype::kFp8 ? 1.0 : 2.0;
}

const char* MasterWeightsName(MasterWeights m) {
  switch (m) {
    case MasterWeights::kFp32: return "fp32";
    case MasterWeights::kBf16: return "bf16";
    case MasterWeights::kFp16: return "fp16";
    case MasterWeights::kRemainders: return "remainders";
    case MasterWeights::kNone: return "none";
  }
  return "?";
}

double OptimizerState::BytesPerParam(Precision training) const {
  if (training == Precision::kFp32) return 8.0;  // fp32 moments, the weights are the master
  const double moments = StateDtypeBytes(exp_avg) + StateDtypeBytes(exp_avg_sq);
  switch (master) {
    case MasterWeights::kFp32: return moments + 4.0;
    case MasterWeights::kBf16:
    case MasterWeights::kFp16: return moments + 2.0;
    // Remainders complete bf16 weights; FP8 weights have none to complete.
    case MasterWeights::kRemainders: return moments + (training == Precision::kFp8 ? 4.0 : 2.0);
    case MasterWeights::kNone: return moments;
  }
  return moments + 4.0;
}

OptimizerState ReadOptimizerState(const JsonNode& v) {
  JsonObject o(v);
  OptimizerState s;
  auto dtype = [](const JsonNode& n) {
    const std::string name = n.OneOf({"fp32", "bf16", "fp16", "fp8"});
    return name == "bf16" ? StateDtype::kBf16 : name == "fp16" ? StateDtype::kFp16
                          : name == "fp8" ? StateDtype::kFp8 : StateDtype::kFp32;
  };
  if (auto m = o.Optional("exp_avg")) s.exp_avg = dtype(*m);
  if (auto m = o.Optional("exp_avg_sq")) s.exp_avg_sq = dtype(*m);
  if (auto m = o.Optional("master")) {
    const std::string name = m->OneOf({"fp32", "bf16", "fp16", "remainders", "none"});
    s.master = name == "bf16"         ? MasterWeights::kBf16
               : name == "fp16"       ? MasterWeights::kFp16
               : name == "remainders" ? MasterWeights::kRemainders
               : name == "none"       ? MasterWeights::kNone
                                      : MasterWeights::kFp32;
  }
  o.Finish();
  return s;
}

nlohmann::json OptimizerStateJson(const OptimizerState& s) {
  return {{"exp_avg", StateDtypeName(s.exp_avg)},
          {"exp_avg_sq", StateDtypeName(s.exp_avg_sq)},
          {"master", MasterWeightsName(s.master)}};
}

const char* TpCommOverlapName(TpCommOverlap o) {
  switch (o) {
    case TpCommOverlap::kNone:
      return "none";
    case TpCommOverlap::kBackward:
      return "backward";
    case TpCommOverlap::kGemm:
      return "gemm";
    case TpCommOverlap::kPipelined:
      return "pipelined";
  }
  return "none";
}

TpCommOverlap ReadTpCommOverlap(const JsonNode& v) {
  const std::string name = v.OneOf({"none", "backward", "gemm", "pipelined"});
  return name == "gemm"        ? TpCommOverlap::kGemm
         : name == "pipelined" ? TpCommOverlap::kPipelined
         : name == "backward"  ? TpCommOverlap::kBackward
                               : TpCommOverlap::kNone;
}

const char* Zero3GatherName(Zero3Gather g) {
  switch (g) {
    case Zero3Gather::kSyncPerParameter: return "sync-per-parameter";
    case Zero3Gather::kPipelined: return "pipelined";
    case Zero3Gather::kPrefetchPerLayer: break;
  }
  return "prefetch-per-layer";
}

Zero3Gather ReadZero3Gather(const JsonNode& v) {
  const std::string name = v.OneOf({"prefetch-per-layer", "sync-per-parameter", "pipelined"});
  return name == "sync-per-parameter" ? Zero3Gather::kSyncPerParameter
         : name == "pipelined"        ? Zero3Gather::kPipelined
                                      : Zero3Gather::kPrefetchPerLayer;
}

const char* GradAccumulationName(GradAccumulation g) {
  switch (g) {
    case GradAccumulation::kAutogradAdd: return "autograd-add";
    case GradAccumulation::k16BitAdd: return "16bit-add";
    case GradAccumulation::kFp32Add: return "fp32-add";
    case GradAccumulation::kFp32UpcastAdd: return "fp32-upcast-add";
    case GradAccumulation::kFused: break;
  }
  return "fused";
}

GradAccumulation ReadGradAccumulation(const JsonNode& v) {
  const std::string name = v.OneOf({"fused", "autograd-add", "16bit-add", "fp32-add", "fp32-upcast-add"});
  return name == "autograd-add"      ? GradAccumulation::kAutogradAdd
         : name == "16bit-add"       ? GradAccumulation::k16BitAdd
         : name == "fp32-add"        ? GradAccumulation::kFp32Add
         : name == "fp32-upcast-add" ? GradAccumulation::kFp32UpcastAdd
                                     : GradAccumulation::kFused;
}

double GradAccumulationBytesPerParam(GradAccumulation g) {
  switch (g) {
    case GradAccumulation::kAutogradAdd:
    case GradAccumulation::k16BitAdd: return 2.0 + 2.0 + 2.0;
    case GradAccumulation::kFp32Add: return 2.0 + 4.0 + 4.0;
    case GradAccumulation::kFp32UpcastAdd: return 2.0 + 4.0 + 4.0 + 4.0 + 4.0;
    case GradAccumulation::kFused: break;
  }
  return 0.0;
}

bool GradAccumulationOnFirstMicroBatch(GradAccumulation g) { return g != GradAccumulation::kAutogradAdd; }

double LossLogitBytes(LossLogits l) { return l == LossLogits::kUpcast ? 12.0 : 6.0; }

const char* RecomputeName(Recompute r) {
  switch (r) {
    case Recompute::kNone: return "none";
    case Recompute::kSelective: return "selective";
    case Recompute::kFull: return "full";
  }
  return "?";
}

const char* RecomputeModuleName(RecomputeModule m) {
  switch (m) {
    case RecomputeModule::kCoreAttn: return "core_attn";
    case RecomputeModule::kLayerNorm: return "layernorm";
    case RecomputeModule::kMlaUpProj: return "mla_up_proj";
    case RecomputeModule::kMlp: return "mlp";
    case RecomputeModule::kMoeAct: return "moe_act";
    case RecomputeModule::kMoe: return "moe";
    case RecomputeModule::kSharedExperts: return "shared_experts";
  }
  return "?";
}

const char* ShardingName(Sharding s) {
  switch (s) {
    case Sharding::kNone: return "none";
    case Sharding::kZero1: return "zero1";
    case Sharding::kZero2: return "zero2";
    case Sharding::kZero3: return "zero3";
  }
  return "?";
}

bool MoeA2aOverlapRuns(const PlanConfig& p) {
  const bool paired = p.schedule == PipelineScheduleKind::kOneFOneB || p.schedule == PipelineScheduleKind::kInterleaved;
  return p.ep > 1 && paired && (p.pp == 1 || (p.schedule == PipelineScheduleKind::kInterleaved && p.vp > 1));
}

const char* ScheduleName(PipelineScheduleKind s) {
  switch (s) {
    case PipelineScheduleKind::kGpipe: return "gpipe";
    case PipelineScheduleKind::kOneFOneB: return "1f1b";
    case PipelineScheduleKind::kInterleaved: return "interleaved";
    case PipelineScheduleKind::kZeroBubbleH1: return "zb-h1";
    case PipelineScheduleKind::kDualPipe: return "dualpipe";
  }
  return "?";
}

const char* DpSyncMethodName(DpSyncMethod m) {
  switch (m) {
    case DpSyncMethod::kEveryStep: return "every-step";
    case DpSyncMethod::kCompression: return "compression";
    case DpSyncMethod::kDiLoCo: return "diloco";
    case DpSyncMethod::kAsync: return "async";
  }
  return "?";
}

namespace {

// Each method reads only its own keys, so a key of another method is an
// unknown key (JsonObject::Finish names it).
DpSync ReadDpSync(const JsonNode& node) {
  JsonObject obj(node);
  DpSync d;
  const std::string m = obj.Required("method").OneOf({"every-step", "compression", "diloco", "async"});
  if (m == "compression") {
    d.method = DpSyncMethod::kCompression;
    d.compression_ratio = obj.Required("compression_ratio").Fraction();
    d.compression_passes = obj.Required("compression_passes").NonNegativeNumber();
  } else if (m == "diloco") {
    d.method = DpSyncMethod::kDiLoCo;
    JsonNode h = obj.Required("sync_every");
    const int64_t every = h.PositiveInt();
    if (every > 1000000) h.Fail("at most 1,000,000 inner steps per outer step");
    d.sync_every = static_cast<int>(every);
    JsonNode w = obj.Required("workers");
    const int64_t workers = w.PositiveInt();
    if (workers < 2 || workers > (1 << 24)) w.Fail("DiLoCo needs at least 2 workers");
    d.workers = static_cast<int>(workers);
    if (auto v = obj.Optional("outer_precision")) {
      const std::string pr = v->OneOf({"fp32", "bf16", "fp16"});
      d.outer_precision = pr == "bf16" ? Precision::kBf16 : pr == "fp16" ? Precision::kFp16 : Precision::kFp32;
    }
  } else if (m == "async") {
    d.method = DpSyncMethod::kAsync;
    JsonNode k = obj.Required("staleness");
    const int64_t staleness = k.PositiveInt();
    if (staleness > 1000000) k.Fail("at most 1,000,000 steps of staleness");
    d.staleness = static_cast<int>(staleness);
  }
  obj.Finish();
  return d;
}

nlohmann::json DpSyncToJson(const DpSync& d) {
  nlohmann::json j = {{"method", DpSyncMethodName(d.method)}};
  switch (d.method) {
    case DpSyncMethod::kEveryStep: break;
    case DpSyncMethod::kCompression:
      j["compression_ratio"] = d.compression_ratio;
      j["compression_passes"] = d.compression_passes;
      break;
    case DpSyncMethod::kDiLoCo:
      j["sync_every"] = d.sync_every;
      j["workers"] = d.workers;
      j["outer_precision"] = PrecisionName(d.outer_precision);
      break;
    case DpSyncMethod::kAsync: j["staleness"] = d.staleness; break;
  }
  return j;
}

}  // namespace

RecomputeModules ReadRecomputeModules(const JsonNode& v) {
  if (!v.IsArray()) v.Fail("expected an array of module names, e.g. [\"core_attn\", \"layernorm\"]");
  RecomputeModules modules;
  for (const JsonNode& e : v.Elements()) {
    const std::string name = e.OneOf({"core_attn", "layernorm", "mla_up_proj", "mlp", "moe_act", "moe", "shared_experts"});
    for (int i = 0; i < kRecomputeModuleCount; ++i) {
      const auto m = static_cast<RecomputeModule>(i);
      if (name != RecomputeModuleName(m)) continue;
      if (modules.Has(m)) e.Fail("module \"" + name + "\" is listed twice");
      modules.Add(m);
    }
  }
  return modules;
}

std::string RecomputeModulesText(RecomputeModules m) {
  std::string out;
  for (int i = 0; i < kRecomputeModuleCount; ++i) {
    const auto module = static_cast<RecomputeModule>(i);
    if (m.Has(module)) out += (out.empty() ? "" : ", ") + std::string(RecomputeModuleName(module));
  }
  return out;
}

PlanConfig ParsePlan(const JsonNode& node, const PlanConfig& defaults) {
  JsonObject obj(node);
  PlanConfig p = defaults;

  if (obj.Has("global_batch")) {
    obj.Required("global_batch").Fail("the global batch lives in training.global_batch (sequences); "
                                      "the plan must not repeat it");
  }
  if (auto v = obj.Optional("tp")) p.tp = Degree(*v);
  if (auto v = obj.Optional("pp")) p.pp = Degree(*v);
  if (auto v = obj.Optional("dp")) p.dp = Degree(*v);
  if (auto v = obj.Optional("cp")) {
    p.cp = Degree(*v);
  }
  if (auto v = obj.Optional("cp_comm")) {
    p.cp_comm = v->OneOf({"p2p", "allgather"}) == "allgather" ? CpComm::kAllGather : CpComm::kP2p;
  }
  if (auto v = obj.Optional("ep")) p.ep = Degree(*v);
  if (auto v = obj.Optional("etp")) p.etp = Degree(*v);
  if (auto v = obj.Optional("rank_order")) {
    p.rank_order = v->OneOf({"tp-cp-dp-pp", "tp-cp-pp-dp"}) == "tp-cp-pp-dp" ? RankOrder::kTpCpPpDp : RankOrder::kTpCpDpPp;
  }
  std::optional<JsonNode> routing_node = obj.Optional("moe_routing");
  if (routing_node) {
    std::string r = routing_node->OneOf({"uniform", "zipf", "histogram"});
    p.routing = r == "zipf" ? Routing::kZipf : r == "histogram" ? Routing::kHistogram : Routing::kUniform;
  }
  if (auto v = obj.Optional("moe_zipf_exponent")) {
    p.zipf_exponent = v->NonNegativeNumber();
    if (p.zipf_exponent > 10) v->Fail("a Zipf exponent above 10 puts every token on one expert; use at most 10");
    if (p.routing != Routing::kZipf) v->Fail("moe_zipf_exponent needs moe_routing \"zipf\"");
  }
  if (auto v = obj.Optional("moe_routing_histogram")) {
    if (!v->IsArray() || v->json().empty()) v->Fail("expected a non-empty array of tokens per routed expert");
    p.routing_histogram.clear();
    double sum = 0;
    for (const JsonNode& e : v->Elements()) {
      p.routing_histogram.push_back(e.NonNegativeNumber());
      sum += p.routing_histogram.back();
    }
    if (!(sum > 0)) v->Fail("the histogram has no tokens");
    if (p.routing != Routing::kHistogram) v->Fail("moe_routing_histogram needs moe_routing \"histogram\"");
  }
  if (p.routing == Routing::kHistogram && p.routing_histogram.empty()) {
    (routing_node ? *routing_node : node).Fail("moe_routing \"histogram\" needs moe_routing_histogram");
  }
  if (auto v = obj.Optional("moe_capacity_factor")) {
    p.capacity_factor = v->PositiveNumber();
    if (p.capacity_factor > 1000) v->Fail("capacity factor is implausibly large");
  }
  if (auto v = obj.Optional("moe_dispatcher")) {
    p.dispatcher = v->OneOf({"alltoall", "hierarchical"}) == "hierarchical" ? MoeDispatcher::kHierarchical
                                                                           : MoeDispatcher::kAllToAll;
  }
  std::optional<JsonNode> vp_node = obj.Optional("vp");
  if (vp_node) p.vp = Degree(*vp_node);
  if (auto v = obj.Optional("micro_batch")) {
    p.micro_batch = v->PositiveInt();
    if (p.micro_batch > (int64_t{1} << 32)) v->Fail("micro-batch size is implausibly large");
  }
  if (auto v = obj.Optional("sequence_parallel")) p.sequence_parallel = v->Bool();
  if (auto v = obj.Optional("recompute")) {
    std::string s = v->OneOf({"none", "selective", "full"});
    p.recompute = s == "full" ? Recompute::kFull : s == "selective" ? Recompute::kSelective : Recompute::kNone;
  }
  if (auto v = obj.Optional("recompute_layers")) {
    const int64_t n = v->PositiveInt();
    if (p.recompute != Recompute::kFull) {
      v->Fail(std::string("recompute_layers needs recompute \"full\" (recompute is \"") + RecomputeName(p.recompute) +
              "\"): the first N layers of each model chunk are recomputed whole");
    }
    if (n > 100000) v->Fail("implausibly many layers");
    p.recompute_layers = static_cast<int>(n);
  }
  if (auto v = obj.Optional("recompute_modules")) {
    RecomputeModules modules = ReadRecomputeModules(*v);
    if (p.recompute != Recompute::kSelective) {
      v->Fail(std::string("recompute_modules needs recompute \"selective\" (recompute is \"") +
              RecomputeName(p.recompute) + "\")");
    }
    p.recompute_modules = modules;
  }
  if (auto v = obj.Optional("selective_policy")) {
    const std::string name = v->OneOf({kSelectivePolicyNames[0], kSelectivePolicyNames[1], kSelectivePolicyNames[2]});
    int i = 0;
    while (name != kSelectivePolicyNames[i]) ++i;  // OneOf accepted one of them
    p.selective_policy = static_cast<SelectivePolicy>(i);
  }
  if (auto v = obj.Optional("loss_logits")) {
    p.loss_logits = v->OneOf({"inplace", "upcast"}) == "upcast" ? LossLogits::kUpcast : LossLogits::kInPlace;
  }
  if (auto v = obj.Optional("eager_modules")) p.eager_modules = ReadEagerModules(*v);
  if (auto v = obj.Optional("fp8_amax_reduction")) p.fp8_amax_reduction = v->Bool();
  if (auto v = obj.Optional("fp8_casts")) p.fp8_casts = ReadFp8Casts(*v);
  if (auto v = obj.Optional("compiled_layers_only")) p.compiled_layers_only = v->Bool();
  if (auto v = obj.Optional("repeat_kv_copies")) p.repeat_kv_copies = v->Bool();
  if (auto v = obj.Optional("fsdp_pp_reshard")) p.fsdp_pp_reshard = v->Bool();
  if (auto v = obj.Optional("sp_keeps_gathered_inputs")) p.sp_keeps_gathered_inputs = v->Bool();
  if (auto v = obj.Optional("cp_torch_ring")) p.cp_torch_ring = v->Bool();
  if (auto v = obj.Optional("fsdp_copies")) p.fsdp_copies = v->Bool();
  if (auto v = obj.Optional("pp_blocking_sends")) p.pp_blocking_sends = v->Bool();
  if (auto v = obj.Optional("single_round_all_forwards")) p.single_round_all_forwards = v->Bool();
  if (auto v = obj.Optional("optimizer_state")) p.optimizer_state = ReadOptimizerState(*v);
  if (auto v = obj.Optional("fp8_tp_gather")) p.fp8_tp_gather = v->Bool();
  std::optional<JsonNode> fp8_params = obj.Optional("fp8_params");
  if (fp8_params) p.fp8_params = fp8_params->Bool();
  if (auto v = obj.Optional("zero3_gather")) {
    p.zero3_gather = ReadZero3Gather(*v);
  }
  if (auto v = obj.Optional("grad_accumulation")) p.grad_accumulation = ReadGradAccumulation(*v);
  if (auto v = obj.Optional("zero_grad_all_reduce")) p.zero_grad_all_reduce = v->Bool();
  if (auto v = obj.Optional("zero3_max_reuse_distance")) {
    p.zero3_max_reuse_distance = v->NonNegativeNumber();
  }
  if (auto v = obj.Optional("sharding")) {
    std::string s = v->OneOf({"none", "zero1", "zero2", "zero3"});
    p.sharding = s == "zero1"   ? Sharding::kZero1
                 : s == "zero2" ? Sharding::kZero2
                 : s == "zero3" ? Sharding::kZero3
                                : Sharding::kNone;
  }
  if (auto v = obj.Optional("shard_group")) {
    p.shard_group = Degree(*v);
    if (p.sharding != Sharding::kZero3) v->Fail("shard_group (hybrid sharding) needs sharding \"zero3\"");
    if (p.shard_group > p.dp || p.dp % p.shard_group != 0) {
      v->Fail("shard_group " + std::to_string(p.shard_group) + " must divide dp (" + std::to_string(p.dp) +
              "): each of the dp / shard_group replicas holds one whole sharded copy");
    }
  }
  if (auto v = obj.Optional("precision")) {
    std::string s = v->OneOf({"bf16", "fp16", "fp32", "fp8"});
    p.precision = s == "fp16"   ? Precision::kFp16
                  : s == "fp32" ? Precision::kFp32
                  : s == "fp8"  ? Precision::kFp8
                                : Precision::kBf16;
  }
  if (fp8_params && p.fp8_params && p.precision != Precision::kFp8) {
    fp8_params->Fail("FP8 weights need precision fp8");
  }

  std::optional<JsonNode> schedule_node = obj.Optional("schedule");
  if (schedule_node) {
    std::string s = schedule_node->OneOf({"gpipe", "1f1b", "interleaved", "zb-h1", "dualpipe"});
    p.schedule = s == "gpipe"      ? PipelineScheduleKind::kGpipe
                 : s == "1f1b"     ? PipelineScheduleKind::kOneFOneB
                 : s == "zb-h1"    ? PipelineScheduleKind::kZeroBubbleH1
                 : s == "dualpipe" ? PipelineScheduleKind::kDualPipe
                                   : PipelineScheduleKind::kInterleaved;
  } else if (p.vp > 1) {
    p.schedule = PipelineScheduleKind::kInterleaved;
  } else if (p.schedule == PipelineScheduleKind::kInterleaved) {
    p.schedule = PipelineScheduleKind::kOneFOneB;  // the default's interleaving needs vp > 1
  }
  if (p.schedule == PipelineScheduleKind::kInterleaved && p.vp < 2) {
    (schedule_node ? *schedule_node : node)
        .Fail("the interleaved schedule needs vp > 1 virtual stages per pipeline rank (vp is " +
              std::to_string(p.vp) + "); with vp 1 set plan.schedule to 1f1b (--set plan.schedule=1f1b) or " +
              "another schedule: gpipe, zb-h1, dualpipe");
  }
  if (p.vp > 1 && p.schedule != PipelineScheduleKind::kInterleaved) {
    (vp_node ? *vp_node : node)
        .Fail("vp = " + std::to_string(p.vp) + " virtual stages need the interleaved schedule, not " +
              ScheduleName(p.schedule) + " (--set plan.schedule=interleaved, or plan.vp=1)");
  }

  auto offload_target = [](const JsonNode& v) {
    std::string t = v.OneOf({"none", "host", "nvme"});
    return t == "host" ? OffloadTarget::kHost : t == "nvme" ? OffloadTarget::kNvme : OffloadTarget::kNone;
  };
  if (auto v = obj.Optional("offload_optimizer")) p.offload_optimizer = offload_target(*v);
  if (auto v = obj.Optional("offload_optimizer_fraction")) {
    p.offload_optimizer_fraction = v->PositiveNumber();
    if (p.offload_optimizer_fraction > 1) v->Fail("a fraction of the optimizer state: at most 1");
    if (p.offload_optimizer == OffloadTarget::kNone) v->Fail("offload_optimizer_fraction needs offload_optimizer \"host\" or \"nvme\"");
  }
  if (auto v = obj.Optional("offload_params")) p.offload_params = offload_target(*v);
  if (auto v = obj.Optional("overlap_offload")) p.overlap_offload = v->Bool();
  if (auto v = obj.Optional("overlap_grad_reduce")) p.overlap_grad_reduce = v->Bool();
  if (auto v = obj.Optional("tp_comm_overlap")) p.tp_comm_overlap = ReadTpCommOverlap(*v);
  if (auto v = obj.Optional("overlap_param_gather")) p.overlap_param_gather = v->Bool();
  if (auto v = obj.Optional("grad_bucket")) {
    p.grad_bucket = v->BytesValue();
    if (!(p.grad_bucket.value > 0)) v->Fail("gradient bucket must be larger than 0 bytes");
  }
  if (auto v = obj.Optional("cuda_graphs")) p.cuda_graphs = v->Bool();
  if (auto v = obj.Optional("moe_a2a_overlap")) p.moe_a2a_overlap = v->Bool();
  if (auto v = obj.Optional("microbatch_group")) p.microbatch_group = static_cast<int>(v->PositiveInt());
  if (auto v = obj.Optional("comm_sms")) {
    const int64_t n = v->Int();
    if (n < 0) v->Fail("comm_sms must be 0 or more SMs");
    p.comm_sms = static_cast<int>(n);
  }
  if (auto v = obj.Optional("overlap_comm_sms")) {
    const int64_t n = v->Int();
    if (n < 0) v->Fail("overlap_comm_sms must be 0 or more SMs");
    p.overlap_comm_sms = static_cast<int>(n);
  }
  if (auto v = obj.Optional("attention")) {
    p.attention = ReadAttention(*v);
  }
  if (auto v = obj.Optional("kernels")) {
    p.kernels = v->OneOf({"fused", "eager"}) == "eager" ? KernelFusion::kEager : KernelFusion::kFused;
  }
  if (auto v = obj.Optional("uneven_stages")) p.uneven_stages = v->Bool();
  if (auto v = obj.Optional("grad_reduce_precision")) {
    std::string s = v->OneOf({"fp32", "bf16", "fp16"});
    p.grad_reduce_precision = s == "bf16" ? Precision::kBf16 : s == "fp16" ? Precision::kFp16 : Precision::kFp32;
  }
  if (auto v = obj.Optional("dp_sync")) p.dp_sync = ReadDpSync(*v);
  if (auto v = obj.Optional("finetune")) p.finetune = ReadFinetune(*v);
  obj.Finish();
  // Megatron-LM turns sequence parallelism off when tp == 1 (there is nothing
  // to split); we do the same rather than reject the plan.
  if (p.tp == 1) p.sequence_parallel = false;
  return p;
}

nlohmann::json PlanToJson(const PlanConfig& p) {
  nlohmann::json j = {{"tp", p.tp},
          {"pp", p.pp},
          {"dp", p.dp},
          {"cp", p.cp},
          {"cp_comm", CpCommName(p.cp_comm)},
          {"ep", p.ep},
          {"vp", p.vp},
          {"rank_order", RankOrderName(p.rank_order)},
          {"micro_batch", p.micro_batch},
          {"sequence_parallel", p.sequence_parallel},
          {"recompute", RecomputeName(p.recompute)},
          {"selective_policy", SelectivePolicyName(p.selective_policy)},
          {"loss_logits", LossLogitsName(p.loss_logits)},
          {"eager_modules", EagerModulesName(p.eager_modules)},
          {"fp8_casts", Fp8CastsName(p.fp8_casts)},
          {"fp8_amax_reduction", p.fp8_amax_reduction},
          {"compiled_layers_only", p.compiled_layers_only},
          {"repeat_kv_copies", p.repeat_kv_copies},
          {"optimizer_state", OptimizerStateJson(p.optimizer_state)},
          {"fsdp_pp_reshard", p.fsdp_pp_reshard},
          {"sp_keeps_gathered_inputs", p.sp_keeps_gathered_inputs},
          {"cp_torch_ring", p.cp_torch_ring},
          {"single_round_all_forwards", p.single_round_all_forwards},
          {"fp8_tp_gather", p.fp8_tp_gather},
          {"fp8_params", p.fp8_params},
          {"zero3_gather", Zero3GatherName(p.zero3_gather)},
          {"fsdp_copies", p.fsdp_copies},
          {"pp_blocking_sends", p.pp_blocking_sends},
          {"zero3_max_reuse_distance", p.zero3_max_reuse_distance},
          {"sharding", ShardingName(p.sharding)},
          {"schedule", ScheduleName(p.schedule)},
          {"precision", PrecisionName(p.precision)},
          {"overlap_grad_reduce", p.overlap_grad_reduce},
          {"tp_comm_overlap", TpCommOverlapName(p.tp_comm_overlap)},
          {"overlap_param_gather", p.overlap_param_gather},
          {"grad_bucket", BytesText(p.grad_bucket)},
          {"cuda_graphs", p.cuda_graphs},
          {"attention", AttentionName(p.attention)},
          {"grad_reduce_precision", PrecisionName(p.GradReducePrecision())},
          {"kernels", p.kernels == KernelFusion::kEager ? "eager" : "fused"},
          {"uneven_stages", p.uneven_stages},
          {"moe_routing", RoutingName(p.routing)},
          {"moe_dispatcher", MoeDispatcherName(p.dispatcher)},
          {"offload_optimizer", OffloadName(p.offload_optimizer)},
          {"offload_params", OffloadName(p.offload_params)},
          {"overlap_offload", p.overlap_offload},
          {"moe_capacity_factor", p.capacity_factor > 0 ? nlohmann::json(p.capacity_factor) : nlohmann::json()}};
  if (p.etp != 1) j["etp"] = p.etp;
  if (p.comm_sms > 0) j["comm_sms"] = p.comm_sms;
  if (p.overlap_comm_sms) j["overlap_comm_sms"] = *p.overlap_comm_sms;
  if (p.grad_accumulation != GradAccumulation::kFused) j["grad_accumulation"] = GradAccumulationName(p.grad_accumulation);
  if (p.zero_grad_all_reduce) j["zero_grad_all_reduce"] = true;
  if (p.moe_a2a_overlap) j["moe_a2a_overlap"] = true;  // only when set: older readers know no etp
  if (p.microbatch_group > 0) j["microbatch_group"] = p.microbatch_group;
  // Only with an offload target: ParsePlan rejects a fraction of nothing.
  if (p.offload_optimizer != OffloadTarget::kNone) j["offload_optimizer_fraction"] = p.offload_optimizer_fraction;
  if (p.shard_group > 0) j["shard_group"] = p.shard_group;  // only with zero3: ParsePlan rejects it otherwise
  if (p.recompute_layers > 0) j["recompute_layers"] = p.recompute_layers;  // only with full: ParsePlan rejects it otherwise
  if (p.recompute == Recompute::kSelective) {
    nlohmann::json modules = nlohmann::json::array();
    for (int i = 0; i < kRecomputeModuleCount; ++i) {
      const auto m = static_cast<RecomputeModule>(i);
      if (p.recompute_modules.Has(m)) modules.push_back(RecomputeModuleName(m));
    }
    j["recompute_modules"] = modules;
  }
  if (p.dp_sync.method != DpSyncMethod::kEveryStep) j["dp_sync"] = DpSyncToJson(p.dp_sync);
  if (p.finetune.frozen_base()) j["finetune"] = FinetuneToJson(p.finetune);  // only when set: older readers know none
  if (p.routing == Routing::kZipf) j["moe_zipf_exponent"] = p.zipf_exponent;
  if (p.routing == Routing::kHistogram) j["moe_routing_histogram"] = p.routing_histogram;
  return j;
}

}  // namespace stacksim::config
