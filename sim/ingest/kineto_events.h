// The events of a PyTorch profiler (Kineto) Chrome trace that the importer
// uses, read streaming.
//
// The trace is read with a SAX parser straight from the (gzip-inflated)
// file: no document tree is built, and of each event only the fields the
// importer uses are kept (names interned once). Memory grows with the number
// of GPU activities and runtime calls, not with the file's size; the rest
// (cpu ops, Python events, metadata) is validated and dropped.
//
// Category names are mapped to one set: today's ("kernel", "gpu_memcpy",
// "gpu_memset", "cuda_runtime", "cuda_driver", "cpu_op", "user_annotation",
// "cuda_sync") and PyTorch 1.8/1.9's ("Kernel", "Memcpy", "Memset",
// "Runtime", "Operator"). ROCm traces use the same categories with HIP call
// names; before 2024 they carry no "correlation" arg and link a call to its
// GPU activity only by the "ac2g" flow ids, which are kept here.
//
// Times are integer nanoseconds. Kineto writes microseconds, integral or with
// fractional digits (nanosecond traces); the digits are read from the text,
// so 1712195495505543.2 us is exact (a double would round it to 0.25 us).
//
// Errors: InputError naming the file and the event ("traceEvents[17].dur").
#ifndef STACKSIM_SIM_INGEST_KINETO_EVENTS_H_
#define STACKSIM_SIM_INGEST_KINETO_EVENTS_H_

#include <cstdint>
#include <istream>
#include <map>
#include <string>
#include <vector>

namespace stacksim::ingest {

enum class EventCategory : uint8_t {
  kRuntime,         // cuda_runtime, cuda_driver; 1.9: Runtime
  kKernel,          // kernel; 1.9: Kernel
  kMemcpy,          // gpu_memcpy; 1.9: Memcpy
  kMemset,          // gpu_memset; 1.9: Memset
  kCpuOp,           // cpu_op, user_annotation; 1.9: Operator
  kStreamWait,      // cuda_sync "Stream Wait Event"
};

// One complete ("X") event the importer uses.
struct TraceEvent {
  EventCategory category = EventCategory::kCpuOp;
  int32_t name = -1;  // index in TraceEvents::names
  int64_t tid = -1;   // a string tid ("stream 7") is interned to an id >= kStringIdBase
  int64_t ts = 0;     // ns
  int64_t dur = 0;    // ns
  int64_t correlation = -1;  // args.correlation, or the ac2g flow id (-1: none)
  int64_t external = -1;     // args "External id" ("external id" in 1.9)
  int64_t stream = -1;       // args.stream (a string stream is interned); GPU activities: else the tid
  int64_t wait_on_stream = -1, record_correlation = -1;  // Stream Wait Event
  // What torch.distributed recorded of a collective (record_param_comms,
  // nccl:* ops, recent NCCL kernels); -1 / "" when absent.
  int32_t collective_name = -1;  // index in names
  int32_t dtype = -1;            // index in names
  int64_t in_nelems = -1, out_nelems = -1, group_size = -1;
  uint32_t index = 0;  // in traceEvents, for errors
};

struct TraceEvents {
  static constexpr int64_t kStringIdBase = int64_t{1} << 40;
  std::vector<std::string> names;  // interned names, collective names and dtypes
  std::vector<TraceEvent> events;  // the kept "X" events, in file order
  struct ProfilerStep {
    int64_t number = -1;  // N of "ProfilerStep#N"
    int64_t tid = -1;
    int64_t ts = 0, dur = 0;
    uint32_t index = 0;
  };
  std::vector<ProfilerStep> steps;  // in file order
  int64_t count = 0;                // events in the file
  int64_t first_ts = 0, last_end = 0;  // over all "X" events but Kineto's own "Trace" span
  bool any_complete = false;           // an "X" event was seen
  bool legacy_names = false;           // PyTorch 1.8/1.9 category names
  bool hip = false;                    // HIP (ROCm) runtime calls
  int flow_linked = 0;                 // events whose correlation came from an ac2g flow
  std::map<std::string, int64_t> categories;  // "X" events per category, for errors
};

// Reads a Chrome trace (an object with "traceEvents", or a bare array).
TraceEvents ReadTraceEvents(std::istream& in, const std::string& origin);
// The file, plain or gzip (by content), inflated as it is parsed.
TraceEvents ReadTraceEventsFile(const std::string& path);

}  // namespace stacksim::ingest

#endif  // STACKSIM_SIM_INGEST_KINETO_EVENTS_H_
