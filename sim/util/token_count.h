// Token budgets as people write them on command lines and in job files:
// "15T", "2.5T", "300B", "800M", "1e12", "15000000000000".
#ifndef STACKSIM_SIM_UTIL_TOKEN_COUNT_H_
#define STACKSIM_SIM_UTIL_TOKEN_COUNT_H_

#include <cstdint>
#include <string>

namespace stacksim {

// Decimal suffixes K, M, B (or G), T; at least 1, at most 9e18. Throws
// InputError(origin, "", ...) otherwise.
int64_t ParseTokenCount(const std::string& text, const std::string& origin = "--tokens");

}  // namespace stacksim

#endif  // STACKSIM_SIM_UTIL_TOKEN_COUNT_H_
