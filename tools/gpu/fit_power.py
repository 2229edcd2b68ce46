#!/usr/bin/env python3
"""Fit the H200's power model (the profile's "power" block) to measure_sustained.py --duty runs.

A GPU under its board power limit runs its SM clock as high as the limit
allows. How much power a step draws depends on what it runs: GEMMs and fused
attention keep the tensor cores busy, memory-bound kernels mostly draw HBM
power, an idle GPU (exposed communication) little. The cost model's form
(sim/cost/power_state.h):

  P(x) = idle_w + (s_gemm * gemm_w + s_attention * attention_w) * x**power_exponent + s_memory * memory_w

where x is the SM clock over its maximum and s_c the share of the time class c
runs; GEMM and attention throughput scale as x**rate_exponent, copies do not
(measured: 4155-4200 GB/s at every clock). The clock is the largest x <= 1
with P(x) <= the board's limit.

Fitted here, in three steps, from each run's duty_summary.csv (medians over
the second half of 6 s at each duty; nvidia-smi's SM clock and power draw):
  1. idle_w, gemm_w, attention_w, memory_w by least squares over the points at
     the maximum clock (where the limit does not bind): P = idle + sum s_c W_c;
  2. rate_exponent: GEMM and attention throughput against the clock, over
     every point, relative to the same work's median rate at the maximum clock;
  3. power_exponent: each point below the maximum clock solved for it, the
     median taken.
Then every point's clock and rate are predicted back from its duty alone, at
the board limit, and the residuals printed.

usage: fit_power.py [DUTY_DIR] [--limit-w 700] [--json OUT]
  DUTY_DIR defaults to profiles/measured/h200-sxm-141gb-2026-12-04c-power/duty
  (one sub-folder per run; runs of fp8 GEMMs are a check, not fitted).
  Standard library only.
"""
import argparse
import csv
import json
import math
import os
import statistics
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DUTY_DIR = "profiles/measured/h200-sxm-141gb-2026-12-04c-power/duty"
MAX_MHZ = 1980.0  # the H200's maximum SM clock, as nvidia-smi logged it when the limit did not bind


def load(duty_dir):
    """Points: dict(run, work, filler, duty, rate, mhz, watts)."""
    points = []
    for run in sorted(os.listdir(duty_dir)):
        folder = os.path.join(duty_dir, run)
        env = json.load(open(os.path.join(folder, "env.json")))
        work = env.get("work", "gemm")
        with open(os.path.join(folder, "duty_summary.csv")) as f:
            for row in csv.DictReader(f):
                points.append({
                    "run": run, "shape": row["shape"], "work": work,
                    # The first run (gemm_copy) predates the filler column: copies filled its cycles.
                    "filler": row.get("filler") or env.get("filler", "copy"),
                    "duty": float(row["duty"]),
                    "rate": float(row.get("work_tflops") or row.get("gemm_tflops")),
                    "mhz": float(row["sm_mhz"]), "watts": float(row["power_w"]),
                })
    return points


def shares(p):
    """(gemm, attention, memory) time shares of a point; the rest is idle."""
    s = {"gemm": 0.0, "sdpa": 0.0, "copy": 0.0}
    s[p["work"]] += p["duty"]
    if p["filler"] == "copy":
        s["copy"] += 1.0 - p["duty"]
    return s["gemm"], s["sdpa"], s["copy"]


def solve_linear(rows, ys):
    """Least squares for a small dense system (normal equations, Gaussian elimination)."""
    n = len(rows[0])
    a = [[sum(r[i] * r[j] for r in rows) for j in range(n)] for i in range(n)]
    b = [sum(r[i] * y for r, y in zip(rows, ys)) for i in range(n)]
    for c in range(n):
        piv = max(range(c, n), key=lambda r: abs(a[r][c]))
        a[c], a[piv], b[c], b[piv] = a[piv], a[c], b[piv], b[c]
        for r in range(n):
            if r != c:
                f = a[r][c] / a[c][c]
                a[r] = [x - f * y for x, y in zip(a[r], a[c])]
                b[r] -= f * b[c]
    return [b[i] / a[i][i] for i in range(n)]


