// A serving engine's defaults, as data (engines/*.json, schema
// stacksim.engine/1): how vLLM, TensorRT-LLM or LMDeploy batch requests,
// how much memory they give the KV cache, which KV format they keep for an
// fp8 checkpoint, and which decode batches they replay from CUDA graphs.
// Every value states its source (the engine's own docs, configs or code),
// like the training frameworks' profiles (frameworks/*.json). A scenario
// names its engine ("engine": "vllm"); its own fields override the profile.
#ifndef STACKSIM_SIM_SERVE_ENGINE_PROFILE_H_
#define STACKSIM_SIM_SERVE_ENGINE_PROFILE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/util/json_reader.h"
#include "sim/util/units.h"

namespace stacksim::serve {

// How an engine sizes its KV cache. kTotal: the engine may use `fraction` of
// the GPU's whole memory and the KV cache gets what weights, activations and
// the runtime leave of it (vLLM's gpu_memory_utilization). kFree: the KV
// cache takes `fraction` of the memory left free after the weights,
// activations and runtime are in place (TensorRT-LLM's
// free_gpu_memory_fraction, LMDeploy's cache_max_entry_count since v0.2).
// kStatic: weights and the KV pool share `fraction` of the memory the GPU
// had once the runtime was up; activations and CUDA graphs live in the rest
// (SGLang's mem_fraction_static).
enum class KvMemoryRule { kTotal, kFree, kStatic };
const char* KvMemoryRuleName(KvMemoryRule r);
// "total" | "free" | "static"; an InputError naming the node otherwise.
KvMemoryRule ParseKvMemoryRule(const JsonNode& v);

// How decode attention reads a grouped-query KV cache. kPerKvHead: the
// query heads sharing a KV head are served together, the cache read once
// (tensor-core decode kernels: TensorRT-LLM's XQA from v0.8,
// FlashAttention, FlashInfer). kPerQueryHead: one thread block per query
// head and sequence, each reading (and converting) its KV head's cache, so
// the cache is read heads / kv_heads times (TensorRT-LLM's masked MHA
// kernel before XQA).
enum class DecodeAttention { kPerKvHead, kPerQueryHead };
const char* DecodeAttentionName(DecodeAttention d);

// Which requests a continuous-batching engine admits. kWatermark: a prompt
// is admitted when its blocks (and a 1% watermark) are free; running
// sequences grow block by block and are preempted when none is left (vLLM).
// kGuaranteedNoEvict: a request is admitted only when the blocks for its
// prompt and all its output tokens are free, so a started request is never
// paused (TensorRT-LLM's default capacity scheduler policy).
enum class Admission { kWatermark, kGuaranteedNoEvict };
const char* AdmissionName(Admission a);

// A default that changes on GPUs with at least `gib` GiB of HBM, except the
// GPUs whose profile name contains one of `except_gpus` (vLLM's larger
// batch defaults for H100-class GPUs but not the A100 80GB).
struct HbmTier {
  double gib = 0;
  std::vector<std::string> except_gpus;
  int64_t value = 0;
};

struct EngineProfile {
  std::string name;    // file stem, "vllm"
  std::string title;
  std::string file;
  std::string scheduler;          // "continuous", "chunked-prefill", "prefill-first", "inflight" or "persistent"
  int64_t max_sequences = 256;
  int64_t max_batched_tokens = 8192;
  std::optional<HbmTier> max_sequences_large, max_batched_tokens_large;
  KvMemoryRule kv_memory = KvMemoryRule::kTotal;
  double kv_memory_fraction = 0.9;
  // Fractions that replace kv_memory_fraction from a TP size up, ascending
  // (SGLang's mem_fraction_static by tp_size).
  std::vector<std::pair<int, double>> kv_memory_fraction_by_tp;
  // The KV format the engine keeps when it serves an fp8 checkpoint without
  // being told a KV format ("" = the activation dtype).
  std::string fp8_checkpoint_kv;
  // Largest decode batch replayed from a captured CUDA graph (0: none).
  int64_t cuda_graph_max_batch = 0;
  DecodeAttention decode_attention = DecodeAttention::kPerKvHead;
  Admission admission = Admission::kWatermark;
  // Automatic prefix caching on by default (vLLM V1, SGLang's radix cache).
  bool prefix_caching = false;
  // Sliding-window layers keep only the window's KV (vLLM V1's hybrid KV
  // cache manager, TensorRT-LLM's pool per attention window), else the
  // whole context's like full-attention layers.
  bool sliding_window_kv = false;
  // Chunked-attention layers keep only their current chunk's KV (vLLM V1's
  // hybrid KV cache manager for Llama 4).
  bool chunked_attention_kv = false;

  // The defaults on one GPU (its profile's name and HBM) at one TP size.
  int64_t MaxSequences(const std::string& gpu, double hbm_bytes) const;
  int64_t MaxBatchedTokens(const std::string& gpu, double hbm_bytes) const;
  double KvMemoryFraction(int tp) const;
};

// The per-iteration host time fitted on the serving validation (the
// "serving_iteration_overhead" entry of validation/fitted_constants.json,
// written by `serve-validate FILE --fit-overhead
// validation/fitted_constants.json`; one value for every engine), for a
// scenario naming `engine`; 0 s without an engine, file or entry. Throws
// InputError for a malformed entry.
Time FittedIterationOverhead(const std::string& engine, const std::string& fitted_constants_path);
std::string DefaultFittedConstantsPath();

// Strict: unknown keys, a fact without a source, impossible values are
// InputErrors naming the file and key.
EngineProfile ParseEngineProfile(const nlohmann::json& doc, const std::string& file);
EngineProfile LoadEngineProfile(const std::string& path);

}  // namespace stacksim::serve

#endif  // STACKSIM_SIM_SERVE_ENGINE_PROFILE_H_
