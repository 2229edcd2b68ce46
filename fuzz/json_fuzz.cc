// libFuzzer target: json (fuzz/targets.cc, docs/fuzzing.md).
#include "fuzz/targets.h"

STACKSIM_FUZZ_TARGET("json")
