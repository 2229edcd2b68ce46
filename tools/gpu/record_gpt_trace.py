#!/usr/bin/env python3
"""Record a PyTorch profiler (Kineto) trace of one training step of a small GPT.

The trace is test data for stacksim's trace importer: a real step, with GPU
kernels, their streams and the CPU-side launch gaps. Next to it we write the
step time PyTorch measured (median over un-profiled steps, CUDA events) and
the step time of the profiled step itself, so replay accuracy can be checked.

Runs on a GPU (bf16 autocast, fused AdamW) or, for a small test trace, on the
CPU (--device cpu).

With --ddp the model is wrapped in DistributedDataParallel over NCCL, so the
trace carries DDP's gradient all-reduce: NCCL kernels on their own stream,
torch.distributed's record_param_comms ops with the message sizes, and the
stream-wait events between the streams. Under torchrun each rank writes its
own trace (trace.rank<R>.json.gz); run alone it is a one-rank group (NCCL
still launches its kernels, and the sizes are real).

usage: record_gpt_trace.py OUT_DIR [--device cuda|cpu] [--layers 6] [--hidden 1024] [--ddp]
       torchrun --nproc-per-node 2 record_gpt_trace.py OUT_DIR --ddp
"""
import argparse
import gzip
import json
import math
import os
import shutil
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, h, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(h)
        self.qkv = nn.Linear(h, 3 * h)
        self.proj = nn.Linear(h, h)
        self.ln2 = nn.LayerNorm(h)
        self.fc1 = nn.Linear(h, 4 * h)
        self.fc2 = nn.Linear(4 * h, h)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(h, dim=-1)
        shape = (b, s, self.heads, h // self.heads)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, h))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab, h, heads, layers, seq):
        super().__init__()
        self.tok = nn.Embedding(vocab, h)
        self.pos = nn.Embedding(seq, h)
        self.blocks = nn.ModuleList(Block(h, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(h)
        self.head = nn.Linear(h, vocab, bias=False)
        self.head.weight = self.tok.weight  # tied embeddings

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--vocab", type=int, default=50304)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--ddp", action="store_true", help="DistributedDataParallel over NCCL")
    a = ap.parse_args()
    if a.device == "cuda" and not torch.cuda.is_available():
        print("record_gpt_trace: no CUDA GPU; use --device cpu for a CPU trace", file=sys.stderr)
        return 2
    if a.device == "cpu":  # keep the CPU trace small
        a.layers, a.hidden, a.heads, a.seq, a.batch, a.vocab, a.steps = 2, 128, 4, 128, 2, 1024, 4
    os.makedirs(a.out, exist_ok=True)
    torch.manual_seed(0)
    rank, world = 0, 1
    if a.ddp:
        if a.device != "cuda":
            print("record_gpt_trace: --ddp needs --device cuda (NCCL)", file=sys.stderr)
            return 2
        import torch.distributed as dist
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29511")
        os.environ.setdefault("RANK", "0")
        os.environ.setdefault("WORLD_SIZE", "1")
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        dist.init_process_group("nccl", device_id=torch.device("cuda", local))
        dev = torch.device("cuda", local)
    else:
        dev = torch.device(a.device)
    model = GPT(a.vocab, a.hidden, a.heads, a.layers, a.seq).to(dev)
    if a.ddp:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[dev.index])
    fused = a.device == "cuda"
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=fused)
    idx = torch.randint(0, a.vocab, (a.batch, a.seq), device=dev)
    tgt = torch.randint(0, a.vocab, (a.batch, a.seq), device=dev)

    def step():
        with torch.autocast(device_type=a.device, dtype=torch.bfloat16):
            logits = model(idx)
            loss = F.cross_entropy(logits.view(-1, a.vocab).float(), tgt.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    def sync():
        if a.device == "cuda":
            torch.cuda.synchronize()

    for _ in range(3):
        step()
    sync()
    times = []
    for _ in range(a.steps):
        sync()
        t0 = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - t0)
    acts = [torch.profiler.ProfilerActivity.CPU]
    if a.device == "cuda":
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    sched = torch.profiler.schedule(wait=1, warmup=2, active=1, repeat=1)
    stem = f"trace.rank{rank}" if a.ddp else "trace"
    raw = os.path.join(a.out, stem + ".json")
    profiled = []
    with torch.profiler.profile(activities=acts, schedule=sched, record_shapes=True,
                                on_trace_ready=lambda p: p.export_chrome_trace(raw)) as prof:
        for _ in range(4):
            sync()
            t0 = time.perf_counter()
            step()
            sync()
            profiled.append(time.perf_counter() - t0)
            prof.step()
    with open(raw, "rb") as fi, gzip.open(os.path.join(a.out, stem + ".json.gz"), "wb", compresslevel=9) as fo:
        shutil.copyfileobj(fi, fo)
    os.remove(raw)
    nparams = sum(p.numel() for p in model.parameters())
    meta = {
        "what": "one training step of a small GPT (bf16 autocast, AdamW), torch.profiler chrome trace"
        + (f", DDP over NCCL, rank {rank} of {world}" if a.ddp else ""),
        "device": torch.cuda.get_device_name(0) if a.device == "cuda" else "cpu",
        "torch": torch.__version__,
        "model": {"layers": a.layers, "hidden": a.hidden, "heads": a.heads, "seq": a.seq,
                  "batch": a.batch, "vocab": a.vocab, "params": nparams},
        "step_s_median_unprofiled": statistics.median(times),
        "step_s_all_unprofiled": times,
        "step_s_profiled_active": profiled[3],  # the 4th step is the one recorded (wait 1, warmup 2)
        "step_s_profiled_all": profiled,
        "model_flops_per_step": 6 * nparams * a.batch * a.seq
        + 12 * a.layers * a.hidden * a.seq * a.seq * a.batch * 0.5,
    }
    with open(os.path.join(a.out, stem + ".meta.json" if a.ddp else "trace_meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(json.dumps({k: v for k, v in meta.items() if "all" not in k}, indent=1))
    if a.ddp:
        import torch.distributed as dist
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
