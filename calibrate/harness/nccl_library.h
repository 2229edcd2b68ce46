// NCCL, opened at run time (dlopen) rather than linked: a machine without
// libnccl.so.2 still runs every other step, and the nccl step says why it
// measured nothing ("NCCL missing at run time: libnccl.so.2: cannot open
// shared object file"). nccl.h is needed at build time (STACKSIM_HAVE_NCCL)
// for the types; the library found by CMake is tried after the loader's
// search path.
#ifndef STACKSIM_CALIBRATE_HARNESS_NCCL_LIBRARY_H_
#define STACKSIM_CALIBRATE_HARNESS_NCCL_LIBRARY_H_

#ifdef STACKSIM_HAVE_NCCL
#include <nccl.h>

#include <string>

namespace stacksim::calibrate {

class NcclLibrary {
 public:
  // Opens NCCL, or records why not (ok() false, error()). `pretend_missing`
  // (fault "nccl-missing") records it as absent without trying.
  explicit NcclLibrary(bool pretend_missing = false);
  ~NcclLibrary();
  NcclLibrary(const NcclLibrary&) = delete;
  NcclLibrary& operator=(const NcclLibrary&) = delete;

  bool ok() const { return handle_ != nullptr; }
  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }
  // NCCL's message for `r` ("unhandled system error"); "NCCL error <n>" when
  // the library is not open.
  std::string ErrorString(ncclResult_t r) const;

  // REQUIRES: ok().
  decltype(&ncclGetVersion) GetVersion = nullptr;
  decltype(&ncclGetErrorString) GetErrorString = nullptr;
  decltype(&ncclCommInitAll) CommInitAll = nullptr;
  decltype(&ncclCommDestroy) CommDestroy = nullptr;
  decltype(&ncclCommAbort) CommAbort = nullptr;
  decltype(&ncclGroupStart) GroupStart = nullptr;
  decltype(&ncclGroupEnd) GroupEnd = nullptr;
  decltype(&ncclAllReduce) AllReduce = nullptr;
  decltype(&ncclAllGather) AllGather = nullptr;
  decltype(&ncclReduceScatter) ReduceScatter = nullptr;
  decltype(&ncclBroadcast) Broadcast = nullptr;
  decltype(&ncclSend) Send = nullptr;
  decltype(&ncclRecv) Recv = nullptr;

 private:
  void* handle_ = nullptr;
  std::string error_;
  std::string path_;
};

}  // namespace stacksim::calibrate

#endif  // STACKSIM_HAVE_NCCL
#endif  // STACKSIM_CALIBRATE_HARNESS_NCCL_LIBRARY_H_
