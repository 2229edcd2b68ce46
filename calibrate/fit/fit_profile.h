// From calibrate's raw measurements to a hardware profile (docs/calibrate.md,
// docs/formats.md "profiles/NAME.json").
//
// FitProfile starts from a base profile (normally the datasheet profile of the
// same GPU), replaces every value the raw folder measured, each with a source
// naming the GPU, driver, CUDA version, date, file and what was derived, and
// keeps every other value with its original source. The result has kind
// "measured" and a provenance listing what was measured and what was kept.
//
// ProjectProfile carries a measured profile to another GPU: the measured
// efficiencies (compute and memory) applied to the target's datasheet peaks
// and bandwidths.
//
// Both return profile JSON that ParseProfile (sim/config/profile.h) accepts.
#ifndef STACKSIM_CALIBRATE_FIT_FIT_PROFILE_H_
#define STACKSIM_CALIBRATE_FIT_FIT_PROFILE_H_

#include <string>

#include <nlohmann/json.hpp>

namespace stacksim::calibrate {

struct FitOptions {
  std::string raw_dir;            // calibrate's --raw folder: env.json and the CSV files
  std::string base_profile_path;  // profiles/NAME.json whose unmeasured values are kept
  bool quick = false;             // the raw data came from a --quick run (also read from env.json)
};

struct FitResult {
  nlohmann::json profile;  // the measured profile, in the file format
  std::string report;      // markdown: fit residuals, kernel bandwidths, what was not measured
};

// Reads env.json (required) and every raw CSV present; an absent CSV leaves
// its fields at the base values. Throws InputError naming the file (and the
// column and line) on bad data, and on a base profile ParseProfile rejects.
FitResult FitProfile(const FitOptions& options);

// A measured profile projected to another GPU: GEMM max_efficiency per
// precision, tile, k_overhead, the attention efficiencies, copy_efficiency and
// kernel_launch come from `measured` (sources "projected from
// <measured_name> (<its source>)"); sm_count, capacity, peaks, bandwidths and
// collectives stay the target's, with their sources. kind "projected".
// REQUIRES: `measured` has kind "measured". Throws InputError (file names
// `measured_name` / `target_name`) if either does not parse as a profile.
nlohmann::json ProjectProfile(const nlohmann::json& measured, const nlohmann::json& target_datasheet,
                              const std::string& measured_name, const std::string& target_name);

}  // namespace stacksim::calibrate

#endif  // STACKSIM_CALIBRATE_FIT_FIT_PROFILE_H_
