#include "sim/ingest/kineto.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace stacksim::ingest {
namespace {

bool Contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// One event, with its index, for errors that name it.
class Event {
 public:
  Event(const nlohmann::json& j, const std::string& file, size_t index) : j_(j), file_(file), index_(index) {}
  std::string Path(const std::string& field) const {
    return "traceEvents[" + std::to_string(index_) + "]" + (field.empty() ? "" : "." + field);
  }
  [[noreturn]] void Fail(const std::string& field, const std::string& msg) const {
    throw InputError(file_, Path(field), msg);
  }
  bool Has(const char* key) const { return j_.contains(key); }
  std::string String(const char* key) const {
    if (!j_.contains(key)) Fail(key, "missing");
    if (!j_[key].is_string()) Fail(key, "must be a string");
    return j_[key].get<std::string>();
  }
  std::string StringOr(const char* key, const std::string& dflt) const {
    return j_.contains(key) && j_[key].is_string() ? j_[key].get<std::string>() : dflt;
  }
  double Number(const char* key) const {
    if (!j_.contains(key)) Fail(key, "missing");
    if (!j_[key].is_number()) Fail(key, "must be a number");
    double v = j_[key].get<double>();
    if (!std::isfinite(v)) Fail(key, "must be finite");
    return v;
  }
  // pid/tid are numbers or (for Kineto's own spans) strings; -1 for strings.
  int64_t Id(const char* key) const {
    if (!j_.contains(key)) Fail(key, "missing");
    if (j_[key].is_number_integer()) return j_[key].get<int64_t>();
    if (j_[key].is_string()) return -1;
    Fail(key, "must be an integer or a string");
  }
  int64_t ArgInt(const char* key) const {
    const auto& args = Args();
    if (!args.contains(key)) Fail(std::string("args.") + key, "missing");
    if (!args[key].is_number_integer()) Fail(std::string("args.") + key, "must be an integer");
    return args[key].get<int64_t>();
  }
  int64_t ArgIntOr(const char* key, int64_t dflt) const {
    if (!j_.contains("args") || !j_["args"].is_object()) return dflt;
    const auto& a = j_["args"];
    return a.contains(key) && a[key].is_number_integer() ? a[key].get<int64_t>() : dflt;
  }
  // An optional count: absent is `dflt`; present, it must be a non-negative integer.
  int64_t ArgCountOr(const char* key, int64_t dflt) const {
    if (!j_.contains("args") || !j_["args"].is_object() || !j_["args"].contains(key)) return dflt;
    const auto& v = j_["args"][key];
    if (!v.is_number_integer() || v.get<int64_t>() < 0)
      Fail(std::string("args.") + key, "must be a non-negative integer");
    return v.get<int64_t>();
  }
  std::string ArgStringOr(const char* key) const {
    if (!j_.contains("args") || !j_["args"].is_object()) return "";
    const auto& a = j_["args"];
    return a.contains(key) && a[key].is_string() ? a[key].get<std::string>() : "";
  }
  const nlohmann::json& Args() const {
    if (!j_.contains("args")) Fail("args", "missing");
    if (!j_["args"].is_object()) Fail("args", "must be an object");
    return j_["args"];
  }

