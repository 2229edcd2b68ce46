#include "calibrate/harness/cupti_recorder.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>

#ifdef STACKSIM_HAVE_CUPTI
#include <cuda_runtime.h>
#include <cupti.h>
#endif

namespace stacksim::calibrate {

#ifdef STACKSIM_HAVE_CUPTI
namespace {

#if CUPTI_API_VERSION >= 130000
using KernelRecord = CUpti_ActivityKernel10;
#else
using KernelRecord = CUpti_ActivityKernel9;  // CUDA 12.x
#endif

// CUPTI hands finished buffers to a plain C callback, with no user pointer:
// the active recorder's span list is reachable only through this pointer.
std::mutex g_mutex;
std::vector<KernelSpan>* g_sink = nullptr;
bool g_callbacks_registered = false;

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  constexpr size_t kBytes = 8 << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBytes));
  *size = *buffer != nullptr ? kBytes : 0;
  *max_records = 0;
}

void CUPTIAPI BufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    CUpti_Activity* rec = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
      if (g_sink == nullptr) continue;
      if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
        const auto* k = reinterpret_cast<const KernelRecord*>(rec);
        g_sink->push_back({k->start, k->end, k->name != nullptr ? k->name : ""});
      }
    }
  }
  std::free(buffer);
}

std::string CuptiText(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return s != nullptr ? s : "CUPTI error " + std::to_string(static_cast<int>(r));
}

}  // namespace

bool KernelActivityRecorder::Start(std::string* why) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_sink != nullptr) {
      *why = "another recorder is active";
      return false;
    }
    spans_.clear();
    g_sink = &spans_;
  }
  auto fail = [&](const std::string& text) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_sink = nullptr;
    *why = text;
    return false;
  };
  if (!g_callbacks_registered) {
    CUptiResult r = cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted);
    if (r != CUPTI_SUCCESS) return fail("cuptiActivityRegisterCallbacks: " + CuptiText(r));
    g_callbacks_registered = true;
  }
  CUptiResult r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS) return fail("cuptiActivityEnable(CONCURRENT_KERNEL): " + CuptiText(r));
  active_ = true;
  return true;
}

std::vector<KernelSpan> KernelActivityRecorder::Stop() {
  if (!active_) return {};
  cudaDeviceSynchronize();
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::vector<KernelSpan> out;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_sink = nullptr;
    out.swap(spans_);
  }
  active_ = false;
  std::sort(out.begin(), out.end(), [](const KernelSpan& a, const KernelSpan& b) { return a.start_ns < b.start_ns; });
  return out;
}

#else  // no CUPTI

bool KernelActivityRecorder::Start(std::string* why) {
  *why = "stacksim-calibrate was built without CUPTI";
  return false;
}

std::vector<KernelSpan> KernelActivityRecorder::Stop() { return {}; }

#endif

KernelActivityRecorder::~KernelActivityRecorder() {
  if (active_) Stop();
}

std::vector<double> KernelDurationsUs(const std::vector<KernelSpan>& spans) {
  std::vector<double> out;
  for (const auto& s : spans) out.push_back((s.end_ns - s.start_ns) * 1e-3);
  return out;
}

std::vector<double> KernelGapsUs(const std::vector<KernelSpan>& spans) {
  std::vector<double> out;
  for (size_t i = 1; i < spans.size(); ++i) {
    double gap = static_cast<double>(spans[i].start_ns) - static_cast<double>(spans[i - 1].end_ns);
    out.push_back(std::max(0.0, gap) * 1e-3);
  }
  return out;
}

}  // namespace stacksim::calibrate
