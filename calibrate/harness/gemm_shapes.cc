#include "calibrate/harness/gemm_shapes.h"

namespace stacksim::calibrate {

std::vector<GemmShape> GemmShapes() {
  std::vector<GemmShape> shapes;
  for (int64_t s : {256, 512, 1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384}) shapes.push_back({"square", s, s, s});
  struct Model {
    const char* name;
    int64_t hidden, qkv_out, ffn;  // ffn: per gated half
    bool gated;
  };
  const Model models[] = {
      {"gpt3-175b", 12288, 3 * 12288, 4 * 12288, false},
      {"llama3-70b", 8192, 8192 + 2 * 1024, 28672, true},
      {"llama3-8b", 4096, 4096 + 2 * 1024, 14336, true},
      {"gpt-1.7b", 2304, 3 * 2304, 4 * 2304, false},
  };
  for (const Model& md : models) {
    const std::string name = md.name;
    const int64_t h = md.hidden;
    for (int64_t tp : {1, 2, 4, 8}) {
      for (int64_t tokens : {2048, 8192}) {
        const int64_t fc1 = (md.gated ? 2 : 1) * md.ffn / tp;
        const GemmShape layer[] = {{"qkv", tokens, md.qkv_out / tp, h},
                                   {"proj", tokens, h, h / tp},
                                   {"fc1", tokens, fc1, h},
                                   {"fc2", tokens, h, md.ffn / tp}};
        const std::string prefix = name + "/tp" + std::to_string(tp) + "/";
        for (const GemmShape& op : layer) {
          shapes.push_back({prefix + op.label + "/fwd", op.m, op.n, op.k});
          // backward: dgrad (tokens x K) = dY (tokens x N) W^T, wgrad (N x K) = dY^T X
          if (tokens == 8192) {
            shapes.push_back({prefix + op.label + "/dgrad", op.m, op.k, op.n});
            shapes.push_back({prefix + op.label + "/wgrad", op.n, op.k, op.m});
          }
        }
      }
    }
    shapes.push_back({name + "/logits", 8192, name.rfind("gpt", 0) == 0 ? 50304 : 128256, h});
  }
  // Odd sizes: wave and tile quantization show up between the even ones.
  for (int64_t m : {1000, 1536, 2500, 4100, 5000, 7000, 9000}) shapes.push_back({"odd", m, 4096, 4096});
  // Serving's forward GEMMs: decode batches and short prefills, M of 1 to
  // 512 rows, where the weights' bytes and the FLOPs meet (the ridge). Bf16
  // only; reported against the model, not fitted (ServingShape).
  for (const Model& md : models) {
    if (!md.gated) continue;  // the Llama 3 models that serving validates
    for (int64_t tp : {1, 4, 8}) {
      for (int64_t m : {1, 16, 64, 128, 256, 512}) {
        const int64_t h = md.hidden;
        const GemmShape layer[] = {{"qkv", m, md.qkv_out / tp, h},
                                   {"proj", m, h, h / tp},
                                   {"fc1", m, 2 * md.ffn / tp, h},
                                   {"fc2", m, h, md.ffn / tp}};
        for (const GemmShape& op : layer) {
          shapes.push_back({std::string(kServingPrefix) + md.name + "/tp" + std::to_string(tp) + "/m" +
                                std::to_string(m) + "/" + op.label,
                            op.m, op.n, op.k});
        }
      }
    }
  }
  return shapes;
}

}  // namespace stacksim::calibrate
