// Which build of stacksim is running: `stacksim --version` prints it and
// every JSON report carries it at its top level as "version", so that a
// saved result says what produced it.
//
// The text is `git describe --always --tags --dirty` of the source tree when
// CMake configured the build (re-run cmake to refresh it after a commit), or
// "unknown (not built from a git checkout)".
#ifndef STACKSIM_SIM_UTIL_VERSION_H_
#define STACKSIM_SIM_UTIL_VERSION_H_

#include <string>

#include <nlohmann/json.hpp>

namespace stacksim {

const std::string& BuildVersion();

// A JSON report with "version": BuildVersion() added at its top level when
// it is an object without one; anything else is returned as it is. Every
// command's JSON goes through it (cli::PrintJson, replay's report).
nlohmann::json WithVersion(nlohmann::json report);

}  // namespace stacksim

#endif  // STACKSIM_SIM_UTIL_VERSION_H_
