// libFuzzer target: kineto_gzip (fuzz/targets.cc, docs/fuzzing.md).
#include "fuzz/targets.h"

STACKSIM_FUZZ_TARGET("kineto_gzip")
