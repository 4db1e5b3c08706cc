#!/usr/bin/env bash
# Every measurement the project needs from a GPU machine, in one run (issue 18):
# build for sm_90, the kernel tests, the kernel profile of the scenarios below,
# a live step on the CUDA backend, and what the simulator makes of them.
#
#   bench/gpu_measure.sh --pack
#       Here, on Debian 12 with its mirrors: downloads the .deb files of the
#       libraries the build needs that a bare GPU machine lacks (nlohmann/json,
#       CLI11, GoogleTest and GoogleMock, OpenSSL, OpenBLAS, pkgconf) into .gpu-deps/
#       (git-ignored, about 18 MB). The device call carries that folder.
#   bench/gpu_measure.sh OUT_DIR
#       On the GPU machine (CUDA toolkit, CMake, g++; nothing is fetched):
#       unpacks .gpu-deps/ into the build folder (never into /), builds
#       build-gpu/ (-DSIMTRAIN_PROFILER_ONLY=ON, sm_90 only), runs every step
#       and writes what it measured under OUT_DIR.
#   bench/gpu_measure.sh --build-dir DIR OUT_DIR
#       The same, with the binaries of DIR (a profiler-only build made
#       elsewhere for sm_90, copied into the working tree: saves the GPU
#       machine the build); if one of them cannot load its libraries there,
#       build-gpu/ is built as above.
#   bench/gpu_measure.sh --dry-run [--build-dir DIR] OUT_DIR
#       On a CPU machine: the same steps with the host backend in place of
#       CUDA; the GPU-only steps say why they are skipped. With --build-dir,
#       the binaries of that (full) build are used and nothing is built.
#   bench/gpu_measure.sh --compare [--build-dir DIR] OUT_DIR
#       Where simtrain is built with SimGrid (not on the GPU machine): only the
#       last steps, the live step's scenario simulated with OUT_DIR's database
#       and compared with OUT_DIR's live trace.
#
# OUT_DIR receives at most 8 files (what the device tool brings back):
#   log.txt               everything each step printed
#   steps.tsv             step, outcome, seconds taken, seconds expected
#   kernel-profile.json   the database (commit it as kernels/profiles/<GPU>.json)
#   kernel-profile-own-attention.json  the same before attention is re-timed through
#                         cuDNN: the kernels the live step runs, for its comparison
#   roofline-accuracy.txt the kernel model against that database
#   live-trace.json.gz    the live step, in the simulator's trace format
#   gpu-clocks.csv        SM and memory clocks, power and temperature every 0.5 s
#                         while the GPU steps run (nvidia-smi)
#   sim-trace.json.gz, compare.json, compare.txt, live-calibrated-profile.json
#                         (simulate and compare: the live step's own kernel times as a database)
# The exit code is 0 when every step that ran succeeded.
#
# The seconds expected on the H200 machine (16 cores). Measured there on
# 2026-12-04 (kernels/README.md, "The first GPU run"): setup 1; the kernel tests
# ran in 2 s (one binary then hung at its exit: see step below); the profile of
# the 11 scenarios without --sweep (392 kernels) about 60, one scenario with
# --sweep (346 kernels) 31, attention through cuDNN under 10, the live step 13.
# Not measured: the build (estimated 200: nvcc for one architecture, the core
# and the tests; --build-dir skips it) and the profile below (11 scenarios with
# --sweep, 1,119 kernels: about 150 from the two profiles' rates); about 5
# minutes with the build, 4 without. Each step is
# stopped at 2.5 times its estimate (at least 20 s), so that one hung kernel
# cannot take the whole lease: the steps after it still run.
set -euo pipefail
cd "$(dirname "$0")/.."

