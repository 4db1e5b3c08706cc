#!/usr/bin/env bash
# simtrain's Chakra export of issue 42's case (GPT-3 175B on 128 H100s, global
# batch 32) run through ASTRA-sim's analytical congestion-unaware backend,
# with simtrain's predictions beside it. Outside CI: it builds ASTRA-sim
# (about 6 minutes on 2 cores) from git snapshots already on this machine; it
# fetches nothing.
#
#   bench/astra_sim/run.sh WORK_DIR NAME=GIT_DIR...
#
# Run from the repository root after building simtrain (build/simtrain, or
# SIMTRAIN=path). Each NAME=GIT_DIR names a git directory (bare, or a clone's
# .git) holding that repository's commit below; all seven are needed:
#   astra-sim=             astra-sim/astra-sim
#   chakra=                astra-sim/chakra (ASTRA-sim's fork, with src/feeder_v3)
#   network-analytical=    astra-sim/astra-network-analytical
#   memory-analytical=     astra-sim/astra-memory-analytical
#   fmt=                   fmtlib/fmt
#   spdlog=                gabime/spdlog
#   yaml-cpp=              jbeder/yaml-cpp
# JOBS (default 2) is the build's parallelism.
#
# The commits are ASTRA-sim 8ee4478's submodules but two that no snapshot
# here held: its Chakra (astra-sim/chakra 0e3cd40) is replaced by f37c2bb, the
# last feeder_v3 commit held, which ASTRA-sim itself pinned in August 2025
# (4b6e027 to 7e526fb), with one line moved (chakra_feeder_v3_alias.patch:
# 8ee4478 names the feeder Chakra::ETFeeder, which f37c2bb declares one
# namespace too deep); its spdlog (63f0875) by the v1.13.0 release.
#
# Files written under WORK_DIR: src/ (the sources, laid out as ASTRA-sim's
# submodules), trace/ (the export), astra_*.log, simtrain_*.txt, walls.
set -euo pipefail

declare -A COMMIT=(
  [astra-sim]=8ee44786598bf01c98cbb9cb1cc688db02103cd5
  [chakra]=f37c2bb50afa8b0e99b32ba9921662ab77502e85
  [network-analytical]=599a0473a9a74f5383f73b3cea5a12b9bc5ebaef
  [memory-analytical]=641cce854d256bfd288b1de9607b6757313363f9
  [fmt]=7e73566ce7bd3617cd4b14a2e3a19a2a30b524c7
  [spdlog]=7c02e204c92545f869e2f04edaab1f19fe8b19fd
  [yaml-cpp]=3d2888cc8a45da2f420454ad728cdfad01a3d54f
)
declare -A PLACE=(
  [astra-sim]=.
  [chakra]=extern/graph_frontend/chakra
  [network-analytical]=extern/network_backend/analytical
  [memory-analytical]=extern/remote_memory_backend/analytical
  [fmt]=extern/helper/fmt
  [spdlog]=extern/helper/spdlog
  [yaml-cpp]=extern/network_backend/analytical/extern/yaml-cpp
)
SCENARIO=gpt3-175b-1024xh100
SETS=(--set cluster.num_gpus=128 --set training.global_batch_size=32)

