// A diagnosis as text (people) and JSON (scripts).
//
// Text: the plan, the step against the ideal, the gap by layer with each
// layer's findings (the ops table under layer 1), then the remedies that
// gain, ranked, the combination, those tried without gain, those the network
// model cannot measure and those not possible. JSON is one object: scenario,
// plan, ideal_step_s, step_s, mfu, step_class, breakdown_stage, "layers"
// (number, name, gap_s, parts, findings), "ops", "findings" (the remedies,
// ranked) and "combined" when remedies were combined. Times in seconds.
// sim/report/html_pages.cc draws the same result as a page.
#ifndef STACKSIM_SIM_DIAGNOSE_DIAGNOSIS_REPORT_H_
#define STACKSIM_SIM_DIAGNOSE_DIAGNOSIS_REPORT_H_

#include <string>

#include <nlohmann/json.hpp>

#include "sim/diagnose/diagnose.h"

namespace stacksim::diagnose {

std::string DiagnosisText(const Diagnosis& d);
nlohmann::json DiagnosisJson(const Diagnosis& d);

}  // namespace stacksim::diagnose

#endif  // STACKSIM_SIM_DIAGNOSE_DIAGNOSIS_REPORT_H_
