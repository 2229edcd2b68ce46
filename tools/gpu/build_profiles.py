#!/usr/bin/env python3
"""Write the hardware profiles profiles/*.json from their cited sources.

Every number in a profile is {"value": ..., "source": "..."} (docs/formats.md).
The figures below are copied from shared/reference/hardware.md and
hardware.json (which name the original datasheets and measurements) or come
from our own H200 measurements through tools/gpu/fit_profile_h200.py. Where a
GPU has no published figure, the value is derived from a named measurement on
the closest GPU, and the derivation is written out here and in the source
string. GEMM efficiencies are sustained ones: the H200's are a fit of the
cost model to our measured GEMMs; every other GPU's is its published
best-shape figure times the H200 ratio of that fit to the best measured shape
(r_sustained), with the H200 fit's tile and k_overhead. Nothing is fitted to
end-to-end training results.

Standard library only.

usage: build_profiles.py [--out DIR] [--check]
  --check  regenerate in memory and fail (exit 1) if a file on disk differs
"""
import argparse
import csv
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fit_profile_h200 as h200fit  # noqa: E402
import crosscheck_published_gemm as published_gemm  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
GEN = "tools/gpu/build_profiles.py"
HW = "shared/reference/hardware.md"
HWJ = "shared/reference/hardware.json"
FIT = "tools/gpu/fit_profile_h200.py on profiles/measured/h200-sxm-141gb-2026-11-29/"
# stacksim calibrate's full sweep on the same H200 (cuBLASLt GEMMs, CUDA-event
# timing): the GEMM ratios and the launch cost of every datasheet profile.
CAL_DIR = "profiles/measured/h200-sxm-141gb-2026-11-30-calibrate/full"
CAL = f"stacksim calibrate on H200 ({CAL_DIR}/"

# ---------------------------------------------------------------------------
# Cited figures
# ---------------------------------------------------------------------------

# nccl-tests all_reduce busbw (GB/s) at 1 KiB .. 8 GiB, powers of two, in-place.
SIZES = [1 << i for i in range(10, 34)]
AZURE_AR = {
    # Azure/AI-benchmarking-guide; hardware.md §3a, hardware.json collectives_measured
    "h100": [0.07, 0.14, 0.27, 0.53, 0.95, 1.71, 2.72, 5.4, 10.86, 21.35, 43.7, 81.93, 128.73,
             172.13, 234.45, 295.53, 361.78, 400.61, 423.38, 438.46, 466.35, 472.36, 475.54, 478.87],
    "h200": [0.06, 0.12, 0.23, 0.47, 0.93, 1.84, 3.72, 7.39, 14.75, 29.38, 52.96, 88.78, 138.44,
             181.94, 240.41, 300.91, 368.11, 412.45, 432.24, 442.72, 467.58, 472.57, 477.41, 479.98],
    "a100": [0.04, 0.08, 0.17, 0.33, 0.67, 1.37, 2.7, 5.15, 10.11, 19.24, 36.22, 53.54, 71.43,
             89.99, 109.22, 132.77, 166.63, 174.18, 213.87, 221.58, 228.1, 230.22, 230.48, 231.58],
    "gb200x4": [0.1, 0.19, 0.38, 0.76, 1.46, 2.88, 5.71, 11.29, 22.41, 44.07, 80.48, 110.43, 146.27,
                253.46, 331.09, 422.62, 550.73, 574.19, 593.53, 618.74, 646.87, 666.63, 673.06, 679.61],
}
AZURE_SRC = {
    "h100": "Azure/AI-benchmarking-guide 'Azure Results/ND_H100_v5_results.md': 8x H100 SXM (NVLink4/NVSwitch), "
            "NCCL 2.18.5, all_reduce in-place, labelled NVLS; all 24 points, sizes read as powers of two "
            f"({HW} §3a, {HWJ} azure-ndh100v5-allreduce-1node)",
    "h200": "Azure/AI-benchmarking-guide Azure_Results/ND_H200_v5_results.md: 8x H200 (NVLink4/NVSwitch), "
            "NCCL 2.20.5, all_reduce in-place, labelled NVLS; all 24 points, sizes read as powers of two "
            f"({HW} §3a, {HWJ} azure-ndh200v5-allreduce-1node)",
    "a100": "Azure/AI-benchmarking-guide Azure_Results/ND_A100_v4_results.md: 8x A100-SXM4-80GB "
            "(NVLink3/NVSwitch), NCCL 2.18.5, all_reduce in-place (labelled NVLS, but A100 has no NVLink "
            f"SHARP: ring/tree); all 24 points, sizes read as powers of two ({HW} §3a, {HWJ} "
            "azure-nda100v4-allreduce-1node)",
    "gb200x4": "Azure/AI-benchmarking-guide Azure_Results/ND_GB200_v6_results.md: one host = 4 GB200 GPUs of "
               "an NVL72 tray (NVLink5), NCCL 2.25.1, Ring, all_reduce in-place (4-GPU scope: "
               f"Azure/AI-benchmarking-guide#7); all 24 points ({HW} §3a, {HWJ} azure-ndgb200v6-allreduce-1host)",
}
HOPPER_RING_PEAK = 370.0  # nccl-tests#212 (sjeaugey): ring / non-allreduce busbw ~370 GB/s on 8x H100;
                          # nccl#1455: ring 365-370 for 2-8 GPUs at 2-4 GB. hardware.md §3b
H800_AR_PEAK = 215.0      # nccl#1374: 8x H800 (400 GB/s NVLink) all_reduce busbw 215 GB/s. hardware.md §3b
GB200_MNNVL_AR = 811.0    # lixueduan.com/posts/ai/13-gb200-mnnvl-nccl-test: 2 trays = 8 GB200, all_reduce
                          # busbw 811 GB/s. hardware.md §3b

# nccl-tests#123 (hardware.md §3c): DGX A100, NCCL_ALGO=Ring, 1 channel, 8-128 B all_reduce (us)
# against GPU count; a ring all_reduce takes 2(n-1) steps.
RING_LATENCY_A100 = {2: 10.0, 3: 13.76, 4: 16.88, 5: 20.8, 6: 25.2, 7: 29.5, 8: 33.7}
# nccl#652 (hardware.md §3c): 32 nodes x 8 A100, 4x HDR per node, 4-128 B all_reduce 62-71 us.
MULTINODE_A100 = {"nodes": 32, "ppn": 8, "lo_us": 62.0, "hi_us": 71.0}
# NCCL src/graph/tuning.cc (NVIDIA/nccl, commit b6475625) per-step hwLat for Ring LL128:
# NVLink 1.9 us, PCI 2.5 us; NET Ring LL 2.7 / LL128 4.0 us.
NCCL_HWLAT_LL128 = {"nvlink": 1.9, "pci": 2.5}

# stas00/ml-engineering compute/accelerator/README.md, MAMF table (hardware.md §4a): (TFLOP/s, peak)
MAMF = {
    "a100_sxm_bf16": (271.2, 312.0), "a100_pcie_bf16": (252.9, 312.0),
    "h100_sxm_bf16": (794.5, 989.0), "h100_sxm_fp8": (1402.6, 1979.0),
    "b200_bf16": (1745.0, 2250.0), "b200_fp8": (3432.5, 4500.0),
    "gb200_bf16": (1822.0, 2500.0), "gb200_fp8": (3615.6, 5000.0),
}
MAMF_SRC = f"{HW} §4a (stas00/ml-engineering compute/accelerator/README.md, Maximum Achievable Matmul FLOPS table)"

# Azure STREAM copy (TB/s) and datasheet peak (TB/s), hardware.md §4d
STREAM = {"a100": (1.61, 2.039), "h100": (2.90, 3.35), "h200": (4.01, 4.8)}
STREAM_SRC = f"{HW} §4d (Azure/AI-benchmarking-guide HBM Bandwidth, STREAM copy)"

# Host-to-device bandwidth (GB/s), hardware.md §4d
NVBW = {"a100": 26.28, "h100": 51.0, "h200": 52.0, "gb200": 201.0}
NVBW_SRC = f"{HW} §4d (Azure/AI-benchmarking-guide nvbandwidth host-to-device)"
VOLTAGEPARK_H2D = 54.8  # hardware.md §4d: Voltage Park H100, host-to-device over PCIe Gen5 x16

# Azure FlashAttention-2 benchmark (hardware.md §4c): the guide runs flash-attention's
# benchmarks/benchmark_flash_attention.py at b=2, s=8192 and reports the "fwd + bwd" TFLOP/s
# (Benchmarks/NVIDIA/FlashAttention.py in Azure/AI-benchmarking-guide); hardware.json attention_measured
# azure-fa2. key: (fwd+bwd TFLOP/s, head_dim, GPU as the guide names it, dense bf16 peak TFLOP/s used here)
AZURE_FA2 = {
    "a100": (179.5, 64, "A100-SXM4-80GB (ND A100 v4)", 312.0),
    "h100": (327.9, 128, "H100 SXM (ND H100 v5)", 989.4),
    "h200": (329.3, 128, "H200 (ND H200 v5)", 989.4),
    "gb200": (373.9, 128, "GB200 (ND GB200 v6)", 2500.0),
}

# Meta's Grand Teton H100 (the torchtitan benchmark GPUs, profile h100-sxm-96gb): an SXM5 H100 with 96 GB HBM2e
# and a 500 W default power limit instead of 700 W.
TT_BENCH = ("pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md, Hardware: 'Grand Teton platform', "
            "'96GB HBM2e with 2.4 TB/sec peak memory bandwidth', 'We used the default 500W power limit'")
TT_HBM_GBPS = 2400.0
# torchtitan's own dense bf16 peaks (torchtitan/utils.py get_peak_flops at 9dec370, the benchmarked commit: H100 NVL
# 835e12, H100 SXM 989e12) and the benchmark doc's footnote 2 (also docs/performance.md at 9dec370): 'the actual
# peak TFLOPs number is between SXM and NVL, and we don't know its exact value'.
TT_PEAK_SRC = ("pytorch/torchtitan torchtitan/utils.py get_peak_flops at 9dec370 (H100 NVL 835e12, SXM 989e12 dense "
               "bf16) and the benchmark doc's footnote 2 ('HBM2e-based SXM H100 with lower TDP, the actual peak TFLOPs "
               "number is between SXM and NVL, and we don't know its exact value')")
# torchao's roofline model of the same GPUs (pytorch/ao torchao/testing/training/roofline_utils.py, gpu_name_to_specs
# 'NVIDIA H100'): peak_mem_bw 2.4e12 'custom to Meta's H100 variant', pct_achievable_mem_bw 0.92 ('pointwise triton
# kernels with large inputs ... would hit about 2.2k GBPS on Meta's H100 variant').
TORCHAO_MEM_FRACTION = 0.92
TORCHAO_SRC = ("pytorch/ao torchao/testing/training/roofline_utils.py gpu_name_to_specs['NVIDIA H100']: "
               "peak_mem_bw_bytes_sec 2.4e12 'custom to Meta's H100 variant', pct_achievable_mem_bw 0.92 "
               "('pointwise triton kernels with large inputs ... would hit about 2.2k GBPS on Meta's H100 variant')")

NIC_NDR = (47.0, 50.0)  # nccl-tests#290 (AddyLaddy): expect 46-48 GB/s per 400 Gb/s NDR NIC (mid 47)
NIC_HDR = (96.0, 100.0)  # nccl-tests#119: 3 nodes x 8 A100, 4x HDR: peak ~96 of 100 GB/s (avg 84.8 over sizes)

