// A serving scenario: one model deployed as replicas on one GPU type, a batch
// scheduler and a request workload (scenarios/serve-*.json; docs/serve.md).
//
// Model, topology and profile are referenced by name or path as in training
// scenarios (config/scenario.h). Parsing is strict: unknown keys, missing
// required keys, wrong units and impossible values (TP not dividing the
// heads, compute fp8 with int4 weights) are InputErrors naming file and key.
// Units: times in Time, sizes in Bytes, rates in requests per second.
#ifndef STACKSIM_SIM_SERVE_SERVE_CONFIG_H_
#define STACKSIM_SIM_SERVE_SERVE_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/model.h"
#include "sim/config/profile.h"
#include "sim/config/topology.h"
#include "sim/serve/engine_profile.h"
#include "sim/util/units.h"

namespace stacksim::serve {

// Storage formats of weights and KV cache. int4 is weight-only (W4A16);
// fp4 (NVFP4: 4-bit values and an fp8 scale per 16; MXFP4 carries a smaller
// scale) is read by fp8 compute, which stands in for FP4 tensor cores, or
// dequantized for bf16 compute.
enum class WeightFormat { kBf16, kFp8, kInt8, kInt4, kFp4 };
enum class KvFormat { kBf16, kFp8, kInt8 };
const char* WeightFormatName(WeightFormat f);
const char* KvFormatName(KvFormat f);
// Bytes per stored element. int4 counts one fp16 scale per group of 128
// weights (GPTQ/AWQ's usual group size): 0.5 + 2/128.
double WeightBytes(WeightFormat f);
double KvBytes(KvFormat f);

// kInflight: TensorRT-LLM's in-flight batching without chunked context:
// every running decode, then whole prompts while they fit the remaining
// token budget, in one iteration.
// kPersistent: TurboMind v0.1's persistent batch: each iteration runs the
// contexts of every newly admitted request (less its last token), then one
// decode step of every sequence, which emits the new ones' first tokens;
// max_batched_tokens sizes a context sub-batch (activations), not the
// iteration.
enum class SchedulerKind { kStatic, kContinuous, kChunked, kPrefillFirst, kInflight, kPersistent, kDisaggregated };
const char* SchedulerName(SchedulerKind k);
enum class RouterKind { kRoundRobin, kLeastLoaded };
enum class Preemption { kRecompute, kSwap };

// A distribution of token counts.
struct LengthDistribution {
  enum class Kind { kFixed, kUniform, kLogNormal, kEmpirical } kind = Kind::kFixed;
  int64_t value = 0;               // fixed
  int64_t min = 1, max = 1;        // uniform bounds; lognormal clamp
  double median = 0, sigma = 0;    // lognormal: exp(mu) and sigma of log
  std::vector<int64_t> values;     // empirical: drawn uniformly
};

struct WorkloadConfig {
  // Inter-arrival times: Poisson (exponential), or gamma with a coefficient
  // of variation cv (cv > 1: bursty; cv 1 is Poisson).
  enum class Arrival { kPoisson, kGamma } arrival = Arrival::kPoisson;
  double rate_per_s = 0;
  double cv = 1;
  int64_t requests = 0;
  uint64_t seed = 1;
  LengthDistribution prompt_tokens;
  LengthDistribution output_tokens;
  std::string trace_file;          // CSV arrival_s,prompt_tokens,output_tokens; replaces the above
  // Leading tokens every prompt shares with the others (a system prompt, a
  // few-shot preamble); what prefix caching can reuse. 0: none.
  int64_t shared_prefix_tokens = 0;
};

// Speculative decoding: each decode step of a sequence drafts `draft_tokens`
// tokens, one draft forward after another, then the target verifies them
// and the bonus position in one forward of draft_tokens + 1 query tokens;
// the step emits tokens_per_step tokens on average (accepted drafts plus the
// target's own). A draft head (EAGLE, MTP: `draft_layers` decoder layers of
// the target's width that share its embedding and output head) or a
// separate draft model of the shipped models, on the same TP ranks.
struct SpeculativeConfig {
  enum class Method { kNone, kDraftHead, kDraftModel } method = Method::kNone;
  std::string method_name;         // "eagle", "mtp", "draft-model"
  int64_t draft_tokens = 0;
  double tokens_per_step = 1.0;    // expected tokens one decode step emits, 1..draft_tokens+1
  int64_t draft_layers = 1;        // draft head's decoder layers
  config::ModelConfig draft_model; // the draft model, or the head as a draft_layers-layer copy of the target
  bool enabled() const { return method != Method::kNone; }
};

struct ServeConfig {
  std::string name;
  std::string file;
  config::ModelConfig model;
  config::TopologyConfig topology;
  config::ProfileConfig profile;
  int tp = 1, pp = 1, ep = 1;      // inside one replica; GPUs per replica = tp * pp
  int replicas = 1;                // colocated replicas (not disaggregated)
  int prefill_replicas = 0;        // disaggregated pools
  int decode_replicas = 0;
  WeightFormat weights = WeightFormat::kBf16;
  KvFormat kv = KvFormat::kBf16;
  config::Precision compute = config::Precision::kBf16;  // GEMM precision
  bool cuda_graphs = true;
  std::string engine;              // engine profile name ("" = none: the defaults below)
  // Largest decode batch replayed from a CUDA graph (the engine's; vLLM V0's 256 without one).
  int64_t cuda_graph_max_batch = 256;
  DecodeAttention decode_attention = DecodeAttention::kPerKvHead;  // the engine's; "decode_attention"
  Admission admission = Admission::kWatermark;                     // the engine's; "scheduler.admission"
  // Memory plan: kTotal, vLLM's gpu_memory_utilization (the rest of HBM is
  // reserve); kFree, the KV cache takes this fraction of what weights,
  // activations and runtime leave (TensorRT-LLM, LMDeploy).
  KvMemoryRule kv_memory = KvMemoryRule::kTotal;
  double gpu_memory_utilization = 0.9;
  int64_t block_tokens = 16;
  Preemption preemption = Preemption::kRecompute;
  // Automatic prefix caching: a replica keeps the KV blocks of the shared
  // prefix once computed, and later prompts prefill only what follows
  // (whole blocks: a partly filled block is recomputed).
  bool prefix_caching = false;
  // Sliding-window layers store only the window's KV (EngineProfile::
  // sliding_window_kv; kv_cache.sliding_window_kv).
  bool sliding_window_kv = false;
  // Chunked-attention layers store only the current chunk's KV
  // (EngineProfile::chunked_attention_kv; kv_cache.chunked_attention_kv).
  bool chunked_attention_kv = false;
  SchedulerKind scheduler = SchedulerKind::kContinuous;
  int64_t max_batched_tokens = 8192;  // per iteration (chunked: the token budget)
  int64_t max_sequences = 256;
  RouterKind router = RouterKind::kRoundRobin;
  Time iteration_overhead;         // host-side scheduling per iteration
  // Where iteration_overhead came from: "scenario", the fitted constant
  // (validation/fitted_constants.json) for a scenario naming an engine, or
  // "" (none).
  std::string iteration_overhead_source;
  WorkloadConfig workload;
  SpeculativeConfig speculative;   // "speculative" (absent: none)
  Time slo_ttft = Time::FromSeconds(2);
  Time slo_tpot = Time::Ms(100);

  int gpus_per_replica() const { return tp * pp; }
  int total_replicas() const {
    return scheduler == SchedulerKind::kDisaggregated ? prefill_replicas + decode_replicas : replicas;
  }
  int total_gpus() const { return gpus_per_replica() * total_replicas(); }
};

// Command-line overrides (stacksim serve --rate/--requests/--seed/--scheduler).
struct ServeOverrides {
  std::optional<double> rate_per_s;
  std::optional<int64_t> requests;
  std::optional<uint64_t> seed;
  std::optional<std::string> scheduler;
};

ServeConfig ParseServeScenario(const nlohmann::json& doc, const std::string& file);
ServeConfig LoadServeScenario(const std::string& path, const ServeOverrides& overrides = {});
// Validation shared by the parser and overrides; throws InputError naming `file`.
void ValidateServeConfig(const ServeConfig& c);

}  // namespace stacksim::serve

#endif  // STACKSIM_SIM_SERVE_SERVE_CONFIG_H_
