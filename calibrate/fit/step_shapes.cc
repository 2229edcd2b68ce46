#include "calibrate/fit/step_shapes.h"

namespace stacksim::calibrate {
namespace {

// Widths from models/llama3-8b.json and models/llama3-70b.json (Hugging Face
// config.json of meta-llama/Meta-Llama-3-8B and -70B) and
// models/mixtral-8x7b.json (mistralai/Mixtral-8x7B-v0.1).
StepShape Llama3_8b(int tp, int64_t seq) {
  return StepShape{"llama3-8b", tp, seq, 1, 4096, 14336, 32, 8, 128, 0, 0, 0};
}
StepShape Llama3_70b(int tp, int64_t seq) {
  return StepShape{"llama3-70b", tp, seq, 1, 8192, 28672, 64, 8, 128, 0, 0, 0};
}
StepShape Mixtral8x7b(int64_t seq) {
  return StepShape{"mixtral-8x7b", 1, seq, 1, 4096, 0, 32, 8, 128, 8, 2, 14336};
}

std::vector<StepShape> MakeShapes() {
  std::vector<StepShape> shapes;
  for (auto make : {Llama3_8b, Llama3_70b}) {
    for (int64_t seq : {2048, 8192}) {
      for (int tp : {1, 2, 4, 8}) shapes.push_back(make(tp, seq));
    }
  }
  shapes.push_back(Mixtral8x7b(4096));
  return shapes;
}

}  // namespace

std::string StepShape::Name() const {
  return model + " tp=" + std::to_string(tp) + " seq=" + std::to_string(seq) + " mb=" + std::to_string(micro_batch);
}

int64_t StepShape::TokensPerExpert() const {
  if (experts <= 0) return 0;
  return (micro_batch * seq * top_k + experts - 1) / experts;
}

const std::vector<StepShape>& StepShapes() {
  static const std::vector<StepShape> kShapes = MakeShapes();
  return kShapes;
}

}  // namespace stacksim::calibrate