# Eager (generic PyTorch) memory-bound kernels on our H200: profile key -> (memops.csv op, GB/s of its largest
# row, 32768 x 8192 bf16, rounded; None: at copy speed), over the device copy measured in the same run
# (copy.csv d2d, mean of the medians at 1 and 4 GiB), rounded. These are the figures the workload generator
# carried in code before the profiles did (sim/workload/layer_ops.cc); eager_kernels() checks them against
# the CSVs. No other GPU has a published eager-kernel measurement.
EAGER_COPY_GBPS = 4152
EAGER_GBPS = {
    "elementwise": ("add", None, None),
    "layer_norm": ("layernorm", 2424, None),
    "rms_norm": ("rmsnorm", 2681, None),
    "gelu": ("gelu_tanh", 3621, None),
    "gated_activation": ("swiglu_unfused", 1137, "silu(a) * b as two eager kernels"),
    "softmax": ("softmax", 1071, None),
    "dropout": ("dropout", 2415, None),
    "cast": ("cast_bf16_to_fp32", 2115, None),
}
EAGER_ROWS, EAGER_COLS = 32768, 8192

GIB_NOTE = ("read as GiB: NVIDIA sizes HBM in binary units (our H200, sold as 141 GB, shows 143,771 MiB = "
            "140.4 GiB in nvidia-smi, profiles/measured/h200-sxm-141gb-2026-11-29/log.txt)")


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

def v(value, source):
    return {"value": value, "source": source}


def r3(x):
    return round(x, 3)


def size_label(n):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def g(x, digits):
    s = f"{x:.{digits}g}"
    return s if "e" not in s else f"{x:.{digits}f}"


def curve(values, gpus, source, measured=False):
    """busbw points; measured values as published, derived ones to 4 significant digits."""
    assert len(values) == len(SIZES) and all(x > 0 for x in values)
    digits = 6 if measured else 4
    return {"gpus": gpus, "source": source,
            "busbw": [[size_label(n), f"{g(b, digits)} GB/s"] for n, b in zip(SIZES, values)]}


def scaled(values, factor):
    return [x * factor for x in values]


def capped(values, cap):
    return [min(x, cap) for x in values]


def fit_line(points):
    xs = [2 * (n - 1) for n in points]
    ys = list(points.values())
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return slope, my - slope * mx


# ---------------------------------------------------------------------------
# Derived quantities (each printed by --explain)
# ---------------------------------------------------------------------------

class Derived:
    def __init__(self, fit):
        self.fit = fit
        # PyTorch bootstrap (fit): its best-shape GEMM efficiencies are measured
        # the way the published best-shape (MAMF) figures are, with torch.mm, and
        # its attention is the frameworks' fused kernel (SDPA flash).
        ge = {d: b["efficiency"] for d, b in fit["gemm"].items()}
        self.h200_gemm = ge
        ae = {p: a["efficiency"] for p, a in fit["attention"].items()}
        self.h200_attn = ae
        self.r_attn_fwd = ae["fwd"] / ge["bf16"]
        self.r_attn_bwd = ae["bwd"] / ge["bf16"]
        self.r_bwd_fwd = ae["bwd"] / ae["fwd"]
        # stacksim calibrate (cal): the GEMM cost model fit (tile, k_overhead,
        # sustained max_efficiency), the best-shape ratios between precisions
        # and the launch cost. r_sustained = calibrate's fitted bf16
        # max_efficiency / PyTorch's best measured bf16 shape on the same GPU:
        # it turns a published torch.mm best-shape figure into the efficiency
        # calibrate's fit would give on that GPU.
        self.cal = calibrate_fit(os.path.join(REPO, CAL_DIR))
        cb = {d: b["efficiency"] for d, b in self.cal["gemm"].items()}
        self.cal_gemm = cb
        self.r_fp16 = cb["fp16"] / cb["bf16"]
        self.r_tf32 = cb["tf32"] / cb["bf16"]
        self.r_fp8 = cb["fp8_e4m3"] / cb["bf16"]
        self.model = self.cal["model"]
        self.r_sus = self.model["per_dtype"]["bf16"]["eff"] / ge["bf16"]
        # FP8's own k_overhead: the fit with it over the fit with bf16's
        # k_overhead, which r_sustained (from bf16) assumes.
        f8 = self.model["per_dtype"]["fp8_e4m3"]
        self.fp8_kov = f8["k_overhead"]
        self.r_fp8_kov = f8["eff"] / f8["eff_at_shape_k"]

        self.mamf = {k: t / p for k, (t, p) in MAMF.items()}
        self.pcie_power = self.mamf["a100_pcie_bf16"] / self.mamf["a100_sxm_bf16"]

        # FA2 (Azure): fwd+bwd = 3.5 F / (F/f + 2.5 F/b) as a fraction of peak c (flash-attention's
        # benchmark counts the bwd as 2.5x the fwd FLOPs); with b = r f (r = H200 measured bwd/fwd):
        # f = c (1 + 2.5 / r) / 3.5. key -> (c, f, b)
        self.fa2 = {}
        for k, (t, _hd, _gpu, peak) in AZURE_FA2.items():
            c = t / peak
            f = c * (1 + 2.5 / self.r_bwd_fwd) / 3.5
            self.fa2[k] = (c, f, f * self.r_bwd_fwd)
        self.a100_fa2_combined, self.a100_attn_fwd, self.a100_attn_bwd = self.fa2["a100"]

        self.ring_slope, self.ring_base = fit_line(RING_LATENCY_A100)
        # NCCL's tree latency model (tuning.cc): base + 2 ((ppn-1) intra + log2(nodes) inter).
        m = MULTINODE_A100
        log2n = m["nodes"].bit_length() - 1

        def inter(t):
            return ((t - self.ring_base) / 2 - (m["ppn"] - 1) * self.ring_slope) / log2n
        self.inter_lat = inter((m["lo_us"] + m["hi_us"]) / 2)
        self.inter_lat_range = (inter(m["lo_us"]), inter(m["hi_us"]))
        self.pcie_lat = self.ring_slope * NCCL_HWLAT_LL128["pci"] / NCCL_HWLAT_LL128["nvlink"]

    def explain(self):
        print("H200 measured ratios:")
        print(f"  fp16/bf16 {self.r_fp16:.4f}  tf32/bf16 {self.r_tf32:.4f}  fp8/bf16 {self.r_fp8:.4f}")
        print(f"  attention fwd/gemm {self.r_attn_fwd:.4f}  bwd/gemm {self.r_attn_bwd:.4f}  "
              f"bwd/fwd {self.r_bwd_fwd:.4f}")
        m = self.model
        print(f"  GEMM cost model fit: tile {m['tile'][0]}x{m['tile'][1]}, k_overhead {m['k_overhead']}, "
              f"r_sustained {self.r_sus:.4f} (calibrate's fitted bf16 {m['per_dtype']['bf16']['eff']:.3f} / "
              f"PyTorch best {self.h200_gemm['bf16']:.4f})")
        print("MAMF efficiencies: " + ", ".join(f"{k} {x:.4f}" for k, x in self.mamf.items()))
        print(f"A100 PCIe / SXM MAMF ratio {self.pcie_power:.4f}")
        for k, (c, f, b) in self.fa2.items():
            print(f"{k} FA2 fwd+bwd {c:.4f} -> fwd {f:.4f} bwd {b:.4f}")
        print(f"A100 ring latency fit: {self.ring_base:.2f} us + {self.ring_slope:.3f} us/step")
        print(f"inter-node per-step latency {self.inter_lat:.2f} us (range {self.inter_lat_range[0]:.2f}"
              f"-{self.inter_lat_range[1]:.2f})")
        print(f"PCIe per-step latency {self.pcie_lat:.2f} us")


def eager_kernels(d, measured_here):
    """eager_kernels section: each family's H200-measured eager bandwidth over the device copy; on other GPUs
    the same fraction, applied as it is."""
    f = d.fit
    e = f["env"]
    rows = {r["op"]: r for r in f["memops_rows"]
            if int(r["rows"]) == EAGER_ROWS and int(r["cols"]) == EAGER_COLS and r["dtype"] == "bf16"}
    if round(f["copy"]["gbps"]) != EAGER_COPY_GBPS:
        raise SystemExit(f"copy.csv: device copy {f['copy']['gbps']:.1f} GB/s, cited as {EAGER_COPY_GBPS}")
    out = {}
    for key, (op, gbps, note) in EAGER_GBPS.items():
        measured = float(rows[op]["gbps_median"])
        if gbps is None:
            if measured < EAGER_COPY_GBPS:
                raise SystemExit(f"memops.csv: {op} {measured:.1f} GB/s is below the copy, cited at copy speed")
            value, what = 1.0, f"{op} {measured:.0f} GB/s, at copy speed: 1.0"
        else:
            if round(measured) != gbps:
                raise SystemExit(f"memops.csv: {op} {measured:.1f} GB/s, cited as {gbps}")
            value = gbps / EAGER_COPY_GBPS
            what = (f"{op} {gbps} GB/s" + (f" ({note})" if note else "") +
                    f" / {EAGER_COPY_GBPS} GB/s device copy = {value:.4f}")
        row = (f"{h200fit.REL_DIR}/memops.csv, eager PyTorch kernel at {EAGER_ROWS} x {EAGER_COLS} bf16 (bytes: each "
               f"input read once, each output written once), over the device copy of the same run (copy.csv d2d, "
               f"mean of the medians at 1 and 4 GiB): {what}")
        if measured_here:
            src = (f"measured ({e['gpu_name']}, driver {f['driver']}, {e['date_utc'][:10]}): {row}; not measured by "
                   f"stacksim calibrate, which times fused kernels only")
        else:
            src = f"H200-measured eager/fused ratio, {row}; applied to this GPU [U]"
        out[key] = v(value, src)
    return out


def with_eager_kernels(d, p):
    """p with its eager_kernels section after attention (the H200 measurement on every GPU)."""
    out = {}
    for k, x in p.items():
        out[k] = x
        if k == "attention":
            out["eager_kernels"] = eager_kernels(d, p["name"] == "h200-sxm-141gb")
    return out


# ---------------------------------------------------------------------------
# Building blocks shared by several profiles
# ---------------------------------------------------------------------------

def tflops(x):
    return f"{x:g} TFLOP/s"


def peak_flops(fp32, tf32, bf16, fp8):
    out = {"fp32": v(tflops(fp32[0]), fp32[1]), "tf32": v(tflops(tf32[0]), tf32[1]),
           "bf16": v(tflops(bf16[0]), bf16[1]), "fp16": v(tflops(bf16[0]), bf16[1])}
    out["fp8"] = None if fp8 is None else v(tflops(fp8[0]), fp8[1])
    return out


