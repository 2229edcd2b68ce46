// Test helper: the published training runs (shared/validation, read-only),
// next to this checkout or inside it; "" when neither exists (the tests that
// need it skip, as in a fresh clone).
#ifndef STACKSIM_TESTS_VALIDATION_FILE_H_
#define STACKSIM_TESTS_VALIDATION_FILE_H_

#include <filesystem>
#include <string>

namespace stacksim::testing {

inline std::string ValidationFile() {
  for (const char* p : {"/../shared/validation/training_runs.json", "/shared/validation/training_runs.json"}) {
    std::string path = std::string(STACKSIM_SOURCE_DIR) + p;
    if (std::filesystem::exists(path)) return path;
  }
  return "";
}

}  // namespace stacksim::testing

#endif  // STACKSIM_TESTS_VALIDATION_FILE_H_
