#!/usr/bin/env bash
# Renders stacksim's HTML reports in headless Chromium and checks them.
#
#   scripts/check-html.sh [STACKSIM] [OUTDIR]
#
# STACKSIM: the stacksim binary (default build/stacksim); this script builds
# nothing. OUTDIR: where the pages and screenshots go (default: a new temporary
# folder, printed at the end). Writes the simulate, search (--top 10) and
# diagnose pages of GPT-3 175B on 1024 H100, the simulate page of
# DeepSeek-V3 on 2048 H800, a compare page (Llama 3 70B on three clusters)
# and the cluster page of scenarios/cluster-week.json, screenshots each, and
# fails when
#   - a page references anything that would be fetched (http://, https://,
#     src=, <link, url(: the pages must be self-contained), or
#   - a screenshot is missing or blank (a PNG of one colour is tiny, and a
#     real page's has many distinct pixel values; see png_check below).
#   - a page that shows a prediction (all but the cluster page) lacks its
#     likely range and coverage warnings.
# Look at the PNGs as well: a script cannot tell whether labels overlap.
#
# Not run in CI: CI has no Chromium. Installs Debian's chromium when missing
# (as scripts/install-deps.sh installs its packages).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
stacksim="${1:-$root/build/stacksim}"
out="${2:-$(mktemp -d /tmp/stacksim-html.XXXXXX)}"
mkdir -p "$out"
[ -x "$stacksim" ] || { echo "check-html: $stacksim is not an executable (build it first)" >&2; exit 2; }

browser=""
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null; then browser="$b"; break; fi
done
if [ -z "$browser" ]; then
  echo "installing: chromium"
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core
  browser=chromium
fi

gpt3="$root/scenarios/gpt3-175b-1024xh100.json"
dsv3="$root/scenarios/deepseek-v3-2048xh800.json"
echo "writing pages to $out"
"$stacksim" simulate "$gpt3" --html "$out/gpt3-simulate.html" >/dev/null
"$stacksim" search "$gpt3" --top 10 --html "$out/gpt3-search.html" >/dev/null
"$stacksim" diagnose "$gpt3" --html "$out/gpt3-diagnose.html" >/dev/null
"$stacksim" simulate "$dsv3" --html "$out/deepseek-simulate.html" >/dev/null
"$stacksim" compare --model llama3-70b --tokens 2T --cluster dgx-h100:512 --cluster dgx-a100:1024 \
    --cluster h800-node:512 --html "$out/compare.html" >/dev/null
"$stacksim" cluster "$root/scenarios/cluster-week.json" --html "$out/cluster-week.html" >/dev/null

# A screenshot is blank when its pixels take (almost) one value. Python's zlib
# is enough to tell (no imaging library): the decompressed image data is
# filtered row by row, and a one-colour image filters to a handful of distinct
# 3-byte groups, a page of text and charts to thousands.
png_check() {
  python3 - "$1" <<'EOF'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
if data[:8] != b"\x89PNG\r\n\x1a\n":
    sys.exit("not a PNG")
pos, idat, width, height = 8, b"", 0, 0
while pos < len(data):
    length, kind = struct.unpack(">I4s", data[pos:pos + 8])
    chunk = data[pos + 8:pos + 8 + length]
    if kind == b"IHDR":
        width, height = struct.unpack(">II", chunk[:8])
    elif kind == b"IDAT":
        idat += chunk
    pos += 12 + length
raw = zlib.decompress(idat)
values = set(raw[i:i + 3] for i in range(0, len(raw), 3))
print(f"{width}x{height}, {len(values)} distinct byte triples")
sys.exit(0 if len(values) > 200 else "blank: too few distinct values")
EOF
}

status=0
for name in gpt3-simulate gpt3-search gpt3-diagnose deepseek-simulate compare cluster-week; do
  page="$out/$name.html"
  size=$(wc -c <"$page")
  if grep -nE 'https?://|src=|<link|url\(' "$page" >/dev/null; then
    echo "FAIL $name: references something to fetch:" >&2
    grep -noE '.{0,40}(https?://|src=|<link|url\().{0,40}' "$page" | head -5 >&2
    status=1
  fi
  if [ "$name" != cluster-week ] && ! { grep -qi 'likely step\|likely (s)' "$page" && grep -q 'Coverage warnings' "$page"; }; then
    echo "FAIL $name: no likely range or coverage warnings on the page" >&2
    status=1
  fi
  png="$out/$name.png"
  rm -f "$png"
  # --virtual-time-budget lets the page finish layout before the shot;
  # --hide-scrollbars keeps the scrollbar out of the picture.
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --virtual-time-budget=2000 --window-size=1400,3000 --screenshot="$png" "file://$page" \
    >"$out/$name.chromium.log" 2>&1 || true
  if [ ! -s "$png" ]; then
    echo "FAIL $name: no screenshot (see $out/$name.chromium.log)" >&2
    status=1
    continue
  fi
  if ! check="$(png_check "$png")"; then
    echo "FAIL $name: $check" >&2
    status=1
    continue
  fi
  echo "ok   $name: page $size bytes, screenshot $check"
done
echo "pages and screenshots in $out"
exit $status
