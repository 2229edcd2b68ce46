#!/usr/bin/env bash
# Installs the Debian packages stacksim builds against. Idempotent: packages
# already present are skipped, so a second run costs a dpkg query only.
set -euo pipefail
packages=(
  build-essential cmake pkg-config
  libsimgrid-dev libboost-graph-dev nlohmann-json3-dev
  libcli11-dev libfmt-dev zlib1g-dev
  libprotobuf-dev protobuf-compiler
  libtomlplusplus-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenmpi-dev openmpi-bin
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing: ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
