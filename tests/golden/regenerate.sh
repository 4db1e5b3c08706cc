#!/usr/bin/env bash
# Writes the golden outputs tests/test_golden_outputs.cpp compares against:
# `simtrain simulate` on every shipped scenario (the text report as it is,
# the JSON report, the trace and the Program (`simtrain schedule`) as SHA-256 digests). Run it only
# when a change is meant to alter the results, and say why in the commit.
#   tests/golden/regenerate.sh build/simtrain
set -euo pipefail
simtrain=$(realpath "${1:?usage: $0 path/to/simtrain}")
cd "$(dirname "$0")"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
: > digests.sha256
# The report's last line says how long the simulation took on this machine:
# that figure alone is masked.
mask_wall_time() { sed -E 's/^(simulated .*), in [^,]+$/\1, in <wall time>/'; }
# scenarios.txt: one built-in scenario a line; "report-only" where its trace
# and Program run to gigabytes (its JSON report stands for them); none for
# "bench-only" ones, too large for a unit test; '#' starts a comment.
while read -r name option; do
  [[ -z $name || $name == \#* || $option == bench-only ]] && continue
  out=$scratch/$name
  if [[ $option == report-only ]]; then
    "$simtrain" simulate "$name" --quiet --report "$out.report.json" | mask_wall_time > "$name.txt"
  else
    "$simtrain" simulate "$name" --quiet --report "$out.report.json" --trace "$out.trace.json" | mask_wall_time > "$name.txt"
    "$simtrain" schedule "$name" --out "$out.program.json"
  fi
  (cd "$scratch" && sha256sum "$name".*.json) >> digests.sha256
done < scenarios.txt
