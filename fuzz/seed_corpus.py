#!/usr/bin/env python3
"""Writes the seed inputs of the fuzz targets into fuzz/corpus/<target>/.

Seeds come from the repository's real files (models/, topologies/,
profiles/, scenarios/, reliability/, economics/, validation/, the Kineto test
trace), the training validation file (shared/validation/training_runs.json,
given with --training-runs; a few runs, one small document each), and the
examples of docs/formats.md. scripts/fuzz.sh then grows and minimizes the
corpus (-merge=1); run this again only to start a corpus over.

usage: fuzz/seed_corpus.py [--training-runs PATH] [--chakra-dir DIR ...]
       fuzz/seed_corpus.py --dicts   (writes fuzz/<target>.dict)
  --chakra-dir: a directory written by `stacksim simulate --chakra DIR`
  (small model); its ranks become one seed (ranks joined by NUL bytes).
"""
import argparse
import glob
import gzip
import hashlib
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")


def put(target, data, name=None):
    if isinstance(data, str):
        data = data.encode()
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    name = name or hashlib.sha1(data).hexdigest()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def compact(obj):
    return json.dumps(obj, separators=(",", ":"))


def files(pattern):
    """The committed files matching pattern (not others' work in progress)."""
    import subprocess
    tracked = subprocess.run(["git", "-C", ROOT, "ls-files", "--", pattern], capture_output=True, text=True,
                             check=True).stdout.split()
    return sorted(os.path.join(ROOT, p) for p in tracked if os.path.dirname(p) == os.path.dirname(pattern))


def read(path):
    with open(path, "rb") as f:
        return f.read()


