#include "sim/util/version.h"

#include <utility>

// Set by CMakeLists.txt on this file alone, so that a new commit rebuilds one
// object.
#ifndef STACKSIM_VERSION
#define STACKSIM_VERSION "unknown (not built from a git checkout)"
#endif

namespace stacksim {

const std::string& BuildVersion() {
  static const std::string kVersion = STACKSIM_VERSION;
  return kVersion;
}

nlohmann::json WithVersion(nlohmann::json report) {
  if (report.is_object() && !report.contains("version")) report["version"] = BuildVersion();
  return report;
}

}  // namespace stacksim
