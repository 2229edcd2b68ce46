#!/usr/bin/env python3
"""PyTorch SDPA attention at small and large launch grids, per backend.

The cost model prices a fused attention kernel at the profile's efficiency,
measured on a grid that fills the GPU (2 sequences x 16 heads x 8192). A
tensor-parallel rank holds few heads (Llama 3 8B at TP 8: 4 query heads, one
K/V head), so a kernel's grid may not fill the SMs, and under the causal mask
its blocks carry unequal work. FlashAttention-2 launches one block per 128
queries of one (sequence, query head), light (causal) blocks first within a
head, and its backward one per 128 keys (Dao-AILab/flash-attention,
csrc/flash_attn/src/flash_fwd_launch_template.h and
flash_bwd_launch_template.h at 0251105a: grid (num_m_block, b, h); hdim 128 on
sm80/sm90: fwd 128 x 64 tiles with 4 warps, bwd 64 x 128 with 8 warps). This
script measures what that costs: forward and backward of causal SDPA at each
shape, for every backend PyTorch will run it with (flash, cuDNN, efficient),
with the kernel names one profiled call launched.

Writes OUT_DIR/sdpa_grid.csv: backend, batch, q_heads, kv_heads, seq,
head_dim, fwd_ms, bwd_ms (the attention kernels' device time per call, from
the profiler's kernel records), fwd_tflops, bwd_tflops, other_ms (the call's
other kernels), queued_ms (ten fwd+bwd calls back to back between two
events, per call), kernels; and env.json. (The first version, run
2026-12-04 14:53 UTC, timed each call between events and so counted the
host's dispatch for small shapes.)
Causal flops: forward 4 b h s^2 d / 2, backward 2.5 x that.

usage: measure_sdpa_grid.py OUT_DIR [--budget-s 60]
"""
import argparse
import csv
import json
import os
import statistics
import sys
import time

# (batch, query heads, K/V heads, seq): the profile's reference shape first,
# then the per-rank slices of the step check's and the validation's models.
SHAPES = [
    (2, 16, 16, 8192),   # the profile's reference (full grid)
    (1, 32, 8, 8192),    # Llama 3 8B, TP 1
    (1, 8, 2, 8192),     # Llama 3 8B, TP 4
    (1, 4, 1, 8192),     # Llama 3 8B, TP 8
    (1, 4, 1, 2048),     # Llama 3 8B, TP 8, 2K
    (1, 8, 1, 8192),     # Llama 3 70B, TP 8
    (1, 8, 1, 2048),     # Llama 3 70B, TP 8, 2K
    (1, 12, 12, 2048),   # GPT-3 175B, TP 8, 2K
    (2, 12, 12, 2048),   # the same, micro-batch 2
    (8, 16, 16, 2048),   # a full grid at 2K (the seq factors' shape)
    (1, 8, 1, 4096),     # Llama 3 70B, TP 8, 4K
    (1, 16, 16, 2048),   # 530B-class, TP 8 (128 heads), 2K
    (4, 12, 12, 2048),   # GPT-3 175B, TP 8, micro-batch 4
]
HEAD_DIM = 128
KERNEL_REPEATS = 5


