#!/usr/bin/env bash
# Writes every prediction stacksim makes on the shipped inputs (validation
# files, scenarios, search, diagnose, compare, serving, cluster, campaign,
# replay) as JSON/CSV files under OUT, with wall-clock fields removed, so that
# a refactoring can be checked to change no prediction:
#
#   scripts/prediction-snapshot.sh build /tmp/before   # on the old commit
#   scripts/prediction-snapshot.sh build /tmp/after    # on the new one
#   diff -r /tmp/before /tmp/after                      # must print nothing
#
# Runs from the repository root; the validation files come from
# ../shared/validation when present, else from validation/.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: $0 BUILD_DIR OUT_DIR}
out=${2:?usage: $0 BUILD_DIR OUT_DIR}
bin=$build/stacksim
mkdir -p "$out"

# Drops run-time measurements (wall seconds), which differ between runs, and
# the top-level "version" (git describe), which differs between the commits.
strip() { jq -S 'if type == "object" then del(.version) else . end | walk(if type == "object" then with_entries(select(.key | test("wall") | not)) else . end)'; }
run_json() {  # NAME CMD...: stdout as sorted JSON, exit status kept
  local name=$1
  shift
  local rc=0
  "$@" >"$out/$name.raw" 2>"$out/$name.err" || rc=$?
  if jq -e . "$out/$name.raw" >/dev/null 2>&1; then
    strip <"$out/$name.raw" >"$out/$name.json"
    rm "$out/$name.raw"
  else
    mv "$out/$name.raw" "$out/$name.txt"
  fi
  echo "$rc" >"$out/$name.rc"
  # stderr holds progress and timings; keep only lines that are not timings.
  grep -v -E 'wall|[0-9.]+ ?s elapsed|progress|plans/s|/s\)' "$out/$name.err" >"$out/$name.stderr" || true
  rm "$out/$name.err"
}

shared=../shared/validation
for f in training_runs modern_training_runs; do
  if [ -f "$shared/$f.json" ]; then src=$shared/$f.json; elif [ -f "validation/$f.json" ]; then src=validation/$f.json; else continue; fi
  run_json "validate-$f" "$bin" validate "$src" --format json
done
run_json serve-validate "$bin" serve-validate validation/serving_runs.json --format json

for s in scenarios/*.json; do
  name=$(basename "$s" .json)
  case $name in
    serve-*|cluster-*) continue ;;
  esac
  run_json "simulate-$name" "$bin" simulate "$s" --format json
done
for s in scenarios/contention-*.json; do
  run_json "simgrid-$(basename "$s" .json)" "$bin" simulate "$s" --format json --network simgrid
done
run_json straggler "$bin" simulate scenarios/llama3-405b-16384xh100.json --stragglers 0.1%:1.5x --format json
run_json moe-zipf "$bin" simulate scenarios/mixtral-8x7b-64xh100.json --set plan.moe_routing=zipf --format json
run_json diagnose-gpt3 "$bin" diagnose scenarios/gpt3-175b-1024xh100.json --format json
run_json diagnose-deepseek "$bin" diagnose scenarios/deepseek-v3-2048xh800.json --format json
run_json diagnose-mixtral "$bin" diagnose scenarios/mixtral-8x7b-64xh100.json --format json
run_json search-gpt3 "$bin" search scenarios/gpt3-175b-1024xh100.json --top 10 --format json --threads 2
run_json search-70b-cost "$bin" search scenarios/llama3-70b-64xa100.json --gpus 32..128 --objective cost --format csv \
  --threads 2
run_json compare "$bin" compare --model llama3.1-405b --tokens 15T --seq-len 8192 --global-batch 2048 \
  --cluster dgx-h100:1024 --cluster dgx-a100:2048 --cluster gb200-nvl72:576 --format json --threads 2
run_json campaign "$bin" run-campaign scenarios/llama3-405b-16384xh100.json --tokens 15T --trials 50 --spares 64 \
  --format json --threads 2
run_json cluster "$bin" cluster scenarios/cluster-week.json --scheduler backfill --format json
run_json serve "$bin" serve scenarios/serve-llama3-70b-8xh100.json --rate 10 --requests 2000 --format json
run_json serve-search "$bin" serve-search scenarios/serve-llama3-70b-8xh100.json --slo ttft_p99=2s,tpot_p99=100ms \
  --rate 20 --requests 500 --format json --threads 2
run_json replay "$bin" replay tests/data/kineto/h200-gpt-small-step.json.gz --to-profile h100-sxm-80gb \
  --topology dgx-h100 --dp 64 --format json
# Paths name the checkout; the same tree elsewhere must give the same files.
root=$(pwd)
for f in "$out"/*; do sed -i "s|$root|<root>|g" "$f"; done
echo "wrote $(ls "$out" | wc -l) files to $out"
