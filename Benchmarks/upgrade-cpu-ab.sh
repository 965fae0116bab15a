#!/usr/bin/env bash
# Compares two builds' server CPU per upgrade, alternating their runs so both see the same machine:
#   Benchmarks/upgrade-cpu-ab.sh DIR_A DIR_B [ROUNDS] [COUNT]     (defaults: 5 rounds of 2000)
# Each DIR holds a release `Benchmarks` and `upgrade-cli` from one build, e.g.
#   swift build -c release && mkdir -p /tmp/b && cp .build/release/{Benchmarks,upgrade-cli} /tmp/b
# On a shared virtual machine one binary's figure moves by ±15% within minutes; a difference
# between builds means something only when it holds across alternating runs.
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,3p' "$0" >&2; exit 2; }
a="$1"
b="$2"
rounds="${3:-5}"
count="${4:-2000}"
for dir in "$a" "$b"; do
    [ -x "$dir/Benchmarks" ] && [ -x "$dir/upgrade-cli" ] || {
        echo "upgrade-cpu-ab: $dir needs Benchmarks and upgrade-cli from one release build" >&2
        exit 2
    }
done
results="$(mktemp)"
trap 'rm -f "$results"' EXIT
for round in $(seq "$rounds"); do
    for dir in "$a" "$b"; do
        figure="$("$dir/Benchmarks" upgrade-cpu "$count" | awk '/excluding the password hash/ {print $5}')"
        [ -n "$figure" ] || { echo "upgrade-cpu-ab: no figure from $dir" >&2; exit 1; }
        echo "round $round  $dir  $figure ms"
        echo "$dir $figure" >>"$results"
    done
done
awk '{sum[$1] += $2; n[$1]++} END {for (d in sum) printf "mean %s: %.3f ms over %d runs\n", d, sum[d] / n[d], n[d]}' "$results"
