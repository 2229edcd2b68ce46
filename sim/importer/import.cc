#include "sim/importer/import.h"

#include <filesystem>

#include "sim/config/model.h"
#include "sim/config/scenario.h"
#include "sim/importer/deepspeed_config.h"
#include "sim/importer/megatron_args.h"
#include "sim/importer/megatron_bridge_config.h"
#include "sim/importer/torchtitan_config.h"
#include "sim/importer/yaml_subset.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"
#include "sim/util/version.h"

namespace stacksim::importer {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string Str(int64_t v) { return std::to_string(v); }

bool IsPath(const std::string& ref) {
  return ref.find('/') != std::string::npos || (ref.size() > 5 && ref.compare(ref.size() - 5, 5, ".json") == 0);
}

// A model or topology reference as the scenario should hold it: a name stays
// a name (it must exist), a path is rewritten relative to the scenario's
// folder (absolute when the scenario goes to standard output).
std::string Reference(const std::string& ref, const char* kind, const char* option, const std::string& out) {
  const std::string path = config::ResolveDataFile(kind, ref, "");
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    throw InputError("", option, "'" + ref + "': no file " + path +
                                     (IsPath(ref) ? "" : std::string(" (names are looked up in ") + config::DataRoot() +
                                                             "/" + kind + "/)"));
  }
  if (!IsPath(ref)) return ref;
  const fs::path abs = fs::absolute(path).lexically_normal();
  if (out.empty()) return abs.string();
  std::string rel = abs.lexically_relative(fs::absolute(out).parent_path().lexically_normal()).string();
  if (rel.empty()) return abs.string();
  return IsPath(rel) ? rel : "./" + rel;
}

// The value a model-shape claim is checked against.
json ModelValue(const config::ModelConfig& m, const std::string& key) {
  if (key == "num_hidden_layers") return m.num_layers;
  if (key == "hidden_size") return m.hidden_size;
  if (key == "intermediate_size") return m.intermediate_size;
  if (key == "num_attention_heads") return m.num_attention_heads;
  if (key == "num_key_value_heads") return m.num_kv_heads;
  if (key == "head_dim") return m.head_dim;
  if (key == "vocab_size") return m.vocab_size;
  if (key == "gated") return m.activation == config::Activation::kSwiglu || m.activation == config::Activation::kGeglu;
  if (key == "norm_type") return config::NormName(m.norm);
  if (key == "tie_word_embeddings") return m.tie_word_embeddings;
  if (key == "max_position_embeddings") return m.max_position_embeddings;
  if (key == "num_experts") return m.num_experts;
  if (key == "num_experts_per_tok") return m.experts_per_token;
  if (key == "moe_intermediate_size") return m.moe_intermediate_size;
  if (key == "moe_latent_size") return m.moe_latent_size;
  if (key == "hybrid_override_pattern") return m.hybrid_pattern;
  if (key == "linear_attention") return m.has_linear_attention();
  throw std::logic_error("no model value for claim key " + key);
}

void CheckClaims(const ImportedJob& job, const config::ModelConfig& m, const std::string& model_ref) {
  for (const ShapeClaim& c : job.claims) {
    json actual = ModelValue(m, c.model_key);
    if (actual == c.value) continue;
    // Megatron-LM pads the vocabulary; a model file may hold either size.
    if (c.model_key == "vocab_size" && actual.get<int64_t>() >= c.value.get<int64_t>() &&
        actual.get<int64_t>() - c.value.get<int64_t>() < 1024 * 128) {
      continue;
    }
    throw InputError(job.file, c.flag,
                     "the file says " + c.value.dump() + " where --model " + model_ref + " has " + c.model_key + " = " +
                         actual.dump() + " (give the model the file trains, or leave --model out to use the file's)");
  }
}

// The flag that set a scenario key, for errors found in the assembled scenario.
std::string FlagFor(const ImportedJob& job, const std::string& key) {
  for (const FlagNote& n : job.mapped) {
    if (n.note == key || n.note.rfind(key + " ", 0) == 0) return n.flag;
  }
  return "";
}

