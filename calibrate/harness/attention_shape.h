// The attention family's timing rows carry their problem in the shape string,
// as key=value words: "bf16 batch=2 heads=64 kv_heads=8 seq=8192 head_dim=128
// causal=1". attention.csv gets these fields as columns.
#ifndef STACKSIM_CALIBRATE_HARNESS_ATTENTION_SHAPE_H_
#define STACKSIM_CALIBRATE_HARNESS_ATTENTION_SHAPE_H_

#include <optional>
#include <string>

namespace stacksim::calibrate {

struct AttentionShape {
  long batch = 0;
  long heads = 0;     // query heads
  long kv_heads = 0;  // key/value heads (= heads without grouped-query attention)
  long seq = 0;
  long head_dim = 0;
  bool causal = false;
};

// Keys (and accepted spellings): batch|b, heads|h|hq|q_heads, kv_heads|hkv|kv
// (optional: defaults to heads), seq|s|seqlen|seq_len, head_dim|d|hd,
// causal=0|1|true|false (or a bare word "causal" / "noncausal"); other words
// are ignored. nullopt with *why naming what is missing or malformed.
std::optional<AttentionShape> ParseAttentionShape(const std::string& shape, std::string* why);

// "fwd" or "bwd" from a kernel name such as "attention_bwd"; "" if neither.
std::string AttentionPass(const std::string& kernel);

}  // namespace stacksim::calibrate

#endif  // STACKSIM_CALIBRATE_HARNESS_ATTENTION_SHAPE_H_
