#!/usr/bin/env bash
# GET /healthz throughput and latency of the HTTP server, measured with wrk over loopback:
#   Benchmarks/http-load.sh [SECONDS]        (default 10 per run; needs wrk)
# Three runs: /healthz answered by a handler (the path every REST request takes: the loop thread that
# read it runs it, or a worker), the same with one thread per loop (every handler on a worker), then
# answered on the event loop (HTTPHandler.respondOnEventLoop, for constant-time liveness checks).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
seconds="${1:-10}"
command -v wrk >/dev/null || { echo "http-load: wrk is not installed" >&2; exit 2; }

swift build -c release --product http-load-server >/dev/null
binary="$(swift build -c release --show-bin-path)/http-load-server"
workdir="$(mktemp -d)"
server_pid=""
cleanup() {
    if [ -n "$server_pid" ]; then kill -TERM "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    rm -rf "$workdir"
}
trap cleanup EXIT

run() {
    local label="$1"
    shift
    "$binary" --port 0 "$@" >"$workdir/out" 2>"$workdir/err" &
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
    printf '%-28s %12s req/s   p99 %8s   %s\n' "$label" "$rate" "$p99" "${errors:-no errors}"
    kill -TERM "$server_pid"
    wait "$server_pid" || { echo "http-load: server exited with status $?" >&2; exit 1; }
    server_pid=""
}

echo "wrk -t2 -c64 -d${seconds}s --latency http://127.0.0.1:PORT/healthz ($(nproc) cores)"
run "healthz in a handler"
run "healthz on a worker" --loop-threads 1
run "healthz on the event loop" --on-loop
