#!/usr/bin/env python3
"""Cross-check the shipped profiles' GEMM model against published per-shape
cuBLASLt measurements of the same GPU.

The datasheet profiles take their sustained GEMM max_efficiency from a
published best-shape (MAMF) figure times the H200's measured sustained-to-best
ratio (tools/gpu/build_profiles.py). Azure's AI-benchmarking-guide also
publishes cuBLASLt TFLOP/s at fixed shapes for several GPUs (random init,
10k warm-up: sustained). This prints, per GPU and shape, what the profile's
GEMM model (sim/cost/profile_cost_model.cc, as fit_profile_h200.model_time_s
computes it) predicts against the published figure, and the max_efficiency a
fit to the published shapes gives, with the profile's own tile and k_overhead
and with the tile and k_overhead free (the same grid as calibrate's fit).

Nothing here writes a profile: it is the evidence for choosing between the
two sources of a GPU's efficiency (docs/validation.md, "Published per-shape
GEMM figures").

    python3 tools/gpu/crosscheck_published_gemm.py            # every GPU
    python3 tools/gpu/crosscheck_published_gemm.py a100-sxm-80gb
"""
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fit_profile_h200 as fit  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
SRC = ("Azure/AI-benchmarking-guide cuBLASLt GEMM results (random init, 10k warm-up), as transcribed in "
       "shared/reference/hardware.md §4b and hardware.json")

# (m, n, k) -> TFLOP/s, per published series: profile, profile precision key, the series' name.
PUBLISHED = [
    ("a100-sxm-80gb", "fp16", "ND A100 v4 (A100-SXM4-80GB), FP16",
     {(1024, 1024, 1024): 119.4, (2048, 2048, 2048): 221.8, (4096, 4096, 4096): 228.0,
      (8192, 8192, 8192): 253.7, (16384, 16384, 16384): 256.5, (1024, 2145, 1024): 132.8,
      (6144, 12288, 12288): 250.8, (802816, 192, 768): 157.8}),
    ("h100-sxm-80gb", "fp8", "ND H100 v5 (H100 80GB HBM3 SXM), FP8",
     {(1024, 1024, 1024): 274.1, (2048, 2048, 2048): 1011.3, (4096, 4096, 4096): 1216.9,
      (8192, 8192, 8192): 1290.1, (16384, 16384, 16384): 1377.3, (32768, 32768, 32768): 1382.2,
      (1024, 2145, 1024): 410.7, (6144, 12288, 12288): 1351.4, (802816, 192, 768): 663.8}),
    ("h200-sxm-141gb", "fp8", "ND H200 v5 (H200 141GB), FP8",
     {(1024, 1024, 1024): 290.8, (2048, 2048, 2048): 1013.4, (4096, 4096, 4096): 1249.1,
      (8192, 8192, 8192): 1300.6, (16384, 16384, 16384): 1366.3, (32768, 32768, 32768): 1349.5,
      (1024, 2145, 1024): 407.9, (6144, 12288, 12288): 1318.0, (802816, 192, 768): 717.5}),
    ("gb200", "fp8", "ND GB200 v6 (GB200 185GB), FP8",
     {(1024, 1024, 1024): 489.2, (2048, 2048, 2048): 2243.6, (4096, 4096, 4096): 2834.6,
      (8192, 8192, 8192): 2876.6, (16384, 16384, 16384): 2906.9, (32768, 32768, 32768): 2825.6,
      (1024, 2145, 1024): 1022.2, (6144, 12288, 12288): 2895.6, (802816, 192, 768): 1459.5}),
]

# Shapes below this many FLOPs are latency- and occupancy-bound in these
# benchmarks (1024^3 runs for tens of microseconds): the "large" fit leaves them out.
LARGE_FLOPS = 2.0 * 2048 ** 3


def number(text):
    return float(str(text).split()[0])


def load_profile(name):
    path = os.path.join(REPO, "profiles", name + ".json")
    with open(path) as f:
        return json.load(f)


def model_of(profile, precision):
    g = profile["gemm"]
    return {
        "eff": float(g["max_efficiency"][precision]["value"]),
        "tile": tuple(g["tile"]["value"]),
        "k_overhead": int(g["k_overhead"]["value"]),
        "sms": int(profile["sm_count"]["value"]),
        "peak": number(profile["peak_flops"][precision]["value"]),
        "bw": number(profile["hbm_bandwidth"]["value"]) * 1e9 * float(profile["copy_efficiency"]["value"]),
        "launch": number(profile["kernel_launch"]["value"]) * 1e-6,
    }


