#!/usr/bin/env bash
# Everything one lent GPU is asked in one device call (NOTES.md, "Device
# checklist"), in order of importance, each part started only while the
# call's wall budget allows it; whatever ran is packed into at most 8 files:
#   1. build the harness (as run_calibrate.sh: harness only, sm_90a);
#   2. stacksim-calibrate, the full sweep and fit, without the step check
#      (so that a failure in the step check cannot cost the fitted profile);
#   3. the step check alone (env + step; each layer soaked 1.5 s before it
#      is timed, the harness's default: the power state a training step
#      holds), its CSVs added to the same raw folder; then again cool
#      (STACKSIM_STEP_SOAK_S=0) as step_measured_cool.csv; both write
#      step_kernels.csv (CUPTI: every kernel of one more step per shape);
#      nvidia-smi samples SM clock, power and throttle reasons every 200 ms
#      through 2 and 3 (extras/smi.csv, with each part's start time in log.txt);
#   4. tools/gpu/measure_sdpa_grid.py: SDPA's backends at small grids;
#   5. tools/gpu/step_check_torch.py: the step check's layers in PyTorch;
#   6. tools/gpu/run_calibrate.sh --faults: the harness's injected failures;
#   7. a harness built for sm_80 only, run here: the unsupported-GPU line;
#   8. (RUN_SUSTAINED=1 only) tools/gpu/measure_sustained.py: sustained vs
#      burst GEMM rate and clocks (measured 2026-12-04);
#   9. tools/gpu/record_gpt_trace.py --ddp: a one-rank DDP step's Kineto trace.
# Leaves in $OUT: calibrate_raw.tar.gz (the raw folder: CSVs, log.txt,
# fit_report.md, profile.json, step_measured.csv, step_checks.csv),
# profile.json, log.txt (this script's whole output), step_torch.csv and
# extras.tar.gz (build.log, torch.log, step_torch_env.json, smi.csv,
# sdpa/, faults/, arch_mismatch.txt, sustained/, ddp_trace/).
# Back here (CPU): tar -xzf calibrate_raw.tar.gz -C /tmp, then
#   build/stacksim calibrate --check-only /tmp/raw/profile.json --raw /tmp/raw
# Before the call, here: tools/gpu/prepare_carry.sh; then
#   run(command="tools/gpu/run_lease.sh", carry=[".carry"], timeout_s=570)
# Environment: LEASE_BUDGET_S (default 500): no part starts after it unless it
# fits; CUDA_ARCHS (default 90a).
set -u
out=${OUT:?set OUT to the output folder}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 2
exec > >(tee -a "$out/log.txt") 2>&1
export PATH=$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
export STACKSIM_GIT_COMMIT=${STACKSIM_GIT_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
budget=${LEASE_BUDGET_S:-500}
t0=$(date +%s)
elapsed() { echo $(($(date +%s) - t0)); }
# fits SECONDS: true when a part that needs SECONDS still ends inside the budget.
fits() { [ $(($(elapsed) + $1)) -le "$budget" ]; }
extras=/tmp/extras
raw=/tmp/raw
build=${BUILD_DIR:-build-gpu}
rm -rf "$extras" "$raw" /tmp/rawstep /tmp/rawcool /tmp/rawarch
mkdir -p "$extras"
echo "== $(date -u +%FT%TZ) on $(hostname), commit $STACKSIM_GIT_COMMIT, budget ${budget} s"
nvidia-smi || echo "nvidia-smi failed"

pack() {
  [ -d "$raw" ] && tar -C /tmp -czf "$out/calibrate_raw.tar.gz" raw
  [ -f "$raw/profile.json" ] && cp "$raw/profile.json" "$out/"
  [ -f "$extras/step_torch.csv" ] && cp "$extras/step_torch.csv" "$out/"
  tar -C /tmp -czf "$out/extras.tar.gz" extras
  echo "== packed after $(elapsed) s"
  ls -la "$out"
}
trap pack EXIT

echo "== 1 build"
if ! { cmake -S . -B "$build" -DSTACKSIM_HARNESS_ONLY=ON -DCMAKE_BUILD_TYPE=Release \
         -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS:-90a}" &&
       cmake --build "$build" --target stacksim-calibrate -j16; } >"$extras/build.log" 2>&1; then
  tail -n 60 "$extras/build.log"
  echo "== build FAILED after $(elapsed) s"
  exit 1
fi
echo "== built in $(elapsed) s with: $(grep -ho 'STACKSIM_HAVE_[A-Z]*' "$build"/CMakeFiles/stacksim-calibrate.dir/flags.make | sort -u | tr '\n' ' ')"
cal=$build/stacksim-calibrate

smi_pid=
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
    --format=csv -lms 200 >"$extras/smi.csv" 2>/dev/null &
  smi_pid=$!
