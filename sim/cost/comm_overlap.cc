#include "sim/cost/comm_overlap.h"

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <optional>

#include "sim/config/fitted_constants.h"

namespace stacksim::cost {

FittedCommOverlap LoadFittedCommOverlap(const std::string& path) {
  FittedCommOverlap out;
  const std::optional<std::string> source =
      config::ReadFittedConstant(path, "overlap_comm_sms", false, [&](JsonObject& c) {
        const JsonNode value = c.Required("value");
        const int64_t sms = value.Int();
        if (sms < 0) value.Fail("must be 0 or more SMs");
        out.sms = static_cast<int>(sms);
        if (auto loso = c.Optional("leave_one_source_out")) {
          JsonObject l(*loso);
          out.loso_mape_pct = l.Required("mape_pct").NonNegativeNumber();
          l.Ignore({"groups"});
          l.Finish();
        }
        c.Ignore({"fitted_on", "what", "fitted_mape_pct", "grid"});
      });
  if (source) out.source = *source;
  return out;
}

const FittedCommOverlap& FittedCommOverlapSms() {
  static std::once_flag once;
  static FittedCommOverlap fitted;
  std::call_once(once, [] {
    const std::string path = config::FittedConstantsPath();
    if (std::filesystem::exists(path)) fitted = LoadFittedCommOverlap(path);
  });
  return fitted;
}

int OverlapCommSms(const config::PlanConfig& plan, const config::ProfileConfig& profile) {
  if (plan.comm_sms > 0) return 0;  // the framework's communication holds its SMs all step already
  const int wanted = plan.overlap_comm_sms ? *plan.overlap_comm_sms : FittedCommOverlapSms().sms;
  return std::clamp(wanted, 0, static_cast<int>(profile.sm_count.value) - 1);
}

}  // namespace stacksim::cost
