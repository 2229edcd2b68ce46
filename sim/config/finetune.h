// Parameter-efficient fine-tuning as a plan chooses it: LoRA (Hu et al.
// 2021, arXiv:2106.09685) freezes the pretrained weights and trains, beside
// each chosen projection W (d_in x d_out), a pair of low-rank adapters A
// (d_in x r) and B (r x d_out) whose product, scaled by alpha / r, is added
// to W's output; QLoRA (Dettmers et al. 2023, arXiv:2305.14314) also stores
// the frozen linear weights as 4-bit NormalFloat (NF4) with double-quantized
// block constants and dequantizes them to 16-bit before each product.
//
// Plain values. Units: rank in elements; bits per parameter as stated.
#ifndef STACKSIM_SIM_CONFIG_FINETUNE_H_
#define STACKSIM_SIM_CONFIG_FINETUNE_H_

#include <cstdint>

#include <nlohmann/json.hpp>

#include "sim/util/json_reader.h"

namespace stacksim::config {

// kFull: every weight trains (pretraining; the default). kLora: frozen 16-bit
// base weights. kQlora: frozen NF4 base linear weights.
enum class FinetuneMethod { kFull, kLora, kQlora };
const char* FinetuneMethodName(FinetuneMethod m);  // "full", "lora", "qlora"

// The projections of a transformer layer an adapter can sit on, in the
// names PEFT's target_modules use for Llama (q_proj ... down_proj). A
// non-gated MLP has up (its first linear) and down only.
enum class LoraTarget { kQ, kK, kV, kO, kGate, kUp, kDown };
inline constexpr int kLoraTargetCount = 7;
const char* LoraTargetName(LoraTarget t);  // "q", "k", "v", "o", "gate", "up", "down"

// NF4 storage per frozen linear parameter (Dettmers et al. 2023, §3 "Double
// Quantization"): 4 bits, plus one 8-bit absmax constant per block of 64
// weights and one fp32 constant per 256 of those blocks: 4 + 8/64 +
// 32/(64 x 256) = 4.127 bits.
inline constexpr double kNf4BitsPerParam = 4.0 + 8.0 / 64.0 + 32.0 / (64.0 * 256.0);

struct FinetuneConfig {
  FinetuneMethod method = FinetuneMethod::kFull;
  int64_t rank = 16;     // r
  double alpha = 16;     // LoRA's scaling numerator (alpha / r); no effect on time or memory
  uint32_t targets = 0;  // bit i: LoraTarget i

  bool frozen_base() const { return method != FinetuneMethod::kFull; }
  bool Has(LoraTarget t) const { return (targets >> static_cast<int>(t)) & 1u; }
  // Bytes per frozen linear weight: the compute dtype's (LoRA) or NF4's.
  double FrozenLinearBytes(double element_bytes) const {
    return method == FinetuneMethod::kQlora ? kNf4BitsPerParam / 8.0 : element_bytes;
  }
};

// Reads plan.finetune: {"method": "lora"|"qlora"|"full", "rank": r,
// "alpha": a, "targets": ["q", "v", ...]}. lora/qlora need rank and a
// non-empty target list; "full" takes neither. Errors name the key.
FinetuneConfig ReadFinetune(const JsonNode& node);
nlohmann::json FinetuneToJson(const FinetuneConfig& f);

}  // namespace stacksim::config

#endif  // STACKSIM_SIM_CONFIG_FINETUNE_H_
