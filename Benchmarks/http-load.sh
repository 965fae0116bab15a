#!/usr/bin/env bash
# GET /healthz throughput and latency of the bare HTTP server (http-load-server), with wrk over loopback:
#   Benchmarks/http-load.sh [SECONDS] [ROUNDS]        (defaults: 10 s a run, 1 round; needs wrk)
# Each round runs three servers one after another: /healthz answered by a handler with one thread per
# event loop (the default: every handler on a worker), the same with two threads per loop (the loop
# thread that read a request runs it while the other one watches the loop), and /healthz answered on
# the event loop (HTTPHandler.respondOnEventLoop, for constant-time liveness checks). Then, per
# mode, the median and range of the rounds. wrk keeps 64 connections from 127.0.0.1 open, as many as
# the server's per-client limit (maxConnectionsPerClient, 64) allows; the servers run with a limit of
# 80, since wrk first opens and closes one connection more (Benchmarks/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
seconds="${1:-10}"
rounds="${2:-1}"
command -v wrk >/dev/null || { echo "http-load: wrk is not installed" >&2; exit 2; }

# HTTP_LOAD_SERVER names a server already built (Benchmarks/smoke.sh passes the debug one).
binary="${HTTP_LOAD_SERVER:-}"
if [ -z "$binary" ]; then
    swift build -c release --product http-load-server >/dev/null
    binary="$(swift build -c release --show-bin-path)/http-load-server"
fi
workdir="$(mktemp -d)"
server_pid=""
cleanup() {
    if [ -n "$server_pid" ]; then kill -TERM "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    rm -rf "$workdir"
}
trap cleanup EXIT

# run LABEL SERVER-ARGUMENTS...: one wrk run against a fresh server; appends "LABEL|rate|p99 ms".
run() {
    local label="$1"
    shift
    : >"$workdir/out"
    : >"$workdir/err"
    "$binary" --port 0 --max-connections-per-client 80 "$@" >>"$workdir/out" 2>>"$workdir/err" &
    server_pid=$!
    for _ in $(seq 50); do grep -q listening "$workdir/out" 2>/dev/null && break; sleep 0.1; done
    local port
    port="$(awk '/listening/ {print $2}' "$workdir/out")"
    [ -n "$port" ] || { echo "http-load: server did not start: $(cat "$workdir/err")" >&2; exit 1; }
    wrk -t2 -c64 -d"${seconds}s" --latency "http://127.0.0.1:$port/healthz" >"$workdir/wrk"
    local rate p99 errors
    rate="$(awk '/Requests\/sec/ {print $2}' "$workdir/wrk")"
    p99="$(awk '$1 == "99%" {print $2}' "$workdir/wrk")"
    errors="$(awk '/Non-2xx|Socket errors/' "$workdir/wrk")"
    printf '%-34s %12s req/s   p99 %8s   %s\n' "$label" "$rate" "$p99" "${errors:-no errors}"
    echo "$label|$rate|$(milliseconds "$p99")" >>"$workdir/results"
    kill -TERM "$server_pid"
    wait "$server_pid" || { echo "http-load: server exited with status $?" >&2; exit 1; }
    server_pid=""
}

# wrk's latency (e.g. 812.00us, 1.52ms, 1.01s) in milliseconds.
milliseconds() {
    awk -v value="$1" 'BEGIN {
        number = value + 0
        if (value ~ /us$/) number /= 1000; else if (value ~ /s$/ && value !~ /ms$/) number *= 1000
        print number
    }'
}

# The median, the lowest and the highest of the numbers on standard input.
statistics() {
    sort -g | awk '{value[NR] = $1} END {
        print (NR % 2 ? value[(NR + 1) / 2] : (value[NR / 2] + value[NR / 2 + 1]) / 2), value[1], value[NR]
    }'
}

echo "wrk -t2 -c64 -d${seconds}s --latency http://127.0.0.1:PORT/healthz ($(nproc) cores, $rounds rounds)"
modes=("one thread per loop|--loop-threads 1" "two threads per loop|--loop-threads 2" "on the event loop|--on-loop")
for _ in $(seq "$rounds"); do
    for mode in "${modes[@]}"; do
        # shellcheck disable=SC2086 # the server's arguments are words
        run "${mode%%|*}" ${mode#*|}
    done
done
echo "per mode: median req/s (range), median p99"
for mode in "${modes[@]}"; do
    label="${mode%%|*}"
    read -r rate low high < <(awk -F'|' -v label="$label" '$1 == label {print $2}' "$workdir/results" | statistics)
    read -r p99 _ _ < <(awk -F'|' -v label="$label" '$1 == label {print $3}' "$workdir/results" | statistics)
    printf '%-34s %10.0f req/s (%.0f to %.0f)   p99 %.2f ms\n' "$label" "$rate" "$low" "$high" "$p99"
done
