// A serving scenario document for tests: Llama 3 70B, TP8 on DGX H100,
// continuous batching, a small Poisson workload. Tests edit the JSON.
#ifndef STACKSIM_SIM_SERVE_SERVE_TEST_UTIL_H_
#define STACKSIM_SIM_SERVE_SERVE_TEST_UTIL_H_

#include <nlohmann/json.hpp>

namespace stacksim::serve {

inline nlohmann::json TestServeDoc() {
  return nlohmann::json::parse(R"({
    "name": "test",
    "model": "llama3-70b",
    "topology": "dgx-h100",
    "replica": {"tp": 8},
    "scheduler": {"kind": "continuous", "max_batched_tokens": 8192, "max_sequences": 256},
    "workload": {
      "arrival": "poisson", "rate_per_s": 5, "requests": 200, "seed": 7,
      "prompt_tokens": {"kind": "uniform", "min": 100, "max": 2000},
      "output_tokens": {"kind": "uniform", "min": 10, "max": 400}
    }
  })");
}

}  // namespace stacksim::serve

#endif  // STACKSIM_SIM_SERVE_SERVE_TEST_UTIL_H_
