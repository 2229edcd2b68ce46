#!/usr/bin/env bash
# One device call: launch overhead (CUDA C++), a Kineto trace of a small GPT
# step, and the PyTorch measurement sweep. Results go under $OUT as at most
# eight files (the device tool's limit), packed where a folder holds many.
# usage: OUT=/some/dir tools/gpu/run_device.sh [measure_budget_s]
set -u
out=${OUT:?set OUT to the output folder}
budget=${1:-260}
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
log=$out/log.txt
exec > >(tee -a "$log") 2>&1
echo "== $(date -u +%FT%TZ) on $(hostname)"
nvidia-smi || true
export PYTHONUNBUFFERED=1
echo "== launch overhead (CUDA C++)"
if nvcc -O2 -gencode=arch=compute_90,code=sm_90 -I"$here/../.." "$here/launch_overhead.cu" -o /tmp/launch_overhead; then
  /tmp/launch_overhead | tee "$out/launch_cuda.csv"
fi
echo "== GPT step trace"
timeout 150 python3 "$here/record_gpt_trace.py" /tmp/trace && cp /tmp/trace/trace.json.gz /tmp/trace/trace_meta.json "$out/"
echo "== measurement sweep"
timeout $((budget + 90)) python3 "$here/measure_torch.py" /tmp/measure --budget-s "$budget"
tar -C /tmp -czf "$out/measure.tar.gz" measure
echo "== done $(date -u +%FT%TZ)"
