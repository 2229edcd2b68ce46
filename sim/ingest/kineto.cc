#include "sim/ingest/kineto.h"

#include <zlib.h>

#include <algorithm>
#include <limits>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include <fmt/format.h>

#include "sim/ingest/kineto_events.h"

#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace stacksim::ingest {
namespace {

bool Contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Launch, sync and other host calls by name: the CUDA runtime and driver
// calls CUPTI reports, and the HIP calls Kineto's ROCm tracer links to GPU
// work (libkineto RocprofActivity_inl.h, RoctracerActivityApi.cpp).
KinetoHostCall::Kind CallKind(const std::string& name) {
  static const std::set<std::string> kLaunches = {
      "cudaLaunchKernel", "cudaLaunchKernelExC", "cudaLaunchCooperativeKernel",
      "cudaLaunchCooperativeKernelMultiDevice", "cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel",
      "cudaGraphLaunch", "cuGraphLaunch", "hipLaunchKernel", "hipExtLaunchKernel", "hipLaunchCooperativeKernel",
      "hipLaunchCooperativeKernelMultiDevice", "hipExtLaunchMultiKernelMultiDevice", "hipHccModuleLaunchKernel",
      "hipModuleLaunchKernel", "hipExtModuleLaunchKernel", "hipGraphLaunch"};
  if (kLaunches.count(name) || Contains(name, "Memcpy") || Contains(name, "Memset"))
    return KinetoHostCall::Kind::kLaunch;
  if (name == "cudaDeviceSynchronize" || name == "hipDeviceSynchronize") return KinetoHostCall::Kind::kDeviceSync;
  if (name == "cudaStreamSynchronize" || name == "cudaEventSynchronize" || name == "hipStreamSynchronize" ||
      name == "hipEventSynchronize")
    return KinetoHostCall::Kind::kStreamSync;
  return KinetoHostCall::Kind::kOther;
}

// A kernel launch (not a copy or memset, which may legitimately leave no GPU
// activity: a zero-byte memset, a host-side copy).
bool KernelLaunch(const std::string& name) {
  return CallKind(name) == KinetoHostCall::Kind::kLaunch && !Contains(name, "Memcpy") && !Contains(name, "Memset");
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
bool ReadComm(const TraceEvents& t, const TraceEvent& e, CommInfo* c) {
  std::string coll = e.collective_name >= 0 ? t.names[e.collective_name] : "";
  const std::string& name = t.names[e.name];
  if (coll.empty() && Lower(name).rfind("nccl:", 0) == 0) coll = name;
  if (coll.empty() || !CollectiveOf(coll, &c->kind)) return false;
  // The trace's CommOp convention: all-gather counts the gathered output,
  // the others their input.
  int64_t n = c->kind == trace::CollectiveKind::kAllGather && e.out_nelems >= 0 ? e.out_nelems : e.in_nelems;
  c->bytes = n > 0 ? static_cast<double>(n) * DtypeBytes(e.dtype >= 0 ? t.names[e.dtype] : "") : 0;
  c->group_size = e.group_size > 0 ? static_cast<int>(e.group_size) : 0;
  return true;
}

Time Ns(int64_t ns) { return Time::Ns(ns); }

bool IsGpu(const TraceEvent& e) {
  return e.category == EventCategory::kKernel || e.category == EventCategory::kMemcpy ||
         e.category == EventCategory::kMemset;
}

const char* CategoryName(EventCategory c) {
  switch (c) {
    case EventCategory::kKernel: return "kernel";
    case EventCategory::kMemcpy: return "gpu_memcpy";
    case EventCategory::kMemset: return "gpu_memset";
    default: return "";
  }
}

std::string Producer(const TraceEvents& t) {
  std::string p = t.legacy_names ? "PyTorch 1.8/1.9 profiler names (Kernel, Runtime, Memcpy, Memset, Operator)"
                                 : "PyTorch profiler (Kineto) names";
  if (t.hip) p += ", HIP (ROCm) runtime calls";
  if (t.flow_linked > 0) p += fmt::format(", {} events linked by ac2g flow ids", t.flow_linked);
  return p;
}

// cudaStreamSynchronize / cudaEventSynchronize calls whose trace does not
// name the stream (older Kineto writes no args.stream on runtime calls): the
// stream is inferred from the recording. A sync that returned at E cannot
// have waited for a stream whose work launched before it ran past E; of the
// streams whose work had ended by then (kSyncSlack for clock skew), the one
// the same thread last launched onto is taken, else the one whose work ended
// last. Returns the number inferred.
constexpr Time kSyncSlack = Time::Ns(2'000);
int InferSyncStreams(KinetoStep* step, const std::map<int64_t, Time>& carry) {
  std::vector<int> order(step->kernels.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  auto launched_at = [&](int i) {
    const KinetoKernel& k = step->kernels[i];
    return k.launch >= 0 ? step->calls[k.launch].start : k.start;
  };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return launched_at(a) < launched_at(b); });
  std::map<int64_t, Time> work_end(carry.begin(), carry.end());  // per stream, of the work launched so far
  std::map<int64_t, int64_t> last_stream;                         // per thread
  size_t next = 0;
  int inferred = 0;
  for (KinetoHostCall& c : step->calls) {
    while (next < order.size() && launched_at(order[next]) < c.start) {
      const KinetoKernel& k = step->kernels[order[next++]];
      Time& w = work_end[k.stream];
      w = std::max(w, k.start + k.duration);
      if (k.launch >= 0) last_stream[step->calls[k.launch].thread] = k.stream;
    }
    if (c.kind != KinetoHostCall::Kind::kStreamSync || c.stream >= 0) continue;
    const Time end = c.start + c.duration + kSyncSlack;
    int64_t pick = -1;
    auto last = last_stream.find(c.thread);
    if (last != last_stream.end() && work_end[last->second] <= end) {
      pick = last->second;
    } else {
      Time best = Time::Ns(-1);
      for (const auto& [stream, w] : work_end)
        if (w <= end && w > best) best = w, pick = stream;
    }
    if (pick >= 0) {
      c.stream = pick;
      ++inferred;
    }
  }
  return inferred;
}

// Per ProfilerStep: what a choice needs to know.
struct StepStats {
  int own = 0;             // GPU activities launched inside it
  int lost_launches = 0;   // kernel launches inside it with no GPU activity recorded
};

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
  CheckInputFile(path);
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

namespace {

KinetoStep BuildStep(const TraceEvents& t, const std::string& origin, const KinetoOptions& opts) {
  if (!t.any_complete) throw InputError(origin, "traceEvents", "no complete (\"X\") events: nothing to replay");
  std::vector<size_t> gpu, calls;
  for (size_t i = 0; i < t.events.size(); ++i) {
    if (IsGpu(t.events[i])) gpu.push_back(i);
    else if (t.events[i].category == EventCategory::kRuntime) calls.push_back(i);
  }
  if (gpu.empty()) {
    std::string seen;
    for (const auto& [cat, n] : t.categories) seen += fmt::format("{}{} x{}", seen.empty() ? "" : ", ", cat.empty() ? "(none)" : cat, n);
    throw InputError(origin, "traceEvents",
                     "no GPU activity: no complete event has category kernel, gpu_memcpy or gpu_memset (PyTorch "
                     "1.8/1.9: Kernel, Memcpy, Memset); categories seen: " + seen);
  }
  // Launch call of each correlation id (CUDA graphs: one launch, many kernels).
  std::unordered_map<int64_t, size_t> call_of;
  for (size_t i : calls)
    if (t.events[i].correlation >= 0) call_of.emplace(t.events[i].correlation, i);
  std::unordered_map<int64_t, int> gpu_count;
  for (size_t i : gpu)
    if (t.events[i].correlation >= 0) ++gpu_count[t.events[i].correlation];

  // Steps in time order.
  std::vector<TraceEvents::ProfilerStep> steps = t.steps;
  std::stable_sort(steps.begin(), steps.end(), [](const auto& a, const auto& b) { return a.ts < b.ts; });
  auto inside = [](int64_t ts, const TraceEvents::ProfilerStep& s) { return ts >= s.ts && ts <= s.ts + s.dur; };
  std::vector<StepStats> stats(steps.size());
  if (!steps.empty()) {
    std::vector<int64_t> begins;
    for (const auto& s : steps) begins.push_back(s.ts);
    auto step_of = [&](int64_t ts) -> int {
      auto it = std::upper_bound(begins.begin(), begins.end(), ts);
      if (it == begins.begin()) return -1;
      int k = static_cast<int>(it - begins.begin()) - 1;
      return inside(ts, steps[k]) ? k : -1;
    };
    for (size_t i : gpu) {
      auto c = call_of.find(t.events[i].correlation);
      // Without a launch call in the trace, by its start (as attributed below).
      int k = step_of(c == call_of.end() ? t.events[i].ts : t.events[c->second].ts);
      if (k >= 0) ++stats[k].own;
    }
    for (size_t i : calls) {
      const TraceEvent& c = t.events[i];
      if (!KernelLaunch(t.names[c.name]) || c.correlation < 0 || gpu_count.count(c.correlation)) continue;
      int k = step_of(c.ts);
      if (k >= 0) ++stats[k].lost_launches;
    }
  }

  KinetoStep step;
  step.file = origin;
  step.events = static_cast<int>(std::min<int64_t>(t.count, std::numeric_limits<int>::max()));
  step.producer = Producer(t);
  int64_t begin = t.first_ts, end = t.last_end;
  auto describe = [&](size_t k) {
    return fmt::format("ProfilerStep#{}: {} GPU activities launched in it{}", steps[k].number, stats[k].own,
                       stats[k].lost_launches ? fmt::format(", {} kernel launches with no GPU activity recorded",
                                                            stats[k].lost_launches)
                                              : "");
  };
  auto list = [&] {
    std::string s;
    for (size_t k = 0; k < steps.size(); ++k) s += (k ? "; " : "") + describe(k);
    return s;
  };
  if (steps.empty()) {
    if (opts.step >= 0)
      throw InputError(origin, "--step", fmt::format("the trace has no ProfilerStep#N annotations (asked for #{})", opts.step));
    step.step_name = "whole trace";
    step.chosen = "the trace has no ProfilerStep#N annotation: the whole recorded window is the step";
  } else {
    int chosen = -1;
    if (opts.step >= 0) {
      for (size_t k = 0; k < steps.size(); ++k)
        if (steps[k].number == opts.step) chosen = static_cast<int>(k);
      if (chosen < 0)
        throw InputError(origin, "--step", fmt::format("no ProfilerStep#{} in the trace; it has: {}", opts.step, list()));
      if (stats[chosen].own == 0)
        throw InputError(origin, "--step", fmt::format("ProfilerStep#{} launched no GPU work (no kernel, memcpy or "
                                                       "memset whose launch call lies inside it); the trace has: {}",
                                                       opts.step, list()));
      step.chosen = fmt::format("ProfilerStep#{}, as asked (--step)", opts.step);
      if (stats[chosen].lost_launches > 0)
        step.chosen += fmt::format("; incomplete: {} of its kernel launches have no GPU activity in the trace",
                                   stats[chosen].lost_launches);
    } else {
      for (size_t k = steps.size(); k-- > 0;)
        if (stats[k].own > 0 && stats[k].lost_launches == 0) { chosen = static_cast<int>(k); break; }
      std::string skipped;
      for (size_t k = chosen + 1; k < steps.size(); ++k)
        skipped += fmt::format("{}#{} ({})", skipped.empty() ? "" : ", ", steps[k].number,
                               stats[k].lost_launches == 0
                                   ? "no GPU work launched in it"
                                   : fmt::format("{} kernel launches without GPU activity", stats[k].lost_launches));
      if (chosen < 0) {
        for (size_t k = steps.size(); k-- > 0;)
          if (stats[k].own > 0) { chosen = static_cast<int>(k); break; }
        if (chosen < 0)
          throw InputError(origin, "traceEvents",
                           fmt::format("the trace has GPU activity, but none was launched inside a ProfilerStep "
                                       "(steps: {}); {} GPU activities, {} with a launch call in the trace",
                                       list(), gpu.size(), [&] {
                                         size_t n = 0;
                                         for (size_t i : gpu) n += call_of.count(t.events[i].correlation);
                                         return n;
                                       }()));
        step.chosen = fmt::format("ProfilerStep#{}, the last with GPU work; no step is complete (every one has "
                                  "kernel launches without GPU activity)", steps[chosen].number);
      } else {
        step.chosen = steps.size() == 1
                          ? fmt::format("ProfilerStep#{}, the last complete step with GPU work (the trace's only "
                                        "ProfilerStep)", steps[chosen].number)
                          : fmt::format("ProfilerStep#{}, the last complete step with GPU work (of {} steps, #{}..#{})",
                                        steps[chosen].number, steps.size(), steps.front().number,
                                        steps.back().number);
        if (!skipped.empty()) step.chosen += "; later steps skipped: " + skipped;
      }
    }
    const auto& s = steps[chosen];
    begin = s.ts;
    end = s.ts + s.dur;
    step.step_name = fmt::format("ProfilerStep#{}", s.number);
    step.step_number = s.number;
    step.main_thread = s.tid;
  }
  const bool whole = steps.empty();
  auto in_step = [&](int64_t ts) { return ts >= begin && ts <= end; };

  // Host calls in the step.
  std::vector<size_t> step_calls;
  for (size_t i : calls)
    if (in_step(t.events[i].ts)) step_calls.push_back(i);
  std::stable_sort(step_calls.begin(), step_calls.end(),
                   [&](size_t a, size_t b) { return t.events[a].ts < t.events[b].ts; });
  std::unordered_map<int64_t, int> call_index;
  for (size_t k = 0; k < step_calls.size(); ++k) {
    const TraceEvent& e = t.events[step_calls[k]];
    KinetoHostCall c;
    c.name = t.names[e.name];
    c.kind = CallKind(c.name);
    c.thread = e.tid;
    c.start = Ns(e.ts - begin);
    c.duration = Ns(e.dur);
    c.correlation = e.correlation;
    c.stream = e.stream;
    step.calls.push_back(c);
    if (e.correlation >= 0) call_index[e.correlation] = static_cast<int>(k);
  }

  // Stream waits in the step.
  for (const TraceEvent& e : t.events) {
    if (e.category != EventCategory::kStreamWait || !in_step(e.ts)) continue;
    KinetoStreamWait w;
    w.stream = e.stream;
    w.wait_on_stream = e.wait_on_stream;
    w.record_correlation = e.record_correlation;
    w.correlation = e.correlation;
    w.time = Ns(e.ts - begin);
    step.waits.push_back(w);
  }
  // A wait whose trace leaves the producer stream out (-1): the stream the
  // event was recorded on, from its cudaEventRecord call.
  for (KinetoStreamWait& w : step.waits) {
    if (w.wait_on_stream >= 0) continue;
    auto it = call_index.find(w.record_correlation);
    if (it != call_index.end()) w.wait_on_stream = step.calls[it->second].stream;
  }

  // Collectives torch.distributed recorded on CPU ops, by External id. The
  // innermost op with sizes wins: record_param_comms nests inside the c10d op
  // and carries the counts.
  std::unordered_map<int64_t, CommInfo> comm_ops;
  std::unordered_map<int64_t, size_t> host_collective_of;  // External id -> step.host_collectives
  for (const TraceEvent& e : t.events) {
    CommInfo c;
    if (e.category != EventCategory::kCpuOp || e.external < 0 || !ReadComm(t, e, &c)) continue;
    auto [it, fresh] = comm_ops.try_emplace(e.external, c);
    if (!fresh && (it->second.bytes == 0 || c.bytes > 0)) it->second = c;
    if (!in_step(e.ts) || c.bytes <= 0) continue;  // the op that carries the sizes (an annotation may not)
    auto [at, first] = host_collective_of.try_emplace(e.external, step.host_collectives.size());
    if (first) step.host_collectives.push_back({Ns(e.ts - begin), e.tid});
    KinetoHostCollective& h = step.host_collectives[at->second];
    h.time = std::min(h.time, Ns(e.ts - begin));  // the outermost op's start
    h.kind = c.kind;
    h.bytes = Bytes{c.bytes};
    h.group_size = c.group_size;
  }
  std::sort(step.host_collectives.begin(), step.host_collectives.end(),
            [](const KinetoHostCollective& a, const KinetoHostCollective& b) { return a.time < b.time; });

  // GPU activities: the step's own (launched inside it), and the earlier
  // work still running when it begins.
  // CUPTI numbers calls in call order: an activity whose call is not in the
  // trace but whose correlation id is below every id of the step's calls was
  // launched before the step (before the profiler's window, for its first step).
  int64_t first_correlation = std::numeric_limits<int64_t>::max();
  for (const KinetoHostCall& c : step.calls)
    if (c.correlation >= 0) first_correlation = std::min(first_correlation, c.correlation);
  std::map<int64_t, Time> carry;
  for (size_t i : gpu) {
    const TraceEvent& e = t.events[i];
    auto own_call = call_index.find(e.correlation);
    bool own;
    bool launched_before = false;
    int launch = -1;
    if (own_call != call_index.end()) {
      own = true;
      launch = own_call->second;
    } else if (whole) {
      own = true;  // the whole window has no outside
    } else if (auto c = call_of.find(e.correlation); c != call_of.end()) {
      own = false;
      launched_before = t.events[c->second].ts < begin;
    } else if (e.correlation >= 0 && e.correlation < first_correlation) {
      own = false;
      launched_before = true;
    } else {
      own = in_step(e.ts);  // no launch call in the trace: by its start
      if (own) ++step.unlinked;
    }
    if (!own) {
      bool earlier = e.ts < begin || launched_before;
      if (earlier && e.ts + e.dur > begin) {
        Time& until = carry[e.stream];
        until = std::max(until, Ns(e.ts + e.dur - begin));
        ++step.carried_kernels;
      }
      continue;
    }
    KinetoKernel k;
    k.name = t.names[e.name];
    k.category = CategoryName(e.category);
    k.kernel_class = e.category == EventCategory::kKernel ? ClassifyKernel(k.name) : KernelClass::kMemory;
    k.precision = KernelPrecision(k.name);
    k.stream = e.stream;
    k.start = Ns(e.ts - begin);
    k.duration = Ns(e.dur);
    k.correlation = e.correlation;
    k.launch = launch;
    if (k.kernel_class == KernelClass::kCommunication) {
      CommInfo own_comm;
      bool has_comm = ReadComm(t, e, &own_comm);
      auto op = comm_ops.find(e.external);
      const CommInfo* c = has_comm && (own_comm.bytes > 0 || op == comm_ops.end()) ? &own_comm
                          : op != comm_ops.end()                                     ? &op->second
                                                                                     : nullptr;
      if (c) {
        k.collective = c->kind;
        k.comm_bytes = Bytes{c->bytes};
        k.group_size = c->group_size;
      } else {
        trace::CollectiveKind kind;
        if (CollectiveOf(k.name, &kind)) k.collective = kind;
        else k.point_to_point = true;
      }
    }
    step.gpu_end = std::max(step.gpu_end, k.start + k.duration);
    step.kernels.push_back(std::move(k));
  }
  for (const auto& [stream, until] : carry) step.carry_in.push_back({stream, until});
  step.syncs_inferred = InferSyncStreams(&step, carry);
  std::stable_sort(step.kernels.begin(), step.kernels.end(),
                   [](const KinetoKernel& a, const KinetoKernel& b) { return a.start < b.start; });
  std::stable_sort(step.waits.begin(), step.waits.end(),
                   [](const KinetoStreamWait& a, const KinetoStreamWait& b) { return a.time < b.time; });
  step.annotation_end = Ns(end - begin);
  step.span = std::max(step.annotation_end, step.gpu_end);
  if (step.kernels.empty())
    throw InputError(origin, "traceEvents",
                     fmt::format("the {} has no GPU activity launched in it ({} GPU activities in the trace)",
                                 step.step_name, gpu.size()));
  return step;
}

}  // namespace

KinetoStep ParseKinetoTrace(const std::string& text, const std::string& origin, const KinetoOptions& opts) {
  std::istringstream in(text);
  return BuildStep(ReadTraceEvents(in, origin), origin, opts);
}

KinetoStep ReadKinetoTrace(const std::string& path, const KinetoOptions& opts) {
  return BuildStep(ReadTraceEventsFile(path), path, opts);
}

}  // namespace stacksim::ingest
