#!/usr/bin/env bash
# Compares two builds' server CPU per upgrade, alternating their runs so both see the same machine:
#   Benchmarks/upgrade-cpu-ab.sh DIR_A DIR_B [ROUNDS] [COUNT]
# (defaults: 5 rounds of 300 upgrades, each with the production argon2id hash). Each DIR holds a
# release `Benchmarks` and `upgrade-cli` from one build, e.g.
#   swift build -c release && mkdir -p /tmp/b && cp .build/release/{Benchmarks,upgrade-cli} /tmp/b
# Prints each run's server CPU per upgrade, with and without the password hash, then per build the
# median and the range. On a shared virtual machine one binary's figure moves by ±25% within an
# hour; a difference between builds means something only when it holds across alternating runs.
set -euo pipefail
[ $# -ge 2 ] && [ $# -le 4 ] || { sed -n '2,3p' "$0" >&2; exit 2; }
a="$1"
b="$2"
rounds="${3:-5}"
count="${4:-300}"
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
        output="$("$dir/Benchmarks" upgrade-cpu "$count")"
        total="$(awk '$1 == "total" {print $2}' <<<"$output")"
        excluding="$(awk '/excluding the password hash/ {print $5}' <<<"$output")"
        [ -n "$total" ] && [ -n "$excluding" ] || { echo "upgrade-cpu-ab: no figure from $dir" >&2; exit 1; }
        echo "round $round  $dir  total $total ms, without the hash $excluding ms"
        echo "$dir $total $excluding" >>"$results"
    done
done
# Median and range of one column of one build's runs.
summary() {
    awk -v dir="$1" -v column="$2" '$1 == dir {print $column}' "$results" | sort -g | awk '
        {value[NR] = $1}
        END {
            median = NR % 2 ? value[(NR + 1) / 2] : (value[NR / 2] + value[NR / 2 + 1]) / 2
            printf "median %.3f ms (%.3f to %.3f, %d runs)", median, value[1], value[NR], NR
        }'
}
for dir in "$a" "$b"; do
    echo "$dir: total $(summary "$dir" 2); without the hash $(summary "$dir" 3)"
done
