// Quantities written back as text in the form the input files use ("2 us",
// "80 GB", "450 GB/s", "989.4 TFLOP/s"), so that ParseTime/ParseBytes/... in
// sim/util/json_reader.h read them back to the same value (10 significant
// digits). Used for the resolved configuration (--print-config) and for
// writing configs back as JSON.
#ifndef STACKSIM_SIM_CONFIG_QUANTITY_TEXT_H_
#define STACKSIM_SIM_CONFIG_QUANTITY_TEXT_H_

#include <string>

#include "sim/util/units.h"

namespace stacksim::config {

std::string TimeText(Time t);              // "4.7 us", "3 ms"
std::string BytesText(Bytes b);            // "80 GB", "160 MB" (decimal units)
std::string BandwidthText(Bandwidth b);    // "450 GB/s" (bytes per second)
std::string FlopRateText(FlopRate r);      // "989.4 TFLOP/s"

}  // namespace stacksim::config

#endif  // STACKSIM_SIM_CONFIG_QUANTITY_TEXT_H_
