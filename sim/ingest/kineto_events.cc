#include "sim/ingest/kineto_events.h"

#include <zlib.h>

#include <array>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <streambuf>
#include <string_view>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace stacksim::ingest {
namespace {

// The file's bytes as a stream, gunzipped on the fly when they are gzip (by
// the magic bytes, not the name). A corrupt or truncated stream is an
// InputError naming the file. nlohmann's stream adapter reads the buffer
// directly (sbumpc), so the error reaches the caller unchanged.
class MaybeGzipBuf : public std::streambuf {
 public:
  explicit MaybeGzipBuf(const std::string& path) : path_(path), file_(path, std::ios::binary) {
    if (!file_) throw InputError(path, "", "cannot open the trace file");
    Fill();
    gzip_ = in_len_ >= 2 && static_cast<unsigned char>(in_[0]) == 0x1f && static_cast<unsigned char>(in_[1]) == 0x8b;
    if (gzip_) {
      if (inflateInit2(&zs_, 15 + 32) != Z_OK) throw InputError(path, "", "cannot initialise gzip decoding");
      zs_.next_in = reinterpret_cast<Bytef*>(in_.data());
      zs_.avail_in = static_cast<uInt>(in_len_);
    } else {
      setg(in_.data(), in_.data(), in_.data() + in_len_);
    }
  }
  ~MaybeGzipBuf() override {
    if (gzip_) inflateEnd(&zs_);
  }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    if (!gzip_) {
      Fill();
      setg(in_.data(), in_.data(), in_.data() + in_len_);
      return in_len_ == 0 ? traits_type::eof() : traits_type::to_int_type(in_[0]);
    }
    while (!done_) {
      if (zs_.avail_in == 0) {
        Fill();
        if (in_len_ == 0)
          throw InputError(path_, "", "truncated gzip stream: ended after " + std::to_string(zs_.total_in) +
                                          " compressed bytes, " + std::to_string(total_out_) + " decompressed");
        zs_.next_in = reinterpret_cast<Bytef*>(in_.data());
        zs_.avail_in = static_cast<uInt>(in_len_);
      }
      zs_.next_out = reinterpret_cast<Bytef*>(out_.data());
      zs_.avail_out = static_cast<uInt>(out_.size());
      int rc = inflate(&zs_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        // Concatenated gzip members (gzip(1) reads them as one file).
        if (zs_.avail_in > 0 || More()) inflateReset(&zs_);
        else done_ = true;
      } else if (rc != Z_OK && !(rc == Z_BUF_ERROR && zs_.avail_in == 0)) {
        std::string msg = zs_.msg ? zs_.msg : "inflate error";
        throw InputError(path_, "", "corrupt or truncated gzip stream at compressed byte " +
                                        std::to_string(zs_.total_in) + " (" + msg + ")");
      }
      size_t got = out_.size() - zs_.avail_out;
      if (got > 0) {
        total_out_ += got;
        setg(out_.data(), out_.data(), out_.data() + got);
        return traits_type::to_int_type(out_[0]);
      }
    }
    return traits_type::eof();
  }

 private:
  void Fill() {
    file_.read(in_.data(), static_cast<std::streamsize>(in_.size()));
    in_len_ = static_cast<size_t>(file_.gcount());
    if (file_.bad()) throw InputError(path_, "", "read error");
  }
  // More input after a gzip member's end: the next member's bytes.
  bool More() {
    Fill();
    zs_.next_in = reinterpret_cast<Bytef*>(in_.data());
    zs_.avail_in = static_cast<uInt>(in_len_);
    return in_len_ > 0;
  }

  std::string path_;
  std::ifstream file_;
  std::array<char, 1 << 16> in_{};
  std::array<char, 1 << 16> out_{};
  size_t in_len_ = 0;
  size_t total_out_ = 0;
  bool gzip_ = false, done_ = false;
  z_stream zs_{};
};

// Chrome trace event phases (Trace Event Format, Google, 2016).
bool KnownPhase(const std::string& ph) {
  static const char* kPhases[] = {"X", "B", "E", "i", "I", "s", "t", "f", "M", "C", "b", "e",
                                  "n", "N", "O", "D", "R", "P", "S", "T", "F", "c", "(", ")"};
  for (const char* p : kPhases)
    if (ph == p) return true;
  return false;
}

