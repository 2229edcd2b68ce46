#!/usr/bin/env python3
"""Derive the measured values of profiles/h200-sxm-141gb.json from our H200 runs.

Reads the CSV files of profiles/measured/h200-sxm-141gb-2026-11-29/ (written by
tools/gpu/measure_torch.py and tools/gpu/launch_overhead.cu, see the README
there), prints every value the profile takes from them with the rows it came
from, and writes fit_report.md beside the CSVs: how GEMM throughput varies
with the transformer shapes we measured, and a fit of the simulator's GEMM
cost model (sim/cost/profile_cost_model.cc) to all of them, which sets the
profile's gemm.max_efficiency, gemm.tile and gemm.k_overhead.

Standard library only, so it runs anywhere the repository is checked out.

usage: fit_profile_h200.py [--dir DIR] [--report PATH | --no-report] [--json]
"""
import argparse
import csv
import json
import math
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEFAULT_DIR = os.path.join(REPO, "profiles", "measured", "h200-sxm-141gb-2026-11-29")
REL_DIR = "profiles/measured/h200-sxm-141gb-2026-11-29"

# Dense datasheet peaks (TFLOP/s) the efficiencies are taken against. H200 uses
# the GH100 compute of the H100 SXM: hardware.md §1 gives 989.4 / 494.7 /
# 1,978.9 for H100 SXM (glennklockwood.com, reproducing NVIDIA's table) and
# 989.5 / 1,979 for H200 (tritonbench#78); H200 TF32 is [U] there.
PEAK_TFLOPS = {"bf16": 989.4, "fp16": 989.4, "tf32": 494.7, "fp8_e4m3": 1978.9}
HBM_PEAK_GBPS = 4800.0  # hardware.md §1: H200 4,800 GB/s [S] (aiwiki.ai, lzwjava.github.io)

# A GEMM counts as "large" when it does at least the work of a 4096^3 GEMM:
# below that, launch, wave and tile effects rather than the tensor cores set
# the rate (the square sweep reaches its plateau at 4096).
LARGE_FLOPS = 2.0 * 4096 ** 3

# The attention case whose efficiency the profile uses: long sequence,
# head_dim 128, causal, full MHA, the shape of the Azure FlashAttention-2
# benchmark (b=2, s=8192; hardware.md §4c).
ATTN_CASE = {"batch": 2, "heads": 16, "kv_heads": 16, "seq": 8192, "head_dim": 128, "causal": 1}

# Copy rows used for copy_efficiency: 1 GiB and 4 GiB, far beyond the 60 MB L2.
COPY_BYTES = (1 << 30, 1 << 32)
H2D_BYTES = 1 << 30

# The GEMM cost model fit (fit_gemm_model): grid of output tiles (M x N),
# per-tile K overheads (elements of K) and max_efficiency steps, searched for
# the least mean |log(predicted / measured time)| over every bf16 row.
FIT_TILES = [(64, 64), (64, 128), (128, 64), (128, 128), (128, 256), (256, 128)]
FIT_K_OVERHEADS = [0, 32, 64, 96, 128, 192, 256, 384, 512]
# fp8_e4m3's own k_overhead (bf16's tile fixed): an FP8 MMA covers twice the K
# of a 16-bit one, so each tile's fixed cost is worth more elements of K.
FIT_FP8_K_OVERHEADS = [0, 32, 64, 96, 128, 192, 256, 384, 512, 640, 768, 1024]
FIT_EFF_STEPS = 200  # max_efficiency in {1/200, 2/200, ..., 1}: steps of 0.005
# Bytes per element of a GEMM's operands as the workload generator counts them
# (sim/workload/layer_shape.cc: LayerShape::element_bytes; fp8 training keeps
# bf16 activations, fp32 training runs TF32 products on 4-byte tensors).
GEMM_ELEMENT_BYTES = {"bf16": 2, "fp16": 2, "tf32": 4, "fp8_e4m3": 2}
# The tile of the old profile and the tile-only model: the baseline the
# report compares the fit with (CUTLASS's 128x256x64 tensor-op default).
OLD_TILE = (128, 256)


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def gemm_flops(r):
    return 2.0 * int(r["m"]) * int(r["n"]) * int(r["k"])