def kineto_window(doc, kernels):
    """The trace's metadata and step annotations, its first `kernels` GPU
    activities and the host calls and flows that launched them."""
    ev = doc["traceEvents"]
    gpu = sorted((e for e in ev if e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy")), key=lambda e: e["ts"])
    keep = gpu[:kernels]
    corr = {e["args"].get("correlation") for e in keep}
    out = []
    for e in ev:
        cat = e.get("cat")
        if cat in ("kernel", "gpu_memset", "gpu_memcpy"):
            if any(e is k for k in keep):
                out.append(e)
        elif cat in ("cuda_runtime", "cuda_driver"):
            if e.get("args", {}).get("correlation") in corr or e.get("name") == "cudaDeviceSynchronize":
                out.append(e)
        elif cat == "ac2g":
            if e.get("id") in corr:
                out.append(e)
        elif cat in ("user_annotation", "gpu_user_annotation", "Trace") or e.get("ph") in ("M", "i"):
            out.append(e)
    small = {k: v for k, v in doc.items() if k not in ("traceEvents", "deviceProperties")}
    small["traceEvents"] = out
    return compact(small)


def chakra_objects(path):
    dec = json.JSONDecoder()
    text = read(path).decode()
    i, objs = 0, []
    while i < len(text):
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            break
        o, i = dec.raw_decode(text, i)
        objs.append(o)
    return objs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--training-runs", default="/work/shared/validation/training_runs.json")
    ap.add_argument("--chakra-dir", action="append", default=[])
    args = ap.parse_args()

    for p in files("models/*.json") + [os.path.join(ROOT, "tests/data/config/tiny-model.json")]:
        put("model", read(p))
    for p in files("topologies/*.json"):
        put("topology", read(p))
    for p in files("profiles/*.json"):
        put("profile", read(p))
    for p in files("scenarios/*.json"):
        base = os.path.basename(p)
        target = "serve_scenario" if base.startswith("serve-") else \
            "cluster_scenario" if base.startswith("cluster-") else "scenario"
        put(target, read(p))
    for s in ["plan.tp=2", "plan.dp=4", "training.global_batch=128", "plan.recompute=selective",
              "plan.schedule=\"1f1b\"", "plan={}", "gpus=16", "model.num_hidden_layers=4", "plan.ep=null",
              "training.seq_len=1e9", "plan.sequence_parallel=true"]:
        put("scenario_set", s)
    for p in files("reliability/*.json"):
        put("reliability", read(p))
    put("economics", read(os.path.join(ROOT, "economics/gpus.json")))

    serving = json.loads(read(os.path.join(ROOT, "validation/serving_runs.json")))
    kinds = {}
    for run in serving["runs"]:
        kinds.setdefault(run.get("kind"), run)
    for run in kinds.values():
        put("serving_validation", compact({"schema": serving["schema"], "runs": [run]}))
    if os.path.exists(args.training_runs):
        training = json.loads(read(args.training_runs))
        picked = {}
        for run in training["runs"]:
            m = run.get("model") or {}
            key = (m.get("activation"), bool(m.get("moe")), m.get("attention"), run.get("framework", "")[:8],
                   (run.get("hardware") or {}).get("gpu"))
            picked.setdefault(key, run)
        for run in list(picked.values())[:24]:
            put("training_validation", compact({"schema": training["schema"], "runs": [run]}))

    with gzip.open(os.path.join(ROOT, "tests/data/kineto/h200-gpt-small-step.json.gz"), "rt") as f:
        kineto = json.load(f)
    for n in (4, 12, 30):
        text = kineto_window(kineto, n)
        put("kineto", text)
        put("kineto_gzip", gzip.compress(text.encode(), mtime=0))
    put("kineto", compact({"traceEvents": [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1, "dur": 2,
         "args": {"correlation": 7}},
        {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "pid": 0, "tid": 7,
         "ts": 5, "dur": 40, "args": {"stream": 7, "correlation": 7, "External id": 3}},
        {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 1, "dur": 2,
         "args": {"External id": 3, "Collective name": "allreduce", "In msg nelems": 1024, "dtype": "BFloat16",
                  "Group size": 8}},
        {"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "pid": 0, "tid": 7, "ts": 50, "dur": 0,
         "args": {"stream": 7, "wait_on_stream": 8, "wait_on_cuda_event_record_corr_id": 7}},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 8, "ts": 60, "dur": 3,
         "args": {"stream": 8, "correlation": 9}},
        {"ph": "s", "id": 7, "pid": 1, "tid": 1, "ts": 1, "cat": "ac2g", "name": "ac2g"}]}))

    for d in args.chakra_dir:
        ranks = [chakra_objects(p) for p in sorted(glob.glob(os.path.join(d, "*.json")))]
        for n in (6, 20, 60):
            put("chakra_json", "\0".join("".join(compact(o) for o in r[:n]) for r in ranks))
        put("chakra_json", compact(ranks[0][:12]))  # the JSON array form

    put("job_trace_csv", read(os.path.join(ROOT, "scenarios/traces/backfill-example.csv")))
    put("job_trace_csv", "id,submit,gpus,duration,user,scattered_slowdown\nA,0 h,24,10 h,alice,\n"
                         "B,1 h,32,5 h,bob,1.3\n")
    put("job_trace_csv", "submit,gpus,model,plan,tokens\n0 h,64,llama3-8b,8b-dp64,20B\n")
    put("job_trace_json", compact({"jobs": [
        {"submit": "0 h", "gpus": 24, "duration": "10 h", "user": "alice"},
        {"id": "B", "submit": "90 min", "gpus": 32, "duration": "2 d", "scattered_slowdown": 1.3},
        {"submit": "1 d", "gpus": 64, "model": "llama3-8b", "plan": "8b-dp64", "tokens": "2.5T"}]}))
    put("request_trace", "arrival_s,prompt_tokens,output_tokens\n0,128,128\n0.5,1000,200\n0.25,64,1\n")
    put("request_trace", "arrival_s,prompt_tokens,output_tokens\n")
    put("straggler_distribution", compact({
        "description": "per-node step-time ratios", "scope": "node", "persistence": "persistent",
        "bins": [{"fraction": 0.01, "slowdown": 1.1, "source": "a"},
                 {"fraction": 0.001, "slowdown": 1.5, "source": "b"}]}))
    put("straggler_distribution", compact({"scope": "gpu", "persistence": "transient",
                                           "bins": [{"fraction": 1, "slowdown": 1, "source": "x"}]}))
    # cli_values: first byte (mod 17) picks the parser (fuzz/targets.cc).
    cli = {0: ["2 us", "1.5 ms"], 1: ["80 GB", "64 MiB"], 2: ["900 GB/s", "400 Gb/s", "2 TB/s"],
           3: ["989 TFLOP/s"], 4: ["54d", "4 h", "10 min"], 5: ["7 d", "90 min"], 6: ["15T", "300B"],
           7: ["2.5T", "1e12", "800M"], 8: ["30min", "auto", "2 h"], 9: ["dgx-h100:1024", "dgx-a100:512..2048:1.5"],
           10: ["1024", "512..2048"], 11: ["ttft_p99=2s,tpot_p99=100ms", "e2e_mean=10 s"],
           12: ["cost-per-hour", "cost-per-token"], 13: ["time", "cost", "energy", "throughput"],
           14: ["fifo", "backfill", "fairshare"], 15: ["topology", "first-fit"],
           16: ["0.1%:1.5x,gpu:0.5%:1.2x,transient:2%:1.1x", "1%:2x"]}
    for sel, values in cli.items():
        for v in values:
            put("cli_values", bytes([sel]) + v.encode())



