#!/usr/bin/env bash
# Installs the Debian 12 packages dwsr builds and tests with. Idempotent: only
# missing packages are installed, so a configured machine pays nothing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libeigen3-dev libxtensor-dev libtbb-dev libfftw3-dev
  libsegyio-dev libcli11-dev nlohmann-json3-dev
  catch2 libbenchmark-dev libxgboost-dev
  clang-format git
  clang libclang-rt-14-dev
  python3-numpy python3-scipy python3-skimage
  python3-dev python3-venv
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "dwsr: installing ${missing[*]}" >&2
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
