#include "sim/cost/comm_overlap.h"

#include <algorithm>
#include <filesystem>
#include <mutex>

#include "sim/config/scenario.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace stacksim::cost {

FittedCommOverlap LoadFittedCommOverlap(const std::string& path) {
  nlohmann::json doc = ReadJsonFile(path);
  JsonNode root(doc, path, "");
  JsonObject top(root);
  const std::string schema = top.Required("schema").String();
  if (schema != "stacksim.fitted_constants/1") {
    throw InputError(path, "schema", "expected 'stacksim.fitted_constants/1', got '" + schema + "'");
  }
  FittedCommOverlap out;
  auto entry = top.Optional("overlap_comm_sms");
  top.Ignore({"about", "allocator_cache_fraction", "serving_iteration_overhead"});
  top.Finish();
  if (!entry) return out;
  JsonObject c(*entry);
  const int64_t n = c.Required("value").Int();
  if (n < 0) c.Required("value").Fail("must be 0 or more SMs");
  out.sms = static_cast<int>(n);
  const std::string command = c.Required("fitted_by").String();
  const std::string date = c.Required("date").String();
  if (auto loso = c.Optional("leave_one_source_out")) {
    JsonObject l(*loso);
    out.loso_mape_pct = l.Required("mape_pct").NonNegativeNumber();
    l.Ignore({"groups"});
    l.Finish();
  }
  c.Ignore({"fitted_on", "what", "fitted_mape_pct", "grid"});
  c.Finish();
  out.source = path + " (" + command + ", " + date + ")";
  return out;
}

const FittedCommOverlap& FittedCommOverlapSms() {
  static std::once_flag once;
  static FittedCommOverlap fitted;
  std::call_once(once, [] {
    const auto path = std::filesystem::path(config::DataRoot()) / "validation" / "fitted_constants.json";
    if (std::filesystem::exists(path)) fitted = LoadFittedCommOverlap(path.string());
  });
  return fitted;
}

int OverlapCommSms(const config::PlanConfig& plan, const config::ProfileConfig& profile) {
  if (plan.comm_sms > 0) return 0;  // the framework's communication holds its SMs all step already
  const int wanted = plan.overlap_comm_sms ? *plan.overlap_comm_sms : FittedCommOverlapSms().sms;
  return std::clamp(wanted, 0, static_cast<int>(profile.sm_count.value) - 1);
}

}  // namespace stacksim::cost
