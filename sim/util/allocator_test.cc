#include "sim/util/allocator.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace stacksim {
namespace {

void* volatile g_block = nullptr;  // the block escapes, so it is really allocated

TEST(KeepFreedMemory, AFreedLargeBlockStaysInTheHeap) {
#if defined(__GLIBC__)
  KeepFreedMemory();
  constexpr size_t kBlock = size_t{16} << 20;
  g_block = std::malloc(kBlock);
  ASSERT_NE(g_block, nullptr);
  std::memset(g_block, 1, kBlock);
  const struct mallinfo2 before = mallinfo2();
  std::free(g_block);
  const struct mallinfo2 after = mallinfo2();
  // Not a mapping of its own (glibc's default above 128 KiB), and still the
  // process's after the free: no heap trim gave it back.
  EXPECT_EQ(after.hblkhd, before.hblkhd);
  EXPECT_EQ(after.arena, before.arena);
  EXPECT_GE(after.fordblks, before.fordblks + kBlock);
#else
  GTEST_SKIP() << "glibc's allocator only";
#endif
}

}  // namespace
}  // namespace stacksim
