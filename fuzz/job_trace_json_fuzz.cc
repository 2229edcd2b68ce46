// libFuzzer target: job_trace_json (fuzz/targets.cc, docs/fuzzing.md).
#include "fuzz/targets.h"

STACKSIM_FUZZ_TARGET("job_trace_json")
