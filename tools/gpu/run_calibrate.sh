#!/usr/bin/env bash
# The one device script for calibrate: builds stacksim-calibrate there
# (harness only, sm_90a), runs it, and leaves in $OUT (the device tool returns
# at most 8 files):
#   calibrate_raw.tar.gz  the raw folder (env.json, CSVs, log.txt, fit_report.md, profile.json)
#   profile.json          the fitted profile (if the fit ran)
#   log.txt               the harness's log
#   build.log             CMake's configure and build output
# usage: OUT=/some/dir tools/gpu/run_calibrate.sh [--quick|--full]
#
# Before the call, here: tools/gpu/prepare_carry.sh, then run with
# carry [".carry"] (nlohmann/json's headers; the machine has no Debian package).
# NCCL: CMake's own search first (the CUDA toolkit's); else the libnccl.so*
# of Python's nvidia-nccl wheel, if any; else built without (collectives are
# then recorded as not measurable). The measurement is stopped after
# RUN_TIMEOUT_S (default: quick 300 s, full 450 s) so that the packing below
# still happens inside the device tool's timeout_s: give that at least the
# build (1-2 minutes from cold with 16 cores) plus RUN_TIMEOUT_S plus 30 s.
# The CSVs are written row by row, so a stopped run keeps what it measured
# (but is not fitted).
# STACKSIM_GIT_COMMIT: taken from the environment, else `git rev-parse HEAD`.
set -u
out=${OUT:?set OUT to the output folder}
case "${1:---quick}" in
  --quick) quick=--quick; run_timeout=${RUN_TIMEOUT_S:-300} ;;
  --full) quick=; run_timeout=${RUN_TIMEOUT_S:-450} ;;
  *) echo "usage: OUT=DIR $0 [--quick|--full]" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 2
export PATH=$PATH:/usr/local/cuda/bin
raw=/tmp/raw
build=build-gpu
echo "== $(date -u +%FT%TZ) on $(hostname)"
nvidia-smi || echo "nvidia-smi failed"

nccl_args=()
if ! ldconfig -p 2>/dev/null | grep -q 'libnccl\.so' && ! ls /usr/local/cuda/lib64/libnccl.so* /usr/local/cuda/lib/libnccl.so* >/dev/null 2>&1; then
  for sp in $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
    lib=$(ls "$sp"/nvidia/nccl/lib/libnccl.so* 2>/dev/null | head -n 1)
    if [ -n "$lib" ] && [ -f "$sp/nvidia/nccl/include/nccl.h" ]; then
      nccl_args=(-DNCCL_LIBRARY="$lib" -DNCCL_INCLUDE_DIR="$sp/nvidia/nccl/include")
      export LD_LIBRARY_PATH="$sp/nvidia/nccl/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      echo "== NCCL from Python's wheel: $lib"
      break
    fi
  done
  [ ${#nccl_args[@]} -eq 0 ] && echo "== no NCCL found: collectives will be recorded as not measurable"
fi

echo "== build (log: build.log)"
t0=$(date +%s)
if ! { cmake -S . -B "$build" -DSTACKSIM_HARNESS_ONLY=ON -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
         ${nccl_args[@]+"${nccl_args[@]}"} && cmake --build "$build" --target stacksim-calibrate -j16; } >"$out/build.log" 2>&1; then
  tail -n 60 "$out/build.log"
  echo "== build FAILED after $(($(date +%s) - t0)) s"
  exit 1
fi
echo "== built with: $(grep -ho 'STACKSIM_HAVE_[A-Z]*' "$build"/CMakeFiles/stacksim-calibrate.dir/flags.make | sort -u | tr '\n' ' ')"
echo "== built in $(($(date +%s) - t0)) s"

export STACKSIM_GIT_COMMIT=${STACKSIM_GIT_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
rm -rf "$raw"
echo "== stacksim-calibrate ${quick:---full} (stopped after ${run_timeout} s at most)"
timeout -k 10 "$run_timeout" "$build/stacksim-calibrate" $quick --raw "$raw" \
  --base profiles/h200-sxm-141gb.json --out "$raw/profile.json" 2>&1
rc=$?
[ $rc -eq 124 ] && echo "== stopped at RUN_TIMEOUT_S=${run_timeout}"
echo "== exit status $rc"

echo "== summary"
for f in "$raw"/*.csv; do
  [ -f "$f" ] && echo "$(basename "$f"): $(($(wc -l <"$f") - 1)) rows"
done
[ -f "$raw/launch.csv" ] && cat "$raw/launch.csv"
[ -f "$raw/checks.csv" ] && awk -F, 'NR > 1 && $5 != 1 { print "check failed: " $0 }' "$raw/checks.csv"
[ -d "$raw" ] && tar -C "$(dirname "$raw")" -czf "$out/calibrate_raw.tar.gz" "$(basename "$raw")"
[ -f "$raw/profile.json" ] && cp "$raw/profile.json" "$out/"
[ -f "$raw/log.txt" ] && cp "$raw/log.txt" "$out/"
ls -la "$out"
exit $rc
