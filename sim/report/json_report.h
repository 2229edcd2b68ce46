// The result of one simulated training step as JSON, for scripts.
//
// Every key carries its unit when it has one (`iteration_s`, `total_bytes`,
// `model_tflops_per_gpu`); fractions (`mfu`, `hfu`) are in [0, 1]; numbers are
// plain JSON numbers. The keys `iteration_s`, `tokens_per_s`, `mfu`,
// `memory_peak_bytes` (one total per pipeline stage) and `breakdown` are a
// contract other tools rely on (see DESIGN.md); the parts of `breakdown`
// other than the `compute_s` and `exposed_comm_s` subtotals add up to
// `iteration_s`.
#ifndef STACKSIM_SIM_REPORT_JSON_REPORT_H_
#define STACKSIM_SIM_REPORT_JSON_REPORT_H_

#include <nlohmann/json.hpp>

#include "sim/simulate/simulate.h"

namespace stacksim::report {

nlohmann::json JsonReport(const simulate::SimulationResult& result);

// One breakdown as {gemm_s, ..., other_s} plus the compute_s and
// exposed_comm_s subtotals (seconds).
nlohmann::json BreakdownJson(const simulate::Breakdown& b);
// The utilization figures: gpu_busy, sm_active, hbm_bandwidth, pcie (shares of the step).
nlohmann::json UtilizationJson(const simulate::Utilization& u);

}  // namespace stacksim::report

#endif  // STACKSIM_SIM_REPORT_JSON_REPORT_H_
