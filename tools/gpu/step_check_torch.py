#!/usr/bin/env python3
"""The step check's layers as PyTorch modules: the framework's side of the gap.

calibrate's step check (docs/calibrate.md, "Step check") times one
transformer layer's training step built from cuBLASLt GEMMs and the project's
own kernels, and sets it against the cost model's prediction. This script
times the same layers as a framework runs them, so that the gap between our
kernels and PyTorch's is measured, not assumed (it feeds frameworks/*.json):

  * the same shapes (calibrate/fit/step_shapes.h; `--list-shapes` prints them,
    and a ctest compares the two lists): Llama-3-8B and -70B layers at
    tensor-parallel slices 1, 2, 4, 8 (1/tp of the heads and FFN width, no
    collectives), seq 2048 and 8192, micro-batch 1, and one Mixtral-8x7B MoE
    layer (8 experts, top 2, exactly balanced routing as the harness does);
  * a layer is RMSNorm -> fused QKV linear -> RoPE -> SDPA (causal, GQA) ->
    output linear -> residual -> RMSNorm -> SwiGLU MLP (or the MoE block:
    router, per-expert linears in a loop, weighted combine) -> residual;
  * PyTorch's usual mixed precision: fp32 parameters, bf16 autocast,
    gradient clipping (foreach) and fused AdamW, zero_grad(set_to_none=True);
  * eager, then torch.compile (default mode) for as many shapes as the
    compile budget allows (compiling is slow: --compile-budget-s);
  * CUDA events around forward, backward and optimizer, after warm-up
    steps, median of repeats; inputs random (never zeros).

Writes OUT_DIR/step_torch.csv: shape, mode (eager, compile), measured_s,
min_s, forward_s, backward_s, optimizer_s, repeats, torch (version), and
OUT_DIR/step_torch_env.json. Leave the card's clocks as they are (METHOD.md).

usage: step_check_torch.py OUT_DIR [--quick] [--compile-budget-s 180]
       step_check_torch.py --list-shapes
"""
import argparse
import csv
import json
import math
import os
import sys
import time


def step_shapes():
    """The list in calibrate/fit/step_shapes.cc, same order and names.

    Widths from the models' Hugging Face config.json (models/llama3-8b.json,
    models/llama3-70b.json, models/mixtral-8x7b.json)."""
    llama8 = dict(model="llama3-8b", hidden=4096, ffn=14336, heads=32, kv_heads=8, head_dim=128,
                  experts=0, top_k=0, expert_ffn=0)
    llama70 = dict(model="llama3-70b", hidden=8192, ffn=28672, heads=64, kv_heads=8, head_dim=128,
                   experts=0, top_k=0, expert_ffn=0)
    mixtral = dict(model="mixtral-8x7b", hidden=4096, ffn=0, heads=32, kv_heads=8, head_dim=128,
                   experts=8, top_k=2, expert_ffn=14336)
    shapes = []
    for base in (llama8, llama70):
        for seq in (2048, 8192):
            for tp in (1, 2, 4, 8):
                shapes.append(dict(base, tp=tp, seq=seq, micro_batch=1))
    shapes.append(dict(mixtral, tp=1, seq=4096, micro_batch=1))
    for s in shapes:
        s["name"] = "%s tp=%d seq=%d mb=%d" % (s["model"], s["tp"], s["seq"], s["micro_batch"])
    return shapes


