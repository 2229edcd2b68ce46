#include "sim/util/token_count.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "sim/util/error.h"

namespace stacksim {

int64_t ParseTokenCount(const std::string& text, const std::string& origin) {
  auto fail = [&] {
    throw InputError(origin, "", "expected a positive token count such as 15T, 2.5T, 300B, 800M or 1e12, got '" +
                                     text + "'");
  };
  if (text.empty()) fail();
  double scale = 1;
  std::string number = text;
  switch (text.back()) {
    case 'K': case 'k': scale = 1e3; break;
    case 'M': case 'm': scale = 1e6; break;
    case 'B': case 'b': case 'G': case 'g': scale = 1e9; break;
    case 'T': case 't': scale = 1e12; break;
    default: break;
  }
  if (scale != 1) number.pop_back();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(number.c_str(), &end) * scale;
  if (number.empty() || end != number.c_str() + number.size() || errno != 0 || !std::isfinite(v) || v < 1 ||
      v > 9e18) {
    fail();
  }
  return static_cast<int64_t>(std::llround(v));
}

}  // namespace stacksim