// A value of a field the reader keeps, as it came.
struct Slot {
  enum class Kind : uint8_t { kMissing, kInt, kFloat, kString, kOther };
  Kind kind = Kind::kMissing;
  int64_t i = 0;
  double d = 0;
  int64_t ns = 0;  // numbers: the value read as microseconds, in ns
  bool ns_ok = false;
  std::string s;
  void Clear() {
    kind = Kind::kMissing;
    ns_ok = false;
    s.clear();
  }
  bool IsNumber() const { return kind == Kind::kInt || kind == Kind::kFloat; }
};

// Timestamps as int64 ns hold +-9.2e18 ns: microseconds below 9e15 (285 years
// from the epoch) fit with room for a duration.
constexpr int64_t kMaxMicros = 9'000'000'000'000'000;

// Microseconds as written ("1712195495505543.2", "12", "1.5e3") to ns,
// exactly when the text has no exponent. False when it does not fit.
bool MicrosToNs(const std::string& text, double value, int64_t* ns) {
  std::string_view t = text;
  bool neg = !t.empty() && t[0] == '-';
  if (neg) t.remove_prefix(1);
  size_t dot = t.find('.');
  if (t.find_first_of("eE") == std::string_view::npos && !t.empty()) {
    std::string_view ip = t.substr(0, dot), fp = dot == std::string_view::npos ? "" : t.substr(dot + 1);
    if (ip.size() <= 16) {
      int64_t v = 0;
      for (char c : ip) v = v * 10 + (c - '0');
      if (v >= kMaxMicros) return false;
      int64_t frac = 0;
      for (size_t k = 0; k < 3; ++k) frac = frac * 10 + (k < fp.size() ? fp[k] - '0' : 0);
      v = v * 1000 + frac;
      if (fp.size() > 3 && fp[3] >= '5') ++v;  // round half up on the 4th decimal
      *ns = neg ? -v : v;
      return true;
    }
  }
  double x = value * 1000.0;
  if (!std::isfinite(x) || std::abs(x) > 9.0e18) return false;
  *ns = std::llround(x);
  return true;
}

class TraceSax {
 public:
  using json = nlohmann::json;
  TraceSax(const std::string& origin, TraceEvents* out) : origin_(origin), out_(out) {}

  bool null() { return Scalar(Slot::Kind::kOther); }
  bool boolean(bool) { return Scalar(Slot::Kind::kOther); }
  bool number_integer(json::number_integer_t v) {
    Slot* s = Target();
    if (s) {
      s->kind = Slot::Kind::kInt;
      s->i = v;
      s->d = static_cast<double>(v);
      s->ns_ok = v > -kMaxMicros && v < kMaxMicros;
      s->ns = s->ns_ok ? v * 1000 : 0;
    }
    return Done();
  }
  bool number_unsigned(json::number_unsigned_t v) {
    if (v > static_cast<json::number_unsigned_t>(std::numeric_limits<int64_t>::max())) {
      Slot* s = Target();
      if (s) {
        s->kind = Slot::Kind::kFloat;
        s->d = static_cast<double>(v);
        s->ns_ok = false;
      }
      return Done();
    }
    return number_integer(static_cast<int64_t>(v));
  }
  bool number_float(json::number_float_t v, const std::string& text) {
    Slot* s = Target();
    if (s) {
      s->kind = Slot::Kind::kFloat;
      s->d = v;
      s->ns_ok = std::isfinite(v) && MicrosToNs(text, v, &s->ns);
    }
    return Done();
  }
  bool string(std::string& v) {
    Slot* s = Target();
    if (s) {
      s->kind = Slot::Kind::kString;
      s->s.swap(v);
    }
    return Done();
  }
  bool binary(json::binary_t&) { return Scalar(Slot::Kind::kOther); }