def quantization(m, n, k, batch, tile, sms):
    """Tile and wave quantization, as ProfileCostModel::GemmEfficiency computes it."""
    tm, tn = tile
    tiles = -(-m // tm) * -(-n // tn) * batch
    waves = -(-tiles // sms)
    useful = float(m) * n * batch
    computed = float(waves) * sms * tm * tn
    q = useful / computed
    if waves == 1 and tiles < sms:
        splits = max(1, min(sms // tiles, k // 256))
        q = min(1.0, useful * splits / computed)
    return q


def model_time_s(m, n, k, dtype, eff, tile, k_overhead, sms, bw_bytes_s, launch_s, batch=1):
    """Predicted GEMM time (seconds) of sim/cost/profile_cost_model.cc: KernelTime
    (flops / (peak x eff x quantization x k/(k+k_overhead)), floored by bytes /
    (hbm_bandwidth x copy_efficiency)) and ComputeTime (floored by one launch)."""
    flops = 2.0 * m * n * k * batch
    e = eff * quantization(m, n, k, batch, tile, sms) * k / (k + k_overhead)
    flop_time = flops / (PEAK_TFLOPS[dtype] * 1e12 * e)
    bytes_time = (m * k + k * n + m * n) * batch * GEMM_ELEMENT_BYTES[dtype] / bw_bytes_s
    return max(flop_time, bytes_time, launch_s)


def error_stats(logs):
    """logs: log(predicted / measured) per shape."""
    n = len(logs)
    ratio = [math.exp(x) for x in logs]
    return {"n": n, "mean_abs_log": sum(abs(x) for x in logs) / n,
            "median_ratio": statistics.median(ratio),
            "within": {w: sum(1 for r in ratio if abs(r - 1) <= w) / n for w in (0.10, 0.15, 0.25)}}


def _fit_eff(base, floor, meas):
    """Best max_efficiency on the 0.005 grid for fixed shape factors.

    base[i] = time at efficiency 1 (flops / (peak x quantization x k factor)),
    floor[i] = max(bytes time, launch), meas[i] = measured time."""
    best = None
    for step in range(1, FIT_EFF_STEPS + 1):
        eff = step / FIT_EFF_STEPS
        err = 0.0
        for b, fl, t in zip(base, floor, meas):
            err += abs(math.log(max(b / eff, fl) / t))
        if best is None or err < best[1] - 1e-12:
            best = (eff, err)
    return best[0], best[1] / len(meas)


def fit_gemm_model(gemm_rows, sms, bw_bytes_s, launch_s):
    """Grid fit of the GEMM cost model to gemm.csv.

    bf16: tile x k_overhead x max_efficiency, least mean |log(pred/measured)|.
    fp16, tf32: max_efficiency alone, with bf16's tile and k_overhead.
    fp8_e4m3: its own k_overhead x max_efficiency, with bf16's tile."""
    def prep(dtype, tile, kov):
        rows = [r for r in gemm_rows if r["dtype"] == dtype]
        base, floor, meas = [], [], []
        for r in rows:
            m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
            s = quantization(m, n, k, 1, tile, sms) * k / (k + kov)
            base.append(2.0 * m * n * k / (PEAK_TFLOPS[dtype] * 1e12 * s))
            floor.append(max((m * k + k * n + m * n) * GEMM_ELEMENT_BYTES[dtype] / bw_bytes_s, launch_s))
            meas.append(float(r["median_us"]) * 1e-6)
        return rows, base, floor, meas

    grid = []
    for tile in FIT_TILES:
        for kov in FIT_K_OVERHEADS:
            _, base, floor, meas = prep("bf16", tile, kov)
            eff, err = _fit_eff(base, floor, meas)
            grid.append({"tile": tile, "k_overhead": kov, "eff": eff, "mean_abs_log": err})
    best = min(grid, key=lambda g: g["mean_abs_log"])
    tile, kov = best["tile"], best["k_overhead"]

    def evaluate(dtype, eff, tile=tile, kov=kov):
        rows = [r for r in gemm_rows if r["dtype"] == dtype]
        out = []
        for r in rows:
            m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
            t = model_time_s(m, n, k, dtype, eff, tile, kov, sms, bw_bytes_s, launch_s)
            meas = float(r["median_us"]) * 1e-6
            out.append({"row": r, "pred_us": t * 1e6, "log": math.log(t / meas)})
        return out

    per = {}
    for dtype in PEAK_TFLOPS:
        dkov = kov
        if dtype == "bf16":
            eff = best["eff"]
        else:
            eff, err, at_shape_k = None, None, None
            for k in (FIT_FP8_K_OVERHEADS if dtype == "fp8_e4m3" else [kov]):
                _, base, floor, meas = prep(dtype, tile, k)
                e, x = _fit_eff(base, floor, meas)
                if k == kov:
                    at_shape_k = e
                if eff is None or x < err - 1e-12:
                    eff, err, dkov = e, x, k
        shapes = evaluate(dtype, eff, kov=dkov)
        per[dtype] = {"eff": eff, "k_overhead": dkov, "shapes": shapes, **error_stats([s["log"] for s in shapes])}
        if dtype != "bf16":
            per[dtype]["eff_at_shape_k"] = at_shape_k  # max_efficiency with bf16's k_overhead
    return {"tile": tile, "k_overhead": kov, "grid": grid, "per_dtype": per,
            "bw_bytes_s": bw_bytes_s, "launch_s": launch_s, "sms": sms, "evaluate": evaluate}


def fit(directory=DEFAULT_DIR):
    """Every measured value of the H200 profile, with the rows behind it."""
    with open(os.path.join(directory, "env.json")) as fh:
        env = json.load(fh)
    out = {"env": env, "dir": directory}

    # nvidia-smi line: "driver, sm clock, mem clock, power limit, name"
    out["driver"] = env["nvidia_smi"].split(",")[0].strip()
    out["sm_count"] = int(env["sm_count"])
    out["total_memory_bytes"] = int(env["total_memory_bytes"])

    copy = read_csv(os.path.join(directory, "copy.csv"))
    d2d = [r for r in copy if r["kind"] == "d2d" and int(r["bytes"]) in COPY_BYTES]
    if len(d2d) != len(COPY_BYTES):
        raise SystemExit("copy.csv: expected d2d rows at 1 GiB and 4 GiB")
    gbps = statistics.mean(float(r["gbps_median"]) for r in d2d)
    out["copy"] = {"rows": d2d, "gbps": gbps, "efficiency": gbps / HBM_PEAK_GBPS}

    h2d = [r for r in copy if r["kind"] == "h2d_pinned" and int(r["bytes"]) == H2D_BYTES]
    d2h = [r for r in copy if r["kind"] == "d2h_pinned" and int(r["bytes"]) == H2D_BYTES]
    out["h2d"] = {"row": h2d[0], "gbps": float(h2d[0]["gbps_median"]),
                  "d2h_gbps": float(d2h[0]["gbps_median"]) if d2h else None}

    gemm = read_csv(os.path.join(directory, "gemm.csv"))
    out["gemm_rows"] = gemm
    best = {}
    for dtype, peak in PEAK_TFLOPS.items():
        large = [r for r in gemm if r["dtype"] == dtype and gemm_flops(r) >= LARGE_FLOPS]
        top = max(large, key=lambda r: float(r["tflops_median"]))
        t = float(top["tflops_median"])
        best[dtype] = {"row": top, "tflops": t, "peak": peak, "efficiency": t / peak,
                       "n_large": len(large)}
    out["gemm"] = best

    attn = read_csv(os.path.join(directory, "attention.csv"))
    out["attention_rows"] = attn
    sel = {}
    for p in ("fwd", "bwd"):
        rows = [r for r in attn if r["pass"] == p and
                all(int(r[k]) == v for k, v in ATTN_CASE.items())]
        if len(rows) != 1:
            raise SystemExit(f"attention.csv: expected one {p} row for {ATTN_CASE}")
        t = float(rows[0]["tflops_median"])
        sel[p] = {"row": rows[0], "tflops": t, "efficiency": t / PEAK_TFLOPS["bf16"]}
    out["attention"] = sel

    launch = {r["metric"]: r for r in read_csv(os.path.join(directory, "launch_cuda.csv"))}
    out["launch_us"] = float(launch["host_issue_us_per_launch"]["median_us"])
    out["launch"] = launch

    out["memops_rows"] = read_csv(os.path.join(directory, "memops.csv"))

    # The cost model fit uses the copy bandwidth and launch cost exactly as the
    # H200 profile states them (copy_efficiency to 3 decimals of 4,800 GB/s,
    # kernel_launch to 0.01 us), so that the simulator reproduces the fit.
    bw = HBM_PEAK_GBPS * 1e9 * round(out["copy"]["efficiency"], 3)
    launch_s = round(out["launch_us"], 2) * 1e-6
    model = fit_gemm_model(gemm, out["sm_count"], bw, launch_s)
    model["r_sustained"] = model["per_dtype"]["bf16"]["eff"] / best["bf16"]["efficiency"]
    old = model["evaluate"]("bf16", best["bf16"]["efficiency"], OLD_TILE, 0)
    large = [s["log"] for s in old if gemm_flops(s["row"]) >= LARGE_FLOPS]
    model["old"] = {"all": error_stats([s["log"] for s in old]), "large": error_stats(large)}
    out["model"] = model
    return out


def print_values(f):
    e = f["env"]
    print(f"GPU {e['gpu_name']}, driver {f['driver']}, CUDA {e['cuda_runtime']}, "
          f"torch {e['torch']}, {e['date_utc']}")
    print(f"sm_count            {f['sm_count']}  (env.json sm_count)")
    tm = f["total_memory_bytes"]
    print(f"hbm_capacity        {tm} B = {tm / 1e9:.2f} GB = {tm / 2**30:.2f} GiB  "
          f"(env.json total_memory_bytes)")
    c = f["copy"]
    rows = ", ".join(f"{int(r['bytes']) >> 30} GiB {float(r['gbps_median']):.1f} GB/s" for r in c["rows"])
    print(f"copy_efficiency     {c['efficiency']:.4f}  = mean d2d ({rows}) = {c['gbps']:.1f} GB/s "
          f"/ {HBM_PEAK_GBPS:.0f} GB/s  (copy.csv, bytes read+written)")
    for dtype, b in f["gemm"].items():
        r = b["row"]
        print(f"gemm {dtype:9s}      {b['efficiency']:.4f}  = {b['tflops']:.1f} / {b['peak']} TFLOP/s, "
              f"best of {b['n_large']} large shapes: {r['label']} {r['m']}x{r['n']}x{r['k']}  (gemm.csv)")
    for p, a in f["attention"].items():
        r = a["row"]
        print(f"attention {p}       {a['efficiency']:.4f}  = {a['tflops']:.1f} / {PEAK_TFLOPS['bf16']} TFLOP/s, "
              f"b={r['batch']} h={r['heads']} s={r['seq']} d={r['head_dim']} causal  (attention.csv)")
    print(f"kernel_launch       {f['launch_us']:.4f} us  (launch_cuda.csv host_issue_us_per_launch median)")
    h = f["h2d"]
    print(f"host_bandwidth      {h['gbps']:.2f} GB/s  (copy.csv h2d_pinned 1 GiB; d2h {h['d2h_gbps']:.2f})")
    m = f["model"]
    b = m["per_dtype"]["bf16"]
    print(f"gemm cost model fit (sim/cost/profile_cost_model.cc) to {b['n']} bf16 rows of gemm.csv: "
          f"tile {m['tile'][0]}x{m['tile'][1]}, k_overhead {m['k_overhead']}, "
          f"mean |log(pred/measured)| {100 * b['mean_abs_log']:.2f}%")
    for dtype, x in m["per_dtype"].items():
        w = x["within"]
        print(f"  gemm.max_efficiency {dtype:9s} {x['eff']:.3f}  ({x['n']} rows, mean |log err| "
              f"{100 * x['mean_abs_log']:.2f}%, within 10/15/25%: {100 * w[0.10]:.0f}/{100 * w[0.15]:.0f}/"
              f"{100 * w[0.25]:.0f}%)")
    print(f"  r_sustained = fitted bf16 {b['eff']:.3f} / best bf16 {f['gemm']['bf16']['efficiency']:.4f} "
          f"= {m['r_sustained']:.4f}")
    bf = f["gemm"]["bf16"]["efficiency"]
    print("ratios used to derive other profiles (tools/gpu/build_profiles.py):")
    for dtype in ("fp16", "tf32", "fp8_e4m3"):
        print(f"  gemm {dtype}/bf16 efficiency   {f['gemm'][dtype]['efficiency'] / bf:.4f}")
    for p in ("fwd", "bwd"):
        print(f"  attention {p} / gemm bf16     {f['attention'][p]['efficiency'] / bf:.4f}")
    print(f"  attention bwd / fwd           "
          f"{f['attention']['bwd']['efficiency'] / f['attention']['fwd']['efficiency']:.4f}")


def wave_efficiency(m, n, tile, sms):
    tiles = math.ceil(m / tile[0]) * math.ceil(n / tile[1])
    waves = math.ceil(tiles / sms)
    return tiles, tiles / (waves * sms)


def pct(x):
    return f"{100 * x:.1f}%"


def shape_table(L, shapes, peak):
    L.append("| dtype | label | M | N | K | measured us | predicted us | pred/meas | measured eff |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    for s in shapes:
        r = s["row"]
        L.append(f"| {r['dtype']} | {r['label']} | {r['m']} | {r['n']} | {r['k']} | {float(r['median_us']):.2f} | "
                 f"{s['pred_us']:.2f} | {math.exp(s['log']):.3f} | "
                 f"{float(r['tflops_median']) / peak:.3f} |")


def model_section(f):
    """The cost-model fit: what sets gemm.max_efficiency, gemm.tile, gemm.k_overhead."""
    m = f["model"]
    b = m["per_dtype"]["bf16"]
    best = f["gemm"]["bf16"]["efficiency"]
    L = []
    L.append("## GEMM cost model fit (sets gemm.max_efficiency, gemm.tile, gemm.k_overhead)")
    L.append("")
    L.append("The simulator prices a GEMM (sim/cost/profile_cost_model.cc) as "
             "`max(flops / (peak x eff), bytes / (hbm_bandwidth x copy_efficiency), kernel_launch)` with "
             "`eff = max_efficiency[precision] x quantization(m, n; tile, sm_count) x k / (k + k_overhead)`; "
             "quantization = m·n / (waves x SMs x tile), with split-K credit when one wave leaves SMs idle. "
             f"The fit evaluates exactly that (`model_time_s` here) with {m['sms']} SMs, the profile's copy "
             f"bandwidth {m['bw_bytes_s'] / 1e9:.0f} GB/s (4,800 GB/s x copy_efficiency), its launch floor "
             f"{m['launch_s'] * 1e6:.2f} us, the dense peaks above, and operand bytes per element "
             + ", ".join(f"{d} {e}" for d, e in GEMM_ELEMENT_BYTES.items())
             + " (as sim/workload/layer_ops.cc counts them).")
    L.append("")
    L.append(f"Method: grid search over tile in {{{', '.join(f'{a}x{c}' for a, c in FIT_TILES)}}}, "
             f"k_overhead in {{{', '.join(str(x) for x in FIT_K_OVERHEADS)}}} and max_efficiency in steps of "
             f"{1 / FIT_EFF_STEPS:.3f}, minimising the mean |log(predicted / measured time)| over all "
             f"{b['n']} bf16 rows of gemm.csv (squares, odd sizes and every transformer GEMM). Then, with that "
             f"tile and k_overhead fixed, max_efficiency alone for the fp16, tf32 and fp8_e4m3 rows. "
             f"'Within 10%' counts shapes with |predicted / measured - 1| <= 0.10. No end-to-end training "
             f"result enters the fit.")
    L.append("")
    L.append("### Fitted values")
    L.append("")
    L.append("| field | value | shapes | mean abs log error | within 10% | within 15% | within 25% | "
             "median pred/meas |")
    L.append("|---|---|---|---|---|---|---|---|")
    L.append(f"| gemm.tile | {m['tile'][0]}x{m['tile'][1]} | {b['n']} (bf16) | | | | | |")
    L.append(f"| gemm.k_overhead | {m['k_overhead']} | {b['n']} (bf16) | | | | | |")
    names = {"bf16": "bf16", "fp16": "fp16", "tf32": "tf32", "fp8_e4m3": "fp8"}
    for dtype, x in m["per_dtype"].items():
        w = x["within"]
        L.append(f"| gemm.max_efficiency.{names[dtype]} | {x['eff']:.3f} | {x['n']} ({dtype}) | "
                 f"{pct(x['mean_abs_log'])} | {pct(w[0.10])} | {pct(w[0.15])} | {pct(w[0.25])} | "
                 f"{x['median_ratio']:.3f} |")
    L.append("")
    L.append(f"**r_sustained** = fitted bf16 max_efficiency / best measured bf16 efficiency = "
             f"{b['eff']:.3f} / {best:.4f} = **{m['r_sustained']:.4f}**. tools/gpu/build_profiles.py "
             f"multiplies the published best-shape (MAMF) GEMM efficiencies of the other GPUs by it.")
    L.append("")
    o = m["old"]
    L.append(f"Before this fit the profile used the best efficiency {best:.3f}, tile "
             f"{OLD_TILE[0]}x{OLD_TILE[1]} and no K overhead: mean abs log error {pct(o['all']['mean_abs_log'])} "
             f"over all {o['all']['n']} bf16 rows ({pct(o['all']['within'][0.15])} within 15%); on the "
             f"{o['large']['n']} rows with >= 2*4096^3 FLOP the median pred/meas was "
             f"{o['large']['median_ratio']:.3f} (time underestimated by "
             f"{100 * (1 - o['large']['median_ratio']):.1f}%).")
    L.append("")
    L.append("### Best of each tile (bf16)")
    L.append("")
    L.append("| tile | best k_overhead | max_efficiency | mean abs log error |")
    L.append("|---|---|---|---|")
    for tile in FIT_TILES:
        g = min((g for g in m["grid"] if g["tile"] == tile), key=lambda g: g["mean_abs_log"])
        L.append(f"| {tile[0]}x{tile[1]} | {g['k_overhead']} | {g['eff']:.3f} | {pct(g['mean_abs_log'])} |")
    L.append("")
    L.append("The error surface is shallow: with the fitted tile, k_overhead over its grid gives "
             + ", ".join(f"{g['k_overhead']}: {pct(g['mean_abs_log'])}"
                         for g in m["grid"] if g["tile"] == m["tile"])
             + ". cuBLAS picks among many tiles per shape, so the fitted tile is an effective one, not the "
             "tile of any particular kernel.")
    L.append("")
    for dtype, x in m["per_dtype"].items():
        L.append(f"### Worst shapes, {dtype}")
        L.append("")
        ranked = sorted(x["shapes"], key=lambda s: s["log"])
        L.append("Model too fast (predicted time below measured), 5 worst:")
        L.append("")
        shape_table(L, ranked[:5], PEAK_TFLOPS[dtype])
        L.append("")
        L.append("Model too slow (predicted time above measured), 5 worst:")
        L.append("")
        shape_table(L, ranked[::-1][:5], PEAK_TFLOPS[dtype])
        L.append("")
    return L


def report(f):
    """fit_report.md: efficiency per measured shape, for the cost model."""
    e = f["env"]
    gemm = f["gemm_rows"]
    L = []
    L.append("# H200 fit report (generated)")
    L.append("")
    L.append(f"Generated by `tools/gpu/fit_profile_h200.py` from the CSV files in this folder "
             f"({e['gpu_name']}, driver {f['driver']}, CUDA {e['cuda_runtime']}, PyTorch {e['torch']}, "
             f"{e['date_utc'][:10]}). Do not edit by hand; rerun the script.")
    L.append("")
    L.append("Efficiency is measured TFLOP/s (median) over the dense datasheet peak: "
             + ", ".join(f"{d} {p}" for d, p in PEAK_TFLOPS.items()) + " TFLOP/s. "
             "`best_eff` is the best efficiency over shapes with at least the work of a 4096^3 GEMM; "
             "`rel` = efficiency / best_eff. `wave_eff` = tiles / (waves x SMs) for the fitted "
             f"{f['model']['tile'][0]}x{f['model']['tile'][1]} output tile on {f['sm_count']} SMs (M rows, "
             "N columns); `pred/meas` = the fitted cost model's time over the measured time.")
    L.append("")

    L.append("## Values the profile takes from these files")
    L.append("")
    L.append("| field | value | from |")
    L.append("|---|---|---|")
    mo = f["model"]
    for dtype, x in mo["per_dtype"].items():
        L.append(f"| gemm.max_efficiency.{dtype} | {x['eff']:.3f} | cost model fit to {x['n']} {dtype} GEMMs "
                 f"(below), mean abs log error {pct(x['mean_abs_log'])} |")
    L.append(f"| gemm.tile | {mo['tile'][0]}x{mo['tile'][1]} | cost model fit to "
             f"{mo['per_dtype']['bf16']['n']} bf16 GEMMs |")
    L.append(f"| gemm.k_overhead | {mo['k_overhead']} | cost model fit to {mo['per_dtype']['bf16']['n']} "
             f"bf16 GEMMs |")
    for p, a in f["attention"].items():
        L.append(f"| attention.{p}_efficiency | {a['efficiency']:.3f} | {a['tflops']:.1f} TFLOP/s, "
                 f"b=2 h=16 s=8192 d=128 causal |")
    c = f["copy"]
    L.append(f"| copy_efficiency | {c['efficiency']:.3f} | d2d {c['gbps']:.0f} GB/s (mean of 1 and 4 GiB) |")
    L.append(f"| kernel_launch | {f['launch_us']:.2f} us | launch_cuda.csv host issue |")
    L.append(f"| host_bandwidth | {f['h2d']['gbps']:.1f} GB/s | h2d pinned 1 GiB |")
    L.append("")
    L.append("Best measured efficiency per precision (shapes with at least the work of a 4096^3 GEMM), "
             "the reference for r_sustained and for the ratios build_profiles.py applies to other GPUs:")
    L.append("")
    L.append("| precision | best_eff | from |")
    L.append("|---|---|---|")
    for dtype, b in f["gemm"].items():
        r = b["row"]
        L.append(f"| {dtype} | {b['efficiency']:.4f} | {b['tflops']:.1f} TFLOP/s, "
                 f"`{r['label']}` {r['m']}x{r['n']}x{r['k']} |")
    L.append("")
    L += model_section(f)

    L.append("## GEMM efficiency by size (square and odd M)")
    L.append("")
    dtypes = list(PEAK_TFLOPS)
    L.append("| M x N x K | " + " | ".join(dtypes) + " |")
    L.append("|---|" + "---|" * len(dtypes) + "")
    sizes = []
    for r in gemm:
        if r["label"] in ("square", "odd"):
            key = (int(r["m"]), int(r["n"]), int(r["k"]))
            if key not in sizes:
                sizes.append(key)
    sizes.sort(key=lambda s: (s[1] != s[0], s[0]))
    for s in sizes:
        cells = []
        for d in dtypes:
            rr = [r for r in gemm if r["dtype"] == d and (int(r["m"]), int(r["n"]), int(r["k"])) == s
                  and r["label"] in ("square", "odd")]
            cells.append(f"{float(rr[0]['tflops_median']) / PEAK_TFLOPS[d]:.3f}" if rr else "")
        L.append(f"| {s[0]}x{s[1]}x{s[2]} | " + " | ".join(cells) + " |")
    L.append("")

    L.append("## Transformer GEMMs (bf16, every measured shape)")
    L.append("")
    L.append("Labels are model/tp/op/pass: fwd (M = tokens, N = out features, K = in features), "
             "dgrad (tokens x in), wgrad (out x in, K = tokens); fwd appears at 2048 and 8192 tokens.")
    L.append("")
    maxe = f["gemm"]["bf16"]["efficiency"]
    tile, sms = f["model"]["tile"], f["sm_count"]
    ratio = {id(s["row"]): math.exp(s["log"]) for s in f["model"]["per_dtype"]["bf16"]["shapes"]}
    rows = [r for r in gemm if r["dtype"] == "bf16" and "/" in r["label"]]
    L.append("| label | M | N | K | TFLOP/s | eff | rel | tiles | wave_eff | pred/meas |")
    L.append("|---|---|---|---|---|---|---|---|---|---|")
    rels, waves = [], []
    for r in rows:
        t = float(r["tflops_median"])
        eff = t / PEAK_TFLOPS["bf16"]
        tiles, we = wave_efficiency(int(r["m"]), int(r["n"]), tile, sms)
        rels.append(eff / maxe)
        waves.append(we)
        L.append(f"| {r['label']} | {r['m']} | {r['n']} | {r['k']} | {t:.1f} | {eff:.3f} | "
                 f"{eff / maxe:.3f} | {tiles} | {we:.3f} | {ratio[id(r)]:.3f} |")
    L.append("")

    L.append("### Summary by model and pass (bf16)")
    L.append("")
    L.append("| group | shapes | median eff | min eff | max eff | median rel (to best_eff) |")
    L.append("|---|---|---|---|---|---|")
    groups = {}
    for r in rows:
        model = r["label"].split("/")[0]
        p = r["label"].split("/")[-1]
        groups.setdefault(f"{model} {p}", []).append(float(r["tflops_median"]) / PEAK_TFLOPS["bf16"])
    for g, v in groups.items():
        L.append(f"| {g} | {len(v)} | {statistics.median(v):.3f} | {min(v):.3f} | {max(v):.3f} | "
                 f"{statistics.median(v) / maxe:.3f} |")
    L.append("")
    L.append(f"Across all {len(rels)} bf16 transformer shapes: median rel {statistics.median(rels):.3f}, "
             f"min {min(rels):.3f}, max {max(rels):.3f}; "
             f"{sum(1 for x in rels if x >= 0.9)} of {len(rels)} are within 10% of best_eff. "
             f"Correlation of rel with wave_eff: {correlation(rels, waves):.2f}.")
    L.append("")

    L.append("By reduction depth K and by work (bf16 transformer shapes):")
    L.append("")
    L.append("| bucket | shapes | median rel | min rel | median wave_eff |")
    L.append("|---|---|---|---|---|")
    buckets = [("K < 1024", lambda r: int(r["k"]) < 1024),
               ("1024 <= K < 4096", lambda r: 1024 <= int(r["k"]) < 4096),
               ("K >= 4096", lambda r: int(r["k"]) >= 4096),
               ("work < 2*4096^3 FLOP", lambda r: gemm_flops(r) < LARGE_FLOPS),
               ("work >= 2*4096^3 FLOP", lambda r: gemm_flops(r) >= LARGE_FLOPS)]
    for name, pred in buckets:
        sel = [(rel, we) for rel, we, r in zip(rels, waves, rows) if pred(r)]
        if sel:
            L.append(f"| {name} | {len(sel)} | {statistics.median(x for x, _ in sel):.3f} | "
                     f"{min(x for x, _ in sel):.3f} | {statistics.median(w for _, w in sel):.3f} |")
    L.append("")
    L.append("Lowest ten (bf16):")
    L.append("")
    L.append("| label | M | N | K | eff | rel | wave_eff |")
    L.append("|---|---|---|---|---|---|---|")
    ranked = sorted(zip(rels, waves, rows), key=lambda t: t[0])[:10]
    for rel, we, r in ranked:
        L.append(f"| {r['label']} | {r['m']} | {r['n']} | {r['k']} | {rel * maxe:.3f} | {rel:.3f} | {we:.3f} |")
    L.append("")

    L.append("### Other precisions on the same shapes (tp1 and tp8)")
    L.append("")
    L.append("| dtype | shapes | median eff | min eff | max eff | best_eff | median rel |")
    L.append("|---|---|---|---|---|---|---|")
    for d in dtypes:
        v = [float(r["tflops_median"]) / PEAK_TFLOPS[d] for r in gemm if r["dtype"] == d and "/" in r["label"]
             and ("/tp1/" in r["label"] or "/tp8/" in r["label"])]
        me = f["gemm"][d]["efficiency"]
        L.append(f"| {d} | {len(v)} | {statistics.median(v):.3f} | {min(v):.3f} | {max(v):.3f} | "
                 f"{me:.3f} | {statistics.median(v) / me:.3f} |")
    L.append("")

    L.append("## Fused attention (PyTorch SDPA, flash backend), fraction of bf16 peak")
    L.append("")
    L.append("| pass | batch | heads | kv_heads | seq | head_dim | causal | TFLOP/s | eff |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    for r in f["attention_rows"]:
        t = float(r["tflops_median"])
        L.append(f"| {r['pass']} | {r['batch']} | {r['heads']} | {r['kv_heads']} | {r['seq']} | "
                 f"{r['head_dim']} | {r['causal']} | {t:.1f} | {t / PEAK_TFLOPS['bf16']:.3f} |")
    L.append("")
    L.append("FLOPs as in FlashAttention's benchmarks: forward 4·b·h·s²·d (halved when causal), "
             "backward 2.5x forward; backward time = (fwd+bwd) - fwd.")
    L.append("")

    L.append("## Memory-bound operations, fraction of the 4,800 GB/s datasheet HBM bandwidth")
    L.append("")
    L.append("Largest size of each op (bytes moved = inputs read once + outputs written once); "
             "the copy_efficiency of the profile comes from copy.csv instead.")
    L.append("")
    L.append("| op | rows x cols | GB/s | fraction |")
    L.append("|---|---|---|---|")
    biggest = {}
    for r in f["memops_rows"]:
        if r["op"] not in biggest or int(r["bytes_moved"]) > int(biggest[r["op"]]["bytes_moved"]):
            biggest[r["op"]] = r
    for op, r in biggest.items():
        g = float(r["gbps_median"])
        L.append(f"| {op} | {r['rows']}x{r['cols']} | {g:.0f} | {g / HBM_PEAK_GBPS:.3f} |")
    L.append("")
    return "\n".join(L)


def correlation(x, y):
    mx, my = statistics.mean(x), statistics.mean(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else float("nan")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=DEFAULT_DIR, help="measurement folder")
    ap.add_argument("--report", default=None, help="where to write fit_report.md (default: in --dir)")
    ap.add_argument("--no-report", action="store_true")
    ap.add_argument("--json", action="store_true", help="print the derived values as JSON instead")
    a = ap.parse_args(argv)
    f = fit(a.dir)
    if a.json:
        slim = {"sm_count": f["sm_count"], "total_memory_bytes": f["total_memory_bytes"],
                "copy_efficiency": f["copy"]["efficiency"], "host_gbps": f["h2d"]["gbps"],
                "launch_us": f["launch_us"],
                "gemm_efficiency": {d: b["efficiency"] for d, b in f["gemm"].items()},
                "attention_efficiency": {p: v["efficiency"] for p, v in f["attention"].items()},
                "gemm_model": {"tile": list(f["model"]["tile"]), "k_overhead": f["model"]["k_overhead"],
                               "max_efficiency": {d: x["eff"] for d, x in f["model"]["per_dtype"].items()},
                               "mean_abs_log_error": {d: x["mean_abs_log"]
                                                      for d, x in f["model"]["per_dtype"].items()},
                               "r_sustained": f["model"]["r_sustained"]}}
        json.dump(slim, sys.stdout, indent=1)
        print()
    else:
        print_values(f)
    if not a.no_report:
        path = a.report or os.path.join(a.dir, "fit_report.md")
        with open(path, "w") as out:
            out.write(report(f))
        print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
