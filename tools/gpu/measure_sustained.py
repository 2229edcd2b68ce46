#!/usr/bin/env python3
"""Sustained versus short-burst GEMM throughput on one GPU, with its clocks.

The profiles' GEMM efficiencies come from short timed loops (measure_torch.py:
a few warm-ups, then medians over tens of milliseconds), during which a
Hopper GPU runs at or near its boost clock. A training step keeps the tensor
cores busy for seconds to minutes under the board's power limit. This script
measures the difference directly, for the open question in docs/workload.md
("TP communication beside GEMMs"): is there a sustained-clock slowdown, and
how large?

For each shape (a transformer layer's GEMM and a large square) it
  1. times a short burst as measure_torch.py does (median of 15 samples after
     3 warm-ups), then
  2. runs the same GEMM back to back for --seconds, recording each 250 ms
     window's TFLOP/s with CUDA events, while `nvidia-smi --query-gpu` samples
     SM clock, power draw, temperature and the clock-event (throttle) reasons
     every 250 ms in the background.
Random data throughout (never zeros: zeros draw less power).

Writes sustained.csv (one row per window: shape, t_s, tflops, sm_mhz, power_w,
temp_c, throttle reasons) and sustained_summary.csv (per shape: burst
TFLOP/s, first-5-s and last-10-s median TFLOP/s and SM clock, their ratio)
into OUT_DIR, plus env.json. Leave the card's clocks and power limit as they
are (METHOD.md): this measures the card as it is run.

With --duty D1,D2,... it instead measures the GEMM's rate (--work gemm; or
causal SDPA forward+backward, or copies, for their power) when GEMMs fill only
a fraction D of the time, the rest taken by a memory-bound copy, as in a
training step where norms, activations and attention sit between the GEMMs.
Each duty runs --seconds in ~10 ms cycles (GEMMs, then copies); CUDA events
time the GEMM group and the copy group of every cycle (--filler idle: a
one-thread spin kernel instead of the copies, the GPU otherwise idle, as in a
step's exposed communication). Writes duty.csv (one
row per 250 ms window: shape, duty asked, duty measured, GEMM TFLOP/s, copy
GB/s, SM clock, power, temperature, reasons) and duty_summary.csv (per shape
and duty: medians over the second half of the run).

usage: measure_sustained.py OUT_DIR [--seconds 60] [--dtype bf16] [--duty 1,0.7,0.4]
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import threading
import time

SHAPES = [
    # (label, M, N, K): Llama-3 70B at TP 4, 8192 tokens: FC1 forward; and a square.
    ("llama3-70b/tp4/fc1/fwd", 8192, 14336, 8192),
    ("square-8192", 8192, 8192, 8192),
]
DUTY_SHAPES = [
    # (label, M, N, K): Llama-3 70B at TP 4, 8192 tokens, FC1 forward; Llama-3 8B at TP 1, 2048 tokens, QKV.
    ("llama3-70b/tp4/fc1/fwd", 8192, 14336, 8192),
    ("llama3-8b/tp1/qkv/fwd", 2048, 6144, 4096),
]
QUERY = "clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active"


class SmiSampler(threading.Thread):
    """nvidia-smi samples every period_ms into self.rows: (t_monotonic, fields)."""

    def __init__(self, period_ms=250):
        super().__init__(daemon=True)
        self.period_ms = period_ms
        self.rows = []
        self.proc = None

    def run(self):
        try:
            self.proc = subprocess.Popen(
                ["nvidia-smi", f"--query-gpu={QUERY}", "--format=csv,noheader,nounits", f"-lms={self.period_ms}"],
                stdout=subprocess.PIPE, text=True)
        except OSError as e:  # no nvidia-smi: clocks are left blank
            print(f"nvidia-smi not available: {e}", flush=True)
            return
        for line in self.proc.stdout:
            self.rows.append((time.monotonic(), [f.strip() for f in line.split(",")]))

    def stop(self):
        if self.proc:
            self.proc.terminate()

    def nearest(self, t):
        best = None
        for ts, fields in self.rows:
            if best is None or abs(ts - t) < abs(best[0] - t):
                best = (ts, fields)
        return best[1] if best else ["", "", "", ""]


def burst_tflops(torch, a, b, flop):
    for _ in range(3):
        torch.matmul(a, b)
    torch.cuda.synchronize()
    samples = []
    for _ in range(15):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        torch.matmul(a, b)
        e.record()
        e.synchronize()
        samples.append(flop / (s.elapsed_time(e) * 1e-3) / 1e12)
    return statistics.median(samples)


def sustained(torch, a, b, flop, seconds, smi, label, writer):
    """TFLOP/s per ~250 ms window over `seconds` of back-to-back GEMMs."""
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    torch.matmul(a, b)
    e.record()
    e.synchronize()
    per_window = max(1, int(250.0 / max(s.elapsed_time(e), 1e-3)))
    start = time.monotonic()
    rows = []
    while time.monotonic() - start < seconds:
        s.record()
        for _ in range(per_window):
            torch.matmul(a, b)
        e.record()
        e.synchronize()
        t = time.monotonic()
        tflops = per_window * flop / (s.elapsed_time(e) * 1e-3) / 1e12
        sm, power, temp, reasons = (smi.nearest(t) + ["", "", "", ""])[:4]
        row = [label, round(t - start, 3), round(tflops, 1), sm, power, temp, reasons]
        writer.writerow(row)
        rows.append(row)
    return rows


def duty_cycle(torch, work, flop, src, dst, duty, filler, seconds, smi, label, writer):
    """`work` fills `duty` of each ~10 ms cycle, the filler the rest (device copies, or a one-thread spin
    kernel that leaves the GPU idle, as a step's exposed communication does); one row per ~250 ms window."""
    def timed(fn, reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        fn()
        s.record()
        for _ in range(reps):
            fn()
        e.record()
        e.synchronize()
        return s.elapsed_time(e) / reps

    fill = (lambda: dst.copy_(src)) if filler == "copy" else (lambda: torch.cuda._sleep(1000000))
    t_work, t_fill = timed(work, 5), timed(fill, 5)
    cycle_ms = 10.0
    n_work = max(1, round(duty * cycle_ms / t_work))
    n_fill = round((1.0 - duty) * cycle_ms / t_fill) if duty < 1.0 else 0
    cycles = max(1, round(250.0 / (n_work * t_work + n_fill * t_fill)))
    copy_bytes = 2.0 * src.numel() * src.element_size()
    start = time.monotonic()
    rows = []
    while time.monotonic() - start < seconds:
        marks = []
        for _ in range(cycles):
            ev = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
            ev[0].record()
            for _ in range(n_work):
                work()
            ev[1].record()
            for _ in range(n_fill):
                fill()
            ev[2].record()
            marks.append(ev)
        marks[-1][2].synchronize()
        w_ms = sum(m[0].elapsed_time(m[1]) for m in marks)
        c_ms = sum(m[1].elapsed_time(m[2]) for m in marks)
        t = time.monotonic()
        tflops = cycles * n_work * flop / (w_ms * 1e-3) / 1e12
        gbs = cycles * n_fill * copy_bytes / (c_ms * 1e-3) / 1e9 if n_fill and filler == "copy" else 0.0
        sm, power, temp, reasons = (smi.nearest(t) + ["", "", "", ""])[:4]
        row = [label, filler, duty, round(w_ms / (w_ms + c_ms), 3), round(t - start, 3), round(tflops, 1),
               round(gbs, 1), sm, power, temp, reasons]
        writer.writerow(row)
        rows.append(row)
    return rows


def duty_works(torch, dtype, kind, src, dst):
    """(label, callable, FLOP per call) for --work: GEMMs of DUTY_SHAPES (bf16, or fp8 e4m3 through
    torch._scaled_mm), causal SDPA forward and
    backward (PyTorch's default backend; FLOP counted for the causal half), or device copies."""
    works = []
    if kind == "gemm":
        for label, m, n, k in DUTY_SHAPES:
            a = torch.randn(m, k, device="cuda", dtype=dtype)
            b = torch.randn(k, n, device="cuda", dtype=dtype)
            works.append((label, lambda a=a, b=b: torch.matmul(a, b), 2.0 * m * n * k))
    elif kind == "gemm-fp8":
        # torch._scaled_mm: A row-major (m, k), B column-major (k, n), unit scales, bf16 out.
        one = torch.ones((), device="cuda", dtype=torch.float32)
        for label, m, n, k in DUTY_SHAPES:
            a = torch.randn(m, k, device="cuda", dtype=dtype).to(torch.float8_e4m3fn)
            b = torch.randn(n, k, device="cuda", dtype=dtype).to(torch.float8_e4m3fn).t()
            works.append((label + "/fp8", lambda a=a, b=b: torch._scaled_mm(a, b, scale_a=one, scale_b=one,
                                                                             out_dtype=torch.bfloat16),
                          2.0 * m * n * k))
    elif kind == "sdpa":
        import torch.nn.functional as F
        heads, seq, dim = 32, 4096, 128  # Llama-3 8B's attention at TP 1, one 4096-token sequence
        q, k, v = (torch.randn(1, heads, seq, dim, device="cuda", dtype=dtype, requires_grad=True) for _ in range(3))
        grad = torch.randn(1, heads, seq, dim, device="cuda", dtype=dtype)

        def fwd_bwd():
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            torch.autograd.grad(out, (q, k, v), grad)
        works.append((f"llama3-8b/sdpa-causal/fwd+bwd/s{seq}", fwd_bwd, 3.5 * 2.0 * seq * seq * heads * dim))
    else:
        works.append(("copy/512MiB", lambda: dst.copy_(src), 0.0))
    return works


def run_duty(torch, dtype, kind, duties, filler, seconds, smi, out):
    with open(os.path.join(out, "duty.csv"), "w", newline="") as f, \
         open(os.path.join(out, "duty_summary.csv"), "w", newline="") as g:
        w = csv.writer(f)
        w.writerow(["shape", "filler", "duty_asked", "duty", "t_s", "work_tflops", "copy_gbs", "sm_mhz", "power_w",
                    "temp_c", "clock_event_reasons"])
        summary = csv.writer(g)
        summary.writerow(["shape", "filler", "duty_asked", "duty", "work_tflops", "copy_gbs", "sm_mhz", "power_w",
                          "temp_c"])
        src = torch.randn(256 * 1024 * 1024, device="cuda", dtype=dtype)  # 512 MiB, random (zeros draw less)
        dst = torch.empty_like(src)
        for label, work, flop in duty_works(torch, dtype, kind, src, dst):
            for duty in duties:
                rows = duty_cycle(torch, work, flop, src, dst, duty, filler, seconds, smi, label, w)
                f.flush()
                half = [[r[0], r[3], r[4] - seconds / 2.0] + r[5:10] for r in rows]
                med = [median_of(half, col, 0.0, seconds) for col in (1, 3, 4, 5, 6, 7)]
                summary.writerow([label, filler, duty] + [round(v, 3) for v in med])
                print(f"{label} {filler} duty {duty}: measured duty {med[0]:.2f}, {med[1]:.1f} TFLOP/s, "
                      f"copy {med[2]:.0f} GB/s, {med[3]:.0f} MHz, {med[4]:.0f} W", flush=True)


def median_of(rows, col, lo, hi):
    vals = []
    for r in rows:
        if lo <= r[1] < hi and r[col] not in ("", "[N/A]"):
            try:
                vals.append(float(r[col]))
            except ValueError:
                pass
    return statistics.median(vals) if vals else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--dtype", choices=["bf16", "fp16"], default="bf16")
    ap.add_argument("--duty", help="comma-separated GEMM time fractions, e.g. 1,0.7,0.4")
    ap.add_argument("--filler", choices=["copy", "idle"], default="copy",
                    help="what fills the rest of each cycle with --duty: device copies or an idle GPU")
    ap.add_argument("--work", choices=["gemm", "gemm-fp8", "sdpa", "copy"], default="gemm",
                    help="what runs for the --duty fraction: bf16 or fp8 GEMMs, SDPA forward+backward, or copies")
    args = ap.parse_args()
    duties = [float(d) for d in args.duty.split(",")] if args.duty else []
    if any(not 0.0 < d <= 1.0 for d in duties):
        ap.error(f"--duty: each fraction must lie in (0, 1], got {args.duty}")
    import torch  # the device machine has it; this machine may not

    os.makedirs(args.out, exist_ok=True)
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    smi = SmiSampler()
    smi.start()
    time.sleep(1.0)
    if duties:
        run_duty(torch, dtype, args.work, duties, args.filler, args.seconds, smi, args.out)
        smi.stop()
        write_env(torch, args)
        return
    with open(os.path.join(args.out, "sustained.csv"), "w", newline="") as f, \
         open(os.path.join(args.out, "sustained_summary.csv"), "w", newline="") as g:
        w = csv.writer(f)
        w.writerow(["shape", "t_s", "tflops", "sm_mhz", "power_w", "temp_c", "clock_event_reasons"])
        summary = csv.writer(g)
        summary.writerow(["shape", "burst_tflops", "first5s_tflops", "last10s_tflops", "last10s_over_burst",
                          "first5s_sm_mhz", "last10s_sm_mhz"])
        for label, m, n, k in SHAPES:
            a = torch.randn(m, k, device="cuda", dtype=dtype)
            b = torch.randn(k, n, device="cuda", dtype=dtype)
            flop = 2.0 * m * n * k
            burst = burst_tflops(torch, a, b, flop)
            print(f"{label}: burst {burst:.1f} TFLOP/s", flush=True)
            rows = sustained(torch, a, b, flop, args.seconds, smi, label, w)
            f.flush()
            first = median_of(rows, 2, 0.0, 5.0)
            last = median_of(rows, 2, args.seconds - 10.0, args.seconds + 1.0)
            summary.writerow([label, round(burst, 1), round(first, 1), round(last, 1), round(last / burst, 4),
                              median_of(rows, 3, 0.0, 5.0), median_of(rows, 3, args.seconds - 10.0, args.seconds + 1.0)])
            print(f"{label}: first 5 s {first:.1f}, last 10 s {last:.1f} TFLOP/s ({last / burst:.3f} of burst)",
                  flush=True)
            del a, b
            time.sleep(10.0)  # let the card cool a little between shapes
    smi.stop()
    write_env(torch, args)


def write_env(torch, args):
    env = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda,
           "date": time.strftime("%Y-%m-%d"), "seconds": args.seconds, "dtype": args.dtype, "duty": args.duty,
           "filler": args.filler, "work": args.work}
    with open(os.path.join(args.out, "env.json"), "w") as h:
        json.dump(env, h, indent=2)


if __name__ == "__main__":
    main()
