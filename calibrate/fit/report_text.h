// Number and table formatting for the fit's markdown report and source
// strings (the standard library only: this code builds on GPU machines
// without fmt).
#ifndef STACKSIM_CALIBRATE_FIT_REPORT_TEXT_H_
#define STACKSIM_CALIBRATE_FIT_REPORT_TEXT_H_

#include <string>
#include <vector>

namespace stacksim::calibrate {

std::string Fixed(double v, int decimals);     // Fixed(4152.17, 1) = "4152.2"
std::string Percent(double share);             // Percent(0.0549) = "5.5%"
// A byte count in the largest binary unit that holds it whole ("1 GiB",
// "96 MiB", "1000 B"); the profile's parser reads it back exactly.
std::string SizeText(double bytes);
// "| a | b |"; and the separator row "|---|---|" for n columns.
std::string TableRow(const std::vector<std::string>& cells);
std::string TableRule(size_t columns);
// "a, b and c".
std::string JoinList(const std::vector<std::string>& items);

}  // namespace stacksim::calibrate

#endif  // STACKSIM_CALIBRATE_FIT_REPORT_TEXT_H_