def rows_for(shapes, peak):
    """Published figures as fit_profile_h200's gemm.csv rows (one dtype key, 'x', whose peak and element
    size this sets for the fit)."""
    fit.PEAK_TFLOPS["x"] = peak
    fit.GEMM_ELEMENT_BYTES["x"] = 2
    out = []
    for (m, n, k), tflops in sorted(shapes.items()):
        out.append({"dtype": "x", "m": m, "n": n, "k": k, "median_us": 2.0 * m * n * k / (tflops * 1e12) * 1e6})
    return out


def fit_published(shapes, mdl, large_only=True):
    """max_efficiency of the GEMM model with mdl's tile and k_overhead fitted to published shapes
    ({(m, n, k): TFLOP/s}), the shapes of >= LARGE_FLOPS only unless large_only is False: (efficiency,
    mean |log error|, shapes fitted). mdl: peak (TFLOP/s), sms, bw (bytes/s), launch (s), tile, k_overhead."""
    rows = rows_for(shapes, mdl["peak"])
    if large_only:
        rows = large_rows(rows)
    eff, err = fit_eff(rows, mdl, mdl["tile"], mdl["k_overhead"])
    return eff, err, len(rows)


def large_rows(rows):
    """The rows of >= LARGE_FLOPS."""
    return [r for r in rows if 2.0 * r["m"] * r["n"] * r["k"] >= LARGE_FLOPS]


def fit_eff(rows, mdl, tile, k_overhead):
    base, floor, meas = [], [], []
    for r in rows:
        m, n, k = r["m"], r["n"], r["k"]
        s = fit.quantization(m, n, k, 1, tile, mdl["sms"]) * k / (k + k_overhead)
        base.append(2.0 * m * n * k / (mdl["peak"] * 1e12 * s))
        floor.append(max((m * k + k * n + m * n) * 2 / mdl["bw"], mdl["launch"]))
        meas.append(r["median_us"] * 1e-6)
    return fit._fit_eff(base, floor, meas)


def report(profile_name, precision, series, shapes):
    mdl = model_of(load_profile(profile_name), precision)
    rows = rows_for(shapes, mdl["peak"])
    print(f"{profile_name} {precision}: {series}")
    print(f"  profile: max_efficiency {mdl['eff']:.3f}, tile {mdl['tile'][0]}x{mdl['tile'][1]}, "
          f"k_overhead {mdl['k_overhead']}, peak {mdl['peak']:g} TFLOP/s")
    logs = []
    for r in rows:
        t = fit.model_time_s(r["m"], r["n"], r["k"], "x", mdl["eff"], mdl["tile"], mdl["k_overhead"], mdl["sms"],
                             mdl["bw"], mdl["launch"])
        published = 2.0 * r["m"] * r["n"] * r["k"] / (r["median_us"] * 1e-6) / 1e12
        predicted = 2.0 * r["m"] * r["n"] * r["k"] / t / 1e12
        logs.append(math.log(t / (r["median_us"] * 1e-6)))
        print(f"  {r['m']:>6}x{r['n']:>5}x{r['k']:>5}  published {published:7.1f} ({published / mdl['peak']:.3f})  "
              f"model {predicted:7.1f} ({predicted / mdl['peak']:.3f})  {100 * (predicted / published - 1):+6.1f}%")
    print(f"  model vs published: mean |log error| {100 * sum(abs(x) for x in logs) / len(logs):.1f}%")
    large = large_rows(rows)
    for what, sel in (("all shapes", rows), (f"shapes of >= 2x2048^3 FLOPs ({len(large)})", large)):
        eff, err = fit_eff(sel, mdl, mdl["tile"], mdl["k_overhead"])
        grid = [(fit_eff(sel, mdl, tile, kov), tile, kov) for tile in fit.FIT_TILES for kov in fit.FIT_K_OVERHEADS]
        (geff, gerr), gtile, gkov = min(grid, key=lambda g: g[0][1])
        print(f"  fit to {what}: max_efficiency {eff:.3f} with the profile's tile (mean |log| {100 * err:.1f}%); "
              f"free tile {gtile[0]}x{gtile[1]}, k_overhead {gkov}: {geff:.3f} ({100 * gerr:.1f}%)")
    print()


def main(argv):
    wanted = set(argv[1:])
    print(f"source: {SRC}\n")
    for profile_name, precision, series, shapes in PUBLISHED:
        if wanted and profile_name not in wanted:
            continue
        report(profile_name, precision, series, shapes)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