def gemm_eff(d, bf16, bf16_src, fp8=None, fp8_src=None, has_fp8=True, sustained=None):
    """Sustained GEMM efficiencies of a datasheet profile.

    The published/derived figure of each precision is a best-shape efficiency
    (bf16 MAMF; fp16 = bf16; tf32 and, without a published figure, fp8 from
    H200 measured best-shape ratios). The cost model needs the efficiency
    transformer shapes sustain, so every figure is multiplied by the H200
    measured ratio r_sustained = cost-model fit over all measured shapes / best
    shape (tools/gpu/fit_profile_h200.py).

    sustained: (value, source) of a 16-bit max_efficiency fitted to published
    per-shape measurements of this GPU itself; it replaces best-shape x
    r_sustained for bf16 and fp16, and tf32 follows it by the H200's measured
    tf32/bf16 ratio."""
    best = {
        "bf16": (bf16, bf16_src),
        "fp16": (bf16, "= bf16 figure (same tensor-core rate; " + bf16_src + ")"),
        "tf32": (bf16 * d.r_tf32,
                 f"derived: bf16 {bf16:.3f} x H200 measured tf32/bf16 best-shape efficiency ratio {d.r_tf32:.4f} "
                 f"({d.cal_gemm['tf32']:.3f}/{d.cal_gemm['bf16']:.3f}, {CAL}gemm.csv)); no published TF32 matmul "
                 f"figure"),
    }
    if has_fp8:
        if fp8 is None:
            best["fp8"] = (bf16 * d.r_fp8,
                           f"derived: bf16 {bf16:.3f} x H200 measured fp8/bf16 best-shape efficiency ratio "
                           f"{d.r_fp8:.4f} ({d.cal_gemm['fp8_e4m3']:.3f}/{d.cal_gemm['bf16']:.3f}, {CAL}gemm.csv)); "
                           f"no published FP8 matmul figure")
        else:
            best["fp8"] = (fp8, fp8_src)
    m = d.model
    rs = (f"x H200 measured sustained-to-best ratio r = {d.r_sus:.4f} (transformer-shape fit / best shape: "
          f"{CAL}fit_report.md) fitted bf16 max_efficiency {m['per_dtype']['bf16']['eff']:.3f} over "
          f"{m['per_dtype']['bf16']['n']} cuBLASLt GEMMs / best bf16 shape of torch.mm, the published figures' "
          f"method, {d.h200_gemm['bf16']:.4f} ({FIT}gemm.csv))")
    out = {p: v(r3(x * d.r_sus), f"sustained: best-shape figure {x:.3f} {rs}; best-shape figure: {src}")
           for p, (x, src) in best.items()}
    if sustained is not None:
        x, src = sustained
        out["bf16"] = v(r3(x), src)
        out["fp16"] = v(r3(x), "= bf16 (same tensor-core rate): " + src)
        out["tf32"] = v(r3(x * d.r_tf32),
                        f"derived: bf16 {x:.3f} x H200 measured tf32/bf16 best-shape efficiency ratio {d.r_tf32:.4f} "
                        f"({d.cal_gemm['tf32']:.3f}/{d.cal_gemm['bf16']:.3f}, {CAL}gemm.csv)); no published TF32 "
                        f"matmul figure; bf16: {src}")
    if "fp8" in best:
        x, src = best["fp8"]
        f8 = m["per_dtype"]["fp8_e4m3"]
        out["fp8"] = v(r3(x * d.r_sus * d.r_fp8_kov),
                       f"sustained: best-shape figure {x:.3f} {rs} x {d.r_fp8_kov:.4f}, the H200's fp8 fit with fp8's "
                       f"own k_overhead {d.fp8_kov} over the fit with bf16's {m['k_overhead']} "
                       f"({f8['eff']:.3f}/{f8['eff_at_shape_k']:.3f}, {f8['n']} fp8 cuBLASLt GEMMs of {CAL_DIR}/"
                       f"gemm.csv), since r comes from bf16; best-shape figure: {src}")
    return out


def gemm_block(d, max_efficiency, what):
    """gemm object of a datasheet profile: tile and k_overhead from the H200 fit."""
    m = d.model
    why = (f"H200 fit (cuBLAS heuristics pick among many tiles; applied to {what} as the closest measured GPU): "
           f"fit of the GEMM cost model (sim/cost/profile_cost_model.cc) to {m['per_dtype']['bf16']['n']} bf16 "
           f"cuBLASLt GEMMs of {CAL_DIR}/gemm.csv (stacksim calibrate, "
           f"{d.cal['env']['date_utc'][:10]}) by {GEN} calibrate_fit, mean |log error| "
           f"{100 * m['per_dtype']['bf16']['mean_abs_log']:.1f}% (fit_report.md there)")
    out = {"max_efficiency": max_efficiency,
           "tile": v(list(m["tile"]), why),
           "k_overhead": v(m["k_overhead"], why + "; elements of K, efficiency x k / (k + k_overhead)")}
    if "fp8" in max_efficiency:
        out["k_overhead_fp8"] = fp8_k_overhead(d, what)
    return out


def fp8_k_overhead(d, what):
    """gemm.k_overhead_fp8: the H200 fit of fp8's own per-tile cost (an FP8 MMA covers twice the K of a 16-bit one)."""
    f8 = d.model["per_dtype"]["fp8_e4m3"]
    whose = "measured on H200" if what == "H200" else f"H200 fit (applied to {what} as the closest measured GPU [U])"
    return v(d.fp8_kov,
             f"{whose}: fp8's own k_overhead on the grid {{0 .. 1024}} with bf16's tile {d.model['tile'][0]}x{d.model['tile'][1]}, "
             f"fitted to {f8['n']} fp8 cuBLASLt GEMMs of {CAL_DIR}/gemm.csv (stacksim calibrate, "
             f"{d.cal['env']['date_utc'][:10]}) by {GEN} calibrate_fit: max_efficiency {f8['eff']:.3f}, mean |log "
             f"error| {100 * f8['mean_abs_log']:.1f}%; elements of K, efficiency x k / (k + k_overhead_fp8)")


def attention_from_gemm(d, bf16, what):
    return {
        "fwd_efficiency": v(r3(bf16 * d.r_attn_fwd),
                            f"derived: {what} best-shape bf16 GEMM efficiency {bf16:.3f} x H200 measured ratio of fused "
                            f"attention fwd to best-shape bf16 GEMM efficiency {d.r_attn_fwd:.4f} (0.610/0.809: SDPA flash, "
                            f"b=2 h=16 s=8192 d=128 causal, {FIT}attention.csv, gemm.csv)"),
        "bwd_efficiency": v(r3(bf16 * d.r_attn_bwd),
                            f"derived: {what} best-shape bf16 GEMM efficiency {bf16:.3f} x H200 measured ratio of fused "
                            f"attention bwd to best-shape bf16 GEMM efficiency {d.r_attn_bwd:.4f} (0.526/0.809, same case, "
                            f"{FIT}attention.csv)"),
    }


def flash2(d, key, applied=None, factor=1.0, factor_why=None):
    """flash2_fwd/bwd_efficiency from the Azure FlashAttention-2 fwd+bwd figure of GPU `key`,
    split with the H200 measured bwd/fwd ratio as for A100's main attention keys; optionally
    applied to another GPU (`applied`) and multiplied by `factor` (`factor_why`)."""
    t, hd, gpu, peak = AZURE_FA2[key]
    c, f, b = d.fa2[key]
    r = d.r_bwd_fwd
    pub = (f"Azure FlashAttention-2 benchmark on {gpu}, b=2 s=8192 head_dim {hd}: fwd+bwd {t:g} TFLOP/s "
           f"= {c:.4f} of {peak:g} dense bf16 ({HW} §4c, {HWJ} attention_measured azure-fa2; flash-attention's "
           f"benchmark_flash_attention.py 'fwd + bwd' figure, bwd counted as 2.5x the fwd FLOPs)")
    split = (f"split with the H200 measured bwd/fwd efficiency ratio r = {r:.4f} of the fused kernel "
             f"({FIT}attention.csv; FA2's own ratio unpublished [U]): fwd = c (1 + 2.5/r)/3.5 = "
             f"{c:.4f} x (1 + 2.5/{r:.4f})/3.5 = {f:.4f}")
    tail = ""
    if applied:
        tail += f"; applied to {applied} [U]"
    if factor != 1.0:
        tail += f"; x {factor:.4f} ({factor_why}) = {f * factor:.4f}"
    fwd = v(r3(f * factor), f"derived: {pub}; {split}{tail}")
    tail_b = tail.replace(f"= {f * factor:.4f}", f"= {b * factor:.4f}") if factor != 1.0 else tail
    bwd = v(r3(b * factor), f"derived: {pub}; {split}; bwd = r x fwd = {r:.4f} x {f:.4f} = {b:.4f}{tail_b}")
    return {"flash2_fwd_efficiency": fwd, "flash2_bwd_efficiency": bwd}


def launch(d, what):
    e = d.cal["env"]
    return v(f"{d.cal['launch_us']:.2f} us",
             f"measured on H200 (driver {e['driver']}, CUDA {e['cuda_runtime']}, {e['date_utc'][:10]}; empty "
             f"kernel, host issue time per launch, median; {CAL}launch.csv)), applied to {what}: host-side cost of "
             f"the CUDA driver, same driver stack assumed [U]; {HW} §4d has only weak figures (4-6 us on an RTX "
             f"5070 Ti, CUDA 13)")


def intra_latency(d, what):
    return v(f"{d.ring_slope:.2f} us",
             f"derived: slope of NCCL 1-channel ring all_reduce time against its 2(n-1) steps, DGX A100, "
             f"2-8 GPUs, 8-128 B (nccl-tests#123, {HW} §3c): {d.ring_slope:.2f} us/step (+{d.ring_base:.1f} us "
             f"base); applied to {what}: NCCL's own model uses one NVLink per-step latency for all "
             f"generations (src/graph/tuning.cc hwLat NVLink Ring LL128 1.9 us)")


def pcie_latency(d):
    return v(f"{d.pcie_lat:.2f} us",
             f"derived: A100 NVLink per-step ring latency {d.ring_slope:.2f} us (nccl-tests#123 fit, {HW} §3c) x "
             f"NCCL's PCI/NVLink per-step latency ratio 2.5/1.9 (src/graph/tuning.cc hwLat Ring LL128) [U]")


def inter_node(d, nic, nic_src):
    return {
        "nic_efficiency": v(r3(nic), nic_src),
        "latency": v(f"{d.inter_lat:.1f} us",
                     f"derived: 32 nodes x 8 A100 (4x HDR) small-message all_reduce 62-71 us (nccl#652, {HW} §3c) "
                     f"put into NCCL's tree latency model (tuning.cc: base + 2((ppn-1) intra + log2(nodes) inter)) "
                     f"with the nccl-tests#123 ring fit (base {d.ring_base:.1f} us, intra {d.ring_slope:.2f} us/step): "
                     f"inter = {d.inter_lat_range[0]:.1f}-{d.inter_lat_range[1]:.1f} us per step, midpoint used; "
                     f"cf. tuning.cc hwLat NET Ring LL 2.7 / LL128 4.0 us"),
    }


def nic_ndr(what):
    return (NIC_NDR[0] / NIC_NDR[1],
            f"nccl-tests#290 (AddyLaddy): expect 46-48 GB/s per 400 Gb/s (50 GB/s) NDR NIC, midpoint 47/50 "
            f"({HW} §3b){what}")


def header(name, gpu, kind, provenance):
    return {"schema": "stacksim.profile/1", "name": name, "gpu": gpu, "kind": kind, "provenance": provenance}


DATASHEET_PROV = ("datasheet figures and public micro-benchmarks from shared/reference/hardware.md and hardware.json, "
                  "each citing its original source; values without a published figure are derived from the closest "
                  f"measured GPU as their source strings say; generated by {GEN}")


# ---------------------------------------------------------------------------
# Collective blocks
# ---------------------------------------------------------------------------

