// What one calibration run did, section by section: the harness's
// bookkeeping, written to <raw>/outcome.json after every step so that a run
// cut short still says how far it got, and read by the fit, which turns every
// section that did not measure what it set out to into a "missing" entry of a
// partial profile (docs/calibrate.md, docs/formats.md). Plain C++: the
// harness writes it, the CPU tests check it.
//
// A raw folder from before outcome.json existed has none; the fit then judges
// by the CSV files alone.
#ifndef STACKSIM_CALIBRATE_FIT_RUN_OUTCOME_H_
#define STACKSIM_CALIBRATE_FIT_RUN_OUTCOME_H_

#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace stacksim::calibrate {

enum class SectionStatus {
  kOk,             // measured (unstable or failed single measurements are counted apart)
  kFailed,         // threw: a CUDA error, out of memory, a check that threw; reason says which
  kNotMeasurable,  // could not start: one GPU for collectives, NCCL missing or failing to initialize
  kSkipped,        // --skip, or not run because CUDA was unusable
};
const char* SectionStatusName(SectionStatus s);

struct SectionOutcome {
  std::string name;                   // a step name: "gemm", "nccl", ...
  SectionStatus status = SectionStatus::kOk;
  std::string reason;                 // why not ok ("ncclCommInitAll: unhandled system error"); "" when ok
  int measured = 0;                   // rows written
  int unstable = 0;                   // of those, rows marked unstable (spread too large after the retries)
  int failed_items = 0;               // single measurements that failed and were left out
  bool stopped_early = false;         // cut at its time budget
};

// GPUs, preflight and sections of one run. Sections appear in run order.
class RunOutcome {
 public:
  std::optional<int> gpus_requested;  // --gpus N; nullopt: all visible
  int gpus_visible = 0;
  int gpus_used = 0;                  // GPUs the collectives ran on (1 when they could not run)
  std::vector<std::string> faults;    // injected faults (STACKSIM_CALIBRATE_FAULT), names
  bool busy = false;                  // the preflight found the GPU in use by someone else
  std::string busy_reason;            // JudgeBusy's text ("idle" when not busy)

  // The section's record, created (status ok) if new.
  SectionOutcome& Section(const std::string& name);
  const SectionOutcome* Find(const std::string& name) const;
  const std::vector<SectionOutcome>& sections() const { return sections_; }

  // One line per section that is not a clean ok, for the run's summary.
  std::vector<std::string> Problems() const;

  nlohmann::json ToJson() const;
  // Strict: unknown keys, a bad status, negative counts are InputErrors naming `file`.
  static RunOutcome FromJson(const nlohmann::json& doc, const std::string& file);
  // Writes atomically (temporary file, then rename). Throws std::runtime_error.
  void Write(const std::string& path) const;
  // nullopt when the file does not exist; InputError when it does not parse.
  static std::optional<RunOutcome> Read(const std::string& path);

 private:
  std::vector<SectionOutcome> sections_;
};

// The faults STACKSIM_CALIBRATE_FAULT may name (comma-separated):
//   busy          the preflight probe and the first two timings of every timed step
//                 read as noisy on every try (the retry and "unstable" paths)
//   oom           the copy step allocates more than the GPU has (the whole step fails
//                 with CUDA's out-of-memory error) and so does the first GEMM shape
//   cuda-error    the launch step launches a kernel with an invalid configuration
//   nccl-init     ncclCommInitAll is reported as failed (ncclSystemError's own string)
//   nccl-missing  the NCCL library is treated as absent at run time
// Throws std::invalid_argument naming an unknown fault and the known ones.
std::set<std::string> ParseFaults(const std::string& text);
const std::vector<std::string>& KnownFaults();

}  // namespace stacksim::calibrate

#endif  // STACKSIM_CALIBRATE_FIT_RUN_OUTCOME_H_
