#!/usr/bin/env bash
# The one device script for calibrate: builds stacksim-calibrate there
# (harness only, sm_90a unless CUDA_ARCHS says otherwise), runs it, and
# leaves in $OUT (the device tool returns at most 8 files):
#   calibrate_raw.tar.gz  the raw folder (env.json, CSVs, log.txt, fit_report.md, profile.json)
#   profile.json          the fitted profile (if the fit ran)
#   log.txt               the harness's log
#   build.log             CMake's configure and build output
# usage: OUT=/some/dir tools/gpu/run_calibrate.sh [--quick|--full|--faults]
#
# --faults: instead of a sweep, three short runs with injected failures
# (STACKSIM_CALIBRATE_FAULT, see calibrate/README.md "When things go wrong"),
# about a minute in all after the build; each must exit 1 and write a partial
# profile that names what failed. Leaves faults.txt (PASS/FAIL per check) and
# faults_raw.tar.gz (every run's raw folder, log and profile) in $OUT.
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
# CUDA_ARCHS: the CUDA architectures to build for (default 90a, Hopper; 100a
# for B200, 120 for consumer Blackwell); the harness names them when the GPU
# needs another.
set -u
out=${OUT:?set OUT to the output folder}
mode=${1:---quick}
case "$mode" in
  --quick) quick=--quick; run_timeout=${RUN_TIMEOUT_S:-300} ;;
  --full) quick=; run_timeout=${RUN_TIMEOUT_S:-450} ;;
  --faults) quick=--quick; run_timeout=${RUN_TIMEOUT_S:-90} ;;
  *) echo "usage: OUT=DIR $0 [--quick|--full|--faults]" >&2; exit 2 ;;
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
if ! { cmake -S . -B "$build" -DSTACKSIM_HARNESS_ONLY=ON -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS:-90a}" \
         ${nccl_args[@]+"${nccl_args[@]}"} && cmake --build "$build" --target stacksim-calibrate -j16; } >"$out/build.log" 2>&1; then
  tail -n 60 "$out/build.log"
  echo "== build FAILED after $(($(date +%s) - t0)) s"
  exit 1
fi
echo "== built with: $(grep -ho 'STACKSIM_HAVE_[A-Z]*' "$build"/CMakeFiles/stacksim-calibrate.dir/flags.make | sort -u | tr '\n' ' ')"
echo "== built in $(($(date +%s) - t0)) s"

export STACKSIM_GIT_COMMIT=${STACKSIM_GIT_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}

if [ "$mode" = --faults ]; then
  # name | STACKSIM_CALIBRATE_FAULT | extra arguments | sections "missing" must name | text the log must hold
  faults_dir=/tmp/faults
  rm -rf "$faults_dir"
  mkdir -p "$faults_dir"
  report="$out/faults.txt"
  : >"$report"
  all_ok=0
  while IFS='|' read -r name fault extra want_missing want_log; do
    dir="$faults_dir/$name"
    echo "== fault run $name: STACKSIM_CALIBRATE_FAULT=$fault $extra" | tee -a "$report"
    # shellcheck disable=SC2086
    STACKSIM_CALIBRATE_FAULT=$fault timeout -k 10 "$run_timeout" "$build/stacksim-calibrate" --quick $extra \
      --raw "$dir" --base profiles/h200-sxm-141gb.json --out "$dir/profile.json" >"$faults_dir/$name.stderr" 2>&1
    rc=$?
    verdict=PASS
    [ $rc -eq 1 ] || { verdict=FAIL; echo "  exit status $rc, expected 1" | tee -a "$report"; }
    if [ ! -f "$dir/profile.json" ]; then
      verdict=FAIL; echo "  no profile written" | tee -a "$report"
    else
      grep -q '"partial": true' "$dir/profile.json" || { verdict=FAIL; echo "  profile not marked partial" | tee -a "$report"; }
      for sec in $want_missing; do
        grep -q "\"section\": \"$sec\"" "$dir/profile.json" ||
          { verdict=FAIL; echo "  missing does not name $sec" | tee -a "$report"; }
      done
    fi
    grep -q -- "$want_log" "$dir/log.txt" 2>/dev/null || { verdict=FAIL; echo "  log lacks: $want_log" | tee -a "$report"; }
    grep -E 'FAILED|UNSTABLE|BUSY|NOT MEASURED|PARTIAL|fault injection|gpus:' "$dir/log.txt" 2>/dev/null | head -n 20 | sed 's/^/  log: /' >>"$report"
    [ -f "$dir/profile.json" ] && python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); [print("  missing:", m["section"], "|", m["reason"], "|", ", ".join(m["fields"])) for m in p.get("missing", [])]' "$dir/profile.json" >>"$report" 2>/dev/null
    echo "  $verdict (exit $rc)" | tee -a "$report"
    [ "$verdict" = PASS ] || all_ok=1
  done <<'EOF_FAULTS'
nccl-init|nccl-init|--skip kernels,gemm,attention --gpus 8|gpus nccl|fault injection: nccl-init
oom|oom,cuda-error|--skip kernels,attention,nccl|copy launch gemm|out of memory
busy|busy,nccl-missing|--skip kernels,gemm,attention|copy launch nccl|GPU BUSY
EOF_FAULTS
  cat "$report"
  tar -C /tmp -czf "$out/faults_raw.tar.gz" faults
  echo "== faults: $([ $all_ok -eq 0 ] && echo all PASS || echo some FAIL)"
  exit $all_ok
fi

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