# The parser sources whose key names and keywords go into each target's
# dictionary (fuzz/<target>.dict), with the JSON punctuation libFuzzer would
# otherwise have to find byte by byte.
DICT_SOURCES = {
    "model": ["sim/config/model.cc"],
    "topology": ["sim/config/topology.cc"],
    "profile": ["sim/config/profile.cc"],
    "scenario": ["sim/config/scenario.cc", "sim/config/plan.cc"],
    "scenario_set": ["sim/config/scenario.cc", "sim/config/plan.cc"],
    "serve_scenario": ["sim/serve/serve_config.cc"],
    "cluster_scenario": ["sim/cluster/cluster_scenario.cc", "sim/cluster/job_trace.cc", "sim/config/plan.cc"],
    "training_validation": ["sim/validate/validate.cc", "sim/validate/run_scenario.cc"],
    "serving_validation": ["sim/serve/serve_validate.cc"],
    "kineto": ["sim/ingest/kineto.cc"],
    "chakra_json": ["sim/chakra/chakra_graph.cc", "sim/chakra/chakra_export.cc", "sim/chakra/chakra_json.cc",
                    "sim/chakra/chakra_node_view.cc", "sim/chakra/chakra_group_table.cc", "sim/chakra/chakra_import.cc",
                    "sim/chakra/chakra_directory.cc"],
    "job_trace_csv": ["sim/cluster/job_trace.cc"],
    "job_trace_json": ["sim/cluster/job_trace.cc"],
    "reliability": ["sim/campaign/reliability.cc"],
    "economics": ["sim/search/economics.cc"],
    "straggler_distribution": ["sim/straggler/straggler_spec.cc"],
}
UNITS = ["ns", "us", "ms", "s", "min", "h", "d", "B", "kB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB",
         "GB/s", "Gb/s", "Gbps", "TB/s", "FLOP/s", "TFLOP/s", "PFLOP/s", "e308", "-1", "1e999", "nan", "null"]


def write_dicts():
    import re
    lit = re.compile(r'"([A-Za-z0-9_#./%-]{1,40})"')
    for target, sources in DICT_SOURCES.items():
        words = set()
        for s in sources:
            text = read(os.path.join(ROOT, s)).decode()
            words.update(m.group(1) for m in lit.finditer(text))
        for p in glob.glob(os.path.join(CORPUS, target, "*")):
            try:
                doc = json.loads(read(p))
            except ValueError:
                continue
            stack = [doc]
            while stack:
                x = stack.pop()
                if isinstance(x, dict):
                    words.update(k for k in x if len(k) <= 40)
                    stack.extend(x.values())
                elif isinstance(x, list):
                    stack.extend(x)
                elif isinstance(x, str) and len(x) <= 24:
                    words.add(x)
        words.update(UNITS)
        csv = target.endswith("_csv") or target == "scenario_set"
        lines = []
        for w in sorted(words):
            w = w.replace("\\", "\\\\").replace('"', '\\"')
            lines.append('"%s"' % w if csv else '"\\"%s\\""' % w)
        lines += ['"{"', '"}"', '"["', '"]"', '":"', '","', '"true"', '"false"'] if not csv else ['","', '"\\x0A"', '"#"']
        with open(os.path.join(ROOT, "fuzz", target + ".dict"), "w") as f:
            f.write("# Keys and keywords of the %s format (fuzz/seed_corpus.py --dicts).\n" % target)
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    import sys
    if sys.argv[1:] == ["--dicts"]:
        write_dicts()
    else:
        main()
