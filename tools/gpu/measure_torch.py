#!/usr/bin/env python3
"""Bootstrap measurements of one GPU through PyTorch, for stacksim profiles.

This is the stop-gap until the C++ calibration harness (calibrate/) exists:
it measures what the simulator's cost model needs (GEMM throughput over the
shapes transformers produce, fused attention, memory-bound ops, copy and
host-transfer bandwidth, kernel launch overhead) with CUDA events, warm-up,
repeats and medians, on random (never zero) data, rotating input buffers so
that small problems do not run out of L2.

Writes CSV files (units in the column names) and env.json into the output
folder. Every section is guarded: one that fails is logged and skipped so the
others still produce data. A global deadline keeps the run inside a lease.

usage: measure_torch.py OUT_DIR [--budget-s 240]
"""
import argparse
import csv
import datetime
import json
import os
import statistics
import subprocess
import sys
import time
import traceback

import torch
import torch.nn.functional as F

L2_ROTATE_BYTES = 256 << 20  # rotate inputs over at least this many bytes (H200 L2 is 60 MB)


class Deadline:
    def __init__(self, seconds):
        self.end = time.monotonic() + seconds

    def left(self):
        return self.end - time.monotonic()

    def expired(self):
        return self.left() <= 0


def log(*a):
    print(*a, flush=True)


def time_cuda(fn, warmup=3, repeats=15, min_total_ms=20.0):
    """Median milliseconds of fn() over repeats, timed with CUDA events.

    Each timed sample runs fn() `inner` times back to back so that one sample
    lasts well past event resolution; inner is chosen from a probe run.
    """
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    fn()
    e.record()
    e.synchronize()
    probe = max(s.elapsed_time(e), 1e-4)
    inner = max(1, min(1000, int(0.5 / probe) + 1))  # each sample >= ~0.5 ms
    total_budget = max(min_total_ms, probe * inner * repeats)
    repeats = max(5, min(repeats, int(total_budget / (probe * inner)) + 1))
    samples = []
    for _ in range(repeats):
        # A device-side spin ahead of the start event lets the host queue all
        # `inner` launches, so the sample times the kernels, not Python's issue rate.
        if hasattr(torch.cuda, "_sleep"):
            torch.cuda._sleep(int(min(2e8, inner * 40e-6 * 2e9)))
        s.record()
        for _ in range(inner):
            fn()
        e.record()
        e.synchronize()
        samples.append(s.elapsed_time(e) / inner)
    return statistics.median(samples), min(samples), max(samples), inner * repeats


def rand(shape, dtype, dev="cuda"):
    # Normal data scaled so products of long sums stay finite in fp16/fp8.
    return (torch.randn(shape, device=dev, dtype=torch.float32) * 0.5).to(dtype)


def rotating(make, bytes_each):
    n = max(1, min(16, L2_ROTATE_BYTES // max(bytes_each, 1) + 1))
    return [make() for _ in range(n)]


class Writer:
    def __init__(self, path, header):
        self.f = open(path, "w", newline="")
        self.w = csv.writer(self.f)
        self.w.writerow(header)

    def row(self, *vals):
        self.w.writerow(vals)
        self.f.flush()


# ---------------------------------------------------------------- environment

def environment(out):
    p = torch.cuda.get_device_properties(0)
    env = {
        "date_utc": datetime.datetime.utcnow().isoformat(timespec="seconds") + "Z",
        "gpu_name": p.name,
        "sm_count": p.multi_processor_count,
        "total_memory_bytes": p.total_memory,
        "l2_cache_bytes": getattr(p, "L2_cache_size", None),
        "compute_capability": f"{p.major}.{p.minor}",
        "torch": torch.__version__,
        "cuda_runtime": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "cublas_note": "GEMMs via torch.matmul (cuBLAS/cuBLASLt heuristics); fp8 via torch._scaled_mm",
    }
    try:
        env["nccl"] = ".".join(str(x) for x in torch.cuda.nccl.version())
    except Exception as ex:  # noqa: BLE001
        env["nccl"] = f"unavailable: {ex}"
    try:
        q = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm,clocks.max.mem,power.limit,name",
             "--format=csv,noheader"], capture_output=True, text=True, timeout=20)
        env["nvidia_smi"] = q.stdout.strip()
    except Exception as ex:  # noqa: BLE001
        env["nvidia_smi"] = f"unavailable: {ex}"
    env["device_count"] = torch.cuda.device_count()
    with open(os.path.join(out, "env.json"), "w") as f:
        json.dump(env, f, indent=1)
    log(json.dumps(env, indent=1))
    return env