 private:
  const nlohmann::json& j_;
  const std::string& file_;
  size_t index_;
};

// Chrome trace event phases (Trace Event Format, Google, 2016).
const std::set<std::string> kKnownPhases = {"X", "B", "E", "i", "I", "s", "t", "f", "M", "C", "b",
                                            "e", "n", "N", "O", "D", "R", "P", "S", "T", "F", "c", "(", ")"};

Time Us(double us) { return Time::FromSeconds(us * 1e-6); }

KinetoHostCall::Kind CallKind(const std::string& name) {
  if (name == "cudaLaunchKernel" || name == "cuLaunchKernel" || name == "cuLaunchKernelEx" ||
      name == "cudaLaunchKernelExC" || name == "cudaLaunchCooperativeKernel" || Contains(name, "Memcpy") ||
      Contains(name, "Memset") || name == "cudaGraphLaunch")
    return KinetoHostCall::Kind::kLaunch;
  if (name == "cudaDeviceSynchronize") return KinetoHostCall::Kind::kDeviceSync;
  if (name == "cudaStreamSynchronize" || name == "cudaEventSynchronize") return KinetoHostCall::Kind::kStreamSync;
  return KinetoHostCall::Kind::kOther;
}

// A collective from its name: "nccl:all_reduce" record_function names, the
// "Collective name" torch.distributed records ("allreduce", "_allgather_base",
// "reduce_scatter_tensor_coalesced", "all_to_allv", ...), or an NCCL kernel's
// name ("ncclDevKernel_AllReduce_Sum_f32_RING_LL"). Point-to-point sends and
// receives are not collectives here: they keep their measured time.
bool CollectiveOf(const std::string& name, trace::CollectiveKind* kind) {
  std::string n = Lower(name);
  if (Contains(n, "all_reduce") || Contains(n, "allreduce")) *kind = trace::CollectiveKind::kAllReduce;
  else if (Contains(n, "all_gather") || Contains(n, "allgather")) *kind = trace::CollectiveKind::kAllGather;
  else if (Contains(n, "reduce_scatter") || Contains(n, "reducescatter")) *kind = trace::CollectiveKind::kReduceScatter;
  else if (Contains(n, "all_to_all") || Contains(n, "alltoall")) *kind = trace::CollectiveKind::kAllToAll;
  else if (Contains(n, "broadcast")) *kind = trace::CollectiveKind::kBroadcast;
  else return false;
  return true;
}

double DtypeBytes(const std::string& dtype) {
  std::string d = Lower(dtype);
  if (Contains(d, "float8") || Contains(d, "fp8") || d == "byte" || d == "char") return 1;
  if (Contains(d, "bfloat16") || Contains(d, "half") || d == "float16") return 2;
  if (Contains(d, "double") || Contains(d, "long") || d == "float64" || d == "int64") return 8;
  return 4;
}

struct RawCall {
  KinetoHostCall call;
  int64_t external = -1;
};

struct CommInfo {
  trace::CollectiveKind kind = trace::CollectiveKind::kAllReduce;
  double bytes = 0;
  int group_size = 0;
};

// What torch.distributed records of a collective, on its record_param_comms
// CPU op (and, in recent PyTorch, on the NCCL kernel itself): "Collective
// name", "In msg nelems", "Out msg nelems", "dtype", "Group size". Older
// traces name the op "nccl:<collective>" with the same counts. False when
// `e` describes no collective (or a point-to-point send/receive).
bool ReadComm(const Event& e, const std::string& name, CommInfo* c) {
  std::string coll = e.ArgStringOr("Collective name");
  if (coll.empty() && Lower(name).rfind("nccl:", 0) == 0) coll = name;
  if (coll.empty() || !CollectiveOf(coll, &c->kind)) return false;
  int64_t in = e.ArgCountOr("In msg nelems", -1), out = e.ArgCountOr("Out msg nelems", -1);
  // The trace's CommOp convention: all-gather counts the gathered output,
  // the others their input.
  int64_t n = c->kind == trace::CollectiveKind::kAllGather && out >= 0 ? out : in;
  c->bytes = n > 0 ? static_cast<double>(n) * DtypeBytes(e.ArgStringOr("dtype")) : 0;
  int64_t g = e.ArgCountOr("Group size", 0);
  if (g > (1 << 24)) e.Fail("args.Group size", "more ranks than stacksim represents (2^24)");
  c->group_size = static_cast<int>(g);
  return true;
}

}  // namespace

const char* KernelClassName(KernelClass c) {
  switch (c) {
    case KernelClass::kCompute: return "compute";
    case KernelClass::kMemory: return "memory";
    case KernelClass::kCommunication: return "communication";
  }
  return "?";
}

KernelClass ClassifyKernel(const std::string& name) {
  std::string n = Lower(name);
  if (Contains(n, "nccl")) return KernelClass::kCommunication;
  // Elementwise / reduction families first: "gemm" can appear in their
  // template arguments, never the other way round.
  for (const char* m : {"elementwise", "vectorized", "reduce_kernel", "layer_norm", "layernorm", "rms_norm",
                        "rmsnorm", "softmax", "adam", "multi_tensor", "memset", "memcpy", "copy", "gather",
                        "scatter", "radix_sort", "nll_loss", "embedding", "cat", "fill", "index", "sort", "scan",
                        "unique", "partial", "sum_and", "compute_grad_weight", "convert_dq", "compute_dot_do_o"})
    if (Contains(n, m)) return KernelClass::kMemory;
  for (const char* c : {"cutlass", "xmma", "gemm", "nvjet", "flash", "sdpa", "fmha", "attention", "wgmma", "cublas",
                        "ampere_", "sm80_", "sm90_", "sm100_", "conv"})
    if (Contains(n, c)) return KernelClass::kCompute;
  return KernelClass::kMemory;
}

config::Precision KernelPrecision(const std::string& name) {
  std::string n = Lower(name);
  if (Contains(n, "e4m3") || Contains(n, "e5m2") || Contains(n, "fp8")) return config::Precision::kFp8;
  if (Contains(n, "sgemm") || Contains(n, "tf32") || Contains(n, "f32f32")) return config::Precision::kTf32;
  if (Contains(n, "f16") && !Contains(n, "bf16") && !Contains(n, "sdpa") && !Contains(n, "flash"))
    return config::Precision::kFp16;
  return config::Precision::kBf16;
}

