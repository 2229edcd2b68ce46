#include "sim/report/perfetto.h"

#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "sim/util/error.h"

namespace stacksim::report {
namespace {

// Written to the stream whenever this much has accumulated.
constexpr size_t kFlushBytes = 1 << 20;

void AppendEscaped(fmt::memory_buffer& buf, const std::string& text) {
  for (unsigned char c : text) {
    switch (c) {
      case '"': buf.append(std::string_view("\\\"")); break;
      case '\\': buf.append(std::string_view("\\\\")); break;
      case '\n': buf.append(std::string_view("\\n")); break;
      case '\r': buf.append(std::string_view("\\r")); break;
      case '\t': buf.append(std::string_view("\\t")); break;
      case '\b': buf.append(std::string_view("\\b")); break;
      case '\f': buf.append(std::string_view("\\f")); break;
      default:
        if (c < 0x20) {
          fmt::format_to(std::back_inserter(buf), "\\u{:04x}", static_cast<unsigned>(c));
        } else {
          buf.push_back(static_cast<char>(c));
        }
    }
  }
}

// Integer nanoseconds as exact decimal microseconds ("1.017", not
// "1.0170000000000001"): shorter files, and timestamps that compare equal.
void AppendMicros(fmt::memory_buffer& buf, Time t) {
  int64_t ns = t.ns();
  uint64_t mag = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  auto it = std::back_inserter(buf);
  if (ns < 0) buf.push_back('-');
  fmt::format_to(it, "{}", mag / 1000);
  unsigned frac = static_cast<unsigned>(mag % 1000);
  if (frac == 0) return;
  if (frac % 100 == 0) {
    fmt::format_to(it, ".{}", frac / 100);
  } else if (frac % 10 == 0) {
    fmt::format_to(it, ".{:02}", frac / 10);
  } else {
    fmt::format_to(it, ".{:03}", frac);
  }
}

// A JSON number; JSON has no infinity or NaN.
double Finite(double v) { return std::isfinite(v) ? v : 0.0; }

const char* OpClassName(trace::OpClass c) {
  switch (c) {
    case trace::OpClass::kGemm: return "gemm";
    case trace::OpClass::kAttention: return "attention";
    case trace::OpClass::kMemoryBound: return "memory_bound";
  }
  return "?";
}

class EventWriter {
 public:
  explicit EventWriter(std::ostream& out) : out_(out) {}

  // Starts the next event (with a separating comma when needed) and returns
  // the buffer to append its body to.
  fmt::memory_buffer& Begin() {
    buf_.append(std::string_view(first_ ? "\n" : ",\n"));
    first_ = false;
    return buf_;
  }
  fmt::memory_buffer& buf() { return buf_; }
  void MaybeFlush() {
    if (buf_.size() >= kFlushBytes) Flush();
  }
  void Flush() {
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
  }

