// The five layers of the stack that DESIGN.md reasons in, top to bottom, and
// a value per layer (a gap, a list of findings).
//
// A layer is a StackLayer, never a bare number: StackLayerNumber gives the
// 1..5 that reports print, StackLayerName the words ("model definition").
// PerLayer<T> holds one T per layer, indexed by the layer and iterated in
// the layers' order.
#ifndef STACKSIM_SIM_DIAGNOSE_STACK_LAYER_H_
#define STACKSIM_SIM_DIAGNOSE_STACK_LAYER_H_

#include <array>
#include <cstddef>

namespace stacksim::diagnose {

enum class StackLayer {
  kModelDefinition = 1,      // compute-, memory- or launch-bound ops
  kParallelization,          // exposed communication, pipeline bubble, imbalance
  kRuntimeOrchestration,     // host waits, placement, stragglers and failures
  kCompilation,              // fusion, CUDA graphs, precision, attention kernels
  kHardware,                 // memory capacity (recomputation), offload, links
};
inline constexpr int kNumStackLayers = 5;
// Top to bottom.
inline constexpr std::array<StackLayer, kNumStackLayers> kStackLayers = {
    StackLayer::kModelDefinition, StackLayer::kParallelization, StackLayer::kRuntimeOrchestration,
    StackLayer::kCompilation, StackLayer::kHardware};

// "model definition", "parallelization", "runtime orchestration",
// "compilation", "hardware".
const char* StackLayerName(StackLayer l);
// 1..5, as reports number the layers.
inline int StackLayerNumber(StackLayer l) { return static_cast<int>(l); }

// One T per layer.
template <typename T>
class PerLayer {
 public:
  T& operator[](StackLayer l) { return values_[Index(l)]; }
  const T& operator[](StackLayer l) const { return values_[Index(l)]; }
  // In the layers' order (kStackLayers).
  auto begin() { return values_.begin(); }
  auto end() { return values_.end(); }
  auto begin() const { return values_.begin(); }
  auto end() const { return values_.end(); }

 private:
  static size_t Index(StackLayer l) { return static_cast<size_t>(StackLayerNumber(l) - 1); }
  std::array<T, kNumStackLayers> values_{};
};

}  // namespace stacksim::diagnose

#endif  // STACKSIM_SIM_DIAGNOSE_STACK_LAYER_H_
