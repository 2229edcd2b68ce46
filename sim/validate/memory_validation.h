// Validation of the memory model against measured per-GPU peaks: schema
// stacksim.validation.memory/1 (validation/memory_runs.json).
//
// Each entry becomes a scenario (its Hugging-Face-style model, the shipped
// profile of its GPU, its plan, and the framework profile its free-text
// framework selects). Free-text fields (precision, recompute, sharding, the
// measurement's definition and rank) are read by their leading keywords;
// text that is not understood is an InputError naming the file and field.
// The prediction honours what was measured: the caching allocator's
// allocated peak (live tensors) or its reserved peak (plus its cache,
// memory::ReservedPeak), on the rank measured (first stage, last stage, or
// the maximum over stages). Units: GiB (2^30 bytes) in results.
#ifndef STACKSIM_SIM_VALIDATE_MEMORY_VALIDATION_H_
#define STACKSIM_SIM_VALIDATE_MEMORY_VALIDATION_H_

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/config/scenario.h"
#include "sim/memory/memory_model.h"
#include "sim/memory/reserve.h"

namespace stacksim::validate {

enum class MemoryMeasure { kAllocated, kReserved };
enum class MeasuredRank { kFirstStage, kLastStage, kMaxOverStages };
const char* MemoryMeasureName(MemoryMeasure m);  // "allocated", "reserved"
const char* MeasuredRankName(MeasuredRank r);    // "first stage", "last stage", "max over stages"

// One entry as stacksim reads it.
struct MemoryEntry {
  std::string id, group;
  config::ScenarioConfig scenario;
  MemoryMeasure measure = MemoryMeasure::kAllocated;
  MeasuredRank rank = MeasuredRank::kFirstStage;
  double measured_gib = 0;
  std::optional<double> measured_state_gib;  // weights + gradients + optimizer after the step
  std::vector<std::string> choices;          // what stacksim read or filled in, in words
};

struct MemoryOutcome {
  std::string id, group;
  MemoryMeasure measure = MemoryMeasure::kAllocated;
  MeasuredRank rank = MeasuredRank::kFirstStage;
  std::string plan;     // one line
  int stage = 0;        // the stage compared
  double measured_gib = 0;
  double predicted_gib = 0;
  double error_pct = 0;
  std::optional<double> measured_state_gib, predicted_state_gib;
  double state_error_pct = 0;
  memory::StageFootprint footprint;  // of the stage compared
  double allocator_cache_gib = 0;    // reserved only
  std::vector<std::string> choices;
  std::string error;  // why it was not modelled ("" when predicted)
};

struct MemoryValidationReport {
  std::string file;
  std::vector<MemoryOutcome> entries;
  int predicted = 0;
  double mape_pct = 0;
  int state_predicted = 0;
  double state_mape_pct = 0;
  memory::AllocatorReserve reserve;  // the cache fraction used
  // Leave one source out: per group, the cache fraction fitted without it
  // and the MAPE of its entries predicted with that fraction.
  struct Loso {
    std::string group;
    double cache_fraction = 0;
    int entries = 0;
    double mape_pct = 0;
  };
  std::vector<Loso> loso;
  double loso_mape_pct = 0;  // over every predicted entry, each from its own held-out fit
};

// Reads the file into entries; throws InputError (file, key path) for
// malformed entries and text that is not understood.
std::vector<MemoryEntry> ReadMemoryRuns(const std::string& path);
// One entry as a scenario. `entry` is the entry's JSON, `path` its key path.
MemoryEntry ReadMemoryEntry(const nlohmann::json& entry, const std::string& file, const std::string& path);

// Predicts one entry with the given allocator cache fraction. Entries that
// cannot be modelled come back with `error` set.
MemoryOutcome PredictMemory(const MemoryEntry& entry, const memory::AllocatorReserve& reserve);

// Every entry of `path`, with `reserve` (by default the shipped fitted
// constant), and the leave-one-source-out check of the fitted fraction.
MemoryValidationReport RunMemoryValidation(const std::string& path);
MemoryValidationReport RunMemoryValidation(const std::string& path, const memory::AllocatorReserve& reserve);

// The cache fraction that minimizes the MAPE of the reserved-peak entries
// (0 when there are none). Deterministic grid search, 0 to 0.5 in 0.0005.
double FitCacheFraction(const std::vector<MemoryEntry>& entries);

// Writes validation/fitted_constants.json-style output: the fraction, the
// command, today's date (UTC), the file it was fitted on and the LOSO errors.
nlohmann::json FittedConstantsJson(const MemoryValidationReport& report, double fraction, const std::string& command);

nlohmann::json MemoryValidationJson(const MemoryValidationReport& report);
std::string MemoryValidationText(const MemoryValidationReport& report);

}  // namespace stacksim::validate

#endif  // STACKSIM_SIM_VALIDATE_MEMORY_VALIDATION_H_
