#!/usr/bin/env bash
# The one device run for issue 21's step check (docs/calibrate.md, "Step
# check"), about 6-8 minutes on one H200 from a cold machine:
#   1. tools/gpu/run_calibrate.sh --quick: builds the harness there and runs
#      calibrate --quick, whose "step" step times the step check's 17 layers
#      (step_measured.csv in the raw folder) after the usual sweeps and fit;
#   2. tools/gpu/step_check_torch.py: the same layers in PyTorch, eager and
#      (within its budget) torch.compile, into step_torch.csv.
# Leaves in $OUT: calibrate_raw.tar.gz, profile.json, log.txt, build.log (from
# run_calibrate.sh), step_torch.csv, step_torch_env.json, torch.log.
#
# The prediction side needs the full simulator, which does not build on the
# GPU machine (it has no Debian libraries); back here, on the CPU:
#   tar -xzf calibrate_raw.tar.gz -C /tmp     # -> /tmp/raw
#   build/stacksim calibrate --check-only /tmp/raw/profile.json --raw /tmp/raw
# writes /tmp/raw/step_check.csv and the Step check section of fit_report.md.
#
# Before the call, here: tools/gpu/prepare_carry.sh; then
#   run(command="tools/gpu/run_step_check.sh", carry=[".carry"], timeout_s=540)
# usage: OUT=DIR tools/gpu/run_step_check.sh [--build-only]
#   --build-only: configure and build the harness, run nothing (a dry run of
#   the build, e.g. on a machine with nvcc and no GPU).
# Environment: CALIBRATE_TIMEOUT_S (default 240), TORCH_TIMEOUT_S (default
# 200), CUDA_ARCHS (as run_calibrate.sh).
set -u
out=${OUT:?set OUT to the output folder}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 2
t0=$(date +%s)

if [ "${1:-}" = --build-only ]; then
  export PATH=$PATH:/usr/local/cuda/bin
  build=${BUILD_DIR:-build-gpu}
  cmake -S . -B "$build" -DSTACKSIM_HARNESS_ONLY=ON -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS:-90a}" >"$out/build.log" 2>&1 &&
    cmake --build "$build" --target stacksim-calibrate -j"${BUILD_JOBS:-16}" >>"$out/build.log" 2>&1
  rc=$?
  tail -n 5 "$out/build.log"
  echo "== build-only: exit status $rc after $(($(date +%s) - t0)) s"
  exit $rc
fi

echo "== 1/2 calibrate --quick with the step check"
RUN_TIMEOUT_S=${CALIBRATE_TIMEOUT_S:-240} "$root/tools/gpu/run_calibrate.sh" --quick
cal_rc=$?
echo "== calibrate: exit status $cal_rc after $(($(date +%s) - t0)) s"
if [ -f "$out/calibrate_raw.tar.gz" ]; then
  tar -xzf "$out/calibrate_raw.tar.gz" -O raw/step_measured.csv 2>/dev/null |
    awk -F, 'NR == 1 { next } { printf "  %-32s %10.3f ms  stable=%s\n", $1, $14 * 1000, $17 }'
fi

echo "== 2/2 PyTorch cross-check (stopped after ${TORCH_TIMEOUT_S:-200} s at most)"
timeout -k 10 "${TORCH_TIMEOUT_S:-200}" python3 "$root/tools/gpu/step_check_torch.py" /tmp/step_torch --quick \
  --eager-budget-s 60 --compile-budget-s 100 >"$out/torch.log" 2>&1
torch_rc=$?
tail -n 40 "$out/torch.log"
for f in step_torch.csv step_torch_env.json; do
  [ -f "/tmp/step_torch/$f" ] && cp "/tmp/step_torch/$f" "$out/"
done
echo "== torch: exit status $torch_rc; all done in $(($(date +%s) - t0)) s"
ls -la "$out"
[ $cal_rc -le 1 ] && [ $torch_rc -eq 0 ]
