// SMs that a collective's kernels take from the compute running beside it.
//
// NCCL runs a collective as kernels of one CTA per channel, each holding an
// SM for the collective's whole duration; GEMMs and attention that run at
// the same time get the SMs that are left (NCCL's CTA policies say so:
// "NCCL_CTA_POLICY_EFFICIENCY ... suitable for applications which require
// better compute and communication overlap", NCCL user guide, API flags).
// How many SMs that costs a real step depends on NCCL's channel choice per
// collective and size, and on how GEMM waves and the collective's CTAs
// interleave, so the effective count is one constant fitted on end-to-end
// measurements: validation/fitted_constants.json "overlap_comm_sms", fitted
// by `stacksim validate <development files> --fit-overlap-sms
// validation/fitted_constants.json`, with its leave-one-source-out error.
#ifndef STACKSIM_SIM_COST_COMM_OVERLAP_H_
#define STACKSIM_SIM_COST_COMM_OVERLAP_H_

#include <string>
#include <vector>

#include "sim/config/plan.h"
#include "sim/config/profile.h"

namespace stacksim::cost {

struct FittedCommOverlap {
  int sms = 0;          // 0 when no file has the constant
  std::string source;   // the file, the command that fitted it and the date ("" when none)
  double loso_mape_pct = -1;  // the fit's leave-one-source-out MAPE (-1: not stated)
};

// Reads {"overlap_comm_sms": {"value": n, "fitted_by", "date", ...}} from a
// stacksim.fitted_constants/1 file; a file without the key gives sms 0.
// Throws InputError naming the file and key.
FittedCommOverlap LoadFittedCommOverlap(const std::string& path);
// validation/fitted_constants.json under the data root (read once).
const FittedCommOverlap& FittedCommOverlapSms();

// The SMs in-flight collectives take from compute under `plan` on `profile`:
// none when the plan already reserves SMs for communication the whole step
// (comm_sms), else the plan's overlap_comm_sms, else the fitted constant;
// never so many that fewer than one SM is left.
int OverlapCommSms(const config::PlanConfig& plan, const config::ProfileConfig& profile);

}  // namespace stacksim::cost

#endif  // STACKSIM_SIM_COST_COMM_OVERLAP_H_
