// validation/fitted_constants.json: the constants stacksim fits on
// end-to-end measurements (schema stacksim.fitted_constants/1), one entry
// each, with the command that fitted it ("fitted_by") and its "date". The
// entries: allocator_cache_fraction (sim/memory/reserve.h),
// overlap_comm_sms (sim/cost/comm_overlap.h), serving_iteration_overhead
// (sim/serve/engine_profile.h).
#ifndef STACKSIM_SIM_CONFIG_FITTED_CONSTANTS_H_
#define STACKSIM_SIM_CONFIG_FITTED_CONSTANTS_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "sim/util/json_reader.h"

namespace stacksim::config {

// <DataRoot()>/validation/fitted_constants.json.
std::string FittedConstantsPath();

// Reads the entry `key` of the file at `path`: checks the schema and that
// every top-level key is a known entry, hands the entry to `read` (which
// reads its own fields and Ignores the rest of its informative ones), then
// reads fitted_by and date and finishes the entry. Returns "<path>
// (<fitted_by>, <date>)", or nullopt when the file has no such entry and
// `required` is false. Throws InputError naming the file and the key.
std::optional<std::string> ReadFittedConstant(const std::string& path, std::string_view key, bool required,
                                              const std::function<void(JsonObject& entry)>& read);

// Today's date in UTC (YYYY-MM-DD): what a fit is stamped with.
std::string FitDate();

// Sets the entry `key` of the fitted-constants file at `path`, keeping its
// other entries (a new file gets the schema). The file is replaced whole, so
// a failure leaves it as it was. Throws InputError naming the file when it
// cannot be written.
void WriteFittedConstant(const std::string& path, std::string_view key, const nlohmann::json& entry);

}  // namespace stacksim::config

#endif  // STACKSIM_SIM_CONFIG_FITTED_CONSTANTS_H_