  bool start_object(size_t) {
    if (depth_ == 0) {
      root_seen_ = true;
      root_object_ = true;
    } else if (events_depth_ < 0 && root_object_ && depth_ == 1 && key_ == "traceEvents") {
      throw InputError(origin_, "traceEvents", "must be an array");
    } else if (InEventsArray()) {
      BeginEvent();
    } else if (in_event_ && depth_ == events_depth_ + 1) {
      if (key_ == "args") in_args_ = true;
      else if (Slot* s = Target()) s->kind = Slot::Kind::kOther;
    } else if (in_args_ && depth_ == events_depth_ + 2) {
      if (Slot* s = Target()) s->kind = Slot::Kind::kOther;
    }
    ++depth_;
    return true;
  }
  bool end_object() {
    --depth_;
    if (in_event_ && depth_ == events_depth_ + 1 && in_args_) {
      in_args_ = false;
      args_object_ = true;
    } else if (in_event_ && depth_ == events_depth_) {
      EndEvent();
    }
    return true;
  }
  bool start_array(size_t) {
    if (depth_ == 0) {
      root_seen_ = true;
      events_depth_ = 1;
      events_seen_ = true;
    } else if (events_depth_ < 0 && !events_seen_ && root_object_ && depth_ == 1 && key_ == "traceEvents") {
      events_depth_ = 2;
      events_seen_ = true;
    } else if (InEventsArray()) {
      ElementNotObject();
    } else if (Slot* s = Target()) {
      s->kind = Slot::Kind::kOther;
    }
    ++depth_;
    return true;
  }
  bool end_array() {
    --depth_;
    if (depth_ + 1 == events_depth_) events_depth_ = -1;  // the events array closed
    return true;
  }
  bool key(std::string& k) {
    key_.swap(k);
    return true;
  }
  bool parse_error(size_t position, const std::string&, const nlohmann::detail::exception& ex) {
    std::string what = ex.what();
    size_t at = what.find("] ");
    error_ = "malformed JSON at byte " + std::to_string(position) + ": " +
             (at == std::string::npos ? what : what.substr(at + 2));
    return false;
  }

  const std::string& error() const { return error_; }
  bool root_seen() const { return root_seen_; }
  bool events_seen() const { return events_seen_; }
  bool root_object() const { return root_object_; }

  // Links events without a correlation id to their ac2g flow and returns the count.
  void Finish() {
    if (unlinked_.empty()) return;
    std::unordered_map<std::string, int64_t> start_at, end_at;
    for (const Flow& f : flows_) (f.start ? start_at : end_at)[Key(f.pid, f.tid, f.ts)] = f.id;
    for (const Unlinked& u : unlinked_) {
      TraceEvent& e = out_->events[u.event];
      auto& table = e.category == EventCategory::kRuntime ? start_at : end_at;
      auto it = table.find(Key(u.pid, e.tid, e.ts));
      if (it != table.end()) {
        e.correlation = it->second;
        ++out_->flow_linked;
      }
    }
  }

 private:
  struct Flow {
    int64_t pid, tid, ts, id;
    bool start;
  };
  struct Unlinked {
    size_t event;
    int64_t pid;
  };

  static std::string Key(int64_t pid, int64_t tid, int64_t ts) {
    return std::to_string(pid) + "/" + std::to_string(tid) + "/" + std::to_string(ts);
  }
  bool InEventsArray() const { return events_depth_ > 0 && depth_ == events_depth_; }
  std::string Path(const std::string& field) const {
    return "traceEvents[" + std::to_string(out_->count) + "]" + (field.empty() ? "" : "." + field);
  }
  [[noreturn]] void Fail(const std::string& field, const std::string& msg) const {
    throw InputError(origin_, Path(field), msg);
  }
  void ElementNotObject() { Fail("", "must be an object"); }

