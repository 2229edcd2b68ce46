#include "calibrate/harness/attention_shape.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <sstream>

namespace stacksim::calibrate {

namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// Canonical key of an accepted spelling, or "".
std::string CanonicalKey(const std::string& key) {
  static const std::map<std::string, std::string> kKeys = {
      {"batch", "batch"},       {"b", "batch"},          {"heads", "heads"},       {"h", "heads"},
      {"hq", "heads"},          {"q_heads", "heads"},    {"kv_heads", "kv_heads"}, {"hkv", "kv_heads"},
      {"kv", "kv_heads"},       {"seq", "seq"},          {"s", "seq"},             {"seqlen", "seq"},
      {"seq_len", "seq"},       {"head_dim", "head_dim"}, {"d", "head_dim"},       {"hd", "head_dim"},
      {"causal", "causal"}};
  auto it = kKeys.find(key);
  return it == kKeys.end() ? "" : it->second;
}

bool ParsePositive(const std::string& text, long* out) {
  if (text.empty() || !std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); })) {
    return false;
  }
  *out = std::strtol(text.c_str(), nullptr, 10);
  return *out > 0;
}

}  // namespace

std::optional<AttentionShape> ParseAttentionShape(const std::string& shape, std::string* why) {
  std::map<std::string, std::string> kv;
  std::stringstream ss(shape);
  std::string word;
  while (ss >> word) {
    word = Lower(word);
    if (word == "causal") word = "causal=1";
    if (word == "noncausal" || word == "non-causal") word = "causal=0";
    auto eq = word.find('=');
    if (eq == std::string::npos) continue;  // the dtype and other free words
    std::string key = CanonicalKey(word.substr(0, eq));
    if (!key.empty()) kv[key] = word.substr(eq + 1);
  }
  AttentionShape s;
  std::string missing;
  auto number = [&](const char* key, long* out, bool required) {
    auto it = kv.find(key);
    if (it == kv.end()) {
      if (required) missing += std::string(missing.empty() ? "" : ", ") + key;
      return;
    }
    if (!ParsePositive(it->second, out)) missing += std::string(missing.empty() ? "" : ", ") + key + " (not a positive integer)";
  };
  number("batch", &s.batch, true);
  number("heads", &s.heads, true);
  number("seq", &s.seq, true);
  number("head_dim", &s.head_dim, true);
  s.kv_heads = s.heads;
  number("kv_heads", &s.kv_heads, false);
  auto c = kv.find("causal");
  if (c == kv.end()) {
    missing += std::string(missing.empty() ? "" : ", ") + "causal";
  } else if (c->second == "1" || c->second == "true" || c->second == "yes") {
    s.causal = true;
  } else if (c->second == "0" || c->second == "false" || c->second == "no") {
    s.causal = false;
  } else {
    missing += std::string(missing.empty() ? "" : ", ") + "causal (not 0/1)";
  }
  if (!missing.empty()) {
    if (why != nullptr) *why = "shape '" + shape + "' lacks " + missing;
    return std::nullopt;
  }
  return s;
}

std::string AttentionPass(const std::string& kernel) {
  std::string k = Lower(kernel);
  bool bwd = k.find("bwd") != std::string::npos || k.find("backward") != std::string::npos;
  bool fwd = k.find("fwd") != std::string::npos || k.find("forward") != std::string::npos;
  if (bwd == fwd) return "";
  return bwd ? "bwd" : "fwd";
}

}  // namespace stacksim::calibrate
