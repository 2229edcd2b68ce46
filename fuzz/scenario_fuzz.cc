// libFuzzer target: scenario (fuzz/targets.cc, docs/fuzzing.md).
#include "fuzz/targets.h"

STACKSIM_FUZZ_TARGET("scenario")