std::string ReadMaybeGzip(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open the trace file");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 2 || static_cast<unsigned char>(bytes[0]) != 0x1f || static_cast<unsigned char>(bytes[1]) != 0x8b)
    return bytes;
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) throw InputError(path, "", "cannot initialise gzip decoding");
  zs.next_in = reinterpret_cast<Bytef*>(bytes.data());
  zs.avail_in = static_cast<uInt>(bytes.size());
  std::string out;
  char buf[1 << 16];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof(buf);
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      std::string msg = zs.msg ? zs.msg : (rc == Z_BUF_ERROR ? "unexpected end of data" : "inflate error");
      size_t at = zs.total_in;
      inflateEnd(&zs);
      throw InputError(path, "", "corrupt or truncated gzip stream at compressed byte " + std::to_string(at) +
                                     " (" + msg + ")");
    }
    out.append(buf, sizeof(buf) - zs.avail_out);
    if (rc != Z_STREAM_END && zs.avail_in == 0 && zs.avail_out != 0) {
      inflateEnd(&zs);
      throw InputError(path, "", "truncated gzip stream: ended after " + std::to_string(bytes.size()) +
                                     " compressed bytes, " + std::to_string(out.size()) + " decompressed");
    }
  }
  inflateEnd(&zs);
  return out;
}

