#include "calibrate/fit/report_text.h"

#include <cmath>
#include <cstdio>

namespace stacksim::calibrate {

std::string Fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string Percent(double share) { return Fixed(100 * share, 1) + "%"; }

std::string SizeText(double bytes) {
  static const char* const kUnits[] = {"TiB", "GiB", "MiB", "KiB"};
  static const double kScales[] = {1024.0 * 1024 * 1024 * 1024, 1024.0 * 1024 * 1024, 1024.0 * 1024, 1024.0};
  for (int i = 0; i < 4; ++i) {
    double q = bytes / kScales[i];
    if (q >= 1 && q == std::floor(q)) return Fixed(q, 0) + " " + kUnits[i];
  }
  if (bytes == std::floor(bytes)) return Fixed(bytes, 0) + " B";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g B", bytes);
  return buf;
}

std::string TableRow(const std::vector<std::string>& cells) {
  std::string out = "|";
  for (const std::string& c : cells) out += " " + c + " |";
  return out;
}

std::string TableRule(size_t columns) {
  std::string out = "|";
  for (size_t i = 0; i < columns; ++i) out += "---|";
  return out;
}

std::string JoinList(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? " and " : ", ";
    out += items[i];
  }
  return out;
}

}  // namespace stacksim::calibrate