def clock(m, g, a, mem, limit):
    """The model's clock ratio for time shares (at the reference state) under `limit` watts."""
    def watts(x):
        # Compute work stretches as the clock drops; shares are renormalised.
        tg, ta = g / x ** m["rate_exponent"], a / x ** m["rate_exponent"]
        total = tg + ta + mem + (1.0 - g - a - mem)
        return m["idle_w"] + ((tg * m["gemm_w"] + ta * m["attention_w"]) * x ** m["power_exponent"]
                              + mem * m["memory_w"]) / total
    if watts(1.0) <= limit:
        return 1.0
    lo, hi = 0.05, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if watts(mid) <= limit else (lo, mid)
    return lo


def fit(points):
    free = [p for p in points if p["mhz"] >= 0.99 * MAX_MHZ]
    rows = [[1.0, *shares(p)] for p in free]
    idle, wg, wa, wm = solve_linear(rows, [p["watts"] for p in free])
    m = {"idle_w": idle, "gemm_w": wg, "attention_w": wa, "memory_w": wm}
    top = {}
    for p in free:
        if p["work"] != "copy":
            top.setdefault(p["shape"], []).append(p["rate"])
    top = {k: statistics.median(v) for k, v in top.items()}
    lx, ly = [], []
    for p in points:
        if p["work"] != "copy" and p["mhz"] < 0.99 * MAX_MHZ:
            lx.append(math.log(p["mhz"] / MAX_MHZ))
            ly.append(math.log(p["rate"] / top[p["shape"]]))
    m["rate_exponent"] = sum(x * y for x, y in zip(lx, ly)) / sum(x * x for x in lx)
    alphas = []
    for p in points:
        if p["mhz"] >= 0.99 * MAX_MHZ:
            continue
        g, a, mem = shares(p)
        dyn = g * wg + a * wa
        x = p["mhz"] / MAX_MHZ
        alphas.append(math.log((p["watts"] - idle - mem * wm) / dyn) / math.log(x))
    m["power_exponent"] = statistics.median(alphas)
    m["free_points"], m["limited_points"] = len(free), len(alphas)
    m["top_rates_tflops"] = top
    return m


def fp8_check(points, m):
    """FP8 GEMMs (--work gemm-fp8) are not in the fit: their watts above idle at the maximum clock, from their own
    points there, beside the bf16 GEMMs' gemm_w."""
    w = [(p["watts"] - m["idle_w"]) / p["duty"] for p in points
         if p["work"] == "gemm-fp8" and p["mhz"] >= 0.99 * MAX_MHZ and p["filler"] == "idle"]
    if w:
        print(f"check: fp8 GEMMs draw {statistics.median(w):.0f} W above idle at the maximum clock "
              f"({len(w)} points; bf16 GEMMs {m['gemm_w']:.0f} W): the model prices both with gemm_w")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("duty_dir", nargs="?", default=os.path.join(REPO, DUTY_DIR))
    ap.add_argument("--limit-w", type=float, default=700.0, help="the board's power limit during the runs")
    ap.add_argument("--json", help="write the fitted values to this file")
    a = ap.parse_args(argv)
    every = load(a.duty_dir)
    points = [p for p in every if p["work"] != "gemm-fp8"]
    m = fit(points)
    print(f"idle {m['idle_w']:.0f} W; at the maximum clock, above idle: GEMM {m['gemm_w']:.0f} W, "
          f"attention {m['attention_w']:.0f} W, memory-bound {m['memory_w']:.0f} W "
          f"({m['free_points']} points at {MAX_MHZ:g} MHz)")
    print(f"power ~ clock^{m['power_exponent']:.3f} ({m['limited_points']} points below it); "
          f"GEMM/attention rate ~ clock^{m['rate_exponent']:.3f}")
    print("| run | shape | duty | MHz measured / model | rate measured / model | W measured |")
    print("|---|---|---|---|---|---|")
    errs = []
    for p in points:
        g, att, mem = shares(p)
        x = clock(m, g, att, mem, a.limit_w)
        top = m["top_rates_tflops"].get(p["shape"])
        model_rate = top * x ** m["rate_exponent"] if top else float("nan")
        if top:
            errs.append(abs(model_rate / p["rate"] - 1))
        print(f"| {p['run']} | {p['shape']} | {p['duty']:.2f} | {p['mhz']:.0f} / {x * MAX_MHZ:.0f} | "
              f"{p['rate']:.0f} / {model_rate:.0f} | {p['watts']:.0f} |")
    print(f"rate predicted from duty alone: mean |error| {100 * statistics.mean(errs):.1f}%, "
          f"max {100 * max(errs):.1f}% over {len(errs)} points")
    fp8_check(every, m)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({k: (round(v, 4) if isinstance(v, float) else v) for k, v in m.items()}, f, indent=2)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
