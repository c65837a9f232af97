#!/usr/bin/env bash
# setup.sh: install what trainsim needs (Debian packages), configure and build.
#
#   ./setup.sh            release build in build/
#   ./setup.sh --sanitize ASan+UBSan build in build-asan/
#
# As root, missing packages are installed with apt-get; otherwise the exact
# command to run is printed. CUDA and NCCL are used when found under
# /usr/local/cuda or $CUDA_HOME (optional). CI=true turns warnings into errors.
set -euo pipefail
cd "$(dirname "$0")"

pkgs=(cmake make gcc pkg-config libcjson-dev libgsl-dev check libsubunit-dev
      libopenmpi-dev openmpi-bin valgrind librsvg2-bin)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    echo "setup: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "setup: missing packages; run:" >&2
    echo "  sudo apt-get install -y ${missing[*]}" >&2
    exit 2
  fi
fi

dir=build
args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
if [ "${1:-}" = "--sanitize" ]; then
  dir=build-asan
  args=(-DCMAKE_BUILD_TYPE=Debug -DTRAINSIM_SANITIZE=ON)
fi
if [ "${CI:-}" = "true" ]; then
  args+=(-DTRAINSIM_WERROR=ON)
fi
cmake -S . -B "$dir" "${args[@]}" >/dev/null
cmake --build "$dir" -j"$(nproc)" >/dev/null
echo "setup: built $dir/trainsim"
