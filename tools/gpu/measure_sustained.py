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

usage: measure_sustained.py OUT_DIR [--seconds 60] [--dtype bf16]
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
    args = ap.parse_args()
    import torch  # the device machine has it; this machine may not

    os.makedirs(args.out, exist_ok=True)
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    smi = SmiSampler()
    smi.start()
    time.sleep(1.0)
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
    env = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda,
           "date": time.strftime("%Y-%m-%d"), "seconds": args.seconds, "dtype": args.dtype}
    with open(os.path.join(args.out, "env.json"), "w") as h:
        json.dump(env, h, indent=2)


if __name__ == "__main__":
    main()
