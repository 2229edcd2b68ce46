// `stacksim run-campaign` output: text for people, JSON for scripts. Times in
// the JSON are seconds (keys end in _s) unless a key says days.
#ifndef STACKSIM_SIM_CAMPAIGN_CAMPAIGN_REPORT_H_
#define STACKSIM_SIM_CAMPAIGN_CAMPAIGN_REPORT_H_

#include <string>

#include <nlohmann/json.hpp>

#include "sim/campaign/training_campaign.h"

namespace stacksim::campaign {

std::string CampaignText(const TrainingCampaign& c);
nlohmann::json CampaignJson(const TrainingCampaign& c);

}  // namespace stacksim::campaign

#endif  // STACKSIM_SIM_CAMPAIGN_CAMPAIGN_REPORT_H_
