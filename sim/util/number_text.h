// Number formatting shared by the text reports of every command.
#ifndef STACKSIM_SIM_UTIL_NUMBER_TEXT_H_
#define STACKSIM_SIM_UTIL_NUMBER_TEXT_H_

#include <string>

namespace stacksim {

// 1234567.8 -> "1,234,568".
std::string Grouped(double v);

}  // namespace stacksim

#endif  // STACKSIM_SIM_UTIL_NUMBER_TEXT_H_
