#!/usr/bin/env python3
"""GEMM shapes the dense sweep leaves out, for the MoE and serving models.

- grouped: E experts' GEMMs of the same shape run as one batched product
  (torch.bmm), the way grouped expert kernels batch them; tokens per expert
  from 32 to 8192 for DeepSeek-V3 / Mixtral / Qwen3-MoE expert widths.
- skinny: M = 1..512 rows (decode batch sizes) against large weights, where
  the product is bound by reading the weight matrix.

CUDA events, warm-up, median of repeats, random (never zero) bf16 inputs
rotated over more than the L2 size. Writes grouped.csv and skinny.csv.

usage: measure_small_gemms.py OUT_DIR
"""
import csv
import os
import statistics
import sys

import torch


def time_ms(fn, warmup=3, repeats=9):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    fn()
    e.record()
    e.synchronize()
    probe = max(s.elapsed_time(e), 1e-4)
    inner = max(1, min(200, int(0.5 / probe) + 1))
    out = []
    for _ in range(repeats):
        torch.cuda._sleep(int(min(2e8, inner * 40e-6 * 2e9)))
        s.record()
        for _ in range(inner):
            fn()
        e.record()
        e.synchronize()
        out.append(s.elapsed_time(e) / inner)
    return statistics.median(out)


def rand(shape):
    return (torch.randn(shape, device="cuda") * 0.5).to(torch.bfloat16)


def rotating(make, nbytes):
    n = max(1, min(8, (256 << 20) // max(nbytes, 1) + 1))
    return [make() for _ in range(n)]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "grouped.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["model", "experts", "tokens_per_expert", "n", "k", "median_us", "tflops"])
        # (model, experts per GPU, hidden, expert ffn): fc1 (k=hidden, n=2*ffn) and fc2 (k=ffn, n=hidden)
        for model, e, h, ffn in [("deepseek-v3/ep32", 8, 7168, 2048), ("mixtral-8x7b/ep8", 1, 4096, 14336),
                                 ("qwen3-30b-a3b/ep8", 16, 2048, 768), ("gpt-oss-120b/ep8", 16, 2880, 2880)]:
            for tpe in [32, 128, 512, 2048, 8192]:
                for n, k in [(2 * ffn, h), (h, ffn)]:
                    nbytes = 2 * e * (tpe * k + k * n)
                    A = rotating(lambda: rand((e, tpe, k)), nbytes)
                    B = [rand((e, k, n)) for _ in A]
                    i = [0]

                    def fn():
                        j = i[0] % len(A)
                        torch.bmm(A[j], B[j])
                        i[0] += 1
                    ms = time_ms(fn)
                    w.writerow([model, e, tpe, n, k, round(ms * 1e3, 3), round(2 * e * tpe * n * k / ms / 1e9, 1)])
                    f.flush()
                    A = B = None
    with open(os.path.join(out, "skinny.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["m", "n", "k", "median_us", "tflops", "weight_gbps"])
        for n, k in [(8192, 8192), (28672, 8192), (8192, 28672), (4096, 4096), (14336, 4096), (16384, 53248)]:
            for m in [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]:
                nbytes = 2 * (m * k + k * n)
                A = rotating(lambda: rand((m, k)), nbytes)
                B = [rand((k, n)) for _ in A]
                i = [0]

                def fn():
                    j = i[0] % len(A)
                    torch.matmul(A[j], B[j])
                    i[0] += 1
                ms = time_ms(fn)
                w.writerow([m, n, k, round(ms * 1e3, 3), round(2 * m * n * k / ms / 1e9, 2),
                            round(2 * k * n / ms / 1e6, 1)])
                f.flush()
                A = B = None
    print("done")


if __name__ == "__main__":
    main()
