#include "calibrate/harness/nccl_library.h"

#ifdef STACKSIM_HAVE_NCCL
#include <dlfcn.h>

#include <string>
#include <type_traits>
#include <vector>

namespace stacksim::calibrate {

NcclLibrary::NcclLibrary(bool pretend_missing) {
  if (pretend_missing) {
    error_ = "libnccl.so.2 treated as absent (fault injection: nccl-missing)";
    return;
  }
  std::vector<std::string> candidates = {"libnccl.so.2", "libnccl.so"};
#ifdef STACKSIM_NCCL_LIBRARY_PATH
  candidates.push_back(STACKSIM_NCCL_LIBRARY_PATH);
#endif
  for (const std::string& c : candidates) {
    handle_ = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ != nullptr) {
      path_ = c;
      break;
    }
    const char* e = dlerror();
    if (error_.empty()) error_ = e != nullptr ? e : c + ": cannot be opened";
  }
  if (handle_ == nullptr) return;
  error_.clear();
  bool all = true;
  auto bind = [&](auto& fn, const char* name) {
    // ncclX are also exported as pncclX; the plain name is the public one.
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle_, name));
    if (fn == nullptr && all) {
      all = false;
      error_ = path_ + " lacks " + name;
    }
  };
  bind(GetVersion, "ncclGetVersion");
  bind(GetErrorString, "ncclGetErrorString");
  bind(CommInitAll, "ncclCommInitAll");
  bind(CommDestroy, "ncclCommDestroy");
  bind(CommAbort, "ncclCommAbort");
  bind(GroupStart, "ncclGroupStart");
  bind(GroupEnd, "ncclGroupEnd");
  bind(AllReduce, "ncclAllReduce");
  bind(AllGather, "ncclAllGather");
  bind(ReduceScatter, "ncclReduceScatter");
  bind(Broadcast, "ncclBroadcast");
  bind(Send, "ncclSend");
  bind(Recv, "ncclRecv");
  if (!all) {
    dlclose(handle_);
    handle_ = nullptr;
  }
}

// Never dlclose'd: NCCL may keep threads of its own until the process ends,
// and dlopen of an open library only counts a reference.
NcclLibrary::~NcclLibrary() = default;

std::string NcclLibrary::ErrorString(ncclResult_t r) const {
  if (ok()) return GetErrorString(r);
  return "NCCL error " + std::to_string(static_cast<int>(r));
}

}  // namespace stacksim::calibrate

#endif  // STACKSIM_HAVE_NCCL