def clocks_snapshot():
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw",
                            "--format=csv,noheader"], capture_output=True, text=True, timeout=10)
        return q.stdout.strip()
    except Exception:  # noqa: BLE001
        return "n/a"


# ---------------------------------------------------------------- bandwidth

def copy_bandwidth(out, dl):
    w = Writer(os.path.join(out, "copy.csv"),
               ["kind", "bytes", "median_us", "min_us", "gbps_median"])
    for exp in range(16, 33, 2):  # 64 KiB .. 4 GiB
        if dl.expired():
            break
        n = 1 << exp
        srcs = rotating(lambda: torch.randint(0, 255, (n,), dtype=torch.uint8, device="cuda"), 2 * n)
        dsts = [torch.empty_like(srcs[0]) for _ in srcs]
        i = [0]

        def f():
            k = i[0] % len(srcs)
            dsts[k].copy_(srcs[k])
            i[0] += 1
        med, mn, _, _ = time_cuda(f)
        # read + write counted: the traffic HBM actually carries
        w.row("d2d", n, med * 1e3, mn * 1e3, 2 * n / (med * 1e-3) / 1e9)
        del srcs, dsts
    torch.cuda.empty_cache()
    for exp in range(16, 31, 2):  # 64 KiB .. 1 GiB
        if dl.expired():
            break
        n = 1 << exp
        host = torch.randint(0, 255, (n,), dtype=torch.uint8).pin_memory()
        dev = torch.randint(0, 255, (n,), dtype=torch.uint8, device="cuda")
        med, mn, _, _ = time_cuda(lambda: dev.copy_(host, non_blocking=True), repeats=9)
        w.row("h2d_pinned", n, med * 1e3, mn * 1e3, n / (med * 1e-3) / 1e9)
        med, mn, _, _ = time_cuda(lambda: host.copy_(dev, non_blocking=True), repeats=9)
        w.row("d2h_pinned", n, med * 1e3, mn * 1e3, n / (med * 1e-3) / 1e9)
        del host, dev


# ---------------------------------------------------------------- launch

def launch_overhead(out, dl):
    w = Writer(os.path.join(out, "launch.csv"), ["mode", "kernels", "total_us", "us_per_kernel"])
    x = torch.randn(1, device="cuda")
    n = 2000
    for _ in range(3):
        for _ in range(200):
            x.add_(1.0)
    torch.cuda.synchronize()
    # Eager: host issue rate of back-to-back tiny kernels (the GPU idles between them).
    samples = []
    for _ in range(7):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            x.add_(1.0)
        torch.cuda.synchronize()
        samples.append((time.perf_counter() - t0) * 1e6)
    med = statistics.median(samples)
    w.row("eager_torch_add", n, med, med / n)
    # Device-side spacing of the same kernels, CUDA events around the burst.
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ev = []
    for _ in range(7):
        s.record()
        for _ in range(n):
            x.add_(1.0)
        e.record()
        e.synchronize()
        ev.append(s.elapsed_time(e) * 1e3)
    med = statistics.median(ev)
    w.row("eager_torch_add_device_span", n, med, med / n)
    # CUDA graph: the same kernels captured once and replayed.
    g = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            x.add_(1.0)
    torch.cuda.current_stream().wait_stream(stream)
    with torch.cuda.graph(g):
        for _ in range(n):
            x.add_(1.0)
    g.replay()
    torch.cuda.synchronize()
    ev = []
    for _ in range(7):
        s.record()
        g.replay()
        e.record()
        e.synchronize()
        ev.append(s.elapsed_time(e) * 1e3)
    med = statistics.median(ev)
    w.row("cuda_graph_add", n, med, med / n)
    # One empty graph launch: fixed cost of a graph replay.
    g1 = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g1):
        x.add_(1.0)
    samples = []
    for _ in range(7):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(500):
            g1.replay()
        torch.cuda.synchronize()
        samples.append((time.perf_counter() - t0) * 1e6)
    med = statistics.median(samples)
    w.row("cuda_graph_replay_1kernel_host", 500, med, med / 500)


