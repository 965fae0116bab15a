#!/usr/bin/env bash
# GET /readyz of the whole application (`upgrade-cli serve --dev`: router, database ping, request log)
# at saturation, two builds alternating so both see the same machine:
#   Benchmarks/readyz-ab.sh DIR_A DIR_B [ROUNDS] [SECONDS]     (defaults: 5 rounds of 10 s; needs wrk)
# Each DIR holds a release `upgrade-cli`. wrk keeps 64 connections from 127.0.0.1 open, as many as
# the per-client connection limit (UPGRADE_MAX_CONNECTIONS_PER_CLIENT, 64) allows; the servers run
# with a limit of 80, since wrk first opens and closes one connection more (Benchmarks/README.md). The server's
# request log goes to a file, as a deployment's log collector would take it.
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,4p' "$0" >&2; exit 2; }
a="$1"
b="$2"
rounds="${3:-5}"
seconds="${4:-10}"
command -v wrk >/dev/null || { echo "readyz-ab: wrk is not installed" >&2; exit 2; }
for dir in "$a" "$b"; do
    [ -x "$dir/upgrade-cli" ] || { echo "readyz-ab: $dir has no upgrade-cli" >&2; exit 2; }
done
workdir="$(mktemp -d)"
server_pid=""
cleanup() {
    if [ -n "$server_pid" ]; then kill -TERM "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    rm -rf "$workdir"
}
trap cleanup EXIT

run() {
    local dir="$1"
    # The log exists before the server starts: the shell opens it in the child, which may run late.
    : >"$workdir/log"
    "$dir/upgrade-cli" serve --dev --listen 127.0.0.1:0 --emulator-port 0 --max-connections-per-client 80 >>"$workdir/log" 2>&1 &
    server_pid=$!
    local port=""
    for _ in $(seq 100); do
        port="$(sed -n 's/^listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$workdir/log")"
        [ -n "$port" ] && break
        sleep 0.1
    done
    [ -n "$port" ] || { echo "readyz-ab: the server in $dir did not start: $(cat "$workdir/log")" >&2; exit 1; }
    wrk -t2 -c64 -d"${seconds}s" --latency "http://127.0.0.1:$port/readyz" >"$workdir/wrk"
    local rate p99 errors
    rate="$(awk '/Requests\/sec/ {print $2}' "$workdir/wrk")"
    p99="$(awk '$1 == "99%" {print $2}' "$workdir/wrk")"
    errors="$(awk '/Non-2xx|Socket errors/' "$workdir/wrk")"
    printf 'round %s  %-24s %12s req/s   p99 %8s   %s\n' "$round" "$dir" "$rate" "$p99" "${errors:-no errors}"
    echo "$dir $rate" >>"$workdir/results"
    kill -TERM "$server_pid"
    wait "$server_pid" || { echo "readyz-ab: the server exited with status $?" >&2; exit 1; }
    server_pid=""
}

echo "wrk -t2 -c64 -d${seconds}s --latency http://127.0.0.1:PORT/readyz ($(nproc) cores, $rounds rounds)"
for round in $(seq "$rounds"); do
    for dir in "$a" "$b"; do run "$dir"; done
done
for dir in "$a" "$b"; do
    awk -v dir="$dir" '$1 == dir {print $2}' "$workdir/results" | sort -g | awk -v dir="$dir" '
        {value[NR] = $1}
        END {
            median = NR % 2 ? value[(NR + 1) / 2] : (value[NR / 2] + value[NR / 2 + 1]) / 2
            printf "%s: median %.0f req/s (%.0f to %.0f, %d runs)\n", dir, median, value[1], value[NR], NR
        }'
done
