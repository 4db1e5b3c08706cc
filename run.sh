#!/usr/bin/env bash
# simtrain quick start on Debian 12 (as root, or with sudo):
#   ./run.sh demo   install what is missing, build, simulate the default scenario
#   ./run.sh test   install what is missing, build, run every test, then the fast
#                   tests again under AddressSanitizer + UBSan (build-asan/)
#   ./run.sh asan   every test under AddressSanitizer + UBSan (CMakePresets.json, build-asan/)
#   ./run.sh bench  install what is missing, build, print every published row beside the prediction
set -euo pipefail
cd "$(dirname "$0")"

packages=(build-essential cmake ninja-build pkg-config ccache
          libsimgrid-dev nlohmann-json3-dev libcli11-dev libgtest-dev libssl-dev
          qt6-base-dev qt6-svg-dev libopenmpi-dev openmpi-bin libopenblas-dev zlib1g-dev
          libprotobuf-dev protobuf-compiler libgoogle-perftools-dev python3)

install_packages() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]} == 0)) && return
  local sudo=""
  [[ $(id -u) -eq 0 ]] || sudo=sudo
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
}

build() {  # build [target]
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSIMTRAIN_BUILD_TESTS=ON
  cmake --build build ${1:+--target "$1"}
}

sanitized_tests() {  # sanitized_tests [fast]: every test, or only simtrain_tests less the slow ones
  cmake --preset asan >/dev/null
  if [[ ${1:-} == fast ]]; then
    cmake --build --preset asan --target simtrain_tests
    ctest --preset asan-fast --parallel "$(nproc)"
  else
    cmake --build --preset asan
    ctest --preset asan
  fi
}

case "${1:-demo}" in
  demo) install_packages; build simtrain; ./build/simtrain simulate ;;
  test) install_packages; build; ctest --test-dir build --output-on-failure; sanitized_tests fast ;;
  asan) install_packages; sanitized_tests ;;
  bench) install_packages; build simtrain_bench_validation; ./build/simtrain_bench_validation ;;
  *) echo "usage: $0 demo|test|asan|bench" >&2; exit 2 ;;
esac