  // The slot the next value fills, or null when the reader does not keep it.
  Slot* Target() {
    if (!in_event_) return nullptr;
    using Fields = std::unordered_map<std::string_view, Slot TraceSax::*>;
    static const Fields kEventFields = {{"ph", &TraceSax::ph_},   {"cat", &TraceSax::cat_}, {"name", &TraceSax::name_},
                                        {"pid", &TraceSax::pid_}, {"tid", &TraceSax::tid_}, {"ts", &TraceSax::ts_},
                                        {"dur", &TraceSax::dur_}, {"id", &TraceSax::id_},   {"args", &TraceSax::args_}};
    static const Fields kArgFields = {{"correlation", &TraceSax::corr_},
                                      {"External id", &TraceSax::ext_},
                                      {"external id", &TraceSax::ext_},
                                      {"stream", &TraceSax::stream_},
                                      {"wait_on_stream", &TraceSax::wait_stream_},
                                      {"wait_on_cuda_event_record_corr_id", &TraceSax::record_corr_},
                                      {"Collective name", &TraceSax::coll_},
                                      {"dtype", &TraceSax::dtype_},
                                      {"In msg nelems", &TraceSax::in_n_},
                                      {"Out msg nelems", &TraceSax::out_n_},
                                      {"Group size", &TraceSax::group_}};
    const Fields* fields = nullptr;
    if (depth_ == events_depth_ + 1 && !in_args_) fields = &kEventFields;
    if (in_args_ && depth_ == events_depth_ + 2) fields = &kArgFields;
    if (!fields) return nullptr;
    auto it = fields->find(key_);
    return it == fields->end() ? nullptr : &(this->*(it->second));
  }
  bool Scalar(Slot::Kind kind) {
    if (Slot* s = Target()) s->kind = kind;
    return Done();
  }
  bool Done() {
    if (depth_ == 0) root_seen_ = true;
    else if (events_depth_ < 0 && !events_seen_ && root_object_ && depth_ == 1 && key_ == "traceEvents")
      throw InputError(origin_, "traceEvents", "must be an array");
    else if (InEventsArray()) ElementNotObject();
    return true;
  }

  void BeginEvent() {
    in_event_ = true;
    in_args_ = false;
    args_object_ = false;
    for (Slot* s : {&ph_, &cat_, &name_, &pid_, &tid_, &ts_, &dur_, &id_, &args_, &corr_, &ext_, &stream_,
                    &wait_stream_, &record_corr_, &coll_, &dtype_, &in_n_, &out_n_, &group_})
      s->Clear();
  }

  int32_t Intern(const std::string& s) {
    auto [it, fresh] = name_ids_.try_emplace(s, static_cast<int32_t>(out_->names.size()));
    if (fresh) out_->names.push_back(s);
    return it->second;
  }
  // pid / tid / stream: an integer, or a string interned to an id >= kStringIdBase.
  int64_t IdOf(const Slot& s, const char* field) {
    if (s.kind == Slot::Kind::kInt) return s.i;
    if (s.kind == Slot::Kind::kString) {
      auto [it, fresh] = string_ids_.try_emplace(s.s, TraceEvents::kStringIdBase + string_ids_.size());
      return it->second;
    }
    Fail(field, s.kind == Slot::Kind::kMissing ? "missing" : "must be an integer or a string");
  }
  int64_t Time(const Slot& s, const char* field) {
    if (s.kind == Slot::Kind::kMissing) Fail(field, "missing");
    if (!s.IsNumber()) Fail(field, "must be a number");
    if (!std::isfinite(s.d) || !s.ns_ok) Fail(field, "must be a finite number of microseconds, |value| < 9e15");
    return s.ns;
  }
  int64_t IntArg(const Slot& s, const char* field) {
    if (s.kind == Slot::Kind::kMissing) return -1;
    if (s.kind != Slot::Kind::kInt) Fail(std::string("args.") + field, "must be an integer");
    return s.i;
  }
  // An optional count: absent is -1; present, a non-negative integer.
  int64_t CountArg(const Slot& s, const char* field) {
    if (s.kind == Slot::Kind::kMissing) return -1;
    if (s.kind != Slot::Kind::kInt || s.i < 0) Fail(std::string("args.") + field, "must be a non-negative integer");
    return s.i;
  }

