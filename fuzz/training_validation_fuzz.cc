// libFuzzer target: training_validation (fuzz/targets.cc, docs/fuzzing.md).
#include "fuzz/targets.h"

STACKSIM_FUZZ_TARGET("training_validation")