# The scenarios whose kernels are profiled: the two largest, every scenario of
# bench/validation, the shipped mixture-of-experts ones (their small expert
# GEMMs, which the tile model times least well), and the live step's.
live_scenario=scenarios/llama3.2-1b-1xh200.json
profiled_scenarios=(gpt3-175b-1024xh100 llama3-405b-16kxh100
                    megatron-1.7b-32xa100 megatron-18.4b-256xa100 megatron-145.6b-1536xa100
                    korthikanti-22b-8xa100 korthikanti-175b-64xa100
                    nemo-llama3-8b-8xh100 nemo-llama3-70b-64xh100 qwen3-30b-a3b-16xh100
                    mixtral-8x7b-64xh100 deepseek-v3-2048xh800
                    "$live_scenario")
# The dry run's live step: the same scenario shrunk to seconds on CPUs.
dry_run_shrink=(--set hidden_size=128 --set intermediate_size=512 --set num_attention_heads=4
                --set num_key_value_heads=2 --set seq_length=128 --set vocab_size=1024 --set micro_batch_size=1)
dry_run_layers=2 dry_run_micro_batches=2
deps_dir=.gpu-deps
deb_packages=(nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev libssl-dev libssl3
              libopenblas-dev libopenblas-pthread-dev libopenblas0-pthread libgfortran5 libquadmath0
              pkgconf-bin libpkgconf3)

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
}

mode=gpu build_dir="" out_dir=""
while (($#)); do
  case $1 in
    --pack) mode=pack ;;
    --dry-run) mode=dry-run ;;
    --compare) mode=compare ;;
    --build-dir) (($# > 1)) || usage; build_dir=$2; shift ;;
    -h|--help) usage ;;
    -*) echo "gpu_measure.sh: unknown option $1" >&2; usage ;;
    *) [[ -z $out_dir ]] || usage; out_dir=$1 ;;
  esac
  shift
done

if [[ $mode == pack ]]; then
  mkdir -p "$deps_dir/debs"
  (cd "$deps_dir/debs" && apt-get download "${deb_packages[@]}")
  du -sh "$deps_dir"
  echo "carry $deps_dir in the device call, then run: bench/gpu_measure.sh OUT_DIR"
  exit 0
fi
[[ -n $out_dir ]] || usage
mkdir -p "$out_dir"
out_dir=$(cd "$out_dir" && pwd)
log=$out_dir/log.txt steps=$out_dir/steps.tsv
[[ $mode == compare ]] || : >"$log"
[[ $mode == compare && -f $steps ]] || printf 'step\toutcome\tseconds\texpected_seconds_on_H200\n' >"$steps"
failed=()

say() { echo "$*" | tee -a "$log"; }

# step NAME EXPECTED_SECONDS COMMAND...: runs it, its output to the terminal and the log.
# A program (not a shell function) is stopped at 2.5 times EXPECTED_SECONDS, at least 20 s.
step() {
  local name=$1 expected=$2 start=$SECONDS outcome=ok limit code
  shift 2
  limit=$(( expected * 5 / 2 > 20 ? expected * 5 / 2 : 20 ))
  say "== $name (expected about $expected s on the H200 machine)"
  set +e
  if [[ $(type -t "$1") == function ]]; then
    # In this shell, so that what setup exports stays.
    "$@" > >(tee -a "$log") 2>&1
    code=$?
    wait $! 2>/dev/null  # tee has written everything
  else
    # Into a file, not a pipe, under a shell that dies at the limit: on the
    # first GPU run a test binary hung at its exit inside the driver, where no
    # signal reaches it, holding open the pipe the step waited on. Now such a
    # process is left behind and the steps after it run.
    local output
    output=$(mktemp)
    timeout --kill-after=10 "$limit" bash -c '"$@"; exit $?' "$name" "$@" >"$output" 2>&1 &
    local pid=$!
    tail -n +1 -f --pid=$pid "$output"
    wait $pid
    code=$?
    cat "$output" >>"$log"
    rm -f "$output"
  fi
  set -e
  ((code == 124 || code == 137)) && say "== $name: stopped after its limit of $limit s"
  ((code == 0)) || { outcome="failed (exit $code)"; failed+=("$name"); }
  printf '%s\t%s\t%d\t%s\n' "$name" "$outcome" $((SECONDS - start)) "$expected" >>"$steps"
  say "== $name: $outcome, $((SECONDS - start)) s"
}

