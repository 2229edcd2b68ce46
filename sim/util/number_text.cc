#include "sim/util/number_text.h"

#include <cmath>

#include <fmt/format.h>

namespace stacksim {

std::string Grouped(double v) {
  if (!std::isfinite(v)) return fmt::format("{}", v);
  std::string digits = fmt::format("{:.0f}", std::fabs(v));
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

}  // namespace stacksim
