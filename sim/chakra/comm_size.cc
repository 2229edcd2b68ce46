#include "sim/chakra/comm_size.h"

#include <algorithm>
#include <cmath>

namespace stacksim::chakra {

int64_t ChakraCommSize(trace::CollectiveKind kind, Bytes bytes, int group_size) {
  double b = bytes.value;
  if (kind == trace::CollectiveKind::kAllGather) b /= std::max(group_size, 1);
  return std::llround(b);
}

Bytes StacksimCommBytes(trace::CollectiveKind kind, int64_t comm_size, int group_size) {
  double b = static_cast<double>(comm_size);
  if (kind == trace::CollectiveKind::kAllGather) b *= std::max(group_size, 1);
  return Bytes{b};
}

}  // namespace stacksim::chakra