fi

echo "== 2 calibrate, full sweep and fit (no step check) at $(date -u +%FT%T.%NZ)"
timeout -k 10 240 "$cal" --skip step --raw "$raw" --base profiles/h200-sxm-141gb.json --out "$raw/profile.json"
echo "== calibrate: exit status $? after $(elapsed) s"

echo "== 3 step check alone at $(date -u +%FT%T.%NZ)"
timeout -k 10 150 "$cal" --skip kernels,copy,launch,gemm,attention,nccl,fit --raw /tmp/rawstep
echo "== step: exit status $? after $(elapsed) s"
for f in step_measured.csv step_checks.csv step_kernels.csv; do [ -f "/tmp/rawstep/$f" ] && cp "/tmp/rawstep/$f" "$raw/"; done
[ -f /tmp/rawstep/log.txt ] && cp /tmp/rawstep/log.txt "$raw/step_log.txt"
[ -f "$raw/step_measured.csv" ] &&
  awk -F, 'NR > 1 { printf "  %-32s %10.3f ms  stable=%s\n", $1, $14 * 1000, $17 }' "$raw/step_measured.csv"
if fits 120; then
  echo "== 3b step check cool (no soak) at $(date -u +%FT%T.%NZ)"
  STACKSIM_STEP_SOAK_S=0 timeout -k 10 110 "$cal" --skip kernels,copy,launch,gemm,attention,nccl,fit \
    --raw /tmp/rawcool
  echo "== cool step: exit status $? after $(elapsed) s"
  [ -f /tmp/rawcool/step_measured.csv ] && cp /tmp/rawcool/step_measured.csv "$raw/step_measured_cool.csv"
  [ -f /tmp/rawcool/log.txt ] && cp /tmp/rawcool/log.txt "$raw/step_cool_log.txt"
  [ -f /tmp/rawcool/step_kernels.csv ] && cp /tmp/rawcool/step_kernels.csv "$raw/step_kernels_cool.csv"
fi
[ -n "$smi_pid" ] && kill "$smi_pid" 2>/dev/null

if fits 80; then
  echo "== 4 SDPA at small and large launch grids"
  timeout -k 10 80 python3 tools/gpu/measure_sdpa_grid.py "$extras/sdpa" --budget-s 55
  echo "== sdpa grid: exit status $? after $(elapsed) s"
fi

if fits 150; then
  echo "== 5 PyTorch step check"
  timeout -k 10 150 python3 tools/gpu/step_check_torch.py "$extras" --quick \
    --eager-budget-s 50 --compile-budget-s 80 >"$extras/torch.log" 2>&1
  echo "== torch: exit status $? after $(elapsed) s"
  tail -n 30 "$extras/torch.log"
fi

if fits 60; then
  echo "== 6 injected faults"
  mkdir -p "$extras/faults"
  OUT=$extras/faults RUN_TIMEOUT_S=20 timeout -k 5 60 tools/gpu/run_calibrate.sh --faults 2>&1 | tail -n 30
  echo "== faults: after $(elapsed) s"
fi

if fits 90; then
  # A harness built only for sm_80 (no PTX) on this GPU: it must stop with
  # one line naming the compute capability, the architectures built and the
  # rebuild, exit status 2 (docs/calibrate.md, "Unsupported GPUs").
  echo "== 7 harness built for another architecture (80-real)"
  if { cmake -S . -B build-gpu-sm80 -DSTACKSIM_HARNESS_ONLY=ON -DCMAKE_BUILD_TYPE=Release \
         -DCMAKE_CUDA_ARCHITECTURES=80-real &&
       timeout -k 5 70 cmake --build build-gpu-sm80 --target stacksim-calibrate -j16; } >"$extras/build_sm80.log" 2>&1; then
    timeout -k 5 20 build-gpu-sm80/stacksim-calibrate --quick --raw /tmp/rawarch \
      >"$extras/arch_mismatch.txt" 2>&1
    echo "exit status $?" >>"$extras/arch_mismatch.txt"
    cat "$extras/arch_mismatch.txt"
  else
    tail -n 5 "$extras/build_sm80.log"
  fi
  echo "== arch: after $(elapsed) s"
fi

if [ -n "${RUN_SUSTAINED:-}" ] && fits 110; then
  echo "== 8 sustained GEMM rate"
  timeout -k 10 110 python3 tools/gpu/measure_sustained.py "$extras/sustained" --seconds 40
  echo "== sustained: exit status $? after $(elapsed) s"
fi

if fits 90; then
  echo "== 9 DDP step trace"
  timeout -k 10 90 python3 tools/gpu/record_gpt_trace.py "$extras/ddp_trace" --ddp
  echo "== ddp trace: exit status $? after $(elapsed) s"
fi
echo "== done after $(elapsed) s"
