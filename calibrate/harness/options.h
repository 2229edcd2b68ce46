// Command line of stacksim-calibrate, parsed strictly: an unknown flag, a
// missing value or a malformed number is a UsageError (exit status 2).
#ifndef STACKSIM_CALIBRATE_HARNESS_OPTIONS_H_
#define STACKSIM_CALIBRATE_HARNESS_OPTIONS_H_

#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace stacksim::calibrate {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Options {
  bool quick = false;
  std::string out_path;   // --out: the fitted profile; empty: measure only, no fit
  std::string raw_dir;    // --raw: raw measurements; default "<out>.raw"
  std::string base_path;  // --base: profile whose unmeasured values the fit keeps
  std::string data_dir;   // --data-dir: holds profiles/, to pick the base by GPU name
  uint64_t seed = 1;      // --seed: random inputs of every check and timing
  std::set<std::string> skip;  // --skip: step names (StepNames())
  int gpus = 0;                // --gpus: GPUs the collectives should use; 0: every visible one
  bool help = false;
};

// The steps, in the order they run.
const std::vector<std::string>& StepNames();

// REQUIRES: args excludes the program name.
Options ParseOptions(const std::vector<std::string>& args);

std::string UsageText();

}  // namespace stacksim::calibrate

#endif  // STACKSIM_CALIBRATE_HARNESS_OPTIONS_H_