def KernelPass(name):
    """fwd, bwd or other: which pass of attention a device kernel belongs to, by
    the names FlashAttention-2 (flash_fwd_* / flash_bwd_*), cuDNN (*fprop* /
    *bprop*) and the memory-efficient kernels (fmha_cutlassF / fmha_cutlassB)
    carry; everything else (GQA's K/V expansion, memsets, casts) is other."""
    n = name.lower()
    if "flash_fwd" in n or "fprop" in n or "cutlassf" in n:
        return "fwd"
    if "flash_bwd" in n or "bprop" in n or "cutlassb" in n:
        return "bwd"
    return "other"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--budget-s", type=float, default=60.0)
    a = ap.parse_args()
    try:
        import torch
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError as e:
        print("measure_sdpa_grid: PyTorch is not installed (%s); nothing measured" % e, file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("measure_sdpa_grid: no CUDA GPU visible; nothing measured", file=sys.stderr)
        return 2
    F = torch.nn.functional
    os.makedirs(a.out_dir, exist_ok=True)
    backends = [("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
                ("efficient", SDPBackend.EFFICIENT_ATTENTION)]
    start = time.time()
    rows = []
    for name, backend in backends:
        for b, hq, hkv, s in SHAPES:
            if time.time() - start > a.budget_s:
                print("measure_sdpa_grid: budget %.0f s spent; later shapes not measured" % a.budget_s,
                      file=sys.stderr)
                break
            torch.manual_seed(1)
            q = torch.randn(b, hq, s, HEAD_DIM, device="cuda", dtype=torch.bfloat16, requires_grad=True)
            k = torch.randn(b, hkv, s, HEAD_DIM, device="cuda", dtype=torch.bfloat16, requires_grad=True)
            v = torch.randn(b, hkv, s, HEAD_DIM, device="cuda", dtype=torch.bfloat16, requires_grad=True)
            do = torch.randn(b, hq, s, HEAD_DIM, device="cuda", dtype=torch.bfloat16)
            gqa = hq != hkv

            def fwd():
                with sdpa_kernel([backend]):
                    return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)

            try:
                for _ in range(3):
                    fwd().backward(do)
                torch.cuda.synchronize()
                # Kernel time from the profiler's device records (CUPTI): host
                # dispatch (cuDNN's graph lookup, GQA expansion) is not in it.
                # Events around one call would time the host too whenever the
                # kernels take less than the dispatch.
                with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                    for _ in range(KERNEL_REPEATS):
                        fwd().backward(do)
                    torch.cuda.synchronize()
                sums = {"fwd": 0.0, "bwd": 0.0, "other": 0.0}
                kernels = set()
                for e in prof.events():
                    if e.device_type != torch.autograd.DeviceType.CUDA or not e.name:
                        continue
                    kernels.add(e.name[:60])
                    sums[KernelPass(e.name)] += e.time_range.elapsed_us()
                kernels = sorted(kernels)
                # Queued: ten calls back to back between two events.
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
                for _ in range(10):
                    fwd().backward(do)
                e1.record()
                e1.synchronize()
                queued_ms = e0.elapsed_time(e1) / 10
            except RuntimeError as e:  # the backend cannot run this shape (or is not built)
                print("measure_sdpa_grid: %s b=%d h=%d kv=%d s=%d: not run: %s"
                      % (name, b, hq, hkv, s, str(e).splitlines()[0][:160]), file=sys.stderr)
                continue
            flops = 4.0 * b * hq * s * s * HEAD_DIM / 2
            fm, bm = sums["fwd"] / KERNEL_REPEATS / 1e3, sums["bwd"] / KERNEL_REPEATS / 1e3
            om = sums["other"] / KERNEL_REPEATS / 1e3
            if fm <= 0 or bm <= 0:
                print("measure_sdpa_grid: %s b=%d h=%d kv=%d s=%d: no forward or backward attention kernel "
                      "recognised in %s" % (name, b, hq, hkv, s, kernels), file=sys.stderr)
                continue
            rows.append([name, b, hq, hkv, s, HEAD_DIM, "%.4f" % fm, "%.4f" % bm,
                         "%.1f" % (flops / fm / 1e9), "%.1f" % (2.5 * flops / bm / 1e9), "%.4f" % om,
                         "%.4f" % queued_ms, " | ".join(kernels)])
            print("%-9s b=%d h=%-2d kv=%-2d s=%-5d fwd %7.3f ms %6.1f TFLOP/s  bwd %7.3f ms %6.1f TFLOP/s  "
                  "other %.3f ms  queued fwd+bwd %.3f ms"
                  % (name, b, hq, hkv, s, fm, flops / fm / 1e9, bm, 2.5 * flops / bm / 1e9, om, queued_ms),
                  flush=True)
            del q, k, v, do
            torch.cuda.empty_cache()
    with open(os.path.join(a.out_dir, "sdpa_grid.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["backend", "batch", "q_heads", "kv_heads", "seq", "head_dim", "fwd_ms", "bwd_ms", "fwd_tflops",
                    "bwd_tflops", "other_ms", "queued_ms", "kernels"])
        w.writerows(rows)
    with open(os.path.join(a.out_dir, "env.json"), "w") as f:
        json.dump({"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda,
                   "sm_count": torch.cuda.get_device_properties(0).multi_processor_count,
                   "date": time.strftime("%Y-%m-%d")}, f, indent=1)
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