json NotesJson(const std::vector<FlagNote>& notes, const char* note_key) {
  json a = json::array();
  for (const FlagNote& n : notes) {
    json e = {{"flag", n.flag}};
    if (!n.value.empty()) e["value"] = n.value;
    e[note_key] = n.note;
    a.push_back(e);
  }
  return a;
}

json Assemble(ImportedJob& job, const ImportOptions& o) {
  const std::string& file = job.file;
  // Sequence length.
  if (o.seq_len > 0 && job.seq_len.has() && *job.seq_len != o.seq_len) {
    throw InputError(file, job.seq_len.flag, Str(*job.seq_len) + " in the file, " + Str(o.seq_len) + " from --seq-len");
  }
  const int64_t seq_len = o.seq_len > 0 ? o.seq_len : job.seq_len.has() ? *job.seq_len : 0;
  if (seq_len == 0) throw InputError(file, "", "the file does not give the sequence length: give --seq-len");

  // GPUs and the data-parallel size.
  const int64_t tp = job.tp.has() ? *job.tp : 1, pp = job.pp.has() ? *job.pp : 1, cp = job.cp.has() ? *job.cp : 1;
  const int64_t mp = tp * pp * cp;
  int64_t gpus = o.gpus;
  if (job.gpus.has()) {
    if (gpus > 0 && gpus != *job.gpus) {
      throw InputError(file, job.gpus.flag, "the file runs " + Str(*job.gpus) + " GPUs, --gpus says " + Str(gpus));
    }
    gpus = *job.gpus;
  }
  if (job.fsdp_degrees && job.dp_shard.has()) {  // torchtitan: every degree given
    const int64_t dp = *job.dp_shard * (job.dp_replicate.has() ? *job.dp_replicate : 1);
    if (gpus > 0 && gpus != dp * mp) {
      throw InputError(file, job.dp_shard.flag,
                       "the parallel degrees multiply to " + Str(dp * mp) + " GPUs, --gpus says " + Str(gpus));
    }
    gpus = dp * mp;
  }
  if (job.dp.has() && gpus == 0) gpus = *job.dp * mp;
  if (gpus == 0) throw InputError(file, "", "the file does not say how many GPUs run the job: give --gpus");
  const std::string degrees = (job.tp.has() ? job.tp.flag : "tp") + " " + Str(tp) + " x " +
                              (job.pp.has() ? job.pp.flag : "pp") + " " + Str(pp) + " x " +
                              (job.cp.has() ? job.cp.flag : "cp") + " " + Str(cp);
  if (gpus % mp != 0) {
    throw InputError(file, job.tp.has() ? job.tp.flag : job.pp.has() ? job.pp.flag : job.cp.flag,
                     degrees + " = " + Str(mp) + " does not divide " + Str(gpus) + " GPUs");
  }
  const int64_t dp = gpus / mp;
  if (job.dp.has() && *job.dp != dp) {
    throw InputError(file, job.dp.flag,
                     "gives " + Str(*job.dp) + " data-parallel ranks, but " + Str(gpus) + " GPUs / (" + degrees +
                         ") = " + Str(dp));
  }
  json plan = job.plan;
  if (job.fsdp_degrees) {
    const int64_t replicate = job.dp_replicate.has() ? *job.dp_replicate : 1;
    if (dp % replicate != 0) {
      throw InputError(file, job.dp_replicate.flag, Str(replicate) + " does not divide the " + Str(dp) +
                                                        " data-parallel ranks (" + Str(gpus) + " GPUs / " + degrees + ")");
    }
    const int64_t shard = dp / replicate;
    plan["sharding"] = shard > 1 ? "zero3" : "none";
    if (shard > 1 && replicate > 1) plan["shard_group"] = shard;
  }

  // Batch: global = micro x accumulation x dp.
  int64_t micro = job.micro_batch.has() ? *job.micro_batch : 0;
  int64_t global = job.global_batch.has() ? *job.global_batch : 0;
  const int64_t accum = job.grad_accum.has() ? *job.grad_accum : 0;
  if (micro == 0 && global > 0) {
    const int64_t per = (accum > 0 ? accum : 1) * dp;
    if (global % per != 0) {
      throw InputError(file, job.global_batch.flag, Str(global) + " is not a multiple of " +
                                                        (accum > 0 ? job.grad_accum.flag + " " + Str(accum) + " x " : "") +
                                                        "data-parallel " + Str(dp));
    }
    micro = global / per;
  }
  if (micro == 0) throw InputError(file, "", "the file gives no micro-batch size (nor a global batch to derive it from)");
  const int64_t local = job.local_batch.has() ? *job.local_batch : micro;
  if (local % micro != 0) {
    throw InputError(file, job.micro_batch.flag, Str(micro) + " does not divide the local batch of " + Str(local) +
                                                     " (" + job.local_batch.flag + ")");
  }
  if (global == 0) global = local * (accum > 0 ? accum : 1) * dp;
  if (global % (local * dp) != 0) {
    throw InputError(file, job.global_batch.flag,
                     Str(global) + " is not a multiple of " + (job.micro_batch.flag.empty() ? "micro-batch" : job.micro_batch.flag) +
                         " " + Str(local) + " x data-parallel " + Str(dp) + " (" + Str(gpus) + " GPUs / (" + degrees + "))");
  }
  if (accum > 0 && global != micro * accum * dp) {
    throw InputError(file, job.global_batch.flag,
                     Str(global) + " != " + job.micro_batch.flag + " " + Str(micro) + " x " + job.grad_accum.flag + " " +
                         Str(accum) + " x data-parallel " + Str(dp) + " (" + Str(gpus) + " GPUs)");
  }

  // Model.
  json model;
  if (!o.model.empty()) {
    const std::string ref = Reference(o.model, "models", "--model", o.out);
    const config::ModelConfig m = config::LoadModelFile(config::ResolveDataFile("models", o.model, ""));
    CheckClaims(job, m, o.model);
    if (!job.model_name.empty()) {
      const config::ModelConfig named = config::LoadModelFile(config::ResolveDataFile("models", job.model_name, ""));
      if (named.num_layers != m.num_layers || named.hidden_size != m.hidden_size ||
          named.num_attention_heads != m.num_attention_heads || named.num_kv_heads != m.num_kv_heads ||
          named.intermediate_size != m.intermediate_size || named.vocab_size != m.vocab_size ||
          named.num_experts != m.num_experts) {
        throw InputError(file, job.model_name_flag,
                         "selects " + job.model_name + "'s shapes, which are not --model " + o.model + "'s");
      }
    }
    model = ref;
  } else if (!job.model_name.empty()) {
    model = job.model_name;
  } else if (!job.inline_model.is_null()) {
    model = job.inline_model;
  } else {
    throw InputError(file, "", "no model: give --model NAME|FILE" +
                                   (job.inline_model_missing.empty() ? "" : " (" + job.inline_model_missing + ")"));
  }
  if (o.topology.empty()) throw InputError(file, "", "the file does not say what hardware runs it: give --topology");
  const std::string topology = Reference(o.topology, "topologies", "--topology", o.out);

  plan["tp"] = tp;
  plan["pp"] = pp;
  plan["dp"] = dp;
  if (cp > 1) plan["cp"] = cp;
  plan["micro_batch"] = micro;
  json doc = {
      {"name", fs::path(file).filename().string() + " (imported)"},
      {"notes", std::string("written by stacksim import from a ") + ImportFormatName(job.format) +
                    " configuration; \"import\" lists how each of its flags was read"},
      {"model", model},
      {"topology", topology},
      {"gpus", gpus},
      {"training", {{"seq_len", seq_len}, {"global_batch", global}}},
      {"plan", plan},
  };
  if (!job.framework.empty()) doc["framework"] = job.framework;
  doc["import"] = {
      {"from", file},
      {"format", ImportFormatName(job.format)},
      {"by", "stacksim " + BuildVersion()},
      {"mapped", NotesJson(job.mapped, "to")},
      {"ignored", NotesJson(job.ignored, "why")},
      {"unmapped", NotesJson(job.unmapped, "why")},
  };
  return doc;
}

}  // namespace