usage() { echo "usage: bench/astra_sim/run.sh WORK_DIR astra-sim=GIT_DIR chakra=GIT_DIR network-analytical=GIT_DIR memory-analytical=GIT_DIR fmt=GIT_DIR spdlog=GIT_DIR yaml-cpp=GIT_DIR" >&2; exit 2; }
[[ $# -ge 1 ]] || usage
here=$(dirname "$(realpath "$0")")
work=$(realpath -m "$1")
shift
simtrain=$(realpath "${SIMTRAIN:-build/simtrain}")
[[ -x $simtrain ]] || { echo "run.sh: $simtrain not found: build simtrain first" >&2; exit 2; }
declare -A GIT
for arg in "$@"; do
  name=${arg%%=*}
  [[ $arg == *=* && -n ${COMMIT[$name]:-} ]] || { echo "run.sh: unknown argument $arg" >&2; usage; }
  dir=${arg#*=}
  [[ -d $dir/.git ]] && dir=$dir/.git
  GIT[$name]=$(realpath "$dir")
done
for name in "${!COMMIT[@]}"; do
  [[ -n ${GIT[$name]:-} ]] || { echo "run.sh: $name=GIT_DIR missing" >&2; usage; }
  git --git-dir="${GIT[$name]}" cat-file -e "${COMMIT[$name]}^{commit}" 2>/dev/null ||
    { echo "run.sh: ${GIT[$name]} does not hold $name ${COMMIT[$name]}" >&2; exit 2; }
done

# 1. The sources: each commit's files into its submodule's place. A snapshot
#    may lack some files' contents (large test data); they are left out, named.
src=$work/src
lay_out() {
  local name=$1 git=${GIT[$1]} dest=$src/${PLACE[$1]}
  local index=$work/$name.index
  mkdir -p "$dest"
  GIT_INDEX_FILE=$index git --git-dir="$git" read-tree "${COMMIT[$name]}"
  git --git-dir="$git" ls-tree -r "${COMMIT[$name]}" | awk '$2 == "blob"' > "$work/$name.files"
  cut -f1 "$work/$name.files" | awk '{ print $3 }' | git --git-dir="$git" cat-file --batch-check |
    paste - <(cut -f2 "$work/$name.files") | awk -F'\t' -v name="$name" '
      $1 ~ / missing$/ { print "run.sh: " name ": " $2 " not in the snapshot, left out" > "/dev/stderr"; next }
      { print $2 }' |
    GIT_INDEX_FILE=$index git --git-dir="$git" --work-tree="$dest" checkout-index --force --stdin
  rm -f "$index" "$work/$name.files"
}
astra_bin=$src/build/astra_analytical/build/bin/AstraSim_Analytical_Congestion_Unaware
if [[ ! -x $astra_bin ]]; then
  rm -rf "$src"
  for name in astra-sim chakra network-analytical memory-analytical fmt spdlog yaml-cpp; do lay_out "$name"; done
  patch --quiet -d "$src/${PLACE[chakra]}" -p1 < "$here/chakra_feeder_v3_alias.patch"
  # 2. Built as ASTRA-sim's build/astra_analytical/build.sh -t congestion_unaware does.
  proto=$src/extern/graph_frontend/chakra/schema/protobuf
  protoc et_def.proto --proto_path="$proto" --cpp_out="$proto"
  cmake -S "$src/build/astra_analytical" -B "$src/build/astra_analytical/build" \
    -DBUILDTARGET=congestion_unaware > "$work/astra_cmake.log"
  cmake --build "$src/build/astra_analytical/build" -j "${JOBS:-2}" > "$work/astra_build.log"
fi

# 3. The export, checked under ASTRA-sim's rules.
mkdir -p "$work/trace"
prefix=$work/trace/gpt3
"$simtrain" export-chakra "$SCENARIO" "$prefix" "${SETS[@]}" --force --quiet
"$simtrain" check-chakra "$prefix"

# 4. ASTRA-sim on two networks, simtrain on the scenario and on the export, each timed.
: > "$work/walls"
timed() {  # label, command...: the command's wall seconds appended to walls
  local label=$1
  shift
  /usr/bin/time -f "$label %e" -a -o "$work/walls" "$@"
}
for network in link_rates simtrain_efficiency; do
  (cd "$work/trace" && timed "astra_$network" "$astra_bin" \
    --workload-configuration=gpt3 --comm-group-configuration=gpt3.comm_groups.json \
    --system-configuration="$here/system.json" --remote-memory-configuration="$here/remote_memory.json" \
    --network-configuration="$here/network_$network.yml" > "$work/astra_$network.log" 2>&1)
done
timed simtrain_scenario "$simtrain" simulate "$SCENARIO" "${SETS[@]}" --quiet --no-sensitivity > "$work/simtrain_scenario.txt"
timed simtrain_chakra "$simtrain" simulate --chakra "$prefix" --topology dgx-h100-superpod --gpu H100-SXM \
  --quiet --no-sensitivity > "$work/simtrain_chakra.txt"

# 5. Side by side. ASTRA-sim's step is its last rank's "sys[N] finished, T
#    cycles" (astra-sim/workload/Workload.cc:568-572 at 8ee4478; a cycle is a ns).
ranks=$(find "$work/trace" -name 'gpt3.*.et' | wc -l)
wall() { awk -v label="$1" '$1 == label { print $2 }' "$work/walls"; }
astra_step() {
  local log=$work/astra_$1.log finished
  finished=$(grep -c 'finished, [0-9]* cycles' "$log" || true)
  if [[ $finished -ne $ranks ]]; then
    echo "run.sh: ASTRA-sim ($1): $finished of $ranks ranks finished (see $log)" >&2
    exit 1
  fi
  grep -o 'finished, [0-9]* cycles' "$log" | awk '$2 > max { max = $2 } END { printf "%.4f", max / 1e9 }'
}
simtrain_step() { awk '/^step time/ { print $3 }' "$work/simtrain_$1.txt"; }
row() { printf '%-64s %8s s %7.2f s\n' "$1" "$2" "$3"; }
echo "$SCENARIO ${SETS[*]}: step time, wall"
row "ASTRA-sim ${COMMIT[astra-sim]:0:7} analytical, links at rated speed" "$(astra_step link_rates)" "$(wall astra_link_rates)"
row "ASTRA-sim ${COMMIT[astra-sim]:0:7} analytical, links at simtrain's efficiencies" "$(astra_step simtrain_efficiency)" "$(wall astra_simtrain_efficiency)"
row "simtrain's replay of the export (simulate --chakra)" "$(simtrain_step chakra)" "$(wall simtrain_chakra)"
row "simtrain's simulation of the scenario (simulate)" "$(simtrain_step scenario)" "$(wall simtrain_scenario)"