# ---------------------------------------------------------------- GEMM

def gemm_shapes():
    """(label, M, N, K): M tokens, N output features, K reduction.

    Square sweep for the peak and the size falloff; then the forward and
    backward GEMMs of transformer layers at tensor-parallel shards 1..8.
    """
    shapes = []
    for s in [256, 512, 1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384]:
        shapes.append(("square", s, s, s))
    models = [  # name, hidden, qkv_out, ffn (per gated half), gated
        ("gpt3-175b", 12288, 3 * 12288, 4 * 12288, False),
        ("llama3-70b", 8192, 8192 + 2 * 1024, 28672, True),
        ("llama3-8b", 4096, 4096 + 2 * 1024, 14336, True),
        ("gpt-1.7b", 2304, 3 * 2304, 4 * 2304, False),
    ]
    for name, h, qkv, ffn, gated in models:
        for tp in [1, 2, 4, 8]:
            for tokens in [2048, 8192]:
                fc1 = (2 if gated else 1) * ffn // tp
                layer = [("qkv", tokens, qkv // tp, h), ("proj", tokens, h, h // tp),
                         ("fc1", tokens, fc1, h), ("fc2", tokens, h, ffn // tp)]
                for op, m, n, k in layer:
                    shapes.append((f"{name}/tp{tp}/{op}/fwd", m, n, k))
                    # backward: dgrad (tokens x K) = dY (tokens x N) W^T, wgrad (N x K) = dY^T X
                    if tokens == 8192:
                        shapes.append((f"{name}/tp{tp}/{op}/dgrad", m, k, n))
                        shapes.append((f"{name}/tp{tp}/{op}/wgrad", n, k, m))
        shapes.append((f"{name}/logits", 8192, 50304 if name.startswith("gpt") else 128256, h))
    # Odd sizes: wave and tile quantization show up between the even ones.
    for m in [1000, 1536, 2500, 4100, 5000, 7000, 9000]:
        shapes.append(("odd", m, 4096, 4096))
    return shapes


def gemm_sweep(out, dl):
    w = Writer(os.path.join(out, "gemm.csv"),
               ["dtype", "label", "m", "n", "k", "median_us", "min_us", "tflops_median"])
    torch.backends.cuda.matmul.allow_tf32 = True
    shapes = gemm_shapes()
    has_fp8 = hasattr(torch, "float8_e4m3fn") and hasattr(torch, "_scaled_mm")
    dtypes = [("bf16", torch.bfloat16), ("fp16", torch.float16), ("tf32", torch.float32)]
    if has_fp8:
        dtypes.append(("fp8_e4m3", torch.float8_e4m3fn))
    # bf16 gets every shape; the other precisions the squares and a subset.
    for dname, dt in dtypes:
        for label, m, n, k in shapes:
            if dl.expired():
                log("gemm: deadline reached")
                return
            if dname != "bf16" and not (label in ("square", "odd") or "/tp1/" in label or "/tp8/" in label):
                continue
            if dname == "tf32" and label.endswith(("dgrad", "wgrad")):
                continue
            try:
                elt = torch.tensor([], dtype=dt).element_size()
                per = (m * k + k * n) * elt
                if dname == "fp8_e4m3":
                    # _scaled_mm wants A row-major (m,k) and B column-major (k,n); dims multiple of 16
                    if m % 16 or n % 16 or k % 16:
                        continue
                    As = rotating(lambda: rand((m, k), torch.bfloat16).to(dt), per)
                    Bs = [rand((n, k), torch.bfloat16).to(dt).t() for _ in As]
                    one = torch.ones((), device="cuda", dtype=torch.float32)
                    i = [0]

                    def f():
                        j = i[0] % len(As)
                        torch._scaled_mm(As[j], Bs[j], scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
                        i[0] += 1
                else:
                    As = rotating(lambda: rand((m, k), dt), per)
                    Bs = [rand((k, n), dt) for _ in As]
                    Cs = [torch.empty((m, n), device="cuda", dtype=dt) for _ in As]
                    i = [0]

                    def f():
                        j = i[0] % len(As)
                        torch.matmul(As[j], Bs[j], out=Cs[j])
                        i[0] += 1
                med, mn, _, _ = time_cuda(f, warmup=3, repeats=11)
                w.row(dname, label, m, n, k, med * 1e3, mn * 1e3, 2.0 * m * n * k / (med * 1e-3) / 1e12)
            except Exception as ex:  # noqa: BLE001
                log(f"gemm {dname} {label} {m}x{n}x{k}: {ex}")
            finally:
                As = Bs = Cs = None
        torch.cuda.empty_cache()
        log(f"gemm {dname} done, {dl.left():.0f}s left, clocks {clocks_snapshot()}")


# ---------------------------------------------------------------- attention

def attention_sweep(out, dl):
    w = Writer(os.path.join(out, "attention.csv"),
               ["pass", "batch", "heads", "kv_heads", "seq", "head_dim", "causal", "median_us", "min_us",
                "tflops_median", "flops_counted"])
    cases = []
    for hd in [64, 128]:
        for seq in [1024, 2048, 4096, 8192, 16384]:
            for causal in [True, False]:
                heads = 2048 // hd * (2 if hd == 64 else 1)  # ~ 2048..4096 model width per shard
                batch = max(1, 16384 // seq)
                cases.append((batch, heads, heads, seq, hd, causal))
    cases.append((2, 64, 8, 8192, 128, True))   # llama3-70b-like GQA
    cases.append((1, 8, 1, 8192, 128, True))    # 70B at tp8
    cases.append((1, 96, 96, 2048, 128, True))  # gpt3-175b, full width
    for batch, hq, hkv, seq, hd, causal in cases:
        if dl.expired():
            log("attention: deadline reached")
            return
        try:
            q = rand((batch, hq, seq, hd), torch.bfloat16).requires_grad_(True)
            k = rand((batch, hkv, seq, hd), torch.bfloat16).requires_grad_(True)
            v = rand((batch, hkv, seq, hd), torch.bfloat16).requires_grad_(True)
            gqa = hq != hkv
            kw = {"is_causal": causal}
            if gqa:
                kw["enable_gqa"] = True
            # fwd FLOPs: two matmuls of 2*b*h*s*s*d each; causal does half the work
            flops = 4.0 * batch * hq * seq * seq * hd * (0.5 if causal else 1.0)
            with torch.no_grad():
                med, mn, _, _ = time_cuda(lambda: F.scaled_dot_product_attention(q, k, v, **kw), repeats=9)
            w.row("fwd", batch, hq, hkv, seq, hd, int(causal), med * 1e3, mn * 1e3,
                  flops / (med * 1e-3) / 1e12, flops)
            o = F.scaled_dot_product_attention(q, k, v, **kw)
            go = rand(o.shape, torch.bfloat16)

            def fb():
                out_ = F.scaled_dot_product_attention(q, k, v, **kw)
                torch.autograd.grad(out_, (q, k, v), go)
            med2, mn2, _, _ = time_cuda(fb, repeats=9)
            # backward alone = (fwd+bwd) - fwd; bwd FLOPs are 2.5x fwd (5 matmuls vs 2)
            bwd = med2 - med
            w.row("bwd", batch, hq, hkv, seq, hd, int(causal), bwd * 1e3, (mn2 - mn) * 1e3,
                  2.5 * flops / (bwd * 1e-3) / 1e12, 2.5 * flops)
        except Exception as ex:  # noqa: BLE001
            log(f"attention {batch} {hq} {hkv} {seq} {hd} {causal}: {ex}")
        finally:
            q = k = v = o = go = None
    torch.cuda.empty_cache()


# ---------------------------------------------------------------- memory-bound ops

def elementwise_sweep(out, dl):
    w = Writer(os.path.join(out, "memops.csv"),
               ["op", "rows", "cols", "dtype", "bytes_moved", "median_us", "min_us", "gbps_median"])
    dt = torch.bfloat16
    e = 2
    sizes = [(2048, 1024), (4096, 4096), (8192, 4096), (8192, 8192), (16384, 12288), (32768, 8192)]
    for rows, cols in sizes:
        if dl.expired():
            log("memops: deadline reached")
            return
        n = rows * cols
        x = rand((rows, cols), dt)
        r = rand((rows, cols), dt)
        g = rand((cols,), dt)
        b = rand((cols,), dt)
        x2 = rand((rows, 2 * cols), dt)
        ops = [
            # name, fn, bytes moved (each input read once, each output written once)
            ("add", lambda: torch.add(x, r), 3 * n * e),
            ("layernorm", lambda: F.layer_norm(x, (cols,), g, b), 2 * n * e),
            ("rmsnorm", lambda: F.rms_norm(x, (cols,), g) if hasattr(F, "rms_norm") else None, 2 * n * e),
            ("gelu_tanh", lambda: F.gelu(x, approximate="tanh"), 2 * n * e),
            ("swiglu_unfused", lambda: F.silu(x2[:, :cols]) * x2[:, cols:], 3 * n * e),
            ("softmax", lambda: torch.softmax(x, dim=-1), 2 * n * e),
            ("dropout", lambda: F.dropout(x, 0.1, training=True), 2 * n * e),
            ("cast_bf16_to_fp32", lambda: x.float(), n * (e + 4)),
        ]
        for name, fn, nbytes in ops:
            try:
                med, mn, _, _ = time_cuda(fn, repeats=11)
                w.row(name, rows, cols, "bf16", nbytes, med * 1e3, mn * 1e3, nbytes / (med * 1e-3) / 1e9)
            except Exception as ex:  # noqa: BLE001
                log(f"memop {name} {rows}x{cols}: {ex}")
        x = r = x2 = None
    # Fused Adam step over a large parameter set (fp32 master + 2 moments + bf16 grad).
    try:
        nparam = 1 << 28
        p = [torch.nn.Parameter(rand((nparam,), torch.float32))]
        p[0].grad = rand((nparam,), torch.float32)
        opt = torch.optim.AdamW(p, lr=1e-4, fused=True)
        opt.step()
        med, mn, _, _ = time_cuda(opt.step, warmup=2, repeats=7)
        nbytes = nparam * 4 * (2 * 3 + 1)  # read p,m,v,g; write p,m,v
        w.row("adamw_fused_fp32", nparam, 1, "fp32", nbytes, med * 1e3, mn * 1e3, nbytes / (med * 1e-3) / 1e9)
    except Exception as ex:  # noqa: BLE001
        log(f"adam: {ex}")
    torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--budget-s", type=float, default=240.0)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if not torch.cuda.is_available():
        print("measure_torch: no CUDA GPU visible; nothing measured", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    environment(args.out)
    dl = Deadline(args.budget_s)
    # Order: cheapest, most-needed first, so a short lease still yields a profile.
    sections = [("launch", launch_overhead, 0.05), ("copy", copy_bandwidth, 0.1),
                ("memops", elementwise_sweep, 0.1), ("attention", attention_sweep, 0.15),
                ("gemm", gemm_sweep, 1.0)]
    for name, fn, share in sections:
        left = dl.left()
        sec_dl = Deadline(left if name == "gemm" else min(left, args.budget_s * share))
        ts = time.monotonic()
        try:
            fn(args.out, sec_dl)
        except Exception:  # noqa: BLE001
            log(f"section {name} failed:\n{traceback.format_exc()}")
        log(f"section {name}: {time.monotonic() - ts:.1f}s; clocks {clocks_snapshot()}")
    log(f"total {time.monotonic() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