skip() {  # skip NAME REASON
  say "== $1: skipped: $2"
  printf '%s\tskipped: %s\t0\t-\n' "$1" "$2" >>"$steps"
}

# ---- setup: the toolkit, and the libraries a bare GPU machine lacks ----
cmake_flags=()
deps_root=""
find_in_python() {  # find_in_python PACKAGE: the folder of a pip-installed nvidia.PACKAGE (PyTorch's NCCL, cuDNN)
  command -v python3 >/dev/null || return 1
  env -u LD_LIBRARY_PATH python3 -c "import importlib, sys; print(list(importlib.import_module('nvidia.$1').__path__)[0])" 2>/dev/null
}
setup() {
  [[ -d /usr/local/cuda/bin ]] && export PATH=/usr/local/cuda/bin:$PATH
  echo "nvcc: $(command -v nvcc || echo 'not found')"
  echo "g++: $(command -v g++ || echo 'not found'); cmake: $(command -v cmake || echo 'not found'); ninja: $(command -v ninja || echo 'not found')"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
  if [[ $mode == gpu && -d $deps_dir/debs ]]; then
    deps_root=$PWD/build-gpu/deps-root
    mkdir -p "$deps_root"
    for deb in "$PWD/$deps_dir"/debs/*.deb; do
      if command -v dpkg-deb >/dev/null; then
        dpkg-deb -x "$deb" "$deps_root"
      else  # a .deb is an ar archive holding data.tar.xz (Debian 12's)
        ar p "$deb" "$(ar t "$deb" | grep '^data\.tar')" | tar -x -J -C "$deps_root"
      fi
    done
    local lib=$deps_root/usr/lib/x86_64-linux-gnu
    export LD_LIBRARY_PATH=$lib:$lib/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    # pkgconf finds OpenBLAS there, with the paths moved under deps-root.
    export PKG_CONFIG_LIBDIR=$lib/pkgconfig:$lib/openblas-pthread/pkgconfig:$deps_root/usr/share/pkgconfig
    export PKG_CONFIG_SYSROOT_DIR=$deps_root
    cmake_flags+=(-DCMAKE_PREFIX_PATH="$deps_root/usr" -DOPENSSL_ROOT_DIR="$deps_root/usr"
                  -DPKG_CONFIG_EXECUTABLE="$deps_root/usr/bin/pkgconf"
                  -DCMAKE_CXX_FLAGS="-isystem $deps_root/usr/include/x86_64-linux-gnu")
    echo "libraries from $deps_dir/debs unpacked into $deps_root"
  elif [[ $mode == gpu ]]; then
    echo "no $deps_dir/debs (bench/gpu_measure.sh --pack makes it): the machine's own libraries are used"
  fi
  # NCCL: the toolkit's, else the one PyTorch's wheels carry.
  if [[ ! -f /usr/local/cuda/include/nccl.h && ! -f /usr/include/nccl.h ]]; then
    local nccl
    if nccl=$(find_in_python nccl) && [[ -f $nccl/include/nccl.h ]]; then
      cmake_flags+=(-DNCCL_INCLUDE_DIR="$nccl/include" -DNCCL_LIBRARY="$(ls "$nccl"/lib/libnccl.so* | head -1)")
      export LD_LIBRARY_PATH=$nccl/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
      echo "NCCL: $nccl"
    else
      echo "NCCL: not found (no CUDA backend for the live step)"
    fi
  else
    echo "NCCL: the toolkit's"
  fi
  # Prebuilt binaries look for the CUDA libraries here too, after the system's.
  local fallback
  for fallback in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
                  $(for p in cublas cuda_runtime nccl; do find_in_python "$p" || true; done | sed 's|$|/lib|'); do
    [[ -d $fallback ]] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$fallback
  done
  echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
}
[[ $mode == compare ]] || step setup 5 setup

# ---- build ----
bin=${build_dir:-build-gpu}
gpu_binaries=(kernels/simtrain-profile kernels/simtrain_kernel_cpu_tests kernels/simtrain_kernel_gpu_tests
              simtrain_bench_roofline_accuracy live/simtrain-live)
if [[ $mode == gpu && -n $build_dir ]]; then
  unloadable=()
  for b in "${gpu_binaries[@]}"; do
    [[ -x $bin/$b ]] && ! ldd "$bin/$b" 2>&1 | grep -q 'not found' || unloadable+=("$b")
  done
  if ((${#unloadable[@]})); then
    say "== $bin: ${unloadable[*]} missing or missing libraries here: building build-gpu/"
    ldd "$bin/${unloadable[0]}" 2>&1 | grep 'not found' | tee -a "$log" || true
    build_dir="" bin=build-gpu
  else
    skip build "the binaries in $bin load here"
  fi
fi
if [[ $mode == gpu && -z $build_dir ]]; then
  step build 200 bash -c 'cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DSIMTRAIN_PROFILER_ONLY=ON \
      -DSIMTRAIN_BUILD_TESTS=ON -DCMAKE_CUDA_ARCHITECTURES=90 "$@" && cmake --build build-gpu -j "$(nproc)"' \
      build "${cmake_flags[@]}"
elif [[ $mode != compare && $mode != gpu ]]; then
  [[ -n $build_dir ]] || { build_dir=build; bin=build; }
  skip build "using the binaries in $bin (the GPU run builds build-gpu/ for sm_90)"
fi
have() { [[ -x $bin/$1 ]]; }

# ---- the GPU's clocks, power and temperature while the steps below run ----
if [[ $mode == gpu ]] && command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu \
             --format=csv -lms 500 >"$out_dir/gpu-clocks.csv" 2>&1 &
  clocks_pid=$!
  trap 'kill $clocks_pid 2>/dev/null || true' EXIT
fi

# ---- kernel tests (the GPU tests skip where there is no CUDA device) ----
if [[ $mode != compare ]]; then
  if have kernels/simtrain_kernel_gpu_tests; then
    step kernel-tests 20 bash -c "set -o pipefail; '$bin/kernels/simtrain_kernel_cpu_tests' --gtest_brief=1 &&
                                  '$bin/kernels/simtrain_kernel_gpu_tests' --gtest_brief=1"
    step gemm-throughput 2 "$bin/kernels/simtrain_kernel_gpu_tests" --gtest_filter='Gemm.Throughput8192Cubed'
  else
    skip kernel-tests "$bin has no kernels/simtrain_kernel_gpu_tests (built without nvcc)"
  fi
fi

# ---- the kernel profile ----
profile=$out_dir/kernel-profile.json own_attention_profile=$out_dir/kernel-profile-own-attention.json
if [[ $mode == gpu ]]; then
  rm -f "$profile"
  step profile 180 "$bin/kernels/simtrain-profile" "${profiled_scenarios[@]}" --sweep --out "$profile"
  # The own attention kernel runs on CUDA cores; cuDNN's fused one is what training uses.
  # The live step runs the own kernel, so its comparison uses the database as measured.
  [[ -f $profile ]] && cp "$profile" "$own_attention_profile"
  if [[ -f $profile ]] && env -u LD_LIBRARY_PATH python3 -c 'import torch' 2>/dev/null; then
    # PyTorch with its own libraries, not the ones unpacked for the prebuilt binaries.
    step attention-sdpa 15 env -u LD_LIBRARY_PATH python3 bench/attention_sdpa.py "$profile"
  else
    skip attention-sdpa "no database, or no python3 with PyTorch: attention keeps the own kernel's times, which overstate it"
  fi
  # The host that launches the kernels (docs/host.md): launch costs, and one MoE layer as Megatron-Core runs it.
  if env -u LD_LIBRARY_PATH python3 -c 'import torch' 2>/dev/null; then
    step launch-rate 10 env -u LD_LIBRARY_PATH python3 bench/launch_rate_probe.py --json "$out_dir/launch-rate.json"
    step moe-layer-host 30 env -u LD_LIBRARY_PATH python3 bench/moe_layer_host.py --count-kernels \
        --json "$out_dir/moe-layer-host.json"
  else
    skip launch-rate "no python3 with PyTorch"
  fi
  if [[ -f $profile ]]; then
    step roofline-accuracy 1 bash -c "set -o pipefail; '$bin/simtrain_bench_roofline_accuracy' '$profile' | tee '$out_dir/roofline-accuracy.txt'"
  else
    skip roofline-accuracy "no database"
  fi
elif [[ $mode == dry-run ]]; then
  step launch-rate-plan 1 python3 bench/launch_rate_probe.py --dry-run
  step moe-layer-host-plan 1 python3 bench/moe_layer_host.py --dry-run
  # The plan is the profile's CPU half: every scenario's ops, built without a GPU.
  if have kernels/simtrain-profile; then
    step profile-plan 1 bash -c "set -o pipefail; '$bin/kernels/simtrain-profile' $(printf "'%s' " "${profiled_scenarios[@]}") --sweep --list | tail -1"
  else
    also=()
    for s in "${profiled_scenarios[@]:1}"; do also+=(--also "$s"); done
    step profile-plan 1 bash -c "set -o pipefail; '$bin/simtrain' profile '${profiled_scenarios[0]}' $(printf "'%s' " "${also[@]}") --sweep --list | tail -1"
  fi
  skip profile "no GPU in a dry run (the plan above is what the GPU run times)"
  skip roofline-accuracy "no database in a dry run"
fi

# ---- the live step ----
live_trace=$out_dir/live-trace.json.gz
live_sets=()  # what the simulation must be told to build the Program the live step ran (the GPU's: nothing)
if [[ $mode == gpu ]]; then
  if have live/simtrain-live; then
    step live-step 20 "$bin/live/simtrain-live" live "$live_scenario" --backend cuda --trace "$live_trace" --force
  else
    skip live-step "$bin has no live/simtrain-live (see the build's 'live:' messages)"
  fi
elif [[ $mode == dry-run ]]; then
  live_sets=("${dry_run_shrink[@]}" --set num_hidden_layers=$dry_run_layers --set global_batch_size=$dry_run_micro_batches)
  step live-step 40 "$bin/simtrain" live "$live_scenario" --backend host "${dry_run_shrink[@]}" \
      --layers $dry_run_layers --micro-batches $dry_run_micro_batches --trace "$live_trace" --force
fi

# ---- simulate the live step's Program and compare (needs simtrain with SimGrid) ----
if [[ $mode != gpu ]] && have simtrain && [[ -f $live_trace ]]; then
  profile_set=()
  if [[ -f $own_attention_profile ]]; then  # the kernels the live step ran
    profile_set=(--set kernel_profile="$own_attention_profile")
  elif [[ -f $profile ]]; then
    profile_set=(--set kernel_profile="$profile")
  else
    say "no $profile: the simulation uses the kernel model"
  fi
  step simulate 5 "$bin/simtrain" simulate "$live_scenario" "${live_sets[@]}" "${profile_set[@]}" --no-sensitivity \
      --trace "$out_dir/sim-trace.json.gz" --force
  calibrated=$out_dir/live-calibrated-profile.json
  step compare 2 bash -c "set -o pipefail; '$bin/simtrain' compare '$out_dir/sim-trace.json.gz' '$live_trace' \
                          --json '$out_dir/compare.json' --calibrate '$calibrated' --force | tee '$out_dir/compare.txt'"
  # The attention re-timing's CPU half: which entries it would time.
  [[ $mode == dry-run ]] && step attention-sdpa-plan 1 python3 bench/attention_sdpa.py --list "$calibrated"
elif [[ $mode == gpu ]]; then
  skip simulate "simtrain needs SimGrid, not built here: copy OUT_DIR back and run bench/gpu_measure.sh --compare OUT_DIR"
else
  skip simulate "no $bin/simtrain or no live trace $live_trace"
fi

if ((${#failed[@]})); then say "== done; failed: ${failed[*]}; outputs in $out_dir:"; else say "== done; outputs in $out_dir:"; fi
ls -l "$out_dir" | tee -a "$log"
((${#failed[@]} == 0))