const KnownKey* FindKnownKey(const std::string& path, const KnownKey* begin, const KnownKey* end) {
  for (const KnownKey* k = begin; k != end; ++k) {
    const std::string key = k->path;
    const bool prefix = key.back() == '.' || key.back() == '_';
    if (prefix ? path.compare(0, key.size(), key) == 0 : path == key) return k;
  }
  return nullptr;
}

std::string LeafText(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

const char* ImportFormatName(ImportFormat f) {
  switch (f) {
    case ImportFormat::kMegatron: return "megatron";
    case ImportFormat::kDeepSpeed: return "deepspeed";
    case ImportFormat::kTorchtitan: return "torchtitan";
    case ImportFormat::kMegatronBridge: return "megatron-bridge";
  }
  return "?";
}

std::optional<ImportFormat> ParseImportFormat(const std::string& name) {
  for (ImportFormat f :
       {ImportFormat::kMegatron, ImportFormat::kDeepSpeed, ImportFormat::kTorchtitan, ImportFormat::kMegatronBridge}) {
    if (name == ImportFormatName(f)) return f;
  }
  return std::nullopt;
}

ImportFormat DetectFormat(const std::string& text, const std::string& file) {
  const std::string ext = fs::path(file).extension().string();
  if (ext == ".toml") return ImportFormat::kTorchtitan;
  if (ext == ".yaml" || ext == ".yml" || text.rfind("_target_: megatron.bridge.", 0) == 0) {
    if (LooksLikeMegatronBridge(ParseYamlSubset(text, file))) return ImportFormat::kMegatronBridge;
    throw InputError(file, "", "a YAML file without Megatron-Bridge's model and train sections");
  }
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (ext == ".json" || (first != std::string::npos && text[first] == '{')) {
    if (LooksLikeDeepSpeed(ParseJsonText(text, file))) return ImportFormat::kDeepSpeed;
    throw InputError(file, "", "a JSON file without DeepSpeed keys (train_batch_size, zero_optimization, fp16, ...): "
                               "a Hugging Face config.json is a model, give it as --model");
  }
  if (LooksLikeToml(text)) return ImportFormat::kTorchtitan;
  return ImportFormat::kMegatron;
}

ImportResult ImportText(const std::string& text, const std::string& path, const ImportOptions& options) {
  const ImportFormat format = options.format ? *options.format : DetectFormat(text, path);
  ImportResult r;
  switch (format) {
    case ImportFormat::kMegatron: r.job = ReadMegatron(text, path); break;
    case ImportFormat::kDeepSpeed: r.job = ReadDeepSpeed(ParseJsonText(text, path), path); break;
    case ImportFormat::kTorchtitan: r.job = ReadTorchtitan(text, path); break;
    case ImportFormat::kMegatronBridge: r.job = ReadMegatronBridge(ParseYamlSubset(text, path), path); break;
  }
  r.scenario = Assemble(r.job, options);
  // The scenario must load as simulate will load it; an error there names
  // the flag that set the key.
  const std::string as = options.out.empty() ? path + " (imported)" : options.out;
  try {
    config::ParseScenario(r.scenario, as, {});
  } catch (const InputError& e) {
    std::string key = e.key_path();
    std::string flag = FlagFor(r.job, key);
    std::string what = e.what();
    const std::string prefix = e.file() + ": " + (key.empty() ? "" : key + ": ");
    if (what.compare(0, prefix.size(), prefix) == 0) what = what.substr(prefix.size());
    throw InputError(path, flag.empty() ? key : flag,
                     (flag.empty() ? "" : "(imported as " + key + ") ") + what +
                         (e.file() == as ? "" : " [in " + e.file() + "]"));
  }
  return r;
}

ImportResult ImportFile(const std::string& path, const ImportOptions& options) {
  return ImportText(ReadInputFile(path), path, options);
}

}  // namespace stacksim::importer
