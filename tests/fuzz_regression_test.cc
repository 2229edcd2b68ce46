// Replays the fuzz targets' inputs through their entry functions
// (fuzz/targets.h) in the normal build: every crash reproducer the fuzzers
// found (tests/data/fuzz/<target>/) and the whole corpus
// (fuzz/corpus/<target>/). Each input must be accepted or rejected with an
// InputError; any other exception is a regression. docs/fuzzing.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <typeinfo>
#include <vector>

#include "fuzz/targets.h"

namespace stacksim::fuzz {
namespace {

namespace fs = std::filesystem;

std::string ReadBytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<fs::path> FilesIn(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file()) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Runs every file of root/<target>/ through its target; returns the count.
int Replay(const fs::path& root) {
  int inputs = 0;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return 0;
  for (const auto& dir : fs::directory_iterator(root)) {
    if (!dir.is_directory()) continue;
    const std::string name = dir.path().filename().string();
    const FuzzTarget* target = FindTarget(name);
    if (target == nullptr) {
      ADD_FAILURE() << dir.path() << ": no fuzz target named " << name;
      continue;
    }
    for (const fs::path& file : FilesIn(dir.path())) {
      const std::string bytes = ReadBytes(file);
      ++inputs;
      try {
        RunInput(target->entry, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      } catch (const std::exception& e) {
        ADD_FAILURE() << file << ": " << typeid(e).name() << " escaped the " << name << " parser: " << e.what();
      } catch (...) {
        ADD_FAILURE() << file << ": a non-std exception escaped the " << name << " parser";
      }
    }
  }
  return inputs;
}

TEST(FuzzRegression, CrashReproducersAreAcceptedOrRejectedWithInputError) {
  EXPECT_GT(Replay(fs::path(STACKSIM_SOURCE_DIR) / "tests/data/fuzz"), 0);
}

TEST(FuzzRegression, CorpusIsAcceptedOrRejectedWithInputError) {
  EXPECT_GT(Replay(fs::path(STACKSIM_SOURCE_DIR) / "fuzz/corpus"), 0);
}

TEST(FuzzRegression, EveryTargetHasASeedCorpusAndAnExecutable) {
  const fs::path root(STACKSIM_SOURCE_DIR);
  for (const FuzzTarget& t : AllTargets()) {
    EXPECT_FALSE(FilesIn(root / "fuzz/corpus" / t.name).empty()) << t.name;
    EXPECT_TRUE(fs::exists(root / "fuzz" / (std::string(t.name) + "_fuzz.cc"))) << t.name;
  }
}

}  // namespace
}  // namespace stacksim::fuzz
