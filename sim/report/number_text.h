// Number formatting shared by the text reports (simulate, search, diagnose).
#ifndef STACKSIM_SIM_REPORT_NUMBER_TEXT_H_
#define STACKSIM_SIM_REPORT_NUMBER_TEXT_H_

#include <string>

namespace stacksim::report {

// 1234567.8 -> "1,234,568".
std::string Grouped(double v);

}  // namespace stacksim::report

#endif  // STACKSIM_SIM_REPORT_NUMBER_TEXT_H_
