// Test helper: the published training runs of the development set, shipped in
// the checkout's validation/ (copied from shared/validation with their
// sources); the shared copy next to the checkout when the checkout has none.
// "" when neither exists (the tests that need it skip).
#ifndef STACKSIM_TESTS_VALIDATION_FILE_H_
#define STACKSIM_TESTS_VALIDATION_FILE_H_

#include <filesystem>
#include <string>

namespace stacksim::testing {

inline std::string ValidationFile() {
  for (const char* p : {"/validation/training_runs.json", "/../shared/validation/training_runs.json"}) {
    std::string path = std::string(STACKSIM_SOURCE_DIR) + p;
    if (std::filesystem::exists(path)) return path;
  }
  return "";
}

}  // namespace stacksim::testing

#endif  // STACKSIM_TESTS_VALIDATION_FILE_H_