  void EndEvent() {
    in_event_ = false;
    if (ph_.kind == Slot::Kind::kMissing) Fail("ph", "missing");
    if (ph_.kind != Slot::Kind::kString) Fail("ph", "must be a string");
    if (!KnownPhase(ph_.s)) Fail("ph", "unknown phase type \"" + ph_.s + "\"");
    if (args_.kind != Slot::Kind::kMissing && !args_object_) Fail("args", "must be an object");
    const std::string cat = cat_.kind == Slot::Kind::kString ? cat_.s : "";
    if (ph_.s == "s" || ph_.s == "f") {
      if ((cat == "ac2g" || cat == "async" || cat == "async_cpu_to_gpu") && id_.kind == Slot::Kind::kInt &&
          pid_.kind != Slot::Kind::kMissing && tid_.kind != Slot::Kind::kMissing && ts_.IsNumber() && ts_.ns_ok)
        flows_.push_back({IdOf(pid_, "pid"), IdOf(tid_, "tid"), ts_.ns, id_.i, ph_.s == "s"});
    } else if (ph_.s == "X") {
      Complete(cat);
    }
    ++out_->count;
  }

  void Complete(const std::string& cat) {
    if (name_.kind == Slot::Kind::kMissing) Fail("name", "missing");
    if (name_.kind != Slot::Kind::kString) Fail("name", "must be a string");
    int64_t ts = Time(ts_, "ts"), dur = Time(dur_, "dur");
    if (dur < 0) Fail("dur", "must be >= 0");
    if (cat == "Trace") return;  // Kineto's own span of the whole recording
    ++out_->categories[cat];
    if (!out_->any_complete || ts < out_->first_ts) out_->first_ts = ts;
    if (!out_->any_complete || ts + dur > out_->last_end) out_->last_end = ts + dur;
    out_->any_complete = true;

    TraceEvent e;
    const std::string& name = name_.s;
    if (cat == "cuda_runtime" || cat == "cuda_driver" || cat == "Runtime") {
      e.category = EventCategory::kRuntime;
      if (cat == "Runtime") out_->legacy_names = true;
      if (name.rfind("hip", 0) == 0) out_->hip = true;
    } else if (cat == "kernel" || cat == "Kernel") {
      e.category = EventCategory::kKernel;
      if (cat == "Kernel") out_->legacy_names = true;
    } else if (cat == "gpu_memcpy" || cat == "Memcpy") {
      e.category = EventCategory::kMemcpy;
      if (cat == "Memcpy") out_->legacy_names = true;
    } else if (cat == "gpu_memset" || cat == "Memset") {
      e.category = EventCategory::kMemset;
      if (cat == "Memset") out_->legacy_names = true;
    } else if (cat == "cpu_op" || cat == "user_annotation" || cat == "Operator") {
      e.category = EventCategory::kCpuOp;
      if (cat == "Operator") out_->legacy_names = true;
    } else if (cat == "cuda_sync" && name == "Stream Wait Event") {
      e.category = EventCategory::kStreamWait;
    } else {
      return;
    }
    e.ts = ts;
    e.dur = dur;
    e.index = static_cast<uint32_t>(std::min<int64_t>(out_->count, std::numeric_limits<uint32_t>::max()));
    e.external = IntArg(ext_, "External id");
    if (e.category == EventCategory::kCpuOp) {
      if (name.rfind("ProfilerStep#", 0) == 0) {
        TraceEvents::ProfilerStep s;
        char* end = nullptr;
        const char* digits = name.c_str() + std::strlen("ProfilerStep#");
        long long n = std::strtoll(digits, &end, 10);
        s.number = end != digits && *end == '\0' && n >= 0 ? n : -1;
        s.tid = IdOf(tid_, "tid");
        s.ts = ts;
        s.dur = dur;
        s.index = e.index;
        out_->steps.push_back(s);
        return;
      }
      bool comm = coll_.kind == Slot::Kind::kString || name.rfind("nccl:", 0) == 0;
      if (!comm || e.external < 0) return;
    }
    e.name = Intern(name);
    if (e.category == EventCategory::kRuntime || e.category == EventCategory::kKernel ||
        e.category == EventCategory::kMemcpy || e.category == EventCategory::kMemset) {
      // A GPU activity's row may be absent; a host call's thread may not.
      bool gpu_row = e.category != EventCategory::kRuntime;
      e.tid = gpu_row && tid_.kind == Slot::Kind::kMissing ? -1 : IdOf(tid_, "tid");
      e.correlation = IntArg(corr_, "correlation");
    } else if (tid_.kind == Slot::Kind::kInt || tid_.kind == Slot::Kind::kString) {
      e.tid = IdOf(tid_, "tid");
    }
    if (stream_.kind == Slot::Kind::kInt || stream_.kind == Slot::Kind::kString) {
      e.stream = IdOf(stream_, "args.stream");
    } else if (stream_.kind != Slot::Kind::kMissing) {
      Fail("args.stream", "must be an integer or a string");
    }
    bool gpu = e.category == EventCategory::kKernel || e.category == EventCategory::kMemcpy ||
               e.category == EventCategory::kMemset;
    if (gpu && e.stream < 0) {
      // 1.8/1.9 name the GPU row "stream 7"; the stream is its number.
      if (tid_.kind == Slot::Kind::kString && tid_.s.rfind("stream ", 0) == 0) {
        char* end = nullptr;
        long long n = std::strtoll(tid_.s.c_str() + 7, &end, 10);
        if (end && *end == '\0' && n >= 0) e.stream = n;
      }
      if (e.stream < 0) Fail("args.stream", "missing (and the tid is not \"stream N\")");
    }
    if (e.category == EventCategory::kStreamWait) {
      if (stream_.kind != Slot::Kind::kInt) Fail("args.stream", stream_.kind == Slot::Kind::kMissing ? "missing" : "must be an integer");
      if (wait_stream_.kind != Slot::Kind::kInt) Fail("args.wait_on_stream", wait_stream_.kind == Slot::Kind::kMissing ? "missing" : "must be an integer");
      e.wait_on_stream = wait_stream_.i;
      e.record_correlation = IntArg(record_corr_, "wait_on_cuda_event_record_corr_id");
      e.correlation = IntArg(corr_, "correlation");
    }
    if (coll_.kind == Slot::Kind::kString) e.collective_name = Intern(coll_.s);
    if (dtype_.kind == Slot::Kind::kString) e.dtype = Intern(dtype_.s);
    if (e.category == EventCategory::kCpuOp || e.category == EventCategory::kKernel) {
      e.in_nelems = CountArg(in_n_, "In msg nelems");
      e.out_nelems = CountArg(out_n_, "Out msg nelems");
      e.group_size = CountArg(group_, "Group size");
      if (e.group_size > (1 << 24)) Fail("args.Group size", "more ranks than stacksim represents (2^24)");
    }
    if (e.correlation < 0 && e.category != EventCategory::kCpuOp && e.category != EventCategory::kStreamWait)
      unlinked_.push_back({out_->events.size(), pid_.kind == Slot::Kind::kMissing ? -1 : IdOf(pid_, "pid")});
    out_->events.push_back(e);
  }

