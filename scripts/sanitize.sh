#!/usr/bin/env bash
# Builds stacksim with AddressSanitizer + UndefinedBehaviorSanitizer
# (-DSTACKSIM_SANITIZE=ON, g++) and runs the whole ctest suite under them:
# unit tests, the tests that run the stacksim binary, and the mpirun ones.
# docs/sanitizers.md has how to read a finding and the last run's result.
#
#   scripts/sanitize.sh [BUILD_DIR]      (default build-asan)
#
# JOBS sets the build and ctest parallelism (default: nproc). Exits non-zero
# when the build fails, a test fails, or any process (including a stacksim
# or mpirun child of a test, whose exit status a test may expect to be
# non-zero anyway) wrote a sanitizer report. Reports go to
# BUILD_DIR/sanitizer-logs/ and are printed at the end.
set -uo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD=${1:-build-asan}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
LOGS="$BUILD/sanitizer-logs"

start=$(date +%s)
load_start=$(cut -d" " -f1-3 /proc/loadavg)
# -O1 without -g: fast enough to build on two cores, still readable stacks
# (frame pointers kept; symbols come from the unstripped binaries).
cmake -S "$ROOT" -B "$BUILD" -DSTACKSIM_SANITIZE=ON -DSTACKSIM_BUILD_BENCH=OFF \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" >/dev/null || exit 1
# Only what ctest runs: the CUDA harness, if this machine has nvcc, is not
# part of the test suite.
cmake --build "$BUILD" -j "$JOBS" --target stacksim stacksim_tests || {
  echo "sanitize: build failed" >&2
  exit 1
}
built=$(date +%s)

rm -rf "$LOGS"
mkdir -p "$LOGS"
# Suppressions list third-party frames only; each line says why.
export LSAN_OPTIONS="suppressions=$ROOT/scripts/lsan.supp:print_suppressions=0"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:log_path=$LOGS/asan"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$ROOT/scripts/ubsan.supp:log_path=$LOGS/ubsan"
# Tests that start `mpirun ... stacksim` (name matches MPI_TESTS) run second,
# with the slow unwinder: Open MPI unloads its components at MPI_Finalize and
# its leak stacks are unreadable, hence unsuppressible, from frame pointers
# alone. Everything else runs first with the fast one.
MPI_TESTS=${MPI_TESTS:-Mpi}
(cd "$BUILD" && ctest --output-on-failure -j "$JOBS" -E "$MPI_TESTS") | tee "$BUILD/ctest-sanitize.log"
ctest_rc=${PIPESTATUS[0]}
(cd "$BUILD" && ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0" \
   ctest --output-on-failure -j "$JOBS" -R "$MPI_TESTS") | tee "$BUILD/ctest-sanitize-mpi.log"
mpi_rc=${PIPESTATUS[0]}
done_at=$(date +%s)

reports=$(find "$LOGS" -type f | sort)
if [ -n "$reports" ]; then
  echo
  echo "=== sanitizer reports ==="
  for f in $reports; do
    echo "--- $f"
    cat "$f"
  done
fi

n_reports=$(printf '%s' "$reports" | grep -c . || true)
echo
echo "=== sanitize summary ==="
grep -hE 'tests passed|tests failed out of|No tests were found' "$BUILD/ctest-sanitize.log" "$BUILD/ctest-sanitize-mpi.log"
echo "sanitizer reports: $n_reports (in $LOGS)"
echo "build: $((built - start)) s, tests: $((done_at - built)) s, jobs: $JOBS, load average: $load_start at start, $(cut -d' ' -f1-3 /proc/loadavg) at end"
echo "commit: $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- . 2>/dev/null || echo ' (+ uncommitted changes)')"
if [ "$ctest_rc" -ne 0 ] || [ "$mpi_rc" -ne 0 ] || [ "$n_reports" -ne 0 ]; then
  echo "sanitize: FAILED"
  exit 1
fi
echo "sanitize: clean"