def hopper_intra(d, which, what, measured_here):
    """8-GPU NVLink4 system: measured NVLS all_reduce curve; ring = same shape, plateau 370 GB/s."""
    ar = AZURE_AR[which]
    f = HOPPER_RING_PEAK / ar[-1]
    label = "8x H100" if which == "h100" else "8x H200"
    ar_src = ("published measurement: " + AZURE_SRC[which]) if measured_here else (AZURE_SRC[which] + f"; applied to {what} [U]")
    return {
        "reference_link_bandwidth": v("450 GB/s",
                                      f"NVLink4 900 GB/s bidirectional per GPU / 2 (18 links; {HW} §1) on the "
                                      f"measured {label} system"),
        "latency": intra_latency(d, what),
        "all_reduce": curve(ar, 8, ar_src, measured=True),
        "ring": curve(scaled(ar, f), 8,
                      f"derived: the {label} all_reduce curve above scaled by {HOPPER_RING_PEAK:g}/{ar[-1]} = {f:.4f}, "
                      f"so its shape is kept and its 8 GiB plateau becomes the Hopper ring / non-allreduce busbw "
                      f"of ~370 GB/s (nccl-tests#212, nccl#1455, {HW} §3b); NVLS speeds up all_reduce only"),
    }


def a100_intra(d, what):
    return {
        "reference_link_bandwidth": v("300 GB/s",
                                      f"NVLink3 600 GB/s bidirectional per GPU / 2 (12 links; NVIDIA HGX A100 blog, "
                                      f"{HW} §1) on the measured 8x A100 system"),
        "latency": intra_latency(d, what),
        "all_reduce": curve(AZURE_AR["a100"], 8, "published measurement: " + AZURE_SRC["a100"]
                            + ("" if what == "A100 80GB" else f"; applied to {what} (same HGX A100 NVLink3 system)"),
                            measured=True),
        "ring": curve(AZURE_AR["a100"], 8,
                      "= the all_reduce curve: A100 has no NVLink SHARP, so its all_reduce is the ring/tree "
                      "curve; " + AZURE_SRC["a100"], measured=True),
    }


def blackwell_intra(d, what):
    gb = AZURE_AR["gb200x4"]
    f = GB200_MNNVL_AR / gb[-1]
    return {
        "reference_link_bandwidth": v("900 GB/s",
                                      f"NVLink5 1,800 GB/s bidirectional per GPU / 2 (18 links; {HW} §1) on the "
                                      f"measured GB200 systems"),
        "latency": intra_latency(d, what),
        "all_reduce": curve(scaled(gb, f), 8,
                            f"derived: shape of the 4-GPU GB200 ring all_reduce curve ({AZURE_SRC['gb200x4']}) "
                            f"scaled by {GB200_MNNVL_AR:g}/{gb[-1]} = {f:.4f} so that its plateau is the 8-GPU GB200 "
                            f"MNNVL all_reduce busbw of 811 GB/s (lixueduan.com/posts/ai/13-gb200-mnnvl-nccl-test, "
                            f"{HW} §3b); no 8-GPU curve is published" + ("" if what == "GB200" else
                                                                         f"; applied to {what} (same NVLink5 "
                                                                         f"bandwidth per GPU)")),
        "ring": curve(gb, 4, "published measurement, ring on 4 GPUs: " + AZURE_SRC["gb200x4"]
                      + "; ring busbw barely depends on GPU count (365-370 GB/s for 2-8 H100, nccl#1455)"
                      + ("" if what == "GB200" else f"; applied to {what} (same NVLink5 bandwidth per GPU)"),
                      measured=True),
    }


def pcie_intra(d, link_gbps, plateau, plateau_src, link_src, what):
    a = AZURE_AR["a100"]
    vals = capped(a, plateau)
    src = (f"derived for PCIe peer traffic (no NVLink between the 8 GPUs): busbw = min(8x A100 all_reduce "
           f"busbw at the same size, {plateau:g} GB/s); the cap is {plateau_src}; below the cap the NVSwitch A100 "
           f"curve ({AZURE_SRC['a100']}) stands in for the latency-bound part, which is optimistic for PCIe [U]")
    return {
        "reference_link_bandwidth": v(f"{link_gbps:g} GB/s", link_src),
        "latency": pcie_latency(d),
        "all_reduce": curve(vals, 8, src + "; no NVLink SHARP over PCIe, so all_reduce = ring"),
        "ring": curve(vals, 8, src),
    }


# ---------------------------------------------------------------------------
# Profiles
# ---------------------------------------------------------------------------

def a100_sustained(d, mem_gb, bw_bytes_s):
    """A100's own sustained 16-bit max_efficiency: the GEMM cost model, with the H200 fit's tile and
    k_overhead and the floors of the measured A100-80GB (bw_bytes_s: its copy bandwidth), fitted to
    Azure's A100 cuBLASLt shapes (fp16, 10k warm-up) of >= 2x2048^3 FLOPs
    (tools/gpu/crosscheck_published_gemm.py). A100 at its 400 W sustains 0.80-0.82 of peak on large shapes
    there against 0.869 for its best shape; the H200's sustained-to-best ratio (0.87) would give 0.757."""
    series, shapes = next((name, sh) for prof, prec, name, sh in published_gemm.PUBLISHED
                          if prof == "a100-sxm-80gb" and prec == "fp16")
    m = d.model
    mdl = {"peak": 312.0, "sms": 108, "bw": bw_bytes_s, "launch": round(d.cal["launch_us"], 2) * 1e-6,
           "tile": tuple(m["tile"]), "k_overhead": m["k_overhead"]}
    eff, err, n = published_gemm.fit_published(shapes, mdl)
    same = "" if mem_gb == 80 else "; measured on the 80GB part, same GA100 compute"
    return eff, (f"sustained, fitted to published per-shape measurements of this GPU: {published_gemm.SRC}, {series}"
                 f"{same}: the {n} shapes of >= 2x2048^3 FLOPs (2048^3 .. 16384^3, 6144x12288x12288, "
                 f"802816x192x768; 221.8-256.5 TFLOP/s for the square ones), the GEMM cost model "
                 f"(sim/cost/profile_cost_model.cc) with the H200 fit's tile {m['tile'][0]}x{m['tile'][1]} and "
                 f"k_overhead {m['k_overhead']}, floors this profile's copy bandwidth and launch, least mean "
                 f"|log(predicted / measured)|: {100 * err:.1f}% (tools/gpu/crosscheck_published_gemm.py "
                 f"fit_published); chosen over the best-shape figure x the H200 sustained-to-best ratio "
                 f"({d.mamf['a100_sxm_bf16']:.3f} x {d.r_sus:.4f} = {d.mamf['a100_sxm_bf16'] * d.r_sus:.3f}): "
                 f"the A100 does not throttle under sustained GEMMs as the 700 W Hopper parts do "
                 f"(docs/validation.md, 'Published per-shape GEMM figures')")


def a100(d, mem_gb):
    name = f"a100-sxm-{mem_gb}gb"
    what = f"A100 {mem_gb}GB"
    bf16 = d.mamf["a100_sxm_bf16"]
    bw = 1555 if mem_gb == 40 else 2039
    p = header(name, f"NVIDIA A100 SXM4 {mem_gb}GB", "datasheet", DATASHEET_PROV)
    p["sm_count"] = v(108, f"{HW} §1 [S] (fudzilla, glennklockwood.com citing the NVIDIA A100 datasheet)")
    p["hbm_capacity"] = v(f"{mem_gb} GiB", f"NVIDIA A100 datasheet '{mem_gb} GB' ({HW} §1); {GIB_NOTE}")
    p["hbm_bandwidth"] = v(f"{bw} GB/s", f"{HW} §1 [S] (thundercompute.com, glennklockwood.com: "
                           f"{'1.555' if mem_gb == 40 else '2.039'} TB/s)")
    copy = STREAM["a100"][0] / STREAM["a100"][1]
    p["copy_efficiency"] = v(r3(copy), (f"{STREAM_SRC}: A100-80GB copy 1.61 TB/s / 2.039 TB/s peak" if mem_gb == 80 else
                                        f"derived: A100-80GB STREAM copy fraction {copy:.3f} (1.61/2.039 TB/s, "
                                        f"{STREAM_SRC}) applied to the 40GB part's 1,555 GB/s HBM2 [U]"))
    ds = f"{HW} §1 (glennklockwood.com citing the NVIDIA A100 datasheet)"
    p["peak_flops"] = peak_flops((19.5, ds), (156, ds + ", dense (312 with sparsity)"),
                                 (312, ds + ", dense (624 with sparsity)"), None)
    p["gemm"] = gemm_block(d, gemm_eff(d, bf16, f"{MAMF_SRC}: A100 SXM 271.2 / 312 TFLOP/s, torch 2.6.0+cu126"
                                       + ("" if mem_gb == 80 else "; the table does not say 40 or 80 GB: same GA100 compute"),
                                       has_fp8=False, sustained=a100_sustained(d, mem_gb, 2039e9 * r3(copy))), what)
    c = d.a100_fa2_combined
    p["attention"] = {
        "fwd_efficiency": v(r3(d.a100_attn_fwd),
                            f"derived: Azure FlashAttention-2 on A100-80GB, b=2 s=8192 head_dim 64, fwd+bwd "
                            f"179.5 TFLOP/s = {c:.3f} of 312 ({HW} §4c; the guide reports flash-attention's "
                            f"benchmark 'fwd + bwd' figure), split with the H200 measured bwd/fwd ratio "
                            f"{d.r_bwd_fwd:.4f} ({FIT}attention.csv): fwd = {c:.3f} (1 + 2.5/{d.r_bwd_fwd:.3f})/3.5; "
                            f"inside FlashAttention-2's 50-73% of A100 peak (arXiv:2307.08691)"),
        "bwd_efficiency": v(r3(d.a100_attn_bwd),
                            f"derived: A100 fwd {d.a100_attn_fwd:.3f} x H200 measured bwd/fwd {d.r_bwd_fwd:.4f} "
                            f"(see fwd); inside FlashAttention-2's 50-73% (arXiv:2307.08691)"),
    }
    f2 = flash2(d, "a100", None if mem_gb == 80 else "A100 40GB (same GA100 compute)")
    for pss in ("fwd", "bwd"):
        x = f2[f"flash2_{pss}_efficiency"]
        x["source"] = (f"= {pss}_efficiency: FlashAttention-2 is A100's fastest fused attention kernel (FA3 needs "
                       f"Hopper); " + x["source"])
    p["attention"].update(f2)
    p["kernel_launch"] = launch(d, what)
    p["host_bandwidth"] = v(f"{NVBW['a100']:g} GB/s", f"{NVBW_SRC}: A100 (PCIe Gen4 x16)"
                            + ("" if mem_gb == 80 else "; measured on A100-80GB, applied to the 40GB part (same host link)"))
    p["collectives"] = {
        "intra_node": a100_intra(d, what),
        "inter_node": inter_node(d, NIC_HDR[0] / NIC_HDR[1],
                                 f"nccl-tests#119: 3 nodes x 8 A100-SXM4-40GB with 4x HDR 200 Gb/s per node reach "
                                 f"a peak busbw of ~96 of 100 GB/s ({HW} §3b); the 84.8 'avg' there averages all "
                                 f"message sizes, and 128 MB was the largest, so 0.96 is the plateau seen"),
    }
    return p