def build_layer(torch, s):
    nn = torch.nn
    F = torch.nn.functional
    H, d = s["hidden"], s["head_dim"]
    hq, hkv = s["heads"] // s["tp"], s["kv_heads"] // s["tp"]
    moe = s["experts"] > 0
    ffn = (s["expert_ffn"] if moe else s["ffn"]) // s["tp"]
    T = s["micro_batch"] * s["seq"]

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1 = nn.RMSNorm(H, eps=1e-5)
            self.qkv = nn.Linear(H, (hq + 2 * hkv) * d, bias=False)
            self.proj = nn.Linear(hq * d, H, bias=False)
            self.norm2 = nn.RMSNorm(H, eps=1e-5)
            if moe:
                E = s["experts"]
                self.router = nn.Linear(H, E, bias=False)
                self.fc1 = nn.ModuleList(nn.Linear(H, 2 * ffn, bias=False) for _ in range(E))
                self.fc2 = nn.ModuleList(nn.Linear(ffn, H, bias=False) for _ in range(E))
                # Balanced routing, as the harness: copy j of token t -> expert (t k + j) mod E.
                flat = torch.arange(T * s["top_k"])
                order = torch.argsort(flat % E, stable=True)
                self.register_buffer("order", order, persistent=False)
                self.register_buffer("token_of", order // s["top_k"], persistent=False)
                self.register_buffer("expert_of_flat", flat % E, persistent=False)
            else:
                self.fc1 = nn.Linear(H, 2 * ffn, bias=False)
                self.fc2 = nn.Linear(ffn, H, bias=False)
            pos = torch.arange(s["seq"], dtype=torch.float32)[:, None]
            inv = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
            ang = pos * inv[None, :]
            self.register_buffer("cos", torch.cat([ang.cos(), ang.cos()], -1), persistent=False)
            self.register_buffer("sin", torch.cat([ang.sin(), ang.sin()], -1), persistent=False)

        def rope(self, x):  # x [b, heads, seq, d], rotate-half form
            x1, x2 = x[..., : d // 2], x[..., d // 2:]
            rot = torch.cat([-x2, x1], -1)
            return x * self.cos.to(x.dtype) + rot * self.sin.to(x.dtype)

        def attention(self, x):
            b = s["micro_batch"]
            q, k, v = self.qkv(x).split([hq * d, hkv * d, hkv * d], -1)
            q = q.view(b, -1, hq, d).transpose(1, 2)
            k = k.view(b, -1, hkv, d).transpose(1, 2)
            v = v.view(b, -1, hkv, d).transpose(1, 2)
            q, k = self.rope(q), self.rope(k)
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=hq != hkv)
            return self.proj(o.transpose(1, 2).reshape(b, -1, hq * d))

        def swiglu(self, fc1, fc2, x):
            gate, up = fc1(x).chunk(2, -1)
            return fc2(F.silu(gate) * up)

        def mlp(self, x):
            if not moe:
                return self.swiglu(self.fc1, self.fc2, x)
            b = x.shape[0]
            xt = x.reshape(-1, H)
            probs = torch.softmax(self.router(xt).float(), -1)
            weight = probs.reshape(-1)[torch.arange(xt.shape[0] * s["top_k"], device=x.device)
                                       // s["top_k"] * s["experts"] + self.expert_of_flat]
            routed = xt[self.token_of]  # rows grouped by expert
            cap = routed.shape[0] // s["experts"]
            outs = [self.swiglu(self.fc1[e], self.fc2[e], routed[e * cap:(e + 1) * cap])
                    for e in range(s["experts"])]
            y = torch.cat(outs, 0) * weight[self.order, None].to(routed.dtype)
            out = torch.zeros(xt.shape, dtype=y.dtype, device=y.device).index_add_(0, self.token_of, y)
            return out.view(b, -1, H).to(x.dtype)

        def forward(self, x):
            h = x + self.attention(self.norm1(x))
            return h + self.mlp(self.norm2(h))

    return Layer()


def median(v):
    v = sorted(v)
    return v[len(v) // 2]  # the high median: a sample that was measured


def time_steps(torch, layer, opt, x, dout, warmup, repeats):
    params = [p for p in layer.parameters() if p.requires_grad]

    def fwd():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return layer(x)

    def step(events=None):
        if events:
            events[0].record()
        out = fwd()
        if events:
            events[1].record()
        out.backward(dout)
        if events:
            events[2].record()
        torch.nn.utils.clip_grad_norm_(params, 1.0, foreach=True)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if events:
            events[3].record()

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    parts = {"total": [], "forward": [], "backward": [], "optimizer": []}
    for _ in range(repeats):
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
        step(ev)
        ev[3].synchronize()
        parts["forward"].append(ev[0].elapsed_time(ev[1]) * 1e-3)
        parts["backward"].append(ev[1].elapsed_time(ev[2]) * 1e-3)
        parts["optimizer"].append(ev[2].elapsed_time(ev[3]) * 1e-3)
        parts["total"].append(ev[0].elapsed_time(ev[3]) * 1e-3)
    return parts


def measure(torch, s, mode, warmup, repeats, seed):
    torch.manual_seed(seed)
    layer = build_layer(torch, s).cuda()
    opt = torch.optim.AdamW(layer.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=True)
    if mode == "compile":
        # Every shape's layer shares one forward's code: without a reset Dynamo
        # stops recompiling after its recompile_limit (8) and runs the rest
        # eager (the 2026-12-04 run's 70B and Mixtral "compile" rows did).
        torch._dynamo.reset()
        layer = torch.compile(layer)
    shape = (s["micro_batch"], s["seq"], s["hidden"])
    x = torch.randn(shape, device="cuda", dtype=torch.bfloat16).requires_grad_(True)
    dout = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    try:
        return time_steps(torch, layer, opt, x, dout, warmup, repeats)
    finally:
        del layer, opt, x, dout
        torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir", nargs="?")
    ap.add_argument("--quick", action="store_true", help="5 repeats instead of 9")
    ap.add_argument("--compile-budget-s", type=float, default=180.0,
                    help="stop starting torch.compile shapes after this many seconds (0: no compile)")
    ap.add_argument("--eager-budget-s", type=float, default=120.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--list-shapes", action="store_true", help="print the shape names and exit (no torch needed)")
    a = ap.parse_args()
    shapes = step_shapes()
    if a.list_shapes:
        for s in shapes:
            print(s["name"])
        return 0
    if not a.out_dir:
        ap.error("OUT_DIR is required")
    try:
        import torch  # only here: --list-shapes runs without it
    except ImportError as e:
        print("step_check_torch: PyTorch is not installed (%s); nothing measured" % e, file=sys.stderr)
        return 2

    if not torch.cuda.is_available():
        print("step_check_torch: no CUDA GPU visible; nothing measured", file=sys.stderr)
        return 2
    os.makedirs(a.out_dir, exist_ok=True)
    with open(os.path.join(a.out_dir, "step_torch_env.json"), "w") as f:
        json.dump({"gpu_name": torch.cuda.get_device_name(0), "torch": torch.__version__,
                   "cuda": torch.version.cuda, "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                   "quick": a.quick}, f, indent=2)
    warmup, repeats = 3, 5 if a.quick else 9
    path = os.path.join(a.out_dir, "step_torch.csv")
    failures = 0
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["shape", "mode", "measured_s", "min_s", "forward_s", "backward_s", "optimizer_s", "repeats",
                    "torch"])
        for mode, budget in (("eager", a.eager_budget_s), ("compile", a.compile_budget_s)):
            start = time.time()
            for s in shapes:
                if time.time() - start > budget:
                    print("step_check_torch: %s budget %.0f s spent; later shapes not measured" % (mode, budget),
                          file=sys.stderr)
                    break
                try:
                    p = measure(torch, s, mode, warmup, repeats, a.seed)
                except Exception as e:  # one shape failing (memory, compile) must not end the run
                    failures += 1
                    print("step_check_torch: %s %s FAILED: %s" % (mode, s["name"], str(e).splitlines()[0]),
                          file=sys.stderr)
                    continue
                w.writerow([s["name"], mode, "%.6e" % median(p["total"]), "%.6e" % min(p["total"]),
                            "%.6e" % median(p["forward"]), "%.6e" % median(p["backward"]),
                            "%.6e" % median(p["optimizer"]), repeats, torch.__version__])
                f.flush()
                print("%-32s %-7s %8.3f ms" % (s["name"], mode, median(p["total"]) * 1e3), flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
