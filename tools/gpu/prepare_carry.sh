#!/usr/bin/env bash
# Copies nlohmann/json's headers into .carry/include/nlohmann/ (git-ignored),
# so that the harness-only build (STACKSIM_HARNESS_ONLY=ON) compiles on a GPU
# machine without Debian's nlohmann-json3-dev: CMake falls back to
# .carry/include when find_package(nlohmann_json) finds nothing. The device
# tool takes the folder along with carry: [".carry"].
#
# Debian's package is the multi-header layout (json.hpp includes
# nlohmann/detail/...), so the whole folder is copied, not json.hpp and
# json_fwd.hpp alone.
# usage: tools/gpu/prepare_carry.sh   (NLOHMANN_INCLUDE=/other/nlohmann to copy another copy)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
src=${NLOHMANN_INCLUDE:-/usr/include/nlohmann}
if [ ! -f "$src/json.hpp" ] || [ ! -f "$src/json_fwd.hpp" ]; then
  echo "prepare_carry: no json.hpp and json_fwd.hpp in $src (install nlohmann-json3-dev)" >&2
  exit 1
fi
dst=$root/.carry/include/nlohmann
rm -rf "$dst"
mkdir -p "$dst"
cp -R "$src/." "$dst/"
echo "prepare_carry: $(find "$dst" -type f | wc -l) headers ($(du -sh "$dst" | cut -f1)) from $src in $dst"
