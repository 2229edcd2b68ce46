#include "sim/util/allocator.h"

#include <cstdlib>  // defines __GLIBC__ under glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace stacksim {

void KeepFreedMemory() {
#if defined(__GLIBC__)
  constexpr int kMiB = 1 << 20;
  mallopt(M_MMAP_THRESHOLD, 32 * kMiB);  // glibc's largest; fixing it stops the threshold's drift
  mallopt(M_TRIM_THRESHOLD, 2047 * kMiB);
  mallopt(M_TOP_PAD, 64 * kMiB);
#endif
}

}  // namespace stacksim
