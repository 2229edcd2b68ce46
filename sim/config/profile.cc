#include "sim/config/profile.h"

#include <climits>
#include <cmath>

#include "sim/config/quantity_text.h"

namespace stacksim::config {
namespace {

constexpr std::array<Precision, kNumPrecisions> kAllPrecisions = {
    Precision::kFp32, Precision::kTf32, Precision::kBf16, Precision::kFp16, Precision::kFp8};

// The "value" of a {"value": ..., "source": "..."} object, with its source.
// Returns nullopt for {"value": null, ...} (a precision the GPU lacks).
std::optional<JsonNode> SourcedValue(const JsonNode& node, std::string* source) {
  if (!node.IsObject() || !node.json().contains("source") || !node.json().contains("value")) {
    node.Fail("every profile value must state its source: write {\"value\": ..., \"source\": \"...\"}");
  }
  JsonObject obj(node);
  *source = obj.Required("source").String();
  std::optional<JsonNode> value = obj.Optional("value");
  obj.Finish();
  return value;
}

template <typename T, typename Read>
Sourced<T> ReadSourced(const JsonNode& node, Read read) {
  Sourced<T> out;
  std::optional<JsonNode> value = SourcedValue(node, &out.source);
  if (!value) node.Fail("value must not be null here");
  out.value = read(*value);
  return out;
}

template <typename T, typename Read>
std::optional<Sourced<T>> ReadOptionalSourced(const JsonNode& node, Read read) {
  if (node.IsNull()) return std::nullopt;
  Sourced<T> out;
  std::optional<JsonNode> value = SourcedValue(node, &out.source);
  if (!value) return std::nullopt;
  out.value = read(*value);
  return out;
}

Sourced<double> SourcedFraction(const JsonNode& node) {
  return ReadSourced<double>(node, [](const JsonNode& v) { return v.Fraction(); });
}

Sourced<Time> SourcedTime(const JsonNode& node) {
  return ReadSourced<Time>(node, [](const JsonNode& v) { return v.TimeValue(); });
}

Sourced<Bandwidth> SourcedBandwidth(const JsonNode& node) {
  return ReadSourced<Bandwidth>(node, [](const JsonNode& v) {
    Bandwidth b = v.BandwidthValue();
    if (!(b.value > 0)) v.Fail("bandwidth must be positive");
    return b;
  });
}

BusBandwidthCurve ParseCurve(const JsonNode& node) {
  JsonObject obj(node);
  BusBandwidthCurve c;
  JsonNode gpus = obj.Required("gpus");
  int64_t g = gpus.PositiveInt();
  if (g < 2 || g > INT_MAX / 2) gpus.Fail("a collective curve needs at least 2 GPUs, got " + std::to_string(g));
  c.gpus = static_cast<int>(g);
  c.source = obj.Required("source").String();
  JsonNode busbw = obj.Required("busbw");
  std::vector<JsonNode> points = busbw.Elements();
  if (points.empty()) busbw.Fail("a curve needs at least one [size, busbw] point");
  for (const JsonNode& p : points) {
    if (!p.IsArray() || p.json().size() != 2) p.Fail("expected a [size, busbw] pair such as [\"1 MB\", \"40 GB/s\"]");
    std::vector<JsonNode> pair = p.Elements();
    Bytes size = pair[0].BytesValue();
    Bandwidth bw = pair[1].BandwidthValue();
    if (!(size.value > 0)) pair[0].Fail("message size must be positive");
    if (!(bw.value > 0)) pair[1].Fail("bus bandwidth must be positive");
    if (!c.points.empty() && !(size.value > c.points.back().first.value)) {
      pair[0].Fail("sizes must be sorted and strictly increasing");
    }
    c.points.emplace_back(size, bw);
  }
  obj.Finish();
  return c;
}

// "partial", "missing", "gpus_used" and "gpus_requested" of a calibrated
// profile. REQUIRES: every value of *p parsed (missing fields are checked
// against their sources).
void ParsePartialMarker(JsonObject& obj, ProfileConfig* p) {
  std::optional<JsonNode> partial = obj.Optional("partial");
  if (partial) {
    p->partial = partial->Bool();
    if (p->kind == ProfileKind::kDatasheet) {
      partial->Fail("a datasheet profile cannot be partial: only a calibration (kind measured or projected) is");
    }
  }
  std::optional<JsonNode> missing = obj.Optional("missing");
  if (p->partial && !missing) {
    partial->Fail("\"partial\": true needs a \"missing\" list saying what was not measured and why");
  }
  if (missing) {
    if (!p->partial) missing->Fail("lists missing measurements, but \"partial\" is not true");
    std::vector<JsonNode> entries = missing->Elements();
    if (entries.empty()) missing->Fail("a partial profile must list at least one missing measurement");
    for (const JsonNode& e : entries) {
      JsonObject entry(e);
      MissingMeasurement m;
      m.section = entry.Required("section").String();
      m.reason = entry.Required("reason").String();
      for (const JsonNode& f : entry.Required("fields").Elements()) {
        std::string field = f.String();
        std::optional<std::string> source = FieldSource(*p, field);
        if (!source) f.Fail("'" + field + "' is not a value of this profile");
        if (!IsFallbackSource(*source)) {
          f.Fail("'" + field + "' is listed as not measured, but its source does not begin with \"" +
                 std::string(kFallbackSourcePrefix) + "\" (a value a calibration did not measure must say so)");
        }
        m.fields.push_back(field);
      }
      entry.Finish();
      p->missing.push_back(std::move(m));
    }
  }
  for (auto [key, out] : {std::pair<const char*, int*>{"gpus_used", &p->gpus_used},
                          std::pair<const char*, int*>{"gpus_requested", &p->gpus_requested}}) {
    if (auto n = obj.Optional(key)) {
      int64_t v = n->PositiveInt();
      if (v > 1000000) n->Fail("implausible GPU count " + std::to_string(v));
      if (p->kind == ProfileKind::kDatasheet) n->Fail("only a calibrated profile states the GPUs it used");
      *out = static_cast<int>(v);
    }
  }
}

}  // namespace

bool IsFallbackSource(const std::string& source) {
  return source.compare(0, kFallbackSourcePrefix.size(), kFallbackSourcePrefix) == 0;
}

std::vector<std::pair<std::string, std::string>> ProfileFieldSources(const ProfileConfig& p) {
  std::vector<std::pair<std::string, std::string>> out = {{"sm_count", p.sm_count.source},
                                                          {"hbm_capacity", p.hbm_capacity.source},
                                                          {"hbm_bandwidth", p.hbm_bandwidth.source},
                                                          {"copy_efficiency", p.copy_efficiency.source}};
  for (Precision prec : kAllPrecisions) {
    if (const auto& peak = p.peak_flops[static_cast<int>(prec)]) {
      out.emplace_back(std::string("peak_flops.") + PrecisionName(prec), peak->source);
    }
  }
  for (Precision prec : kAllPrecisions) {
    if (const auto& eff = p.gemm.max_efficiency[static_cast<int>(prec)]) {
      out.emplace_back(std::string("gemm.max_efficiency.") + PrecisionName(prec), eff->source);
    }
  }
  if (p.gemm.k_overhead_fp8) out.emplace_back("gemm.k_overhead_fp8", p.gemm.k_overhead_fp8->source);
  out.insert(out.end(), {{"gemm.tile", p.gemm.tile.source},
                         {"gemm.k_overhead", p.gemm.k_overhead.source},
                         {"attention.fwd_efficiency", p.attention_fwd_efficiency.source},
                         {"attention.bwd_efficiency", p.attention_bwd_efficiency.source},
                         {"attention.flash2_fwd_efficiency", p.flash2_fwd_efficiency.source},
                         {"attention.flash2_bwd_efficiency", p.flash2_bwd_efficiency.source},
                         {"attention.flash1_fwd_efficiency", p.flash1_fwd_efficiency.source},
                         {"attention.flash1_bwd_efficiency", p.flash1_bwd_efficiency.source},
                         {"attention.seq_factors", p.attention_seq_factors.source}});
  if (p.own_attention_fwd_efficiency) {
    out.emplace_back("attention.own_fwd_efficiency", p.own_attention_fwd_efficiency->source);
  }
  if (p.own_attention_bwd_efficiency) {
    out.emplace_back("attention.own_bwd_efficiency", p.own_attention_bwd_efficiency->source);
  }
  for (EagerKernel k : kAllEagerKernels) {
    out.emplace_back(std::string("eager_kernels.") + EagerKernelName(k), p.eager_kernels[static_cast<int>(k)].source);
  }
  out.insert(out.end(), {{"kernel_launch", p.kernel_launch.source},
                         {"host_bandwidth", p.host_bandwidth.source},
                         {"collectives.intra_node.reference_link_bandwidth", p.intra_reference_link.source},
                         {"collectives.intra_node.latency", p.intra_latency.source},
                         {"collectives.intra_node.all_reduce", p.intra_all_reduce.source},
                         {"collectives.intra_node.ring", p.intra_ring.source},
                         {"collectives.inter_node.nic_efficiency", p.nic_efficiency.source},
                         {"collectives.inter_node.latency", p.inter_latency.source}});
  if (p.power) {
    ForEachPowerField(*p.power, [&](const char* key, const Sourced<double>& field) {
      out.emplace_back(std::string("power.") + key, field.source);
    });
  }
  return out;
}

std::optional<std::string> FieldSource(const ProfileConfig& p, const std::string& field) {
  for (auto& [f, source] : ProfileFieldSources(p)) {
    if (f == field) return source;
  }
  return std::nullopt;
}

bool IsMeasured(const ProfileConfig& p, const std::string& field) {
  if (p.kind != ProfileKind::kMeasured) return false;
  std::optional<std::string> source = FieldSource(p, field);
  if (!source || IsFallbackSource(*source) || source->rfind("measured", 0) != 0) return false;
  for (const MissingMeasurement& m : p.missing) {
    for (const std::string& f : m.fields) {
      if (f == field) return false;
    }
  }
  return true;
}

std::vector<std::string> FallbackFields(const ProfileConfig& p) {
  std::vector<std::string> out;
  for (auto& [f, source] : ProfileFieldSources(p)) {
    if (IsFallbackSource(source)) out.push_back(f);
  }
  return out;
}

std::string PartialSummary(const ProfileConfig& p) {
  if (!p.partial) return "complete";
  std::string out = "partial:";
  for (size_t i = 0; i < p.missing.size(); ++i) {
    const MissingMeasurement& m = p.missing[i];
    out += (i ? "; " : " ") + m.section + " (" + m.reason;
    if (!m.fields.empty()) {
      out += ": ";
      for (size_t j = 0; j < m.fields.size(); ++j) out += (j ? ", " : "") + m.fields[j];
      out += " at their datasheet fallback";
    }
    out += ")";
  }
  return out;
}

const char* EagerKernelName(EagerKernel k) {
  switch (k) {
    case EagerKernel::kElementwise: return "elementwise";
    case EagerKernel::kLayerNorm: return "layer_norm";
    case EagerKernel::kRmsNorm: return "rms_norm";
    case EagerKernel::kGelu: return "gelu";
    case EagerKernel::kGatedActivation: return "gated_activation";
    case EagerKernel::kSoftmax: return "softmax";
    case EagerKernel::kDropout: return "dropout";
    case EagerKernel::kCast: return "cast";
  }
  return "?";
}

const char* ProfileKindName(ProfileKind k) {
  switch (k) {
    case ProfileKind::kDatasheet: return "datasheet";
    case ProfileKind::kMeasured: return "measured";
    case ProfileKind::kProjected: return "projected";
  }
  return "?";
}

Bandwidth BusBandwidthCurve::At(Bytes size) const {
  if (points.empty()) return Bandwidth{0};
  if (size.value <= points.front().first.value) return points.front().second;
  if (size.value >= points.back().first.value) return points.back().second;
  // First point strictly above `size`; the one before it is at or below.
  size_t hi = 1;
  while (points[hi].first.value <= size.value) ++hi;
  const auto& [s0, b0] = points[hi - 1];
  const auto& [s1, b1] = points[hi];
  double t = std::log(size.value / s0.value) / std::log(s1.value / s0.value);
  return Bandwidth{b0.value + t * (b1.value - b0.value)};
}

std::optional<FlopRate> ProfileConfig::Peak(Precision p) const {
  const auto& peak = peak_flops[static_cast<int>(p)];
  if (!peak) return std::nullopt;
  return peak->value;
}

double ProfileConfig::AttentionSeqFactor(double seq, bool backward) const {
  const auto& pts = attention_seq_factors.value;
  if (pts.empty() || !(seq > 0)) return 1.0;
  auto at = [backward](const AttentionSeqPoint& p) { return backward ? p.bwd : p.fwd; };
  if (seq <= pts.front().seq) return at(pts.front());
  if (seq >= pts.back().seq) return at(pts.back());
  for (size_t i = 1; i < pts.size(); ++i) {
    if (seq <= pts[i].seq) {
      double t = std::log2(seq / pts[i - 1].seq) / std::log2(pts[i].seq / pts[i - 1].seq);
      return at(pts[i - 1]) + t * (at(pts[i]) - at(pts[i - 1]));
    }
  }
  return at(pts.back());
}

namespace {

PowerModel ParsePowerModel(const JsonNode& node) {
  JsonObject o(node);
  PowerModel m;
  ForEachPowerField(m, [&](const char* key, Sourced<double>& field) {
    const std::string_view k(key);
    const bool exponent = k.ends_with("_exponent"), clock = k.ends_with("_clock");
    field = ReadSourced<double>(o.Required(key), [exponent, clock](const JsonNode& v) {
      if (clock) return v.Fraction();
      double x = v.PositiveNumber();
      if (exponent && x > 4) v.Fail("implausible clock exponent (expected 0 < e <= 4)");
      if (!exponent && x > 10000) v.Fail("implausible power (watts)");
      return x;
    });
  });
  o.Finish();
  if (m.idle_w.value >= m.board_limit_w.value) node.Fail("idle_w must lie below board_limit_w");
  if (m.idle_w.value >= m.reference_limit_w.value) node.Fail("idle_w must lie below reference_limit_w");
  return m;
}

Sourced<std::vector<AttentionSeqPoint>> SourcedSeqFactors(const JsonNode& node) {
  return ReadSourced<std::vector<AttentionSeqPoint>>(node, [](const JsonNode& v) {
    std::vector<AttentionSeqPoint> pts;
    for (const JsonNode& e : v.Elements()) {
      if (!e.IsArray() || e.json().size() != 3) e.Fail("expected a [seq, fwd factor, bwd factor] triple");
      std::vector<JsonNode> x = e.Elements();
      AttentionSeqPoint p{x[0].PositiveNumber(), x[1].PositiveNumber(), x[2].PositiveNumber()};
      if (!pts.empty() && !(p.seq > pts.back().seq)) x[0].Fail("sequence lengths must be strictly increasing");
      pts.push_back(p);
    }
    if (pts.empty()) v.Fail("needs at least one [seq, fwd factor, bwd factor] point");
    return pts;
  });
}

}  // namespace

ProfileConfig ParseProfile(const JsonNode& node) {
  JsonObject obj(node);
  ProfileConfig p;
  JsonNode schema = obj.Required("schema");
  if (schema.String() != "stacksim.profile/1") {
    schema.Fail("unknown profile schema '" + schema.String() + "'; expected 'stacksim.profile/1'");
  }
  p.name = obj.Required("name").String();
  p.gpu = obj.Required("gpu").String();
  std::string kind = obj.Required("kind").OneOf({"datasheet", "measured", "projected"});
  p.kind = kind == "measured" ? ProfileKind::kMeasured
           : kind == "projected" ? ProfileKind::kProjected
                                 : ProfileKind::kDatasheet;
  p.provenance = obj.Required("provenance").String();

  p.sm_count = ReadSourced<int>(obj.Required("sm_count"), [](const JsonNode& v) {
    int64_t n = v.PositiveInt();
    if (n > 1000000) v.Fail("implausible SM count " + std::to_string(n));
    return static_cast<int>(n);
  });
  p.hbm_capacity = ReadSourced<Bytes>(obj.Required("hbm_capacity"), [](const JsonNode& v) {
    Bytes b = v.BytesValue();
    if (!(b.value > 0)) v.Fail("memory capacity must be positive");
    return b;
  });
  p.hbm_bandwidth = SourcedBandwidth(obj.Required("hbm_bandwidth"));
  p.copy_efficiency = SourcedFraction(obj.Required("copy_efficiency"));

  {
    JsonObject peaks(obj.Required("peak_flops"));
    for (Precision prec : kAllPrecisions) {
      JsonNode v = peaks.Required(PrecisionName(prec));
      p.peak_flops[static_cast<int>(prec)] = ReadOptionalSourced<FlopRate>(v, [](const JsonNode& x) {
        FlopRate r = x.FlopRateValue();
        if (!(r.value > 0)) x.Fail("peak FLOP rate must be positive (use null for a precision the GPU lacks)");
        return r;
      });
    }
    peaks.Finish();
  }

  {
    JsonObject gemm(obj.Required("gemm"));
    JsonNode eff_node = gemm.Required("max_efficiency");
    JsonObject eff(eff_node);
    for (Precision prec : kAllPrecisions) {
      std::optional<JsonNode> v = eff.Optional(PrecisionName(prec));
      if (!v) continue;
      auto e = ReadOptionalSourced<double>(*v, [](const JsonNode& x) { return x.Fraction(); });
      if (e && !p.peak_flops[static_cast<int>(prec)]) {
        v->Fail(std::string("a GEMM efficiency for ") + PrecisionName(prec) + ", which has no peak_flops");
      }
      p.gemm.max_efficiency[static_cast<int>(prec)] = e;
    }
    eff.Finish();
    p.gemm.tile = ReadSourced<std::pair<int, int>>(gemm.Required("tile"), [](const JsonNode& v) {
      if (!v.IsArray() || v.json().size() != 2) v.Fail("expected a [rows, cols] pair such as [128, 256]");
      std::vector<JsonNode> rc = v.Elements();
      int64_t r = rc[0].PositiveInt(), c = rc[1].PositiveInt();
      if (r > 65536) rc[0].Fail("implausible tile size");
      if (c > 65536) rc[1].Fail("implausible tile size");
      return std::pair<int, int>(static_cast<int>(r), static_cast<int>(c));
    });
    auto k_overhead = [](const JsonNode& v) {
      double k = v.NonNegativeNumber();
      if (k > 65536) v.Fail("implausible K overhead (elements of K)");
      return k;
    };
    p.gemm.k_overhead = ReadSourced<double>(gemm.Required("k_overhead"), k_overhead);
    if (auto fp8 = gemm.Optional("k_overhead_fp8")) p.gemm.k_overhead_fp8 = ReadSourced<double>(*fp8, k_overhead);
    gemm.Finish();
  }

  {
    JsonObject attention(obj.Required("attention"));
    p.attention_fwd_efficiency = SourcedFraction(attention.Required("fwd_efficiency"));
    p.attention_bwd_efficiency = SourcedFraction(attention.Required("bwd_efficiency"));
    p.flash2_fwd_efficiency = SourcedFraction(attention.Required("flash2_fwd_efficiency"));
    p.flash2_bwd_efficiency = SourcedFraction(attention.Required("flash2_bwd_efficiency"));
    p.flash1_fwd_efficiency = SourcedFraction(attention.Required("flash1_fwd_efficiency"));
    p.flash1_bwd_efficiency = SourcedFraction(attention.Required("flash1_bwd_efficiency"));
    if (auto own = attention.Optional("own_fwd_efficiency")) p.own_attention_fwd_efficiency = SourcedFraction(*own);
    if (auto own = attention.Optional("own_bwd_efficiency")) p.own_attention_bwd_efficiency = SourcedFraction(*own);
    p.attention_seq_factors = SourcedSeqFactors(attention.Required("seq_factors"));
    attention.Finish();
  }
  {
    JsonObject eager(obj.Required("eager_kernels"));
    for (EagerKernel k : kAllEagerKernels) {
      p.eager_kernels[static_cast<int>(k)] = SourcedFraction(eager.Required(EagerKernelName(k)));
    }
    eager.Finish();
  }
  p.kernel_launch = SourcedTime(obj.Required("kernel_launch"));
  p.host_bandwidth = SourcedBandwidth(obj.Required("host_bandwidth"));

  {
    JsonObject coll(obj.Required("collectives"));
    JsonObject intra(coll.Required("intra_node"));
    p.intra_reference_link = SourcedBandwidth(intra.Required("reference_link_bandwidth"));
    p.intra_latency = SourcedTime(intra.Required("latency"));
    p.intra_all_reduce = ParseCurve(intra.Required("all_reduce"));
    p.intra_ring = ParseCurve(intra.Required("ring"));
    intra.Finish();
    JsonObject inter(coll.Required("inter_node"));
    p.nic_efficiency = SourcedFraction(inter.Required("nic_efficiency"));
    p.inter_latency = SourcedTime(inter.Required("latency"));
    inter.Finish();
    coll.Finish();
  }
  if (auto power = obj.Optional("power")) p.power = ParsePowerModel(*power);
  ParsePartialMarker(obj, &p);
  obj.Finish();
  return p;
}

namespace {

template <typename T>
nlohmann::json SourcedJson(const Sourced<T>& s, nlohmann::json value) {
  return {{"value", std::move(value)}, {"source", s.source}};
}

nlohmann::json CurveJson(const BusBandwidthCurve& c) {
  nlohmann::json points = nlohmann::json::array();
  for (const auto& [size, bw] : c.points) points.push_back({BytesText(size), BandwidthText(bw)});
  return {{"gpus", c.gpus}, {"source", c.source}, {"busbw", points}};
}

}  // namespace

nlohmann::json ProfileToJson(const ProfileConfig& p) {
  nlohmann::json j;
  j["schema"] = "stacksim.profile/1";
  j["name"] = p.name;
  j["gpu"] = p.gpu;
  j["kind"] = ProfileKindName(p.kind);
  j["provenance"] = p.provenance;
  if (p.partial) {
    j["partial"] = true;
    nlohmann::json missing = nlohmann::json::array();
    for (const MissingMeasurement& m : p.missing) {
      missing.push_back({{"section", m.section}, {"reason", m.reason}, {"fields", m.fields}});
    }
    j["missing"] = missing;
  }
  if (p.gpus_used > 0) j["gpus_used"] = p.gpus_used;
  if (p.gpus_requested > 0) j["gpus_requested"] = p.gpus_requested;
  j["sm_count"] = SourcedJson(p.sm_count, p.sm_count.value);
  j["hbm_capacity"] = SourcedJson(p.hbm_capacity, BytesText(p.hbm_capacity.value));
  j["hbm_bandwidth"] = SourcedJson(p.hbm_bandwidth, BandwidthText(p.hbm_bandwidth.value));
  j["copy_efficiency"] = SourcedJson(p.copy_efficiency, p.copy_efficiency.value);
  nlohmann::json peaks = nlohmann::json::object();
  nlohmann::json effs = nlohmann::json::object();
  for (Precision prec : kAllPrecisions) {
    const auto& peak = p.peak_flops[static_cast<int>(prec)];
    peaks[PrecisionName(prec)] = peak ? SourcedJson(*peak, FlopRateText(peak->value)) : nlohmann::json();
    const auto& eff = p.gemm.max_efficiency[static_cast<int>(prec)];
    if (eff) effs[PrecisionName(prec)] = SourcedJson(*eff, eff->value);
  }
  j["peak_flops"] = peaks;
  j["gemm"] = {{"max_efficiency", effs},
               {"tile", SourcedJson(p.gemm.tile, {p.gemm.tile.value.first, p.gemm.tile.value.second})},
               {"k_overhead", SourcedJson(p.gemm.k_overhead, p.gemm.k_overhead.value)}};
  if (p.gemm.k_overhead_fp8) j["gemm"]["k_overhead_fp8"] = SourcedJson(*p.gemm.k_overhead_fp8, p.gemm.k_overhead_fp8->value);
  j["attention"] = {{"fwd_efficiency", SourcedJson(p.attention_fwd_efficiency, p.attention_fwd_efficiency.value)},
                    {"bwd_efficiency", SourcedJson(p.attention_bwd_efficiency, p.attention_bwd_efficiency.value)},
                    {"flash2_fwd_efficiency", SourcedJson(p.flash2_fwd_efficiency, p.flash2_fwd_efficiency.value)},
                    {"flash2_bwd_efficiency", SourcedJson(p.flash2_bwd_efficiency, p.flash2_bwd_efficiency.value)},
                    {"flash1_fwd_efficiency", SourcedJson(p.flash1_fwd_efficiency, p.flash1_fwd_efficiency.value)},
                    {"flash1_bwd_efficiency", SourcedJson(p.flash1_bwd_efficiency, p.flash1_bwd_efficiency.value)}};
  if (p.own_attention_fwd_efficiency) {
    j["attention"]["own_fwd_efficiency"] =
        SourcedJson(*p.own_attention_fwd_efficiency, p.own_attention_fwd_efficiency->value);
  }
  if (p.own_attention_bwd_efficiency) {
    j["attention"]["own_bwd_efficiency"] =
        SourcedJson(*p.own_attention_bwd_efficiency, p.own_attention_bwd_efficiency->value);
  }
  nlohmann::json seq = nlohmann::json::array();
  for (const auto& pt : p.attention_seq_factors.value) seq.push_back({pt.seq, pt.fwd, pt.bwd});
  j["attention"]["seq_factors"] = SourcedJson(p.attention_seq_factors, seq);
  nlohmann::json eager = nlohmann::json::object();
  for (EagerKernel k : kAllEagerKernels) {
    const Sourced<double>& e = p.eager_kernels[static_cast<int>(k)];
    eager[EagerKernelName(k)] = SourcedJson(e, e.value);
  }
  j["eager_kernels"] = eager;
  j["kernel_launch"] = SourcedJson(p.kernel_launch, TimeText(p.kernel_launch.value));
  j["host_bandwidth"] = SourcedJson(p.host_bandwidth, BandwidthText(p.host_bandwidth.value));
  j["collectives"] = {
      {"intra_node",
       {{"reference_link_bandwidth", SourcedJson(p.intra_reference_link, BandwidthText(p.intra_reference_link.value))},
        {"latency", SourcedJson(p.intra_latency, TimeText(p.intra_latency.value))},
        {"all_reduce", CurveJson(p.intra_all_reduce)},
        {"ring", CurveJson(p.intra_ring)}}},
      {"inter_node",
       {{"nic_efficiency", SourcedJson(p.nic_efficiency, p.nic_efficiency.value)},
        {"latency", SourcedJson(p.inter_latency, TimeText(p.inter_latency.value))}}}};
  if (p.power) {
    ForEachPowerField(*p.power, [&](const char* key, const Sourced<double>& field) {
      j["power"][key] = SourcedJson(field, field.value);
    });
  }
  return j;
}

ProfileConfig LoadProfileFile(const std::string& path) {
  nlohmann::json doc = ReadJsonFile(path);
  return ParseProfile(JsonNode(doc, path, ""));
}

}  // namespace stacksim::config
