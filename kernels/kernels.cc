#include "kernels/kernels.h"

namespace stacksim::kernels {

std::vector<KernelFamily> AllKernelFamilies() {
  return {NormFamily(), SoftmaxFamily(), ActivationFamily(), RopeFamily(), AttentionFamily()};
}

}  // namespace stacksim::kernels