def h100_sxm(d, mem_gb):
    name = f"h100-sxm-{mem_gb}gb"
    what = f"H100 SXM {mem_gb}GB"
    bf16 = d.mamf["h100_sxm_bf16"]
    fp8 = d.mamf["h100_sxm_fp8"]
    pre = "" if mem_gb == 80 else "[U] assumed equal to H100 SXM 80GB (same GH100 SXM5 part): "
    p = header(name, f"NVIDIA H100 SXM5 {mem_gb}GB", "datasheet", DATASHEET_PROV)
    tab = f"{HW} §1 (archive-lib.hpctech.co.jp reproducing NVIDIA's H100 SXM/PCIe table)"
    gk = f"{HW} §1 (glennklockwood.com/garden/processors/h100)"
    p["sm_count"] = v(132, pre + tab)
    if mem_gb == 80:
        p["hbm_capacity"] = v("80 GiB", f"NVIDIA H100 SXM '80 GB' HBM3, {tab}; {GIB_NOTE}")
        p["hbm_bandwidth"] = v("3350 GB/s", tab)
    else:
        p["hbm_capacity"] = v("96 GiB", f"{TT_BENCH} ('96GB'); the TechPowerUp GPU database lists an 'H100 SXM5 "
                              "96 GB' (techpowerup.com/gpu-specs/h100-sxm5-96-gb.c3974, page not read); " + GIB_NOTE)
        p["hbm_bandwidth"] = v(f"{TT_HBM_GBPS:g} GB/s", f"{TT_BENCH}; {TORCHAO_SRC}")
    copy = STREAM["h100"][0] / STREAM["h100"][1]
    if mem_gb == 80:
        p["copy_efficiency"] = v(r3(copy), f"{STREAM_SRC}: H100 copy 2.90 TB/s / 3.35 TB/s (Voltage Park d2d "
                                           f"2,903 GB/s, 86.7%, agrees)")
        p["peak_flops"] = peak_flops((67, tab), (494.7, gk + ", dense"), (989.4, gk + ", dense (1,979 with sparsity)"),
                                     (1978.9, gk + ", dense"))
    else:
        p["copy_efficiency"] = v(TORCHAO_MEM_FRACTION,
                                 f"{TORCHAO_SRC}: 0.92 of the 2.4 TB/s HBM2e on this GPU (cf. 0.866 STREAM copy on the "
                                 f"3.35 TB/s HBM3 H100, {STREAM_SRC})")
        p["peak_flops"] = power_limited_peaks(tab, gk)
    p["gemm"] = gemm_block(d, gemm_eff(d, bf16, f"{MAMF_SRC}: H100 SXM 794.5 / 989 TFLOP/s, shape 2048x2048x13312, "
                                       f"torch 2.7.0+cu126" + ("" if mem_gb == 80 else f"; applied to {what} [U]"),
                                       fp8, f"{MAMF_SRC}: H100 SXM FP8 1,402.6 / 1,979 TFLOP/s"
                                       + ("" if mem_gb == 80 else f"; applied to {what} [U]")), what)
    p["attention"] = attention_from_gemm(d, bf16, "H100 SXM")
    p["attention"]["fwd_efficiency"]["source"] += (
        "; chosen over FlashAttention-2's 0.33 on H100 (flash2_* keys; Azure 327.9 TFLOP/s fwd+bwd, b=2 s=8192 d=128, "
        f"{HW} §4c; FA3 paper: FA2 reaches 35%) because Hopper profiles model the current fused-attention kernels "
        "that our H200 run used; FA3 reaches 616-648 TFLOP/s fwd at d=128, 16k (README charts, [S])")
    p["attention"].update(flash2(d, "h100", None if mem_gb == 80 else f"{what} (same GH100 die)"))
    p["kernel_launch"] = launch(d, what)
    p["host_bandwidth"] = v(f"{NVBW['h100']:g} GB/s", f"{NVBW_SRC}: H100 (PCIe Gen5 x16; Voltage Park 54.8 GB/s)"
                            + ("" if mem_gb == 80 else f"; applied to {what} [U]"))
    p["collectives"] = {
        "intra_node": hopper_intra(d, "h100", what, mem_gb == 80),
        "inter_node": inter_node(d, *nic_ndr("; DGX/HGX H100: 8x ConnectX-7 400 Gb/s")),
    }
    return p


def power_limited_peaks(tab, gk):
    """Peaks of the 500 W, HBM2e H100 SXM of the torchtitan benchmarks: the same GH100 SXM5 silicon as H100 SXM (132
    SMs, the same maximum clock [U]), so the same per-clock peaks; its 500 W limit lowers the clock it sustains, which
    the profile's power block models (the torchtitan team put its peak between their SXM and NVL figures, 989 and
    835, without knowing where: the clock its limit allows depends on the work, as power_state.h computes)."""
    why = (f"[U] the H100 SXM peaks ({gk}), the same GH100 SXM5 part; its 500 W limit is the power block's "
           f"board_limit_w, not a lower peak (cf. {TT_PEAK_SRC}); {TT_BENCH}")
    return peak_flops((67, f"{why}; {tab}"), (494.7, why), (989.4, why), (1978.9, why))


def h800(d):
    what = "H800 SXM"
    bf16 = d.mamf["h100_sxm_bf16"]
    fp8 = d.mamf["h100_sxm_fp8"]
    p = header("h800-sxm-80gb", "NVIDIA H800 SXM5 80GB", "datasheet", DATASHEET_PROV)
    same = "[U] assumed equal to H100 SXM (same GH100 silicon, NVLink and FP64 cut; aiwiki.ai, " + HW + " §1)"
    p["sm_count"] = v(132, same)
    p["hbm_capacity"] = v("80 GiB", f"[U] {HW} §1 ('80 GB HBM3'); {GIB_NOTE}")
    p["hbm_bandwidth"] = v("3350 GB/s", f"{HW} §1 [S] (deepseek-ai/FlashMLA#75: 'H800 SXM5 ... 3.35 TB/s')")
    copy = STREAM["h100"][0] / STREAM["h100"][1]
    p["copy_efficiency"] = v(r3(copy), f"derived: H100 STREAM copy fraction {copy:.3f} (2.90/3.35 TB/s, {STREAM_SRC}) "
                                       f"applied to H800 (same HBM3 at 3.35 TB/s) [U]")
    flashmla = f"{HW} §1 [S] (deepseek-ai/FlashMLA#75: maintainer '989 TFLOPS for dense'; 989.4 as for H100 SXM)"
    p["peak_flops"] = peak_flops((67, same), (494.7, same), (989.4, flashmla), (1978.9, same))
    p["gemm"] = gemm_block(d, gemm_eff(d, bf16, f"{same}: {MAMF_SRC} H100 SXM 794.5 / 989",
                                       fp8, f"{same}: {MAMF_SRC} H100 SXM FP8 1,402.6 / 1,979 (cf. DeepGEMM, not "
                                            f"cuBLAS, 1,470 TFLOP/s on H800, deepseek-ai/DeepGEMM#73)"), what)
    p["attention"] = attention_from_gemm(d, bf16, "H800 (= H100 SXM MAMF)")
    p["attention"].update(flash2(d, "h100", "H800 (same GH100 die)"))
    p["kernel_launch"] = launch(d, what)
    p["host_bandwidth"] = v(f"{NVBW['h100']:g} GB/s", f"derived: {NVBW_SRC} H100 51 GB/s applied to H800 (PCIe Gen5 x16 "
                                                      f"[U])")
    ar = AZURE_AR["h100"]
    fa = H800_AR_PEAK / ar[-1]
    ar800 = scaled(ar, fa)
    fr = HOPPER_RING_PEAK / ar[-1]
    p["collectives"] = {
        "intra_node": {
            "reference_link_bandwidth": v("200 GB/s", f"NVLink 400 GB/s bidirectional per GPU / 2 ({HW} §1 [S]: "
                                          f"tumgag/philisun blogs; a user in nccl#1374: 'unidirectional peak BW "
                                          f"200GB/s')"),
            "latency": intra_latency(d, what),
            "all_reduce": curve(ar800, 8,
                                f"derived: shape of the 8x H100 NVLS all_reduce curve ({AZURE_SRC['h100']}) scaled by "
                                f"{H800_AR_PEAK:g}/{ar[-1]} = {fa:.4f} so that its plateau is the measured 8x H800 "
                                f"all_reduce busbw of 215 GB/s (nccl#1374, {HW} §3b); cf. 478.87 x 200/450 = 212.8"),
            "ring": curve(scaled(ar800, fr), 8,
                          f"derived: the H800 all_reduce curve above x {HOPPER_RING_PEAK:g}/{ar[-1]} = {fr:.4f}, the "
                          f"H100 ratio of ring busbw (~370, nccl-tests#212, nccl#1455) to NVLS all_reduce busbw"),
        },
        "inter_node": inter_node(d, *nic_ndr("; NICs of H800 systems [U]")),
    }
    return p


def long_case(f, pss):
    """Efficiency at s=16384 of the selected attention case, for comparison in the source text."""
    rows = [r for r in f["attention_rows"] if r["pass"] == pss and int(r["seq"]) == 16384
            and int(r["head_dim"]) == 128 and int(r["causal"]) == 1 and int(r["heads"]) == 16]
    return float(rows[0]["tflops_median"]) / h200fit.PEAK_TFLOPS["bf16"]


