#include "sim/diagnose/stack_layer.h"

namespace stacksim::diagnose {

const char* StackLayerName(StackLayer l) {
  switch (l) {
    case StackLayer::kModelDefinition: return "model definition";
    case StackLayer::kParallelization: return "parallelization";
    case StackLayer::kRuntimeOrchestration: return "runtime orchestration";
    case StackLayer::kCompilation: return "compilation";
    case StackLayer::kHardware: return "hardware";
  }
  return "?";
}

}  // namespace stacksim::diagnose