 private:
  std::ostream& out_;
  fmt::memory_buffer buf_;
  bool first_ = true;
};

void AppendString(fmt::memory_buffer& buf, const std::string& text) {
  buf.push_back('"');
  AppendEscaped(buf, text);
  buf.push_back('"');
}

void WriteMetadata(EventWriter& w, const char* what, int pid, int tid, const std::string& name) {
  fmt::memory_buffer& buf = w.Begin();
  fmt::format_to(std::back_inserter(buf), R"({{"ph":"M","name":"{}","pid":{},"tid":{},"args":{{"name":)", what,
                 pid, tid);
  AppendString(buf, name);
  buf.append(std::string_view("}}"));
}

void WriteSortIndex(EventWriter& w, const char* what, int pid, int tid, int index) {
  fmt::format_to(std::back_inserter(w.Begin()),
                 R"({{"ph":"M","name":"{}","pid":{},"tid":{},"args":{{"sort_index":{}}}}})", what, pid, tid,
                 index);
}

void AppendArgs(fmt::memory_buffer& buf, const trace::Trace& trace, const trace::Task& task) {
  auto it = std::back_inserter(buf);
  switch (task.kind) {
    case trace::TaskKind::kCompute: {
      const trace::ComputeOp& op = task.compute;
      fmt::format_to(it, R"("op":"{}","flops":{},"bytes":{})", OpClassName(op.op_class), Finite(op.flops.value),
                     Finite(op.bytes.value));
      if (op.op_class != trace::OpClass::kMemoryBound) {
        fmt::format_to(it, R"(,"m":{},"n":{},"k":{},"batch":{})", op.m, op.n, op.k, op.batch);
      }
      if (op.kernels != 1) fmt::format_to(it, R"(,"kernels":{})", op.kernels);
      break;
    }
    case trace::TaskKind::kCollective: {
      fmt::format_to(it, R"("collective":"{}","bytes":{})", trace::CollectiveName(task.comm.kind),
                     Finite(task.comm.bytes.value));
      if (task.comm.group != trace::kNoGroup) {
        const trace::CommGroup& g = trace.group(task.comm.group);
        buf.append(std::string_view(R"(,"group":)"));
        AppendString(buf, g.name);
        fmt::format_to(it, R"(,"group_size":{})", g.size);
      }
      break;
    }
    case trace::TaskKind::kTransfer: {
      fmt::format_to(it, R"("dst_rank":{},"bytes":{})", task.transfer.dst, Finite(task.transfer.bytes.value));
      if (task.transfer.group != trace::kNoGroup) {
        buf.append(std::string_view(R"(,"group":)"));
        AppendString(buf, trace.group(task.transfer.group).name);
      }
      break;
    }
    case trace::TaskKind::kDelay:
      buf.append(std::string_view(R"("delay":true)"));
      break;
  }
}

}  // namespace

std::string JsonEscape(const std::string& text) {
  fmt::memory_buffer buf;
  AppendEscaped(buf, text);
  return fmt::to_string(buf);
}

void WritePerfettoTrace(const trace::Trace& trace, const trace::ReplayResult& replay, std::ostream& out,
                        const std::string& title) {
  if (replay.timings.size() != trace.size()) {
    throw std::logic_error(fmt::format("WritePerfettoTrace: {} timings for {} tasks", replay.timings.size(),
                                       trace.size()));
  }
  EventWriter w(out);
  w.buf().append(std::string_view(R"({"displayTimeUnit":"ns","otherData":{"title":)"));
  AppendString(w.buf(), title);
  w.buf().append(std::string_view(R"(},"traceEvents":[)"));

  // Name every rank, and every stream a rank uses.
  int ranks = trace.rank_count();
  size_t streams = trace.streams().size();
  std::vector<bool> used(static_cast<size_t>(ranks) * streams, false);
  for (const trace::Task& task : trace.tasks()) {
    if (task.rank >= 0 && task.rank < ranks && task.stream >= 0 && static_cast<size_t>(task.stream) < streams) {
      used[static_cast<size_t>(task.rank) * streams + task.stream] = true;
    }
  }
  for (int rank = 0; rank < ranks; ++rank) {
    WriteMetadata(w, "process_name", rank, 0, fmt::format("rank {}", rank));
    WriteSortIndex(w, "process_sort_index", rank, 0, rank);
    for (size_t s = 0; s < streams; ++s) {
      if (!used[static_cast<size_t>(rank) * streams + s]) continue;
      int tid = static_cast<int>(s);
      WriteMetadata(w, "thread_name", rank, tid, trace.stream_name(static_cast<trace::StreamId>(s)));
      WriteSortIndex(w, "thread_sort_index", rank, tid, tid);
    }
  }

  const bool have_contention = replay.contention.size() == trace.size();
  for (size_t id = 0; id < trace.size(); ++id) {
    const trace::Task& task = trace.tasks()[id];
    const trace::TaskTiming& t = replay.timings[id];
    fmt::memory_buffer& buf = w.Begin();
    auto it = std::back_inserter(buf);
    buf.append(std::string_view(R"({"ph":"X","name":")"));
    AppendEscaped(buf, trace.name(task.name));
    if (task.layer >= 0) fmt::format_to(it, " L{}", task.layer);
    if (task.micro_batch >= 0) fmt::format_to(it, " mb{}", task.micro_batch);
    buf.append(std::string_view(R"(","cat":)"));
    AppendString(buf, trace.label(task.label));
    fmt::format_to(it, R"(,"pid":{},"tid":{},"ts":)", task.rank, task.stream);
    AppendMicros(buf, t.start);
    buf.append(std::string_view(R"(,"dur":)"));
    AppendMicros(buf, t.end - t.start);
    fmt::format_to(it, R"(,"args":{{"task":{},)", id);
    AppendArgs(buf, trace, task);
    // Time spent ready but not started: a collective waiting for its peers.
    if (t.start > t.ready) {
      buf.append(std::string_view(R"(,"wait_us":)"));
      AppendMicros(buf, t.start - t.ready);
    }
    if (have_contention && replay.contention[id] > Time::Zero()) {
      buf.append(std::string_view(R"(,"contention_us":)"));
      AppendMicros(buf, replay.contention[id]);
    }
    buf.append(std::string_view("}}"));
    w.MaybeFlush();
  }
  w.buf().append(std::string_view("\n]}\n"));
  w.Flush();
}

void WritePerfettoTraceFile(const trace::Trace& trace, const trace::ReplayResult& replay,
                            const std::string& title, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw InputError(path, "", "cannot write the trace file (check that the folder exists)");
  WritePerfettoTrace(trace, replay, out, title);
  out.flush();
  if (!out) throw InputError(path, "", "cannot write the trace file (disk full?)");
}

}  // namespace stacksim::report