def h200(d):
    f = d.fit
    e = f["env"]
    what = "H200"
    prov = (f"measured on one {e['gpu_name']} ({f['sm_count']} SMs), driver {f['driver']}, CUDA {e['cuda_runtime']}, "
            f"PyTorch {e['torch']}, NCCL {e['nccl']}, {e['date_utc'][:10]}: profiles/measured/h200-sxm-141gb-2026-11-29/"
            f"env.json, copy.csv, gemm.csv, attention.csv, launch_cuda.csv, reduced by tools/gpu/fit_profile_h200.py "
            f"(fit_report.md there); datasheet peaks and, since one GPU cannot run a collective, published "
            f"collective curves as their sources say; generated by {GEN}")
    p = header("h200-sxm-141gb", "NVIDIA H200 SXM 141GB", "measured", prov)
    meas = f"measured ({e['gpu_name']}, driver {f['driver']}, {e['date_utc'][:10]}): "
    p["sm_count"] = v(f["sm_count"], meas + f"{FIT}env.json sm_count (torch.cuda.get_device_properties)")
    tm = f["total_memory_bytes"]
    p["hbm_capacity"] = v(f"{tm} B", meas + f"{FIT}env.json total_memory_bytes = {tm / 2**30:.2f} GiB usable "
                                     f"by CUDA (datasheet 141 GB, NVIDIA MLPerf H200 system description, {HW} §1)")
    p["hbm_bandwidth"] = v("4800 GB/s", f"{HW} §1 [S] (aiwiki.ai/wiki/nvidia_h200, lzwjava.github.io)")
    c = f["copy"]
    rows = ", ".join(f"{int(r['bytes']) >> 30} GiB {float(r['gbps_median']):.1f} GB/s" for r in c["rows"])
    p["copy_efficiency"] = v(r3(c["efficiency"]),
                             meas + f"{FIT}copy.csv, d2d copy_ bytes read+written, mean of the medians at {rows} "
                             f"= {c['gbps']:.1f} GB/s / 4,800 GB/s datasheet (Azure STREAM copy on H200: 0.84, "
                             f"{HW} §4d)")
    same = f"[U] {HW} §1: H200 FP32/TF32 assumed equal to H100 SXM (same GH100 die; glennklockwood.com)"
    ds = f"{HW} §1 (H100 SXM dense figure, glennklockwood.com; H200 [S] 989.5 / 1,979 in tritonbench#78)"
    p["peak_flops"] = peak_flops((67, same), (494.7, same), (989.4, ds), (1978.9, ds))
    m = f["model"]
    mb = m["per_dtype"]["bf16"]
    fit_src = (f"fit of the GEMM cost model (sim/cost/profile_cost_model.cc) to {mb['n']} bf16 GEMMs of {h200fit.REL_DIR}/gemm.csv "
               f"(squares, odd sizes, fwd/dgrad/wgrad of 4 models at TP 1-8) by tools/gpu/fit_profile_h200.py: "
               f"mean |log error| {100 * mb['mean_abs_log']:.1f}%, {100 * mb['within'][0.10]:.0f}% / "
               f"{100 * mb['within'][0.15]:.0f}% / {100 * mb['within'][0.25]:.0f}% of shapes within 10/15/25%; "
               f"grid over tiles {{64x64 .. 256x128}} x k_overhead {{0 .. 512}} x max_efficiency in 0.005 steps, "
               f"least mean |log(pred/measured)| (fit_report.md there)")
    ge = {}
    names = {"bf16": "bf16", "fp16": "fp16", "tf32": "tf32", "fp8_e4m3": "fp8"}
    for dt, key in names.items():
        x = m["per_dtype"][dt]
        b = f["gemm"][dt]
        r = b["row"]
        if dt == "bf16":
            src = meas + fit_src
        else:
            src = (meas + f"fit of max_efficiency alone in the GEMM cost model (sim/cost/profile_cost_model.cc) to "
                   f"{x['n']} {dt} GEMMs of {h200fit.REL_DIR}/gemm.csv by tools/gpu/fit_profile_h200.py, with the bf16 fit's tile "
                   f"{m['tile'][0]}x{m['tile'][1]} and k_overhead {m['k_overhead']}: mean |log error| "
                   f"{100 * x['mean_abs_log']:.1f}%, {100 * x['within'][0.10]:.0f}% / {100 * x['within'][0.15]:.0f}% / "
                   f"{100 * x['within'][0.25]:.0f}% of shapes within 10/15/25%")
        src += (f"; best shape: {b['efficiency']:.3f} = {b['tflops']:.1f} TFLOP/s ({r['label']} "
                f"{r['m']}x{r['n']}x{r['k']}) / {b['peak']} dense peak")
        ge[key] = v(r3(x["eff"]), src)
    ge["bf16"]["source"] += (f"; sustained-to-best ratio r = {m['r_sustained']:.4f}, applied to the other profiles "
                             f"(MAMF table: 'H200 same as H100', 80.3% best shape, {HW} §4a)")
    ge["fp8"]["source"] += f" (MAMF table: H200 FP8 73.4% best shape, {HW} §4a)"
    p["gemm"] = {
        "max_efficiency": ge,
        "tile": v(list(m["tile"]), meas + fit_src + f"; cuBLAS heuristics pick among many tiles per shape, so this "
                  f"is an effective tile (128x256, CUTLASS's tensor-op default, fits at "
                  f"{100 * min(g['mean_abs_log'] for g in m['grid'] if g['tile'] == (128, 256)):.1f}%)"),
        "k_overhead": v(m["k_overhead"], meas + fit_src + "; elements of K, efficiency x k / (k + k_overhead): "
                        "per-tile prologue, epilogue and pipeline fill"),
    }
    at = {}
    for pss in ("fwd", "bwd"):
        a = f["attention"][pss]
        at[f"{pss}_efficiency"] = v(r3(a["efficiency"]),
                                    meas + f"{FIT}attention.csv, PyTorch SDPA flash backend {pss}, b=2 h=16 s=8192 "
                                    f"head_dim 128 causal (the Azure FA2 benchmark's shape, {HW} §4c): "
                                    f"{a['tflops']:.1f} TFLOP/s / 989.4 (s=16384, b=1 gives {long_case(f, pss):.3f})")
    at["fwd_efficiency"]["source"] += "; FlashAttention-2 on H200 reaches 0.33 fwd+bwd (Azure 329.3 TFLOP/s, §4c)"
    at.update(flash2(d, "h200"))
    p["attention"] = at
    lr = f["launch"]["host_issue_us_per_launch"]
    p["kernel_launch"] = v(f"{f['launch_us']:.2f} us",
                           meas + f"{FIT}launch_cuda.csv host_issue_us_per_launch median (min {float(lr['min_us']):.2f}, "
                           f"max {float(lr['max_us']):.2f}): "
                           f"host time per cudaLaunchKernel of an empty kernel, back to back (tools/gpu/launch_overhead.cu)")
    h = f["h2d"]
    p["host_bandwidth"] = v(f"{h['gbps']:.2f} GB/s",
                            meas + f"{FIT}copy.csv h2d_pinned at 1 GiB (d2h {h['d2h_gbps']:.2f} GB/s); "
                            f"Azure nvbandwidth 52 GB/s ({HW} §4d)")
    intra = hopper_intra(d, "h200", what, True)
    intra["reference_link_bandwidth"]["source"] = (f"NVLink4 900 GB/s bidirectional per GPU / 2 (18 links; NVIDIA MLPerf "
                                                   f"H200 system description, {HW} §1) on the measured 8x H200 system")
    intra["all_reduce"]["source"] = ("published, not ours (one GPU cannot run a collective): " + AZURE_SRC["h200"])
    p["collectives"] = {
        "intra_node": intra,
        "inter_node": inter_node(d, *nic_ndr("; HGX H200: same 8x ConnectX-7 400 Gb/s as DGX H100 (§2)")),
    }
    return p


def blackwell(d, gb200):
    what = "GB200" if gb200 else "B200"
    key = "gb200" if gb200 else "b200"
    bf16 = d.mamf[f"{key}_bf16"]
    fp8 = d.mamf[f"{key}_fp8"]
    name = "gb200" if gb200 else "b200"
    gpu = "NVIDIA GB200 (Blackwell GPU of a GB200 NVL72)" if gb200 else "NVIDIA B200 (HGX/DGX B200)"
    p = header(name, gpu, "datasheet", DATASHEET_PROV)
    tab = f"{HW} §1 (zdszero.github.io reproducing NVIDIA's GB200 NVL72 / HGX B200 table)"
    cnc = f"{HW} §1 [S] (chipsandcheese.com: 2 dies x 74 enabled SMs)"
    p["sm_count"] = v(148, cnc if not gb200 else f"[U] assumed equal to B200: {cnc}; GB200 SM count unverified")
    if gb200:
        p["hbm_capacity"] = v("186 GiB", f"{tab}: '186 GB' HBM3e (Azure reports 'GB200 185GB'); {GIB_NOTE}")
        p["hbm_bandwidth"] = v("8000 GB/s", tab)
    else:
        p["hbm_capacity"] = v("180 GiB", f"{tab}: '180 GB' HBM3e (DGX B200: 1,440 GB / 8; 192 GB physical); {GIB_NOTE}")
        p["hbm_bandwidth"] = v("7700 GB/s", tab + " (8 TB/s in launch material)")
    copy = STREAM["h200"][0] / STREAM["h200"][1]
    p["copy_efficiency"] = v(r3(copy), f"derived: H200 STREAM copy fraction {copy:.3f} (4.01/4.8 TB/s, {STREAM_SRC}), "
                                       f"the closest measured HBM3e GPU, applied to {what} [U] (ours on H200: 0.865)")
    if gb200:
        pf = peak_flops((80, tab), (1250, tab + ", 2.5 PF sparse / 2 [D]"), (2500, tab + ", 5 PF sparse / 2 [D]"),
                        (5000, tab + ", 10 PF sparse / 2 [D]"))
    else:
        pf = peak_flops((75, tab), (1100, tab + ", 2.2 PF sparse / 2 [D]; verda.com dense 1.1 PF"),
                        (2250, tab + ", 4.5 PF sparse / 2 [D]; verda.com dense 2.25 PF"),
                        (4500, tab + ", 9 PF sparse / 2 [D]; verda.com dense 4.5 PF"))
    p["peak_flops"] = pf
    if gb200:
        bsrc = f"{MAMF_SRC}: GB200 1,822 / 2,500 TFLOP/s, shape 4096x9728x2048"
        fsrc = f"{MAMF_SRC}: GB200 FP8 3,615.6 / 5,000 TFLOP/s (Azure cuBLASLt 16384^3 FP8: 58%, §4b)"
    else:
        bsrc = f"{MAMF_SRC}: B200 SXM 1,745 / 2,250 TFLOP/s, shape 1792x16128x3072"
        fsrc = f"{MAMF_SRC}: B200 SXM FP8 3,432.5 / 4,500 TFLOP/s"
    p["gemm"] = gemm_block(d, gemm_eff(d, bf16, bsrc, fp8, fsrc), what)
    p["attention"] = attention_from_gemm(d, bf16, what)
    p["attention"]["fwd_efficiency"]["source"] += (
        "; assumes Blackwell-native attention kernels (cuDNN / FlashAttention-4: a flash-attention PR #2605 "
        "benchmark shows 1,381 TFLOP/s fwd at d=128 causal b=8 s=4096 on a Blackwell GPU, 55% of 2.5 PF); "
        "FlashAttention-2 reaches only 373.9 TFLOP/s fwd+bwd on GB200 (Azure, §4c)")
    p["attention"].update(flash2(d, "gb200", None if gb200 else "B200 (same Blackwell GPU, efficiency as a fraction "
                                                                 "of each one's own peak)"))
    p["kernel_launch"] = launch(d, what + (" (Grace Arm host)" if gb200 else ""))
    if gb200:
        p["host_bandwidth"] = v(f"{NVBW['gb200']:g} GB/s", f"{NVBW_SRC}: GB200 host-to-device over NVLink-C2C to Grace")
    else:
        p["host_bandwidth"] = v(f"{NVBW['h200']:g} GB/s",
                                f"derived: {NVBW_SRC} H200 52 GB/s (PCIe Gen5 x16) applied to B200: NVIDIA's table gives "
                                f"Gen5 128 GB/s and DGX B200's host CPUs are Gen5 ({HW} §1, conflict with Gen6 noted) [U]")
    p["collectives"] = {
        "intra_node": blackwell_intra(d, what),
        "inter_node": inter_node(d, *nic_ndr("; " + ("GB200 NVL72: NDR 400 Gb/s IB compute fabric (§2)" if gb200 else
                                                     "DGX B200: 8x ConnectX-7 400 Gb/s (§2)"))),
    }
    return p


