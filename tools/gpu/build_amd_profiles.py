#!/usr/bin/env python3
"""Writes profiles/mi300x.json and profiles/mi325x.json (AMD Instinct, CDNA 3).

Datasheet figures are AMD's; everything an existing profile fits from a
measurement is carried over from profiles/h100-sxm-80gb.json (itself built
by build_profiles.py from the H200 measurements) and scaled where a published
MI300X figure allows, each value saying so. No value here comes from a run on
an AMD GPU by this project: both profiles are "datasheet" profiles and the
GPU class (cdna3) has no validated run (docs/uncertainty.md).

Run from the repository root: python3 tools/gpu/build_amd_profiles.py
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
H100 = json.load(open(os.path.join(ROOT, "profiles", "h100-sxm-80gb.json")))

MI300X_SHEET = ("AMD Instinct MI300X data sheet / product page (amd.com), as listed in the ROCm documentation "
                "'AMD Instinct MI300 series microarchitecture' (rocm.docs.amd.com, conceptual/gpu-arch/mi300)")
MI325X_SHEET = ("AMD Instinct MI325X data sheet (amd.com), figures as reproduced by awesomeagents.ai/hardware/"
                "amd-mi325x (FP16/BF16 1,307.4, FP8 2,614.9, TF32 653.7, FP32 163.4 TFLOPS dense; 256 GB HBM3E, "
                "6 TB/s) and unanswered.io/guide/amd-instinct-mi325x (same CDNA 3 die, 304 CUs)")
MAMF = ("stas00/ml-engineering compute/accelerator/README.md, Maximum Achievable Matmul FLOPS table: AMD MI300X "
        "781.9 / 1300 TFLOPS bf16 = 60.1%, best shape 4096x10240x4864, ROCm-6.2")
RCCL_BLOG = ("AMD ROCm blog 'Understanding RCCL Bandwidth and xGMI Performance on AMD Instinct MI300X' "
             "(rocm.blogs.amd.com, 2025-03-02): each GPU joins its 7 peers by xGMI links of 64 GB/s raw, about "
             "48 GB/s usable per link after CRC and protocol overhead")

# The H200-measured ratio of sustained transformer-shape GEMM efficiency to the
# best shape, exactly as build_profiles.py derives it for every datasheet
# profile (stacksim calibrate's fit over torch.mm's best shape).
sys.path.insert(0, os.path.join(ROOT, "tools", "gpu"))
import build_profiles  # noqa: E402
import fit_profile_h200  # noqa: E402
SUSTAINED = round(build_profiles.Derived(fit_profile_h200.fit()).r_sus, 4)
MI300X_BEST_BF16 = 781.9 / 1307.4  # MAMF over the dense bf16 peak AMD states (the table rounds it to 1300)


def v(value, source):
    return {"value": value, "source": source}


def h100(path):
    node = H100
    for key in path:
        node = node[key]
    return node


def gemm_block(best_bf16):
    # H100's best-shape figures (0.803 bf16, 0.709 fp8) give the fp8/bf16 ratio
    # of the same software generation; no MI300X fp8 MAMF is published here.
    fp8_ratio = 0.709 / 0.803
    bf16 = round(best_bf16 * SUSTAINED, 3)
    fp8 = round(best_bf16 * fp8_ratio * SUSTAINED, 3)
    sustained = (f"sustained: best-shape figure {best_bf16:.3f} x H200 measured sustained-to-best ratio r = "
                 f"{SUSTAINED} (calibrate's fitted bf16 over torch.mm's best shape, tools/gpu/build_profiles.py, as in "
                 f"every datasheet profile) [U] for ROCm")
    return {
        "max_efficiency": {
            "bf16": v(bf16, f"{sustained}; best-shape figure: {MAMF}, over the 1,307.4 TFLOPS dense peak"),
            "fp16": v(bf16, f"{sustained}; best-shape figure: = bf16 (same matrix-core rate; {MAMF})"),
            "tf32": v(bf16, f"{sustained}; best-shape figure: = bf16 [U] (no published MI300X TF32 matmul figure)"),
            "fp8": v(fp8, f"{sustained}; best-shape figure: derived: bf16 {best_bf16:.3f} x H100 published fp8/bf16 "
                          f"best-shape ratio 0.709/0.803 (profiles/h100-sxm-80gb.json) [U] (no published MI300X FP8 "
                          f"matmul figure)"),
        },
        "tile": v(h100(["gemm", "tile", "value"]),
                  "H200 fit applied to CDNA 3 [U] (hipBLASLt picks its own tiles): " + h100(["gemm", "tile", "source"])),
        "k_overhead": v(h100(["gemm", "k_overhead", "value"]),
                        "H200 fit applied to CDNA 3 [U]: " + h100(["gemm", "k_overhead", "source"])),
    }


def attention_block(best_bf16):
    # The H200 measured ratios of fused attention to the best-shape GEMM
    # (0.7540 fwd, 0.6501 bwd), and H100's FA2-to-fused ratios, applied [U].
    fwd = round(best_bf16 * 0.7540, 3)
    bwd = round(best_bf16 * 0.6501, 3)
    f2 = round(fwd * 0.369 / 0.606, 3)
    b2 = round(bwd * 0.318 / 0.522, 3)
    why = ("derived: MI300X best-shape bf16 GEMM efficiency {:.3f} ({}) x H200 measured ratio of fused attention {} to "
           "best-shape bf16 GEMM efficiency {} (tools/gpu/fit_profile_h200.py) [U]: no published MI300X attention "
           "efficiency is used here (ROCm ships CK / Triton flash attention)")
    out = {
        "fwd_efficiency": v(fwd, why.format(best_bf16, MAMF, "fwd", 0.7540)),
        "bwd_efficiency": v(bwd, why.format(best_bf16, MAMF, "bwd", 0.6501)),
        "flash2_fwd_efficiency": v(f2, f"derived: fwd_efficiency {fwd} x H100's FlashAttention-2 / fused ratio "
                                       f"0.369/0.606 (profiles/h100-sxm-80gb.json) [U]"),
        "flash2_bwd_efficiency": v(b2, f"derived: bwd_efficiency {bwd} x H100's FlashAttention-2 / fused ratio "
                                       f"0.318/0.522 (profiles/h100-sxm-80gb.json) [U]"),
        "flash1_fwd_efficiency": v(round(f2 * 0.5, 3), f"derived: flash2_fwd_efficiency {f2} x 0.5, the rule of "
                                                       f"profiles/h100-sxm-80gb.json flash1_* [U]"),
        "flash1_bwd_efficiency": v(round(b2 * 0.5, 3), f"derived: flash2_bwd_efficiency {b2} x 0.5, the rule of "
                                                       f"profiles/h100-sxm-80gb.json flash1_* [U]"),
        "seq_factors": v(h100(["attention", "seq_factors", "value"]),
                         "H200 measured, applied to CDNA 3 [U]: " + h100(["attention", "seq_factors", "source"])),
    }
    return out


def eager_kernels():
    return {k: v(e["value"], e["source"].replace("applied to this GPU [U]", "applied to CDNA 3 [U]"))
            for k, e in H100["eager_kernels"].items()}


def curve(plateau):
    # The H100 ring curve's shape (no NVLS: a mesh has no switch that
    # reduces), scaled to the projected plateau.
    ring = H100["collectives"]["intra_node"]["ring"]["busbw"]
    top = float(ring[-1][1].split()[0])
    return [[size, f"{float(bw.split()[0]) * plateau / top:.4g} GB/s"] for size, bw in ring]


def collectives():
    usable = 7 * 48.0
    why = (f"projected, no published 8x MI300X RCCL curve used: the shape of the H100 ring curve "
           f"(profiles/h100-sxm-80gb.json collectives.intra_node.ring, itself derived from Azure's 8x H100 "
           f"measurement) scaled so that its 8 GiB plateau is 7 links x 48 GB/s usable = {usable:g} GB/s per GPU "
           f"per direction ({RCCL_BLOG}) [U]; an upper estimate: it assumes RCCL keeps every link of the mesh busy")
    return {
        "intra_node": {
            "reference_link_bandwidth": v("448 GB/s", "7 Infinity Fabric (xGMI) links x 64 GB/s per direction "
                                                      f"(128 GB/s bidirectional each) per GPU in the 8-GPU OAM platform: "
                                                      f"{MI300X_SHEET}; {RCCL_BLOG}"),
            "latency": v(h100(["collectives", "intra_node", "latency", "value"]),
                         "NVLink per-step latency applied to xGMI [U]: " +
                         h100(["collectives", "intra_node", "latency", "source"])),
            "all_reduce": {"gpus": 8, "source": why, "busbw": curve(usable)},
            "ring": {"gpus": 8, "source": why, "busbw": curve(usable)},
        },
        "inter_node": {
            "nic_efficiency": v(h100(["collectives", "inter_node", "nic_efficiency", "value"]),
                                "400 Gb/s NIC efficiency applied to the MI300X platform's 8 x 400 Gb/s NICs [U]: " +
                                h100(["collectives", "inter_node", "nic_efficiency", "source"])),
            "latency": v(h100(["collectives", "inter_node", "latency", "value"]),
                         "applied to RCCL [U]: " + h100(["collectives", "inter_node", "latency", "source"])),
        },
    }


def profile(name, gpu, sheet, hbm_gb, hbm_tbps):
    return {
        "schema": "stacksim.profile/1",
        "name": name,
        "gpu": gpu,
        "kind": "datasheet",
        "provenance": ("AMD datasheet figures (each value cites its page); efficiencies projected from a published "
                       "MI300X matmul micro-benchmark and the H200 measurements behind the NVIDIA datasheet "
                       "profiles, marked [U]; no run on this GPU validates it (GPU class cdna3); generated by "
                       "tools/gpu/build_amd_profiles.py. stacksim calibrate is CUDA-only and cannot measure it"),
        "sm_count": v(304, f"304 compute units (CUs; 8 XCDs x 38): {sheet}"),
        "hbm_capacity": v(f"{hbm_gb} GB", f"{hbm_gb} GB HBM ({'HBM3' if hbm_gb == 192 else 'HBM3E'}): {sheet}; "
                                          "read as decimal GB as AMD states it [U]"),
        "hbm_bandwidth": v(f"{hbm_tbps * 1000:g} GB/s", f"{hbm_tbps:g} TB/s peak: {sheet}"),
        "copy_efficiency": v(H100["copy_efficiency"]["value"],
                             "H100 STREAM-copy fraction applied to CDNA 3 [U] (no published MI300X copy figure used): "
                             + H100["copy_efficiency"]["source"]),
        "peak_flops": {
            "fp32": v("163.4 TFLOP/s", f"FP32 vector/matrix, dense: {sheet}"),
            "tf32": v("653.7 TFLOP/s", f"TF32 matrix, dense: {sheet}"),
            "bf16": v("1307.4 TFLOP/s", f"BF16 matrix, dense (2,614.9 with sparsity): {sheet}"),
            "fp16": v("1307.4 TFLOP/s", f"FP16 matrix, dense (2,614.9 with sparsity): {sheet}"),
            "fp8": v("2614.9 TFLOP/s", f"FP8 matrix, dense (5,229.8 with sparsity): {sheet}"),
        },
        "gemm": gemm_block(MI300X_BEST_BF16),
        "attention": attention_block(MI300X_BEST_BF16),
        "eager_kernels": eager_kernels(),
        "kernel_launch": v(h100(["kernel_launch", "value"]),
                           "CUDA launch cost applied to HIP [U]: " + h100(["kernel_launch", "source"])),
        "host_bandwidth": v(h100(["host_bandwidth", "value"]),
                            "H100's PCIe Gen5 x16 host-to-device figure applied (the MI300X OAM is PCIe Gen5 x16: "
                            f"{MI300X_SHEET}) [U]: " + h100(["host_bandwidth", "source"])),
        "collectives": collectives(),
    }


def main():
    out = {
        "mi300x": profile("mi300x", "AMD Instinct MI300X (OAM, 8-GPU platform)", MI300X_SHEET, 192, 5.3),
        "mi325x": profile("mi325x", "AMD Instinct MI325X (OAM, 8-GPU platform)", MI325X_SHEET, 256, 6.0),
    }
    # MI325X: same CDNA 3 die and links; the GEMM, attention and collective
    # projections are MI300X's (no MI325X micro-benchmark is used) [U].
    for key in ("gemm", "attention"):
        for name, entry in out["mi325x"][key].items():
            if isinstance(entry, dict) and "source" in entry:
                entry["source"] = "MI300X figure applied to MI325X (same compute die) [U]: " + entry["source"]
            elif isinstance(entry, dict):
                for e in entry.values():
                    e["source"] = "MI300X figure applied to MI325X (same compute die) [U]: " + e["source"]
    for name, p in out.items():
        with open(os.path.join(ROOT, "profiles", name + ".json"), "w") as f:
            json.dump(p, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
