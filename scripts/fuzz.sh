#!/usr/bin/env bash
# Runs stacksim's libFuzzer targets (fuzz/, docs/fuzzing.md), one after the
# other, each for a bounded time. Not part of CI.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#
# SECONDS_PER_TARGET defaults to 60; TARGETs default to all of fuzz/*_fuzz.cc.
# Builds build-fuzz/ (clang, -DSTACKSIM_FUZZ=ON, ASan + UBSan) with -j1
# (FUZZ_BUILD_JOBS to change), runs each target on fuzz/corpus/<target>/
# with fuzz/<target>.dict, writes new inputs and crash reproducers to a
# scratch directory (FUZZ_SCRATCH, default /tmp/stacksim-fuzz), then merges
# the new inputs that add coverage into the corpus (-merge=1; FUZZ_MERGE=0
# to leave the corpus alone) and prints a summary.
#
# A finding: fix the parser, copy the reproducer into
# tests/data/fuzz/<target>/ (tests/fuzz_regression_test.cc replays it).
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
SECONDS_PER_TARGET=${1:-60}
shift || true
BUILD=${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}
SCRATCH=${FUZZ_SCRATCH:-/tmp/stacksim-fuzz}
JOBS=${FUZZ_BUILD_JOBS:-1}

if [ $# -gt 0 ]; then
  TARGETS=("$@")
else
  TARGETS=()
  for f in fuzz/*_fuzz.cc; do
    t=$(basename "$f" _fuzz.cc)
    TARGETS+=("$t")
  done
fi

# Inputs beyond these sizes add little but slow every run down: big enough
# for the corpus's real files (profiles, Kineto and Chakra windows).
max_len() {
  case "$1" in
    kineto|chakra_json|chakra_et|profile|training_validation|serving_validation) echo 16384 ;;
    kineto_gzip|model|topology|scenario|serve_scenario|cluster_scenario|reliability|economics) echo 8192 ;;
    *) echo 2048 ;;
  esac
}

# Configured every time: a new fuzz/<target>_fuzz.cc needs its build target.
cmake -S "$ROOT" -B "$BUILD" -DSTACKSIM_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Fuzz \
  -DCMAKE_CXX_FLAGS="-O1 -g" -DSTACKSIM_BUILD_TESTS=OFF -DSTACKSIM_BUILD_BENCH=OFF -DSTACKSIM_WITH_MPI=OFF >/dev/null
build_targets=()
for t in "${TARGETS[@]}"; do build_targets+=(--target "${t}_fuzz"); done
cmake --build "$BUILD" -j"$JOBS" "${build_targets[@]}"

mkdir -p "$SCRATCH"
summary=()
total_findings=0
for t in "${TARGETS[@]}"; do
  bin="$BUILD/fuzz/${t}_fuzz"
  corpus="$ROOT/fuzz/corpus/$t"
  out="$SCRATCH/$t"
  mkdir -p "$corpus" "$out/new" "$out/artifacts"
  before=$(find "$out/artifacts" -type f | wc -l)
  dict=()
  [ -f "$ROOT/fuzz/$t.dict" ] && dict=(-dict="$ROOT/fuzz/$t.dict")
  echo "== $t: ${SECONDS_PER_TARGET}s, max_len $(max_len "$t")"
  start=$(date +%s)
  set +e
  # New inputs go to $out/new (the first directory); the corpus is read only
  # here. One process (no -jobs/-workers: libFuzzer would fork workers).
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$bin" -max_total_time="$SECONDS_PER_TARGET" -max_len="$(max_len "$t")" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$out/artifacts/" "${dict[@]}" "$out/new" "$corpus" \
    > "$out/log.txt" 2>&1
  rc=$?
  set -e
  secs=$(( $(date +%s) - start ))
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$out/log.txt" | tail -1 | grep -o '[0-9]*$' || true)
  [ -z "$runs" ] && runs=$(grep -o '^#[0-9]*' "$out/log.txt" | tail -1 | tr -d '#' || true)
  after=$(find "$out/artifacts" -type f | wc -l)
  found=$((after - before))
  total_findings=$((total_findings + found))
  if [ "$found" -gt 0 ] || [ "$rc" -ne 0 ]; then
    echo "   rc $rc; see $out/log.txt; reproducers in $out/artifacts/"
    grep -m3 -E 'ERROR: |runtime error|terminate called|what\(\)' "$out/log.txt" | sed 's/^/   /' || true
  fi
  if [ "${FUZZ_MERGE:-1}" = 1 ] && [ -n "$(ls -A "$out/new")" ]; then
    # Minimize the corpus and the new inputs together into a fresh directory.
    rm -rf "$out/merged" && mkdir -p "$out/merged"
    "$bin" -merge=1 -max_len="$(max_len "$t")" -timeout=10 -rss_limit_mb=2048 "$out/merged" "$corpus" "$out/new" \
      > "$out/merge.txt" 2>&1 && { rm -rf "$corpus"; mv "$out/merged" "$corpus"; rm -rf "$out/new"; }
    # The committed corpus stays small (FUZZ_CORPUS_KB per target): drop the
    # largest inputs first (merge already keeps the smaller of equals).
    while [ $(( $(du -sb "$corpus" | cut -f1) / 1024 )) -gt "${FUZZ_CORPUS_KB:-256}" ] && [ "$(ls "$corpus" | wc -l)" -gt 1 ]; do
      rm -f "$corpus/$(ls -S "$corpus" | head -1)"
    done
  fi
  summary+=("$(printf '%-24s %10s %8s %9s %10s' "$t" "${runs:-?}" "$secs" "$found" "$(( $(du -sb "$corpus" | cut -f1) / 1024 ))K")")
done

echo
printf '%-24s %10s %8s %9s %10s\n' target runs seconds findings corpus
for line in "${summary[@]}"; do echo "$line"; done
echo "reproducers: $SCRATCH/<target>/artifacts/"
[ "$total_findings" -eq 0 ]