def l40s(d):
    what = "L40S"
    bf16 = d.mamf["a100_pcie_bf16"]
    p = header("l40s", "NVIDIA L40S (PCIe, 48 GB GDDR6)", "datasheet", DATASHEET_PROV)
    ds = f"{HW} §1 (mullet.se reproducing the NVIDIA L40/L40S datasheet table)"
    p["sm_count"] = v(142, f"{HW} §1 [S] (TechPowerUp-style spec dump, m.reach.dog)")
    p["hbm_capacity"] = v("48 GiB", f"{ds}: 48 GB GDDR6 with ECC (not HBM); {GIB_NOTE}; ECC may reserve part [U]")
    p["hbm_bandwidth"] = v("864 GB/s", ds)
    copy = STREAM["a100"][0] / STREAM["a100"][1]
    p["copy_efficiency"] = v(r3(copy), f"derived: A100-80GB STREAM copy fraction {copy:.3f} (1.61/2.039 TB/s, {STREAM_SRC}), "
                                       f"the lowest published fraction, applied to L40S's GDDR6 [U]: no GDDR6 figure published")
    p["peak_flops"] = peak_flops((91.6, ds), (183, ds + ", dense (366 with sparsity)"),
                                 (362, ds + ", dense (733 with sparsity; 362.05 in hardware.json)"),
                                 (733, ds + ", dense (1,466 with sparsity)"))
    srcb = (f"derived: {MAMF_SRC} A100 PCIe 252.9 / 312 TFLOP/s, the closest published figure (PCIe card, same "
            f"mma.sync class of tensor cores, power-limited), applied to L40S [U]: no L40S MAMF published")
    p["gemm"] = gemm_block(d, gemm_eff(d, bf16, srcb), what)
    ra_f = d.a100_attn_fwd / d.mamf["a100_sxm_bf16"]
    ra_b = d.a100_attn_bwd / d.mamf["a100_sxm_bf16"]
    p["attention"] = {
        "fwd_efficiency": v(r3(bf16 * ra_f), f"derived: L40S best-shape bf16 GEMM efficiency {bf16:.3f} x A100 ratio of "
                                             f"FlashAttention-2 fwd to best-shape (MAMF) bf16 GEMM efficiency {ra_f:.4f} "
                                             f"({d.a100_attn_fwd:.3f}/{d.mamf['a100_sxm_bf16']:.3f}, see a100-sxm-80gb) [U]"),
        "bwd_efficiency": v(r3(bf16 * ra_b), f"derived: L40S best-shape bf16 GEMM efficiency {bf16:.3f} x A100 ratio of "
                                             f"FlashAttention-2 bwd to best-shape (MAMF) bf16 GEMM efficiency {ra_b:.4f} [U]"),
    }
    for pss in ("fwd", "bwd"):
        main = p["attention"][f"{pss}_efficiency"]
        p["attention"][f"flash2_{pss}_efficiency"] = v(
            main["value"], f"= {pss}_efficiency: derived from A100's FlashAttention-2 efficiency (no FA2 figure published "
                           f"for L40S; FA3 needs Hopper, so FA2 is taken as L40S's fastest fused kernel [U]); "
                           + main["source"])
    p["kernel_launch"] = launch(d, what)
    p["host_bandwidth"] = v(f"{NVBW['a100']:g} GB/s", f"derived: {NVBW_SRC} A100 26.28 GB/s over PCIe Gen4 x16, "
                                                      f"applied to L40S (PCIe Gen4 x16, {ds})")
    p["collectives"] = {
        "intra_node": pcie_intra(d, 32, NVBW["a100"],
                                 f"the measured PCIe Gen4 x16 host-to-device rate of A100 ({NVBW_SRC}, 26.28 of 32 GB/s)",
                                 f"PCIe Gen4 x16 per direction: 64 GB/s bidirectional / 2 ({ds}); L40S has no NVLink "
                                 f"({HW} §1, itcreations.com)", what),
        "inter_node": inter_node(d, *nic_ndr("; applied to L40S servers assuming 400 Gb/s NICs [U]")),
    }
    return p


def h100_pcie(d):
    what = "H100 PCIe"
    ratio = d.pcie_power
    bf16 = d.mamf["h100_sxm_bf16"] * ratio
    fp8 = d.mamf["h100_sxm_fp8"] * ratio
    p = header("h100-pcie", "NVIDIA H100 PCIe 80GB", "datasheet", DATASHEET_PROV)
    tab = f"{HW} §1 (archive-lib.hpctech.co.jp reproducing NVIDIA's H100 SXM/PCIe table)"
    p["sm_count"] = v(114, tab)
    p["hbm_capacity"] = v("80 GiB", f"{tab}: '80 GB' HBM2e; {GIB_NOTE}")
    p["hbm_bandwidth"] = v("2000 GB/s", tab + " (product brief: '>2,000 GBps')")
    copy = STREAM["h100"][0] / STREAM["h100"][1]
    p["copy_efficiency"] = v(r3(copy), f"derived: H100 SXM STREAM copy fraction {copy:.3f} (2.90/3.35 TB/s, {STREAM_SRC}) "
                                       f"applied to H100 PCIe (same GH100 memory controllers, HBM2e) [U]")
    p["peak_flops"] = peak_flops((51, tab), (378, tab + ", 756 sparse / 2 [D]"), (756.5, tab + ", 1,513 sparse / 2 [D]"),
                                 (1513, tab + ", 3,026 sparse / 2 [D]"))
    why = (f"x the A100 PCIe/SXM MAMF ratio {ratio:.4f} (252.9/271.2, {MAMF_SRC}): the PCIe card's power limit "
           f"(350 W vs 700 W) applied as measured on A100 [U]")
    p["gemm"] = gemm_block(d, gemm_eff(d, bf16, f"derived: H100 SXM MAMF efficiency {d.mamf['h100_sxm_bf16']:.3f} "
                                       f"(794.5/989) {why}",
                                       fp8, f"derived: H100 SXM FP8 MAMF efficiency {d.mamf['h100_sxm_fp8']:.3f} "
                                            f"(1,402.6/1,979) {why}"), what)
    p["attention"] = attention_from_gemm(d, bf16, "H100 PCIe (derived)")
    p["attention"].update(flash2(d, "h100", "H100 PCIe", ratio,
                                 f"the A100 PCIe/SXM MAMF ratio 252.9/271.2, {MAMF_SRC}, as for this profile's GEMM "
                                 f"efficiencies: power limit 350 W vs 700 W"))
    p["kernel_launch"] = launch(d, what)
    p["host_bandwidth"] = v(f"{VOLTAGEPARK_H2D:g} GB/s", f"{HW} §4d: Voltage Park H100 host-to-device 54.8 GB/s over "
                                                         f"PCIe Gen5 x16 (aigatech/vpbenchmarking), the H100 PCIe's host link")
    p["collectives"] = {
        "intra_node": pcie_intra(d, 64, VOLTAGEPARK_H2D,
                                 f"the measured PCIe Gen5 x16 H100 host-to-device rate (Voltage Park 54.8 of 64 GB/s, "
                                 f"{HW} §4d); NVLink bridges join only pairs (2x H100 PCIe + bridge: all_reduce 116 GB/s, "
                                 f"nccl#1161), not modelled here",
                                 f"PCIe Gen5 x16 per direction: 128 GB/s bidirectional / 2 ({tab})", what),
        "inter_node": inter_node(d, *nic_ndr("; applied to H100 PCIe servers assuming 400 Gb/s NICs [U]")),
    }
    return p


# The shipped H200 profile is what `stacksim calibrate` (full sweep) wrote on
# our H200, with h200(d) above (the PyTorch-based bootstrap measurement) as
# its base for what calibrate cannot measure on one GPU. The other profiles
# take their GEMM ratios, tile and launch cost from calibrate's raw data
# (calibrate_fit) and their attention and eager-kernel ratios from the
# bootstrap (h200fit): calibrate times our own FlashAttention-2-class and fused
# kernels, not the kernels frameworks run.
CALIBRATED_H200 = os.path.join(REPO, "profiles", "measured", "h200-sxm-141gb-2026-11-30-calibrate", "full",
                               "profile.json")


def calibrate_fit(directory):
    """The GEMM cost model fit of stacksim calibrate's raw data (gemm.csv, env.json), with the copy
    bandwidth and launch cost its profile.json states, by the same grid search as tools/gpu/fit_profile_h200.py."""
    with open(os.path.join(directory, "env.json")) as fh:
        env = json.load(fh)
    with open(os.path.join(directory, "profile.json")) as fh:
        prof = json.load(fh)
    gemm = h200fit.read_csv(os.path.join(directory, "gemm.csv"))
    best = {}
    for dtype, peak in h200fit.PEAK_TFLOPS.items():
        large = [r for r in gemm if r["dtype"] == dtype and h200fit.gemm_flops(r) >= h200fit.LARGE_FLOPS]
        top = max(large, key=lambda r: float(r["tflops_median"]))
        best[dtype] = {"row": top, "tflops": float(top["tflops_median"]),
                       "efficiency": float(top["tflops_median"]) / peak}
    launch_us = float(prof["kernel_launch"]["value"].split()[0])
    copy_eff = float(prof["copy_efficiency"]["value"])
    model = h200fit.fit_gemm_model(gemm, int(env["sm_count"]), h200fit.HBM_PEAK_GBPS * 1e9 * copy_eff,
                                   launch_us * 1e-6)
    return {"env": env, "gemm": best, "model": model, "launch_us": launch_us}


def calibrated(d, path):
    """calibrate's own profile of the H200, with fp8's GEMM fit redone as calibrate has fitted it since: its own
    k_overhead (calibrate/fit/gemm_fit.cc FitFp8KOverheads) on the same raw gemm.csv."""
    with open(path) as f:
        p = json.load(f)
    f8 = d.model["per_dtype"]["fp8_e4m3"]
    g = p["gemm"]
    old = g["max_efficiency"]["fp8"]["value"]
    g["max_efficiency"]["fp8"] = v(r3(f8["eff"]),
                                   f"measured on {d.cal['env']['gpu_name']} ({d.cal['env']['date_utc'][:10]}): refit "
                                   f"of calibrate's {CAL_DIR}/gemm.csv with fp8's own k_overhead {d.fp8_kov} and bf16's "
                                   f"tile (calibrate's fit since; its profile.json of that day kept bf16's k_overhead "
                                   f"{d.model['k_overhead']} and gave {old}): {f8['n']} fp8 cuBLASLt GEMMs, mean |log "
                                   f"error| {100 * f8['mean_abs_log']:.1f}% by {GEN} calibrate_fit")
    g["k_overhead_fp8"] = fp8_k_overhead(d, "H200")
    return with_sdpa_flash2(p)


SDPA_GRID = "profiles/measured/h200-sxm-141gb-2026-12-04b-calibrate/sdpa/sdpa_grid.csv"


def with_sdpa_flash2(p):
    """calibrate wrote our own FlashAttention-2-style kernel as flash2_* until 2026-12-04; it is own_*, and the
    flash2_* keys are FlashAttention-2 itself, measured on PyTorch SDPA's flash backend (tools/gpu/measure_sdpa_grid.py)
    at the FA2 benchmark's shape."""
    at = p["attention"]
    for pss in ("fwd", "bwd"):
        at[f"own_{pss}_efficiency"] = at[f"flash2_{pss}_efficiency"]
    with open(os.path.join(REPO, SDPA_GRID)) as f:
        row = next(r for r in csv.DictReader(f) if r["backend"] == "flash" and r["batch"] == "2"
                   and r["q_heads"] == "16" and r["seq"] == "8192" and r["head_dim"] == "128")
    peak = p["peak_flops"]["bf16"]["value"]
    peak_tflops = float(peak.split()[0])
    for pss in ("fwd", "bwd"):
        tflops = float(row[f"{pss}_tflops"])
        at[f"flash2_{pss}_efficiency"] = v(
            round(tflops / peak_tflops, 3),
            f"measured on NVIDIA H200 (driver 580.159.04, CUDA 13.0, PyTorch 2.11.0+cu130, 2026-12-04) by "
            f"tools/gpu/measure_sdpa_grid.py: PyTorch SDPA's flash backend (FlashAttention-2, its pytorch_flash "
            f"kernels), b=2 h=16 s=8192 head_dim 128 causal, the kernels' device time from the profiler's records "
            f"({SDPA_GRID}): {tflops:g} TFLOP/s / {peak_tflops:g} TFLOP/s dense bf16 peak; calibrate's own kernel "
            f"(own_{pss}_efficiency) is only in its style")
    p["provenance"] = p["provenance"].replace(
        "attention.flash2_fwd_efficiency, attention.flash2_bwd_efficiency (kernels.csv)",
        "attention.own_fwd_efficiency, attention.own_bwd_efficiency (kernels.csv: our FlashAttention-2-style kernel, "
        "written as flash2_* by calibrate until 2026-12-04); attention.flash2_fwd_efficiency and "
        "attention.flash2_bwd_efficiency measured on FlashAttention-2 itself (sdpa_grid.csv, 2026-12-04), "
        "attention.flash1_* derived from them")
    return p


