#!/usr/bin/env bash
# simtrain's Chakra export run through ASTRA-sim's analytical backend, with
# simtrain's own prediction beside it (issue 42). Not part of CI: it needs
# network access (git clone) and builds ASTRA-sim (minutes).
#
#   bench/astra_sim.sh [WORK_DIR]          (default: build/astra-sim-bench)
#
# Run from the repository root after building simtrain (build/simtrain).
# Environment (defaults: issue 42's case, GPT-3 175B on 128 H100s):
#   SCENARIO       gpt3-175b-1024xh100
#   SETS           "cluster.num_gpus=128 training.global_batch_size=32" (each a --set)
#   NPUS           "8 16": NPUs per network dimension (NVLink domain, then nodes);
#                  their product must be the scenario's GPU count
#   BANDWIDTH_GBPS "450 50": per NPU and dimension (NVLink 4; one 400 Gb/s NIC)
#   LATENCY_NS     "936.25 2000": per hop and dimension (the first from ASTRA-sim's
#                  examples/network/analytical/HGX-H100-validated.yml)
#
# What it does:
#  1. clones astra-sim/astra-sim at ASTRA_COMMIT and the submodules the
#     analytical backend needs (Chakra's feeder, astra-network-analytical,
#     fmt, spdlog), and builds it with its own build/astra_analytical/build.sh;
#  2. exports the scenario (simtrain export-chakra) and checks it under
#     ASTRA-sim's rules (simtrain check-chakra);
#  3. runs AstraSim_Analytical_Congestion_Unaware on it (system: ring
#     collectives as in ASTRA-sim's HGX-H100-validated.json) and simtrain
#     simulate on the same scenario, each under /usr/bin/time;
#  4. prints the step times and walls side by side: ASTRA-sim's step is the
#     last rank's "sys[N] finished, T cycles" (Workload.cc:569-572; a cycle
#     is a nanosecond).
set -euo pipefail

ASTRA_COMMIT=8ee44786598bf01c98cbb9cb1cc688db02103cd5
SCENARIO=${SCENARIO:-gpt3-175b-1024xh100}
SETS=${SETS:-"cluster.num_gpus=128 training.global_batch_size=32"}
NPUS=${NPUS:-"8 16"}
BANDWIDTH_GBPS=${BANDWIDTH_GBPS:-"450 50"}
LATENCY_NS=${LATENCY_NS:-"936.25 2000"}
work=$(realpath -m "${1:-build/astra-sim-bench}")
simtrain=$(realpath build/simtrain)
[[ -x $simtrain ]] || { echo "astra_sim.sh: build/simtrain not found: build simtrain first" >&2; exit 2; }
mkdir -p "$work"

# 1. ASTRA-sim at the pinned commit.
astra="$work/astra-sim"
if [[ ! -d $astra/.git ]]; then
  git clone https://github.com/astra-sim/astra-sim.git "$astra"
fi
git -C "$astra" checkout --quiet "$ASTRA_COMMIT"
git -C "$astra" submodule update --init --recursive \
  extern/graph_frontend/chakra extern/network_backend/analytical extern/helper/fmt extern/helper/spdlog
astra_bin="$astra/build/astra_analytical/build/bin/AstraSim_Analytical_Congestion_Unaware"
if [[ ! -x $astra_bin ]]; then
  "$astra/build/astra_analytical/build.sh" -t congestion_unaware
fi

# 2. The export, checked.
sets=()
read -ra set_list <<< "$SETS"
for s in "${set_list[@]}"; do sets+=(--set "$s"); done
mkdir -p "$work/trace"
prefix="$work/trace/$SCENARIO"
"$simtrain" export-chakra "$SCENARIO" "$prefix" "${sets[@]}" --force
"$simtrain" check-chakra "$prefix"

# 3. ASTRA-sim's inputs: a multi-dimensional switch network, ring collectives, no remote memory.
list() { local IFS=,; echo "[ $* ]"; }
read -ra npus <<< "$NPUS"
read -ra bandwidth <<< "$BANDWIDTH_GBPS"
read -ra latency <<< "$LATENCY_NS"
topology=()
for _ in "${npus[@]}"; do topology+=(Switch); done
cat > "$work/network.yml" <<EOF
topology: $(list "${topology[@]}")
npus_count: $(list "${npus[@]}")
bandwidth: $(list "${bandwidth[@]}")  # GB/s
latency: $(list "${latency[@]}")  # ns
EOF
cat > "$work/system.json" <<'EOF'
{
  "scheduling-policy": "LIFO",
  "endpoint-delay": 10,
  "active-chunks-per-dimension": 2,
  "preferred-dataset-splits": 4,
  "all-reduce-implementation": ["ring"],
  "all-gather-implementation": ["ring"],
  "reduce-scatter-implementation": ["ring"],
  "all-to-all-implementation": ["ring"],
  "collective-optimization": "localBWAware",
  "local-mem-bw": 3350,
  "boost-mode": 0
}
EOF
echo '{"memory-type": "NO_MEMORY_EXPANSION"}' > "$work/memory.json"

(cd "$work" && /usr/bin/time -f "%e" -o astra.wall "$astra_bin" \
  --workload-configuration="$prefix" --comm-group-configuration="$prefix.comm_groups.json" \
  --system-configuration=system.json --remote-memory-configuration=memory.json \
  --network-configuration=network.yml > astra.log 2>&1) || { tail -20 "$work/astra.log"; exit 1; }
/usr/bin/time -f "%e" -o "$work/simtrain.wall" "$simtrain" simulate "$SCENARIO" "${sets[@]}" > "$work/simtrain.txt"

# 4. Side by side.
ranks=$(find "$work/trace" -name "$SCENARIO.*.et" | wc -l)
finished=$(grep -c "finished, [0-9]* cycles" "$work/astra.log" || true)
if [[ $finished -ne $ranks ]]; then
  echo "ASTRA-sim: $finished of $ranks ranks finished (see $work/astra.log)" >&2
  exit 1
fi
astra_ns=$(grep -o "finished, [0-9]* cycles" "$work/astra.log" | awk '{ if ($2 > max) max = $2 } END { print max }')
simtrain_s=$(awk '/^step time/ { print $3 }' "$work/simtrain.txt")
printf '%-34s %12s %10s\n' "$SCENARIO ($SETS)" "step time" "wall"
printf '%-34s %10.4f s %8.1f s\n' "ASTRA-sim ${ASTRA_COMMIT:0:7} analytical" "$(awk -v ns="$astra_ns" 'BEGIN { print ns / 1e9 }')" "$(cat "$work/astra.wall")"
printf '%-34s %10.4f s %8.1f s\n' "simtrain simulate" "$simtrain_s" "$(cat "$work/simtrain.wall")"
