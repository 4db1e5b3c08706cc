#!/usr/bin/env bash
# Builds the fuzz targets (CMake preset "fuzz": clang, libFuzzer, ASan + UBSan)
# and runs each in turn; prints executions, time and crashes per target.
#   bench/fuzz.sh [SECONDS [MAX_EXECUTIONS [TARGET...]]]
# SECONDS per target (default 60); MAX_EXECUTIONS stops a target earlier
# (default: none); TARGETs as in fuzz/CMakeLists.txt (default: all).
# Corpora grow in build-fuzz/fuzz-runs/<target>/corpus; crashes, leaks,
# timeouts and out-of-memory inputs land in .../artifacts, the log in .../log.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
runs=${2:--1}
shift $(($# < 2 ? $# : 2))

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz >/dev/null
targets=("$@")
if ((${#targets[@]} == 0)); then
  for seeds in build-fuzz/fuzz/fuzz_*.seeds; do targets+=("$(basename "$seeds" .seeds | sed 's/^fuzz_//')"); done
fi

printf '%-12s %12s %8s %8s  %s\n' target executions seconds crashes artifacts
for target in "${targets[@]}"; do
  dir=build-fuzz/fuzz-runs/$target
  mkdir -p "$dir/corpus" "$dir/artifacts"
  mapfile -t seed_dirs <"build-fuzz/fuzz/fuzz_$target.seeds"
  # Dictionary: every quoted word of the seeds (field names, built-in names, choices).
  find "${seed_dirs[@]}" -type f -exec cat {} + | grep -aoE '"[A-Za-z0-9_.-]+"' | sort -u >"$dir/dict"
  start=$(date +%s)
  "build-fuzz/fuzz/fuzz_$target" -max_total_time="$seconds" -runs="$runs" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -dict="$dir/dict" -artifact_prefix="$dir/artifacts/" \
    "$dir/corpus" "${seed_dirs[@]}" >"$dir/log" 2>&1 || true
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -1)
  found=$(find "$dir/artifacts" -type f | wc -l)
  printf '%-12s %12s %8s %8s  %s\n' "$target" "${executions:-?}" $(($(date +%s) - start)) "$found" "$dir/artifacts"
done
