// Test helpers shared by the cluster tests: jobs and job-mix entries written
// in hours.
#ifndef STACKSIM_SIM_CLUSTER_CLUSTER_TEST_UTIL_H_
#define STACKSIM_SIM_CLUSTER_CLUSTER_TEST_UTIL_H_

#include <string>

#include "sim/cluster/job_trace.h"
#include "sim/util/units.h"

namespace stacksim::cluster::testing {

inline constexpr double kH = 3600.0;

inline Time Hours(double h) { return Time::FromSeconds(h * kH); }

inline JobMixEntry Mix(double weight, int gpus) {
  JobMixEntry e;
  e.weight = weight;
  e.gpus = gpus;
  return e;
}

// A job with a plain duration, submitted `submit_h` hours in.
inline JobSpec Job(const std::string& id, double submit_h, int gpus, double duration_h,
                   const std::string& user = "default") {
  JobSpec j;
  j.id = id;
  j.user = user;
  j.submit = Hours(submit_h);
  j.gpus = gpus;
  j.duration = Hours(duration_h);
  j.file = "test";
  j.row = id;
  return j;
}

}  // namespace stacksim::cluster::testing

#endif  // STACKSIM_SIM_CLUSTER_CLUSTER_TEST_UTIL_H_