  const std::string& origin_;
  TraceEvents* out_;
  int depth_ = 0;
  int events_depth_ = -1;
  bool root_seen_ = false, root_object_ = false, events_seen_ = false;
  bool in_event_ = false, in_args_ = false, args_object_ = false;
  std::string key_;
  std::string error_;
  Slot ph_, cat_, name_, pid_, tid_, ts_, dur_, id_, args_;
  Slot corr_, ext_, stream_, wait_stream_, record_corr_, coll_, dtype_, in_n_, out_n_, group_;
  std::unordered_map<std::string, int32_t> name_ids_;
  std::unordered_map<std::string, int64_t> string_ids_;
  std::vector<Flow> flows_;
  std::vector<Unlinked> unlinked_;
};

}  // namespace

TraceEvents ReadTraceEvents(std::istream& in, const std::string& origin) {
  TraceEvents out;
  TraceSax sax(origin, &out);
  bool ok = nlohmann::json::sax_parse(in, &sax);
  if (!ok) throw InputError(origin, "", sax.error().empty() ? "malformed JSON" : sax.error());
  if (!sax.root_seen() || (!sax.root_object() && !sax.events_seen()))
    throw InputError(origin, "", "a Chrome trace is an object or an array");
  if (!sax.events_seen()) throw InputError(origin, "traceEvents", "missing");
  sax.Finish();
  return out;
}

TraceEvents ReadTraceEventsFile(const std::string& path) {
  CheckInputFile(path);
  MaybeGzipBuf buf(path);
  std::istream in(&buf);
  return ReadTraceEvents(in, path);
}

}  // namespace stacksim::ingest