# FlashAttention-2 paper (Dao, arXiv:2307.08691), abstract: FlashAttention
# reaches 25-40% of the theoretical maximum FLOPs/s; FlashAttention-2 gives
# "around 2x speedup compared to FlashAttention" (50-73% on A100).
FA1_OVER_FA2 = 0.5
FA1_SRC = ("derived: flash2_{pss}_efficiency {f2:.4f} x {r:g} (the FlashAttention-1 class: FlashAttention v1 and its "
           "Triton port flash_attn_triton, as 2022-23 frameworks ran them; the FlashAttention-2 paper, arXiv:2307.08691 "
           "abstract, reports around 2x speedup over FlashAttention, which reached 25-40% of A100 peak, FA2 50-73%; "
           "the Triton port is taken at FlashAttention's rate [U]; on GPUs newer than A100 the 2x gap is projected [U])")


ATTN_CSV = os.path.join(REPO, "profiles/measured/h200-sxm-141gb-2026-11-29/attention.csv")


def seq_factors():
    """attention.seq_factors: the H200's measured causal fused attention (SDPA flash, head_dim 128, 16 heads,
    batch x seq = 16384 tokens) at each length over its value at 8192, the length the efficiencies hold at."""
    import csv
    rows = {}
    with open(ATTN_CSV) as f:
        for r in csv.DictReader(f):
            if r["causal"] == "1" and r["head_dim"] == "128" and r["heads"] == "16" and \
                    int(r["batch"]) * int(r["seq"]) == 16384:
                rows[(int(r["seq"]), r["pass"])] = float(r["tflops_median"])
    seqs = sorted({s for s, _ in rows})
    pts = [[s, round(rows[(s, "fwd")] / rows[(8192, "fwd")], 3), round(rows[(s, "bwd")] / rows[(8192, "bwd")], 3)]
           for s in seqs]
    text = ", ".join(f"{s}: {rows[(s, 'fwd')]:.0f}/{rows[(s, 'bwd')]:.0f}" for s in seqs)
    return v(pts, f"measured on H200 (PyTorch SDPA flash backend, causal, head_dim 128, 16 heads, batch x seq = "
                  f"16384 tokens; fwd/bwd TFLOP/s by seq {text}; {FIT}attention.csv): each length's efficiency over "
                  f"the one at 8192, applied to every attention kernel of this profile (shorter keys leave more of "
                  f"each tile masked and amortize less per query block) [U] for GPUs other than H200")


def with_seq_factors(p):
    """Adds attention.seq_factors (the H200-measured dependence on sequence length)."""
    p["attention"]["seq_factors"] = seq_factors()
    return p


def with_flash1(p):
    """Adds attention.flash1_{fwd,bwd}_efficiency, derived from the profile's FlashAttention-2 keys."""
    at = p["attention"]
    for pss in ("fwd", "bwd"):
        f2 = at[f"flash2_{pss}_efficiency"]["value"]
        at[f"flash1_{pss}_efficiency"] = v(r3(f2 * FA1_OVER_FA2), FA1_SRC.format(pss=pss, f2=f2, r=FA1_OVER_FA2))
    return p


# The H200's power model (sim/cost/power_state.h): measured 2026-12-04 with tools/gpu/measure_sustained.py --duty
# (GEMMs, SDPA forward+backward and copies filling part of each 10 ms cycle, the rest copies or an idle GPU;
# nvidia-smi's SM clock and power draw), fitted by tools/gpu/fit_power.py (power_fit.json and power_fit.md there:
# every point's rate predicted back from its duty alone within 0.9% mean, 2.6% max).
POWER_DIR = "profiles/measured/h200-sxm-141gb-2026-12-04c-power"
POWER_FIT = os.path.join(REPO, POWER_DIR, "power_fit.json")
H200_LIMIT_SRC = (f"{HW} §1: H200 SXM 700 W (NVIDIA MLPerf system JSON H200-SXM-141GBx8_TRT_MaxQ.json 'H200 TGP "
                  f"700W'); our H200 drew 689-699 W whenever its clock fell below 1980 MHz ({POWER_DIR}/duty)")


def with_power(p, limit_w, limit_src, applied=None):
    """Adds the power block: the H200's measured power model; `applied` names the GPU it is carried to (same GH100
    die and SM count, its own board limit) [U]."""
    with open(POWER_FIT) as f:
        fit = json.load(f)
    meas = (f"measured (NVIDIA H200, driver 580.159.04, 2026-12-04): {POWER_DIR}/duty, tools/gpu/fit_power.py "
            f"(power_fit.json)")
    if applied:
        meas = f"projected: the H200's {meas}, applied to {applied} (same GH100 die, 132 SMs) [U]"
    p["power"] = {
        "board_limit_w": v(limit_w, limit_src),
        "reference_limit_w": v(700, "the H200's 700 W limit, under which calibrate's GEMM sweep measured the GEMM "
                                    "efficiencies this profile's are taken from, back to back at 1425-1700 MHz "
                                    "(profiles/measured/h200-sxm-141gb-2026-12-04b-calibrate/smi.csv; "
                                    f"{H200_LIMIT_SRC})"),
        "attention_reference_clock": v(1.0, "the attention efficiencies were measured in runs of about a second from "
                                            "an idle GPU (calibrate's kernels step, the first of its sweep: 1980 of "
                                            "1980 MHz in profiles/measured/h200-sxm-141gb-2026-12-04b-calibrate/"
                                            "smi.csv; PyTorch SDPA's kernels in short timed loops, "
                                            "tools/gpu/measure_sdpa_grid.py and measure_torch.py), so at the maximum "
                                            "clock [U for the PyTorch runs, whose clocks were not logged]"),
        "idle_w": v(round(fit["idle_w"], 1), meas + ": intercept of power against the time shares at 1980 MHz"),
        "gemm_w": v(round(fit["gemm_w"], 1), meas + ": cuBLAS bf16 GEMMs at 1980 MHz, above idle"),
        "attention_w": v(round(fit["attention_w"], 1), meas + ": PyTorch SDPA causal forward+backward (FlashAttention-2 "
                                                              "kernels) at 1980 MHz, above idle"),
        "memory_w": v(round(fit["memory_w"], 1), meas + ": device copies at 1980 MHz, above idle"),
        "power_exponent": v(round(fit["power_exponent"], 3), meas + ": median over the points below 1980 MHz"),
        "rate_exponent": v(round(fit["rate_exponent"], 3), meas + ": GEMM and attention TFLOP/s against the SM clock"),
    }
    return p


def all_profiles(fit):
    d = Derived(fit)
    # The power block goes where the board limit is measured (the H200) or below the limit the efficiencies were
    # measured under (the 500 W H100: rates measured at 700 W cannot hold there). Not on the 700 W H100 SXM and
    # H800: carried there, it moves the 159 H100 development runs by -1.8% on average (signed error -2.0% ->
    # -3.8%; FP8 runs -3.2%), i.e. real multi-GPU steps at 700 W do not gain the clock it gives light mixes. What
    # such a step draws beyond its compute kernels (collective kernels, NVLink, temperature) is not measured
    # (docs/calibrate.md, "Power state").
    profiles = [a100(d, 40), a100(d, 80), h100_sxm(d, 80),
                with_power(h100_sxm(d, 96), 500, TT_BENCH, "H100 SXM 96GB"),
                h800(d), with_power(calibrated(d, CALIBRATED_H200), 700, H200_LIMIT_SRC),
                blackwell(d, False), blackwell(d, True), l40s(d), h100_pcie(d)]
    return d, [with_seq_factors(with_flash1(with_eager_kernels(d, p))) for p in profiles]


# ---------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------

REQUIRED = ["schema", "name", "gpu", "kind", "provenance", "sm_count", "hbm_capacity", "hbm_bandwidth",
            "copy_efficiency", "peak_flops", "gemm", "attention", "eager_kernels", "kernel_launch", "host_bandwidth",
            "collectives"]

ATTENTION_KEYS = ["fwd_efficiency", "bwd_efficiency", "flash2_fwd_efficiency", "flash2_bwd_efficiency",
                  "flash1_fwd_efficiency", "flash1_bwd_efficiency", "seq_factors"]


def check_profile(p, where):
    """Every number is {value, source} with a source; curves carry gpus and a source."""
    errors = [f"{where}: missing {k}" for k in REQUIRED if k not in p]
    errors += [f"{where}: missing attention.{k}" for k in ATTENTION_KEYS if k not in p.get("attention", {})]
    errors += [f"{where}: missing eager_kernels.{k}" for k in EAGER_GBPS if k not in p.get("eager_kernels", {})]

    # A calibrated profile's marker (docs/formats.md "Partial profiles") carries no sources.
    calibration_marker = {"partial", "missing", "gpus_used", "gpus_requested"}

    def walk(node, path):
        if path in calibration_marker:
            return
        if isinstance(node, dict):
            if "value" in node:
                if set(node) != {"value", "source"} or not str(node["source"]).strip():
                    errors.append(f"{where}: {path} must be {{value, source}} with a non-empty source")
            elif "busbw" in node:
                if set(node) != {"gpus", "source", "busbw"} or not isinstance(node["gpus"], int) \
                        or not node["source"].strip() or not node["busbw"]:
                    errors.append(f"{where}: {path} curve needs gpus, source, busbw")
            else:
                for k, x in node.items():
                    walk(x, f"{path}.{k}" if path else k)
        elif isinstance(node, (int, float, list)) and not isinstance(node, bool):
            errors.append(f"{where}: {path} is a bare value without a source")

    walk(p, "")
    return errors


def render(node, indent=0):
    """JSON with two-space indent; lists of scalars (tiles, curve points) on one line."""
    pad, inner = "  " * indent, "  " * (indent + 1)
    if isinstance(node, dict):
        items = [f"{inner}{json.dumps(k)}: {render(x, indent + 1)}" for k, x in node.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(node, list):
        if all(not isinstance(x, (dict, list)) for x in node):
            return "[" + ", ".join(json.dumps(x, ensure_ascii=False) for x in node) + "]"
        return "[\n" + ",\n".join(inner + render(x, indent + 1) for x in node) + "\n" + pad + "]"
    return json.dumps(node, ensure_ascii=False)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(REPO, "profiles"))
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--explain", action="store_true", help="print the derived ratios and fits")
    a = ap.parse_args(argv)
    d, profiles = all_profiles(h200fit.fit())
    if a.explain:
        d.explain()
    errors, stale = [], []
    for p in profiles:
        path = os.path.join(a.out, p["name"] + ".json")
        errors += check_profile(p, path)
        text = render(p) + "\n"
        if a.check:
            if not os.path.exists(path) or open(path).read() != text:
                stale.append(path)
        else:
            with open(path, "w") as f:
                f.write(text)
            print(f"wrote {path}")
    for e in errors:
        print(e, file=sys.stderr)
    for s in stale:
        print(f"out of date: {s} (rerun {GEN})", file=sys.stderr)
    return 1 if errors or stale else 0


if __name__ == "__main__":
    sys.exit(main())