KinetoStep ParseKinetoTrace(const std::string& text, const std::string& origin) {
  nlohmann::json doc = ParseJsonText(text, origin);
  if (!doc.is_object() && !doc.is_array()) throw InputError(origin, "", "a Chrome trace is an object or an array");
  const nlohmann::json* events = &doc;
  if (doc.is_object()) {
    if (!doc.contains("traceEvents")) throw InputError(origin, "traceEvents", "missing");
    events = &doc["traceEvents"];
  }
  if (!events->is_array()) throw InputError(origin, "traceEvents", "must be an array");

  KinetoStep step;
  step.file = origin;
  step.events = static_cast<int>(events->size());
  // First pass: validate phases and find the step annotation.
  double step_begin = -1, step_end = -1, lo = 1e300, hi = -1e300;
  for (size_t i = 0; i < events->size(); ++i) {
    const nlohmann::json& j = (*events)[i];
    if (!j.is_object()) throw InputError(origin, "traceEvents[" + std::to_string(i) + "]", "must be an object");
    Event e(j, origin, i);
    std::string ph = e.String("ph");
    if (!kKnownPhases.count(ph)) e.Fail("ph", "unknown phase type \"" + ph + "\"");
    if (ph != "X") continue;
    std::string name = e.String("name");
    double ts = e.Number("ts"), dur = e.Number("dur");
    if (dur < 0) e.Fail("dur", "must be >= 0");
    std::string cat = e.StringOr("cat", "");
    if (cat == "Trace") continue;  // Kineto's own span of the whole recording
    lo = std::min(lo, ts);
    hi = std::max(hi, ts + dur);
    if (cat == "user_annotation" && name.rfind("ProfilerStep#", 0) == 0 && ts >= step_begin) {
      step_begin = ts;
      step_end = ts + dur;
      step.step_name = name;
      step.main_thread = e.Id("tid");
    }
  }
  if (hi < lo) throw InputError(origin, "traceEvents", "no complete (\"X\") events: nothing to replay");
  if (step_begin < 0) {
    step_begin = lo;
    step_end = hi;
    step.step_name = "whole trace";
  }

  // Second pass: host calls in the step, GPU activities, NCCL record_functions.
  std::vector<RawCall> calls;
  struct RawKernel {
    KinetoKernel k;
    int64_t external = -1;
    bool has_comm = false;  // the kernel's own args describe its collective
    CommInfo comm;
  };
  std::vector<RawKernel> kernels;
  std::unordered_map<int64_t, CommInfo> nccl_ops;  // by external id
  for (size_t i = 0; i < events->size(); ++i) {
    const nlohmann::json& j = (*events)[i];
    Event e(j, origin, i);
    std::string ph = e.String("ph");
    std::string cat = e.StringOr("cat", "");
    if (ph != "X") continue;
    std::string name = e.String("name");
    double ts = e.Number("ts"), dur = e.Number("dur");
    if (cat == "cuda_runtime" || cat == "cuda_driver") {
      if (ts < step_begin || ts > step_end) continue;
      RawCall c;
      c.call.name = name;
      c.call.kind = CallKind(name);
      c.call.thread = e.Id("tid");
      c.call.start = Us(ts - step_begin);
      c.call.duration = Us(dur);
      c.call.correlation = e.ArgInt("correlation");
      c.call.stream = e.ArgIntOr("stream", -1);
      calls.push_back(c);
    } else if (cat == "kernel" || cat == "gpu_memset" || cat == "gpu_memcpy") {
      RawKernel r;
      r.k.name = name;
      r.k.category = cat;
      r.k.kernel_class = cat == "kernel" ? ClassifyKernel(name) : KernelClass::kMemory;
      r.k.precision = KernelPrecision(name);
      r.k.stream = e.ArgInt("stream");
      r.k.correlation = e.ArgInt("correlation");
      r.k.start = Us(ts - step_begin);
      r.k.duration = Us(dur);
      r.external = e.ArgIntOr("External id", -1);
      if (r.k.kernel_class == KernelClass::kCommunication) r.has_comm = ReadComm(e, name, &r.comm);
      kernels.push_back(r);
    } else if (cat == "cpu_op" || cat == "user_annotation") {
      CommInfo c;
      int64_t external = e.ArgIntOr("External id", -1);
      if (external >= 0 && ReadComm(e, name, &c)) {
        // The innermost op with sizes wins: record_param_comms nests inside
        // the c10d op and carries the counts.
        auto [it, fresh] = nccl_ops.try_emplace(external, c);
        if (!fresh && (it->second.bytes == 0 || c.bytes > 0)) it->second = c;
      }
    } else if (cat == "cuda_sync" && name == "Stream Wait Event") {
      KinetoStreamWait w;
      w.stream = e.ArgInt("stream");
      w.wait_on_stream = e.ArgInt("wait_on_stream");
      w.record_correlation = e.ArgIntOr("wait_on_cuda_event_record_corr_id", -1);
      w.correlation = e.ArgIntOr("correlation", -1);
      w.time = Us(ts - step_begin);
      step.waits.push_back(w);
    }
  }
  std::stable_sort(calls.begin(), calls.end(),
                   [](const RawCall& a, const RawCall& b) { return a.call.start < b.call.start; });
  std::unordered_map<int64_t, int> call_of;
  for (size_t i = 0; i < calls.size(); ++i) {
    step.calls.push_back(calls[i].call);
    call_of[calls[i].call.correlation] = static_cast<int>(i);
  }
  // A wait whose trace leaves the producer stream out (-1): the stream the
  // event was recorded on, from its cudaEventRecord call.
  for (KinetoStreamWait& w : step.waits) {
    if (w.wait_on_stream >= 0) continue;
    auto it = call_of.find(w.record_correlation);
    if (it != call_of.end()) w.wait_on_stream = step.calls[it->second].stream;
  }
  // A GPU activity belongs to the step if its launch call does; without a
  // launch in the trace, if it starts inside the step.
  Time host_end = Us(step_end - step_begin), gpu_end;
  for (RawKernel& r : kernels) {
    auto it = call_of.find(r.k.correlation);
    if (it != call_of.end()) {
      r.k.launch = it->second;
    } else if (r.k.start < Time::Zero() || r.k.start > host_end) {
      continue;
    }
    if (r.k.kernel_class == KernelClass::kCommunication) {
      auto op = nccl_ops.find(r.external);
      const CommInfo* c = r.has_comm && (r.comm.bytes > 0 || op == nccl_ops.end()) ? &r.comm
                          : op != nccl_ops.end()                                   ? &op->second
                                                                                   : nullptr;
      if (c) {
        r.k.collective = c->kind;
        r.k.comm_bytes = Bytes{c->bytes};
        r.k.group_size = c->group_size;
      } else {
        trace::CollectiveKind kind;
        if (CollectiveOf(r.k.name, &kind)) r.k.collective = kind;
        else r.k.point_to_point = true;
      }
    }
    gpu_end = std::max(gpu_end, r.k.start + r.k.duration);
    step.kernels.push_back(r.k);
  }
  std::stable_sort(step.kernels.begin(), step.kernels.end(),
                   [](const KinetoKernel& a, const KinetoKernel& b) { return a.start < b.start; });
  std::stable_sort(step.waits.begin(), step.waits.end(),
                   [](const KinetoStreamWait& a, const KinetoStreamWait& b) { return a.time < b.time; });
  step.annotation_end = host_end;
  step.span = std::max(host_end, gpu_end);
  if (step.kernels.empty()) throw InputError(origin, "traceEvents", "the step has no GPU activity (kernel, gpu_memset, gpu_memcpy)");
  return step;
}

KinetoStep ReadKinetoTrace(const std::string& path) { return ParseKinetoTrace(ReadMaybeGzip(path), path); }

}  // namespace stacksim::ingest
