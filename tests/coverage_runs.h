// Test helper: the synthetic runs of tests/data/validation/coverage_runs.json
// (GPUs and plans the development files do not cover), one by id.
#ifndef STACKSIM_TESTS_COVERAGE_RUNS_H_
#define STACKSIM_TESTS_COVERAGE_RUNS_H_

#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace stacksim::testing {

inline const std::string kCoverageRuns =
    std::string(STACKSIM_SOURCE_DIR) + "/tests/data/validation/coverage_runs.json";

inline nlohmann::json CoverageRun(const std::string& id) {
  nlohmann::json doc = nlohmann::json::parse(std::ifstream(kCoverageRuns));
  for (const auto& r : doc.at("runs")) {
    if (r.at("id") == id) return r;
  }
  ADD_FAILURE() << "no run " << id;
  return {};
}

}  // namespace stacksim::testing

#endif  // STACKSIM_TESTS_COVERAGE_RUNS_H_
